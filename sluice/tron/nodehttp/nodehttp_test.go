package nodehttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *manualClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var (
	genesis = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	hot     = tron.AddressFromBytes20([20]byte{0x11, 0x11, 0x11})
	alice   = tron.AddressFromBytes20([20]byte{0xa1, 0x1c, 0xe0})
)

type env struct {
	clock  *manualClock
	mu     sync.Mutex
	node   *mocknode.Node
	signer *tron.HMACSigner
	srv    *httptest.Server
	client *Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{clock: &manualClock{now: genesis}, signer: tron.NewHMACSigner([]byte("k"))}
	e.node = mocknode.New(e.clock, mocknode.Config{Genesis: genesis, SolidLag: 1, HotWallet: hot, HotBalance: 1_000_000, Verifier: e.signer})
	s := &Server{
		Node: func(caller string) tron.Node { return Serialized(&e.mu, e.node.Client("http:"+caller)) },
		Truth: func() Truth {
			e.mu.Lock()
			defer e.mu.Unlock()
			return Truth{Wire: e.node.Wire(), Accepted: e.node.Accepted(), Inclusions: e.node.Inclusions(),
				Blocks: e.node.Blocks(), Solid: e.node.Solid(), HotWallet: hot}
		},
	}
	e.srv = httptest.NewServer(s.Handler())
	t.Cleanup(e.srv.Close)
	var err error
	if e.client, err = NewClient(e.srv.URL, Options{Caller: "w1", Timeout: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) tx(t *testing.T, memo string, amount uint64) tron.Transaction {
	t.Helper()
	e.mu.Lock()
	head, solid := e.node.Head(), e.node.Solid()
	e.mu.Unlock()
	rb, rh := solid.Ref()
	raw := tron.RawData{
		RefBlockBytes: rb, RefBlockHash: rh,
		Expiration: head.Time.Add(60 * time.Second).UnixMilli(),
		Timestamp:  e.clock.Now().UnixMilli(), FeeLimit: 1, Memo: []byte(memo),
		Contract: tron.TriggerSmartContract{Owner: hot, Contract: tron.USDTContract, Data: tron.EncodeTransfer(alice, amount)},
	}
	sig, err := e.signer.Sign(context.Background(), raw)
	if err != nil {
		t.Fatal(err)
	}
	return tron.Transaction{Raw: raw, Signature: sig}
}

// Goal: every node call survives the trip: the answers over HTTP are the
// mock's own, byte for byte, through pending, inclusion (logs and receipt)
// and solidity; the node records the caller's name; the ground truth comes
// back equal to the mock's accessors.
func TestRoundTrip(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.clock.add(10 * time.Second)
	direct := e.node.Client("direct")

	tx := e.tx(t, "op-1", 1234)
	res, err := e.client.Broadcast(ctx, tx)
	if err != nil || res.Code != tron.CodeSuccess {
		t.Fatalf("broadcast: %+v, %v; want SUCCESS", res, err)
	}
	if res, err := e.client.Broadcast(ctx, tx); err != nil || res.Code != tron.CodeDupTransactionError {
		t.Fatalf("re-broadcast: %+v, %v; want DUP_TRANSACTION_ERROR", res, err)
	}
	bad := tx
	bad.Signature = []byte("forged")
	if res, err := e.client.Broadcast(ctx, bad); err != nil || res.Code != tron.CodeSigError {
		t.Fatalf("forged broadcast: %+v, %v; want SIGERROR", res, err)
	}
	info, err := e.client.Lookup(ctx, tx.Txid())
	if err != nil || info.Status != tron.Pending {
		t.Fatalf("lookup: %+v, %v; want pending", info, err)
	}
	for _, step := range []string{"included", "solid"} {
		e.clock.add(3 * time.Second)
		got, err := e.client.Lookup(ctx, tx.Txid())
		if err != nil {
			t.Fatal(err)
		}
		e.mu.Lock()
		want, _ := direct.Lookup(ctx, tx.Txid())
		e.mu.Unlock()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: lookup over HTTP\n got %+v\nwant %+v", step, got, want)
		}
		if got.Status != tron.Included || len(got.Logs) != 1 || got.Receipt != tron.ReceiptSuccess {
			t.Fatalf("%s: lookup %+v: want included with SUCCESS and one log", step, got)
		}
		if step == "solid" && !got.Solid {
			t.Fatalf("lookup after the next block: not solid")
		}
	}
	for name, f := range map[string]func(context.Context) (tron.Block, error){"head": e.client.HeadBlock, "solid": e.client.SolidBlock} {
		got, err := f(ctx)
		if err != nil {
			t.Fatal(err)
		}
		e.mu.Lock()
		want := e.node.Head()
		if name == "solid" {
			want = e.node.Solid()
		}
		e.mu.Unlock()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s block over HTTP: got %+v, want %+v", name, got, want)
		}
	}

	truth, err := e.client.Truth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	want := Truth{Wire: e.node.Wire(), Accepted: e.node.Accepted(), Inclusions: e.node.Inclusions(),
		Blocks: e.node.Blocks(), Solid: e.node.Solid(), HotWallet: hot}
	e.mu.Unlock()
	if !reflect.DeepEqual(truth, want) {
		t.Errorf("truth over HTTP differs from the mock's:\n got %+v\nwant %+v", truth, want)
	}
	if len(truth.Wire) != 3 || truth.Wire[0].Worker != "http:w1" {
		t.Errorf("wire: %+v; want 3 broadcasts recorded under http:w1", truth.Wire)
	}
}

