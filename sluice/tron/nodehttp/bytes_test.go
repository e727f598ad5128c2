package nodehttp

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

var update = flag.Bool("update", false, "rewrite testdata/bodies.txt from the package as it is (then read it against the README's table)")

// scripted is a node that answers what it is told, so that every body has
// fixed bytes.
type scripted struct {
	res   tron.BroadcastResult
	info  tron.TxInfo
	block tron.Block
	err   error
}

func (s scripted) Broadcast(context.Context, tron.Transaction) (tron.BroadcastResult, error) {
	return s.res, s.err
}
func (s scripted) Lookup(context.Context, tron.Txid) (tron.TxInfo, error) { return s.info, s.err }
func (s scripted) HeadBlock(context.Context) (tron.Block, error)          { return s.block, s.err }
func (s scripted) SolidBlock(context.Context) (tron.Block, error)         { return s.block, s.err }

// through hands each request to a handler in the same goroutine, noting
// its body, so that a client's request bytes can be read.
type through struct {
	h    http.Handler
	sent []byte
}

func (t *through) RoundTrip(r *http.Request) (*http.Response, error) {
	var err error
	if t.sent, err = io.ReadAll(r.Body); err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(t.sent))
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// Goal: the node API's bodies are the README's contract byte for byte, in
// both directions, from this package alone. The client and the server are
// one package, so a field both halves swap, rename or encode alike (the
// expiration for the timestamp, the block number for the node's solid
// head, the memo as text instead of hex: blind bugs 289 to 291) crosses
// every round trip intact and harms only a peer of another release. Each
// body below is pinned in testdata/bodies.txt, which was read field by
// field against the table in the README's "The mock node's API"; and the
// client must read each pinned answer back to the value the node gave, so
// the decoder is held to the same bytes as the encoder.
func TestBodiesByTheBytes(t *testing.T) {
	signer := tron.NewHMACSigner([]byte("k"))
	to := tron.AddressFromBytes20([20]byte{0xa1, 0x1c, 0xe0})
	raw := tron.RawData{
		RefBlockBytes: [2]byte{0x00, 0xbe}, RefBlockHash: [8]byte{1, 2, 3, 4, 5, 6, 7, 8},
		Expiration: 1767225660000, Timestamp: 1767225603000, FeeLimit: 30_000_000,
		Memo:     []byte("sluice:op-1:0"),
		Contract: tron.TriggerSmartContract{Owner: hot, Contract: tron.USDTContract, Data: tron.EncodeTransfer(to, 1_234_567)},
	}
	sig, err := signer.Sign(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	tx := tron.Transaction{Raw: raw, Signature: sig}
	txid := tx.Txid()
	at := time.Date(2026, 1, 1, 0, 0, 57, 0, time.UTC)
	head := tron.Block{Number: 200, ID: [32]byte{0, 0, 0, 0, 0, 0, 0, 200, 0xde, 0xad}, Time: at}
	included := tron.TxInfo{Txid: txid, Status: tron.Included, BlockNumber: 190, BlockTime: at.Add(-30 * time.Second),
		Solid: true, Receipt: tron.ReceiptSuccess, Logs: []tron.Log{tron.TransferLog(tron.USDTContract, hot, to, 1_234_567)},
		NodeSolid: 195}

	type call struct {
		name string
		node scripted
		do   func(*Client) (any, error)
		want any // what the client must read back; nil for a failure
	}
	calls := []call{
		{"broadcast, accepted", scripted{res: tron.BroadcastResult{Code: tron.CodeSuccess}},
			func(c *Client) (any, error) { return c.Broadcast(context.Background(), tx) },
			tron.BroadcastResult{Code: tron.CodeSuccess}},
		{"broadcast, refused with a message", scripted{res: tron.BroadcastResult{Code: tron.CodeDupTransactionError, Message: "dup"}},
			func(c *Client) (any, error) { return c.Broadcast(context.Background(), tx) },
			tron.BroadcastResult{Code: tron.CodeDupTransactionError, Message: "dup"}},
		{"lookup, unknown", scripted{info: tron.TxInfo{Txid: txid, Status: tron.Unknown, NodeSolid: 180}},
			func(c *Client) (any, error) { return c.Lookup(context.Background(), txid) },
			tron.TxInfo{Txid: txid, Status: tron.Unknown, NodeSolid: 180}},
		{"lookup, pending", scripted{info: tron.TxInfo{Txid: txid, Status: tron.Pending}},
			func(c *Client) (any, error) { return c.Lookup(context.Background(), txid) },
			tron.TxInfo{Txid: txid, Status: tron.Pending}},
		{"lookup, included", scripted{info: included},
			func(c *Client) (any, error) { return c.Lookup(context.Background(), txid) },
			included},
		{"head block", scripted{block: head},
			func(c *Client) (any, error) { return c.HeadBlock(context.Background()) },
			head},
		{"solid block", scripted{block: head},
			func(c *Client) (any, error) { return c.SolidBlock(context.Background()) },
			head},
		{"lookup, the node failed", scripted{err: errors.New("connection refused")},
			func(c *Client) (any, error) { return c.Lookup(context.Background(), txid) },
			nil},
		{"head block, the node timed out", scripted{err: tron.ErrTimeout},
			func(c *Client) (any, error) { return c.HeadBlock(context.Background()) },
			nil},
	}
	var got strings.Builder
	for _, cl := range calls {
		srv := &Server{Node: func(string) tron.Node { return cl.node }}
		tr := &through{h: srv.Handler()}
		var answer bytes.Buffer
		hc := &http.Client{Transport: recordAnswer{tr, &answer}}
		c, err := NewClient("http://node.test", Options{Caller: "w1", HTTPClient: hc})
		if err != nil {
			t.Fatal(err)
		}
		v, err := cl.do(c)
		switch {
		case cl.want == nil && err == nil:
			t.Errorf("%s: the client took a failure as %+v", cl.name, v)
		case cl.want != nil && err != nil:
			t.Errorf("%s: %v", cl.name, err)
		case cl.want != nil && !reflect.DeepEqual(v, cl.want):
			t.Errorf("%s: the client read\n%+v\nfrom the pinned answer; the node said\n%+v", cl.name, v, cl.want)
		}
		fmt.Fprintf(&got, "== %s\nrequest: %s\nanswer: %s", cl.name, strings.TrimSpace(string(tr.sent)), answer.String())
	}
	const golden = "testdata/bodies.txt"
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./sluice/tron/nodehttp -run TestBodiesByTheBytes -update writes it; read it against the README before committing)", err)
	}
	if got.String() != string(want) {
		gl, wl := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("the node API's bodies are not the contract's, line %d of %s (%s):\n got: %s\nwant: %s",
					i+1, golden, nearest(gl, i), around(g, w), around(w, g))
			}
		}
	}
}

// nearest names the call a line of the golden file belongs to.
func nearest(lines []string, i int) string {
	for ; i >= 0 && i < len(lines); i-- {
		if name, ok := strings.CutPrefix(lines[i], "== "); ok {
			return name
		}
	}
	return "?"
}

// around shows a from a little before its first difference with b, so
// that a long body's one wrong field is what the failure shows.
func around(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from, to := max(0, i-40), min(len(a), i+60)
	out := a[from:to]
	if from > 0 {
		out = "..." + out
	}
	if to < len(a) {
		out += "..."
	}
	return out
}

// recordAnswer notes the status and body of each answer on its way to the
// client.
type recordAnswer struct {
	rt  http.RoundTripper
	out *bytes.Buffer
}

func (r recordAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := r.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(r.out, "%d %s", res.StatusCode, b)
	res.Body = io.NopCloser(bytes.NewReader(b))
	return res, nil
}
