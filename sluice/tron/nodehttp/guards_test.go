package nodehttp

// Tests that hold guards no test held (independent review). Each passes on
// the code as it stands and fails with its guard removed.

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"sluicesim/sluice/tron"
)

// Holds Lookup's txid check: an answer about another txid (a confused
// cache or proxy) must not be read as this txid's status: its "unknown"
// would feed a proof of death.
func TestGuardLookupAnswerAboutAnotherTxid(t *testing.T) {
	c := fixed(t, map[string]string{PathLookup: fmt.Sprintf(`{"txid":%q,"status":"unknown","node_solid":900}`, tron.Txid{2})})
	if info, err := c.Lookup(context.Background(), tron.Txid{1}); err == nil {
		t.Fatalf("answer about another txid accepted: %+v", info)
	}
}

// Holds the status switch: a status the client does not know is an error,
// never Unknown.
func TestGuardLookupUnknownStatusWord(t *testing.T) {
	for _, s := range []string{"", "UNKNOWN", "not_found", "dropped"} {
		c := fixed(t, map[string]string{PathLookup: fmt.Sprintf(`{"txid":%q,"status":%q,"node_solid":900}`, tron.Txid{1}, s)})
		if info, err := c.Lookup(context.Background(), tron.Txid{1}); err == nil {
			t.Errorf("status %q accepted as %v", s, info.Status)
		}
	}
}

// Holds Broadcast's empty-code check: {} or {"result":true} (java-tron's
// success shape) is not an answer the core can classify.
func TestGuardBroadcastAnswerWithoutCode(t *testing.T) {
	for _, body := range []string{`{}`, `{"result":true,"txid":"ab"}`} {
		c := fixed(t, map[string]string{PathBroadcast: body})
		if res, err := c.Broadcast(context.Background(), tron.Transaction{}); err == nil {
			t.Errorf("%s read as %+v", body, res)
		}
	}
}

// Holds the size limit: an answer over bodyMax is refused, not decoded.
func TestGuardAnswerOverTheLimit(t *testing.T) {
	big := fmt.Sprintf(`{"number":1,"block_id":%q,"timestamp":"2026-01-01T00:00:00Z","pad":"%s"}`, blockID, strings.Repeat("x", bodyMax))
	c := fixed(t, map[string]string{PathHead: big})
	if _, err := c.HeadBlock(context.Background()); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("oversized answer: %v", err)
	}
}

// Holds hexInto's exact length: a log address, topic or block id that is
// short or long is refused, never cut to its first bytes (a proxy giving
// the address with TRON's 0x41 prefix, 21 bytes, would otherwise be read
// as another address, and the payment's Transfer log as not the payment).
func TestGuardHexFieldsOfTheWrongLengthAreRefused(t *testing.T) {
	const addr = "a614f803b6fd780986a42c78ec9c7f77e6ded13c"
	topic := strings.Repeat("dd", 32)
	// The control: the same answer with every field of its length is read,
	// so a refusal below is the field's length, not another flaw.
	if _, err := fixed(t, map[string]string{PathLookup: includedWithLog(fmt.Sprintf(`{"address":%q,"topics":[%q],"data":""}`, addr, topic))}).
		Lookup(context.Background(), tron.Txid{1}); err != nil {
		t.Fatalf("a well-formed log refused: %v", err)
	}
	for name, lg := range map[string]string{
		"short topic":    fmt.Sprintf(`{"address":%q,"topics":["ddf252ad"],"data":""}`, addr),
		"long topic":     fmt.Sprintf(`{"address":%q,"topics":[%q],"data":""}`, addr, topic+"00"),
		"short address":  fmt.Sprintf(`{"address":%q,"topics":[%q],"data":""}`, addr[2:], topic),
		"prefixed (41)":  fmt.Sprintf(`{"address":%q,"topics":[%q],"data":""}`, "41"+addr, topic),
		"address padded": fmt.Sprintf(`{"address":%q,"topics":[%q],"data":""}`, addr+"00", topic),
	} {
		c := fixed(t, map[string]string{PathLookup: includedWithLog(lg)})
		if info, err := c.Lookup(context.Background(), tron.Txid{1}); err == nil {
			t.Errorf("%s accepted: %+v", name, info.Logs)
		}
	}
	head := `{"number":1,"block_id":%q,"timestamp":"2026-01-01T00:00:00Z"}`
	if _, err := fixed(t, map[string]string{PathHead: fmt.Sprintf(head, blockID)}).HeadBlock(context.Background()); err != nil {
		t.Fatalf("a well-formed head refused: %v", err)
	}
	if b, err := fixed(t, map[string]string{PathHead: fmt.Sprintf(head, blockID+"00")}).HeadBlock(context.Background()); err == nil {
		t.Errorf("a block id of 33 bytes accepted: %+v", b)
	}
}