// Goal: a mangled transaction never reaches the node: the server checks the
// txid the client named against the bytes.
func TestServerRefusesMangledTransaction(t *testing.T) {
	e := newEnv(t)
	tx := e.tx(t, "op-1", 5)
	j := encodeTx(tx)
	j.FeeLimit++
	var ans broadcastAnswer
	err := e.client.call(context.Background(), PathBroadcast, broadcastRequest{Transaction: j}, &ans)
	if err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("mangled broadcast: %v; want a 400", err)
	}
	if w := e.node.Wire(); len(w) != 0 {
		t.Fatalf("the node saw %d broadcasts; want none", len(w))
	}
}

// Goal: no answer in time is tron.ErrTimeout (ambiguous), from the client's
// own timeout, the caller's deadline, or a 504; a refused connection and a
// 502 are errors that are not timeouts.
func TestErrors(t *testing.T) {
	block := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	defer slow.Close()
	defer close(block)
	c, err := NewClient(slow.URL, Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.HeadBlock(context.Background()); !errors.Is(err, tron.ErrTimeout) {
		t.Errorf("slow node, client timeout: %v; want tron.ErrTimeout", err)
	}
	c2, _ := NewClient(slow.URL, Options{Timeout: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c2.Lookup(ctx, tron.Txid{1}); !errors.Is(err, tron.ErrTimeout) {
		t.Errorf("slow node, caller deadline: %v; want tron.ErrTimeout", err)
	}

	failing := &Server{Node: func(string) tron.Node { return failNode{} }}
	fs := httptest.NewServer(failing.Handler())
	defer fs.Close()
	c3, _ := NewClient(fs.URL, Options{})
	if _, err := c3.HeadBlock(context.Background()); !errors.Is(err, tron.ErrTimeout) {
		t.Errorf("node timing out behind the server: %v; want tron.ErrTimeout", err)
	}
	if _, err := c3.SolidBlock(context.Background()); err == nil || errors.Is(err, tron.ErrTimeout) || !strings.Contains(err.Error(), "502") {
		t.Errorf("node failing behind the server: %v; want a 502 that is not a timeout", err)
	}
	// A send that failed behind the server is a failure, not a timeout,
	// whatever it may have done: the caller's metrics tell the two apart.
	tx := tron.Transaction{Raw: tron.RawData{Expiration: 1, Timestamp: 1, FeeLimit: 1,
		Contract: tron.TriggerSmartContract{Owner: hot, Contract: tron.USDTContract, Data: tron.EncodeTransfer(alice, 1)}}}
	if _, err := c3.Broadcast(context.Background(), tx); err == nil || errors.Is(err, tron.ErrTimeout) || !strings.Contains(err.Error(), "502") {
		t.Errorf("node failing a send behind the server: %v; want a 502 that is not a timeout", err)
	}
	if _, err := c3.Truth(context.Background()); err == nil {
		t.Errorf("truth from a server without Truth: no error")
	}

	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL
	dead.Close()
	c4, _ := NewClient(url, Options{})
	if _, err := c4.HeadBlock(context.Background()); err == nil || errors.Is(err, tron.ErrTimeout) {
		t.Errorf("refused connection: %v; want an error that is not a timeout", err)
	}
	for _, bad := range []string{"", "ftp://x", "http://", "http://h/?q=1", "::"} {
		if _, err := NewClient(bad, Options{}); err == nil {
			t.Errorf("NewClient(%q): no error", bad)
		}
	}
}

// failNode times out on HeadBlock and fails otherwise.
type failNode struct{}

func (failNode) Broadcast(context.Context, tron.Transaction) (tron.BroadcastResult, error) {
	return tron.BroadcastResult{}, errors.New("down")
}
func (failNode) Lookup(context.Context, tron.Txid) (tron.TxInfo, error) {
	return tron.TxInfo{}, errors.New("down")
}
func (failNode) HeadBlock(context.Context) (tron.Block, error) {
	return tron.Block{}, tron.ErrTimeout
}
func (failNode) SolidBlock(context.Context) (tron.Block, error) {
	return tron.Block{}, errors.New("down")
}

// Goal: every call's failure behind the server reaches the client as what
// it was, whichever call failed: a node's timeout as tron.ErrTimeout (the
// server's 504), any other failure as an error that is not a timeout (a
// 502). The caller's metrics and its patience tell the two apart, so a
// handler that maps one call's failures by hand shows a slow node as a
// broken one. (Independent bug 122 answered every failed lookup 502.)
// Method: a node that fails every call with the same error, each call
// through the server and client, for a timeout (bare and wrapped, as the
// mock node wraps it) and for a plain error.
func TestFailuresKeepTheirClassAcrossTheWire(t *testing.T) {
	tx := tron.Transaction{Raw: tron.RawData{Expiration: 1, Timestamp: 1, FeeLimit: 1,
		Contract: tron.TriggerSmartContract{Owner: hot, Contract: tron.USDTContract, Data: tron.EncodeTransfer(alice, 1)}}}
	calls := []struct {
		name string
		call func(*Client) error
	}{
		{"broadcast", func(c *Client) error { _, err := c.Broadcast(context.Background(), tx); return err }},
		{"lookup", func(c *Client) error { _, err := c.Lookup(context.Background(), tron.Txid{1}); return err }},
		{"head block", func(c *Client) error { _, err := c.HeadBlock(context.Background()); return err }},
		{"solid block", func(c *Client) error { _, err := c.SolidBlock(context.Background()); return err }},
	}
	for _, f := range []struct {
		name    string
		err     error
		timeout bool
	}{
		{"a timeout", tron.ErrTimeout, true},
		{"a wrapped timeout", fmt.Errorf("node 2: lookup: %w", tron.ErrTimeout), true},
		{"a plain error", errors.New("connection reset by peer"), false},
	} {
		srv := &Server{Node: func(string) tron.Node { return sameFailure{f.err} }}
		hs := httptest.NewServer(srv.Handler())
		c, err := NewClient(hs.URL, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, call := range calls {
			err := call.call(c)
			switch {
			case err == nil:
				t.Errorf("%s behind the server, %s: no error", f.name, call.name)
			case errors.Is(err, tron.ErrTimeout) != f.timeout:
				t.Errorf("%s behind the server, %s: %v; a timeout on the client's side: %v, want %v", f.name, call.name, err, errors.Is(err, tron.ErrTimeout), f.timeout)
			}
		}
		hs.Close()
	}
}

// sameFailure fails every call with err.
type sameFailure struct{ err error }

func (s sameFailure) Broadcast(context.Context, tron.Transaction) (tron.BroadcastResult, error) {
	return tron.BroadcastResult{}, s.err
}
func (s sameFailure) Lookup(context.Context, tron.Txid) (tron.TxInfo, error) {
	return tron.TxInfo{}, s.err
}
func (s sameFailure) HeadBlock(context.Context) (tron.Block, error)  { return tron.Block{}, s.err }
func (s sameFailure) SolidBlock(context.Context) (tron.Block, error) { return tron.Block{}, s.err }
