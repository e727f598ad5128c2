package scenarios

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/nodehttp"
)

// contractTxOf is a transaction with every field set, none equal to
// another (so a field read from its neighbour's place shows).
func contractTxOf() tron.Transaction {
	to := tron.MustParseAddress("TJRabPrwbZy45sbavfcjinPJC18kjpRTv8")
	return tron.Transaction{
		Raw: tron.RawData{
			RefBlockBytes: [2]byte{0x0b, 0x5c}, RefBlockHash: [8]byte{1, 2, 3, 4, 5, 6, 7, 8},
			Expiration: 1767225660000, Timestamp: 1767225603000, FeeLimit: 30_000_000,
			Memo: []byte("sluice:a7cc8194-0000-4000-8000-000000000004:1"),
			Contract: tron.TriggerSmartContract{Owner: to, Contract: tron.USDTContract,
				Data: tron.EncodeTransfer(tron.USDTContract, 1_500_000)},
		},
		Signature: []byte{9, 8, 7, 6, 5},
	}
}

// wireBodies sends tx and looks id up through nodehttp's real client and
// server, and returns the two requests' and the two answers' bodies as
// they crossed.
func wireBodies(t *testing.T, tx tron.Transaction, info tron.TxInfo) (bcast, lookup, bcastAns, lookupAns []byte) {
	t.Helper()
	node := fixedNode{res: tron.BroadcastResult{Code: tron.CodeSuccess}, info: info}
	srv := (&nodehttp.Server{Node: func(string) tron.Node { return node }}).Handler()
	var reqs, answers [][]byte
	h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		reqs = append(reqs, b)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		var rec recorder
		rec.reset()
		srv.ServeHTTP(&rec, r)
		answers = append(answers, rec.body)
		rw.WriteHeader(rec.code)
		rw.Write(rec.body)
	})
	c, err := nodehttp.NewClient(wireBase, nodehttp.Options{Caller: "w1", Timeout: time.Hour,
		HTTPClient: &http.Client{Transport: &handlerTransport{h: h}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Broadcast(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup(context.Background(), tx.Txid()); err != nil {
		t.Fatal(err)
	}
	return reqs[0], reqs[1], answers[0], answers[1]
}

type fixedNode struct {
	res  tron.BroadcastResult
	info tron.TxInfo
}

func (n fixedNode) Broadcast(context.Context, tron.Transaction) (tron.BroadcastResult, error) {
	return n.res, nil
}
func (n fixedNode) Lookup(context.Context, tron.Txid) (tron.TxInfo, error) { return n.info, nil }
func (n fixedNode) HeadBlock(context.Context) (tron.Block, error)          { return tron.Block{}, nil }
func (n fixedNode) SolidBlock(context.Context) (tron.Block, error)         { return tron.Block{}, nil }

// rewrite applies edit to body's JSON object (the one under the key inner,
// or the top one for "")
// and returns the new body.
func rewrite(t *testing.T, body []byte, inner string, edit func(map[string]json.RawMessage)) []byte {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatal(err)
	}
	f := top
	if inner != "" {
		f = nil // a map of its own: Unmarshal into top would merge the two
		if err := json.Unmarshal(top[inner], &f); err != nil {
			t.Fatal(err)
		}
	}
	edit(f)
	if inner != "" {
		b, _ := json.Marshal(f)
		top[inner] = b
	}
	out, _ := json.Marshal(top)
	return out
}

// TestWireContract holds the contract check to nodehttp's real bodies:
// they keep it, and each way of breaking it that a client and server of
// one build would agree on is reported (blind bugs 289, 290 and 291 among
// them).
func TestWireContract(t *testing.T) {
	tx := contractTxOf()
	info := tron.TxInfo{Txid: tx.Txid(), Status: tron.Included, BlockNumber: 181, NodeSolid: 162, Solid: false,
		BlockTime: time.Date(2026, 1, 1, 0, 1, 3, 0, time.UTC), Receipt: tron.ReceiptSuccess,
		Logs: []tron.Log{tron.TransferLog(tron.USDTContract, tx.Raw.Contract.Owner, tx.Raw.Contract.Owner, 1_500_000)}}
	bcast, lookup, bcastAns, lookupAns := wireBodies(t, tx, info)
	asked := wireAsked{call: "broadcast", tx: tx}
	if msg := contractRequest(nodehttp.PathBroadcast, asked, bcast); msg != "" {
		t.Fatalf("the real broadcast body breaks the contract: %s\n%s", msg, bcast)
	}
	if msg := contractRequest(nodehttp.PathLookup, wireAsked{call: "lookup", txid: tx.Txid()}, lookup); msg != "" {
		t.Fatalf("the real lookup body breaks the contract: %s\n%s", msg, lookup)
	}
	sv := served{reached: true, res: tron.BroadcastResult{Code: tron.CodeSuccess}, info: info}
	if msg := contractAnswer("broadcast", sv, http.StatusOK, bcastAns); msg != "" {
		t.Fatalf("the real broadcast answer breaks the contract: %s\n%s", msg, bcastAns)
	}
	if msg := contractAnswer("lookup", sv, http.StatusOK, lookupAns); msg != "" {
		t.Fatalf("the real lookup answer breaks the contract: %s\n%s", msg, lookupAns)
	}
	// The fast path: the contract's own rendering of what was meant is a
	// body the field-by-field reader takes (so the fast path accepts
	// nothing the reader would refuse), and it is nodehttp's body byte for
	// byte but the closing newline (so the usual call takes it).
	block := tron.Block{Number: 206, ID: [32]byte{0xab, 1}, Time: time.Date(2026, 1, 1, 0, 2, 0, 0, time.UTC)}
	for _, c := range []struct {
		call string
		sv   served
		real []byte
	}{
		{"broadcast", sv, bcastAns}, {"lookup", sv, lookupAns},
		{"lookup", served{reached: true, info: tron.TxInfo{Txid: tx.Txid(), Status: tron.Unknown, NodeSolid: 162}}, nil},
		{"head_block", served{reached: true, block: block}, nil},
		{"broadcast", served{reached: true, res: tron.BroadcastResult{Code: tron.CodeSigError, Message: "bad \"sig\""}}, nil},
	} {
		canon := canonicalAnswer(nil, c.call, c.sv)
		if msg := contractAnswer(c.call, c.sv, http.StatusOK, canon); msg != "" {
			t.Errorf("%s: the contract's own rendering %s breaks it: %s", c.call, canon, msg)
		}
		if c.real != nil && string(canon)+"\n" != string(c.real) {
			t.Errorf("%s: nodehttp's body\n%s\nis not the contract's rendering\n%s", c.call, c.real, canon)
		}
	}
	if canon := canonicalRequest(nil, wireAsked{call: "lookup", txid: tx.Txid()}); string(canon) != string(lookup) {
		t.Errorf("lookup: nodehttp's request %s is not the contract's rendering %s", lookup, canon)
	}
	swap := func(a, b string) func(map[string]json.RawMessage) {
		return func(f map[string]json.RawMessage) { f[a], f[b] = f[b], f[a] }
	}
	for name, body := range map[string][]byte{
		"expiration and timestamp swapped (289)": rewrite(t, bcast, "transaction", swap("expiration", "timestamp")),
		"the memo as text (291)": rewrite(t, bcast, "transaction", func(f map[string]json.RawMessage) {
			f["memo"], _ = json.Marshal(string(tx.Raw.Memo))
		}),
		"owner and contract swapped": rewrite(t, bcast, "transaction", swap("owner_address", "contract_address")),
		"the fee limit in TRX": rewrite(t, bcast, "transaction", func(f map[string]json.RawMessage) {
			f["fee_limit"] = json.RawMessage("30")
		}),
		"a field renamed": rewrite(t, bcast, "transaction", func(f map[string]json.RawMessage) {
			f["feeLimit"] = f["fee_limit"]
			delete(f, "fee_limit")
		}),
		"a field the contract does not name": rewrite(t, bcast, "transaction", func(f map[string]json.RawMessage) {
			f["visible"] = json.RawMessage("true")
		}),
		"the data in uppercase hex": rewrite(t, bcast, "transaction", func(f map[string]json.RawMessage) {
			f["data"] = json.RawMessage(strings.ToUpper(string(f["data"])))
		}),
	} {
		if contractRequest(nodehttp.PathBroadcast, asked, body) == "" {
			t.Errorf("broadcast, %s: not reported\n%s", name, body)
		}
	}
	if contractRequest(nodehttp.PathLookup, asked, bcast) == "" {
		t.Errorf("a broadcast sent to the lookup's path: not reported")
	}
	for name, body := range map[string][]byte{
		"block_number and node_solid swapped (290)": rewrite(t, lookupAns, "", swap("block_number", "node_solid")),
		"the status as a number": rewrite(t, lookupAns, "", func(f map[string]json.RawMessage) {
			f["status"] = json.RawMessage("2")
		}),
		"the block time in milliseconds": rewrite(t, lookupAns, "", func(f map[string]json.RawMessage) {
			f["block_time"] = json.RawMessage("1767225663000")
		}),
		"a log's topics dropped": rewrite(t, lookupAns, "", func(f map[string]json.RawMessage) {
			f["logs"] = json.RawMessage(`[{"address":"` + strings.Repeat("00", 20) + `","topics":[],"data":""}]`)
		}),
		"solid said of a block not solid": rewrite(t, lookupAns, "", func(f map[string]json.RawMessage) {
			f["solid"] = json.RawMessage("true")
		}),
	} {
		if contractAnswer("lookup", sv, http.StatusOK, body) == "" {
			t.Errorf("lookup answer, %s: not reported\n%s", name, body)
		}
	}
	for name, c := range map[string]struct {
		code int
		body string
	}{
		"a failure without error":      {http.StatusBadGateway, `{"message":"node down"}`},
		"a failure in plain text":      {http.StatusBadGateway, `node down`},
		"a code the node did not give": {http.StatusOK, `{"code":"SIGERROR"}`},
	} {
		if contractAnswer("broadcast", sv, c.code, []byte(c.body)) == "" {
			t.Errorf("broadcast answer, %s: not reported", name)
		}
	}
	if contractAnswer("broadcast", served{res: sv.res}, http.StatusOK, bcastAns) == "" {
		t.Errorf("a 200 though the node was never reached: not reported")
	}
}
