package operator_test

// The operator's tests run the real worker, in-memory store and mock node
// under one manual clock, as sluice's failure matrix does: nothing sleeps,
// time moves only when a test says so, and the mock node's fault script
// puts operations where an operator meets them (parked, in review).

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/store"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

var (
	hotWallet = tron.AddressFromBytes20([20]byte{0xaa, 1, 2, 3})
	bob       = tron.AddressFromBytes20([20]byte{0xb0, 0xb0, 2, 3})
	signerKey = []byte("operator-test-key")
)

// clock is a manual clock (storetest's, which is not imported so that these
// tests do not depend on the conformance suite building).
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type world struct {
	t      *testing.T
	ctx    context.Context
	clock  *clock
	store  *store.Memory
	node   *mocknode.Node
	cfg    sluice.Config
	worker *sluice.Worker
	svc    *operator.Service
	seq    int
	// acts is every action the service's observer heard.
	acts []operator.Action
}

func newWorld(t *testing.T, tweak func(*sluice.Config)) *world {
	t.Helper()
	c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	signer := tron.NewHMACSigner(signerKey)
	w := &world{
		t:     t,
		ctx:   context.Background(),
		clock: c,
		store: store.NewMemory(c, 30*time.Second),
		node: mocknode.New(c, mocknode.Config{
			Genesis:    c.Now().Add(-10 * time.Minute),
			HotWallet:  hotWallet,
			HotBalance: 1_000_000 * 1_000_000,
			Verifier:   signer,
		}),
		cfg: sluice.DefaultConfig(),
	}
	if tweak != nil {
		tweak(&w.cfg)
	}
	if err := w.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	w.worker = &sluice.Worker{
		ID: "w1",
		Pipeline: &sluice.Pipeline{Store: w.store, Node: w.node.Client("w1"), Signer: signer, Clock: c,
			HotWallet: hotWallet, Config: w.cfg},
		Rand: rand.New(rand.NewPCG(1, 2)),
	}
	w.svc = &operator.Service{Store: w.store, Node: w.node.Client("operator"), HotWallet: hotWallet,
		Clock: c, Config: w.cfg, Observer: observerFunc(func(a operator.Action) { w.acts = append(w.acts, a) })}
	return w
}

type observerFunc func(operator.Action)

func (f observerFunc) ObserveAction(a operator.Action) { f(a) }

// fund credits customer with amount (a decimal string).
func (w *world) fund(customer, amount string) {
	w.t.Helper()
	a, err := money.Parse(amount)
	if err != nil {
		w.t.Fatal(err)
	}
	if _, _, err := w.store.Credit(w.ctx, sluice.Credit{Ref: "fund:" + customer + ":" + amount, Customer: sluice.CustomerID(customer), Amount: a}); err != nil {
		w.t.Fatal(err)
	}
}

// submit posts a withdrawal through intake, as a client would. Ids are
// minted in order, so the n-th operation has the same id in every run.
func (w *world) submit(customer, amount string) sluice.OperationID {
	w.t.Helper()
	w.seq++
	id := fmt.Sprintf("00000000-0000-4000-8000-%012d", w.seq)
	res, err := (&intake.Service{Store: w.store}).Submit(w.ctx, intake.Submission{
		OperationID: id, Customer: customer, ToAddress: bob.String(), Amount: amount, Asset: sluice.Asset})
	if err != nil {
		w.t.Fatalf("submit %s: %v", id, err)
	}
	return res.Operation.ID
}

// run moves the clock in steps of one second for d, ticking the worker at
// each step.
func (w *world) run(d time.Duration) {
	w.t.Helper()
	for range int(d / time.Second) {
		w.clock.advance(time.Second)
		if _, err := w.worker.Tick(w.ctx); err != nil {
			w.t.Fatalf("tick: %v", err)
		}
	}
}

// runUntil ticks until id's row satisfies done, for at most limit.
func (w *world) runUntil(id sluice.OperationID, limit time.Duration, done func(sluice.Operation) bool) sluice.Operation {
	w.t.Helper()
	for range int(limit / time.Second) {
		if op := w.get(id); done(op) {
			return op
		}
		w.run(time.Second)
	}
	op := w.get(id)
	if !done(op) {
		w.t.Fatalf("%s after %s: %s parks=%d park=%q reason=%q: not where the test needs it", id, limit, op.State, op.Parks, op.ParkReason, op.Reason)
	}
	return op
}

// idle moves the clock without ticking the worker, and lets the chain
// produce the blocks of that time.
func (w *world) idle(d time.Duration) {
	w.clock.advance(d)
	w.node.Advance()
}

func (w *world) get(id sluice.OperationID) sluice.Operation {
	w.t.Helper()
	op, err := w.store.Get(w.ctx, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return op
}

func (w *world) events(id sluice.OperationID) []sluice.Event {
	w.t.Helper()
	evs, err := w.store.Events(w.ctx, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return evs
}

func (w *world) account(c string) sluice.Account {
	w.t.Helper()
	a, err := w.store.Account(w.ctx, sluice.CustomerID(c))
	if err != nil {
		w.t.Fatal(err)
	}
	return a
}

func (w *world) hold(id sluice.OperationID) sluice.Hold {
	w.t.Helper()
	h, err := w.store.Hold(w.ctx, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return h
}

// parkedInBroadcasting makes an operation whose first send the node refuses
// for bandwidth: parked in broadcasting, its txid never taken by any node.
func (w *world) parkedInBroadcasting(customer string) sluice.OperationID {
	w.t.Helper()
	w.node.Next(mocknode.Broadcast, mocknode.BandwidthExhausted)
	id := w.submit(customer, "10")
	w.run(time.Second)
	op := w.get(id)
	if op.State != sluice.Broadcasting || !op.Parked() {
		w.t.Fatalf("%s: %s parked=%v, want parked in broadcasting", id, op.State, op.Parked())
	}
	return id
}

// reviewAfterParking makes an operation that went to review past the park
// bounds (ParkLimit 1) while its transaction lands exactly: the first send
// is lost, two re-sends are refused for bandwidth (a park, then review),
// and a peer that got the bytes hands them to the chain; the transaction
// is included, not yet solid.
func (w *world) reviewAfterParking(customer string) sluice.OperationID {
	w.t.Helper()
	if w.cfg.ParkLimit != 1 {
		w.t.Fatal("reviewAfterParking needs ParkLimit 1")
	}
	w.node.Next(mocknode.Broadcast, mocknode.LoseRequest)
	w.node.Next(mocknode.Broadcast, mocknode.BandwidthExhausted)
	w.node.Next(mocknode.Broadcast, mocknode.BandwidthExhausted)
	id := w.submit(customer, "10")
	op := w.runUntil(id, time.Minute, func(op sluice.Operation) bool { return op.State == sluice.Review })
	tx := tron.Transaction{Raw: op.Envelope.Raw, Signature: op.Envelope.Signature}
	if res, err := w.node.Client("peer").Broadcast(w.ctx, tx); err != nil || res.Code != tron.CodeSuccess {
		w.t.Fatalf("a peer's relay of %s: %v %v", op.Envelope.Txid.Short(), res.Code, err)
	}
	w.run(4 * time.Second)
	return id
}

// act is an operator's signature on an action.
var act = operator.Act{Operator: "alice", Why: "ticket 42"}
