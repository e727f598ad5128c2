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

// Holds hexInto's exact length: a short log address or topic is refused.
func TestGuardShortHexFieldsAreRefused(t *testing.T) {
	c := fixed(t, map[string]string{PathLookup: fmt.Sprintf(
		`{"txid":%q,"status":"included","block_number":5,"solid":true,"receipt":"SUCCESS","logs":[{"address":"a614f803b6fd780986a42c78ec9c7f77e6ded13c","topics":["ddf252ad"],"data":""}]}`, tron.Txid{1})})
	if info, err := c.Lookup(context.Background(), tron.Txid{1}); err == nil {
		t.Fatalf("short topic accepted: %+v", info.Logs)
	}
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
