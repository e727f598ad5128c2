package mocknode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// testClock is a hand-driven virtual clock.
type testClock struct{ now time.Time }

func (c *testClock) Now() time.Time { return c.now }

// genesis is slot-aligned: 1735689600 s is a multiple of 3.
var genesis = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

var (
	hot   = tron.AddressFromBytes20([20]byte{0x11, 0x11, 0x11})
	alice = tron.AddressFromBytes20([20]byte{0xa1, 0x1c, 0xe0})
	bob   = tron.AddressFromBytes20([20]byte{0xb0, 0xb0, 0xb0})
)

const hotStart = 1_000_000_000 // 1000 USDT

// env is one node under a test clock with a worker client "w1" and the hot
// wallet's signer.
type env struct {
	t      *testing.T
	clock  *testClock
	node   *Node
	signer *tron.HMACSigner
	w1     tron.Node
}

func newEnv(t *testing.T, mod func(*Config)) *env {
	t.Helper()
	signer := tron.NewHMACSigner([]byte("hot wallet key"))
	cfg := Config{
		Genesis:    genesis,
		HotWallet:  hot,
		HotBalance: hotStart,
		Verifier:   signer,
	}
	if mod != nil {
		mod(&cfg)
	}
	clock := &testClock{now: genesis}
	n := New(clock, cfg)
	return &env{t: t, clock: clock, node: n, signer: signer, w1: n.Client("w1")}
}

// at sets the clock to genesis + d.
func (e *env) at(d time.Duration) { e.clock.now = genesis.Add(d) }

// after moves the clock forward by d.
func (e *env) after(d time.Duration) { e.clock.now = e.clock.now.Add(d) }

// raw builds a USDT transfer of amount to alice the way sluice would: TAPoS on
// the solid block, expiration head + 60 s, the memo making it unique. mods
// change the raw data before signing.
func (e *env) raw(memo string, amount uint64, mods ...func(*tron.RawData)) tron.RawData {
	solid := e.node.Solid()
	head := e.node.Head()
	refBytes, refHash := solid.Ref()
	r := tron.RawData{
		RefBlockBytes: refBytes,
		RefBlockHash:  refHash,
		Expiration:    head.Time.Add(60 * time.Second).UnixMilli(),
		Timestamp:     e.clock.now.UnixMilli(),
		FeeLimit:      100_000_000,
		Memo:          []byte(memo),
		Contract: tron.TriggerSmartContract{
			Owner:    hot,
			Contract: tron.USDTContract,
			Data:     tron.EncodeTransfer(alice, amount),
		},
	}
	for _, m := range mods {
		m(&r)
	}
	return r
}

// sign signs r with the hot wallet's key.
func (e *env) sign(r tron.RawData) tron.Transaction {
	sig, err := e.signer.Sign(context.Background(), r)
	if err != nil {
		e.t.Fatalf("Sign: %v", err)
	}
	return tron.Transaction{Raw: r, Signature: sig}
}

// tx is raw + sign.
func (e *env) tx(memo string, amount uint64, mods ...func(*tron.RawData)) tron.Transaction {
	return e.sign(e.raw(memo, amount, mods...))
}

// send broadcasts tx as w1 and returns what the caller saw: a code, or
// "timeout".
func (e *env) send(tx tron.Transaction) string {
	return sendAs(e.t, e.w1, tx)
}

func sendAs(t *testing.T, c tron.Node, tx tron.Transaction) string {
	t.Helper()
	res, err := c.Broadcast(context.Background(), tx)
	if errors.Is(err, tron.ErrTimeout) {
		return AnswerTimeout
	}
	if err != nil {
		t.Fatalf("Broadcast(%s) error %v, want a code or ErrTimeout", tx.Txid().Short(), err)
	}
	return string(res.Code)
}

// mustSend fails the test unless broadcasting tx is answered with want.
func (e *env) mustSend(tx tron.Transaction, want tron.Code) {
	e.t.Helper()
	if got := e.send(tx); got != string(want) {
		e.t.Fatalf("Broadcast(%s) = %s, want %s", tx.Txid().Short(), got, want)
	}
}

// status is the ground-truth status of a txid.
func (e *env) status(id tron.Txid) tron.Status { return e.node.TxInfo(id).Status }

// expires sets the expiration to t.
func expires(t time.Time) func(*tron.RawData) {
	return func(r *tron.RawData) { r.Expiration = t.UnixMilli() }
}

// refTo makes the transaction reference block b.
func refTo(b tron.Block) func(*tron.RawData) {
	return func(r *tron.RawData) { r.RefBlockBytes, r.RefBlockHash = b.Ref() }
}

func eventCount(n *Node, ev Event) int {
	for _, c := range n.Events() {
		if c.Event == ev {
			return c.Count
		}
	}
	panic(fmt.Sprintf("no event %v", ev))
}

func firedCount(n *Node, f Fault) int {
	for _, c := range n.FaultsFired() {
		if c.Fault == f {
			return c.Count
		}
	}
	return 0
}

func totalAcceptances(n *Node) int {
	sum := 0
	for _, a := range n.Accepted() {
		sum += a.Times
	}
	return sum
}

// netEnv is a network of nodes under a test clock. Its env is node 0's (the
// producer's): e.tx builds on the canonical chain, e.send sends to node 0.
type netEnv struct {
	*env
	net *Network
}

func newNetEnv(t *testing.T, nodes int, mod func(*Config)) *netEnv {
	t.Helper()
	signer := tron.NewHMACSigner([]byte("hot wallet key"))
	cfg := Config{
		Genesis:    genesis,
		HotWallet:  hot,
		HotBalance: hotStart,
		Verifier:   signer,
	}
	if mod != nil {
		mod(&cfg)
	}
	clock := &testClock{now: genesis}
	net := NewNetwork(clock, cfg, nodes)
	n0 := net.Node(0)
	return &netEnv{env: &env{t: t, clock: clock, node: n0, signer: signer, w1: n0.Client("w1")}, net: net}
}

// on is worker w1's client on node i.
func (e *netEnv) on(i int) tron.Node { return e.net.Node(i).Client("w1") }

// sendTo broadcasts tx to node i as w1 and returns what the caller saw.
func (e *netEnv) sendTo(i int, tx tron.Transaction) string {
	e.t.Helper()
	return sendAs(e.t, e.on(i), tx)
}

// statusOn is what node i would say about id.
func (e *netEnv) statusOn(i int, id tron.Txid) tron.Status { return e.net.Node(i).TxInfo(id).Status }

// statuses is what every node would say about id, in node order.
func (e *netEnv) statuses(id tron.Txid) []tron.Status {
	var out []tron.Status
	for _, n := range e.net.Nodes() {
		out = append(out, n.TxInfo(id).Status)
	}
	return out
}

// mustPanic fails the test unless f panics with a message containing want.
func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("did not panic, want a panic about %q", want)
			return
		}
		if msg := fmt.Sprint(r); !strings.Contains(msg, want) {
			t.Errorf("panic %q, want it to mention %q", msg, want)
		}
	}()
	f()
}

// transfers decodes every Transfer log in logs; other logs are counted.
func transfers(logs []tron.Log) (out []tron.Transfer, others int) {
	for _, l := range logs {
		if tr, ok := tron.ParseTransferLog(l); ok {
			out = append(out, tr)
		} else {
			others++
		}
	}
	return out, others
}