// A log's data is read as it is, of any length: TRON's logs carry what the
// contract emitted (none, one word, several), and a receipt with another
// contract's log beside the Transfer must still be read, or the lookup
// fails and a paid withdrawal waits on it forever.
func TestLogDataOfAnyLength(t *testing.T) {
	const addr = "a614f803b6fd780986a42c78ec9c7f77e6ded13c"
	topic := strings.Repeat("dd", 32)
	for _, data := range []string{"", "01", strings.Repeat("ab", 32), strings.Repeat("cd", 64), strings.Repeat("ef", 100)} {
		c := fixed(t, map[string]string{PathLookup: includedWithLog(fmt.Sprintf(`{"address":%q,"topics":[%q],"data":%q}`, addr, topic, data))})
		info, err := c.Lookup(context.Background(), tron.Txid{1})
		if err != nil {
			t.Errorf("a log with %d bytes of data: %v", len(data)/2, err)
			continue
		}
		if len(info.Logs) != 1 || fmt.Sprintf("%x", info.Logs[0].Data) != data {
			t.Errorf("a log with data %q read as %+v", data, info.Logs)
		}
	}
}

// includedWithLog is a lookup answer for txid 01...: included in a solid
// block with a SUCCESS receipt and the one log given as JSON.
func includedWithLog(log string) string {
	return fmt.Sprintf(`{"txid":%q,"status":"included","block_number":5,"block_time":"2026-01-01T00:00:15Z","solid":true,"receipt":"SUCCESS","logs":[%s],"node_solid":9}`,
		tron.Txid{1}, log)
}

// What a real java-tron node answers, fed to this client: every answer is
// an error (fails closed), none is read as a status. This client cannot be
// pointed at a real node.
func TestJavaTronAnswersFailClosed(t *testing.T) {
	c := fixed(t, map[string]string{
		PathHead:      `{"blockID":"0000000004a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b","block_header":{"raw_data":{"number":77700803,"txTrieRoot":"00","witness_address":"41aa","parentHash":"00","version":31,"timestamp":1767225600000},"witness_signature":"00"}}`,
		PathSolid:     `{"blockID":"0000000004a1b2b0d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b","block_header":{"raw_data":{"number":77700784,"timestamp":1767225543000}}}`,
		PathLookup:    `{}`,
		PathBroadcast: `{"result":true,"txid":"77ddfa7093cc5f745c0d3a54abb89ef070f983343c05e0f89e5a52f3e5401299"}`,
	})
	ctx := context.Background()
	if b, err := c.HeadBlock(ctx); err == nil {
		t.Errorf("java-tron getnowblock read as %+v", b)
	}
	if b, err := c.SolidBlock(ctx); err == nil {
		t.Errorf("java-tron walletsolidity/getnowblock read as %+v", b)
	}
	if info, err := c.Lookup(ctx, tron.Txid{1}); err == nil {
		t.Errorf("java-tron {} read as %v", info.Status)
	}
	if res, err := c.Broadcast(ctx, tron.Transaction{}); err == nil {
		t.Errorf("java-tron broadcast success read as %+v", res)
	}
}
