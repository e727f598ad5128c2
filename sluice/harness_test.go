package sluice_test

// The failure matrix runs the real pipeline, worker, in-memory store and mock
// node under one manual clock. Nothing sleeps: time moves only when a test
// says so. A crash is a panic(crash{}) thrown from a wrapped dependency at the
// chosen boundary; the harness recovers it at the top, where a kill -9 would
// have ended the process, and the dead worker is never used again.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

const lease = 30 * time.Second

var (
	hotWallet = tron.AddressFromBytes20([20]byte{0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	alice     = tron.AddressFromBytes20([20]byte{0xa1, 0xce, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	signerKey = []byte("hot-wallet-test-key")
)

// customer is whose balance every withdrawal is paid from unless a script
// names another. newWorld credits it with deposit, so a story that is not
// about funds never meets ErrInsufficientFunds; the stories about funds
// read the numbers with the ledger command.
const (
	customer = sluice.CustomerID("alice")
	deposit  = money.Amount(1000 * 1_000_000)
)

// manualClock is the one clock of a world (store, node and workers):
// time moves only when a test says so. It starts at a fixed instant, so
// that times in traces are the same on every run. It is the harness's own
// rather than the conformance suite's, so that these stories do not depend
// on the store test suite's package compiling.
type manualClock struct{ offset time.Duration }

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *manualClock) Now() time.Time { return epoch.Add(c.offset) }

// Advance moves the clock forward; a negative d is a bug in the test.
func (c *manualClock) Advance(d time.Duration) {
	if d < 0 {
		panic(fmt.Sprintf("manualClock.Advance(%s): time does not go back", d))
	}
	c.offset += d
}

// crash is what a wrapped dependency panics with to kill its worker.
type crash struct{ where string }

type world struct {
	t      *testing.T
	ctx    context.Context
	clock  *manualClock
	store  *store.Memory
	node   *mocknode.Node
	signer *tron.HMACSigner
	cfg    sluice.Config
	seq    int
}

func newWorld(t *testing.T) *world {
	t.Helper()
	clock := &manualClock{}
	start := clock.Now()
	signer := tron.NewHMACSigner(signerKey)
	w := &world{
		t:     t,
		ctx:   context.Background(),
		clock: clock,
		store: store.NewMemory(clock, lease),
		node: mocknode.New(clock, mocknode.Config{
			// Ten minutes of chain before the first request, so the solid
			// head is well above genesis.
			Genesis:    start.Add(-10 * time.Minute),
			HotWallet:  hotWallet,
			HotBalance: 1_000_000 * 1_000_000,
			Verifier:   signer,
		}),
		signer: signer,
		cfg:    sluice.DefaultConfig(),
	}
	if err := w.cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.store.Credit(w.ctx, sluice.Credit{Ref: "deposit-1", Customer: customer, Amount: deposit}); err != nil {
		t.Fatal(err)
	}
	return w
}

// submit inserts a withdrawal of amount (a decimal string) to alice.
func (w *world) submit(amount string) sluice.OperationID {
	w.t.Helper()
	a, err := money.Parse(amount)
	if err != nil {
		w.t.Fatalf("money.Parse(%q): %v", amount, err)
	}
	id, err := w.insert(customer, a)
	if err != nil {
		w.t.Fatal(err)
	}
	return id
}

// insert is submit for callers that print a refused insert rather than
// fail on it (insufficient funds, say). Ids are minted in order, so the
// n-th operation has the same id in every run.
func (w *world) insert(c sluice.CustomerID, a money.Amount) (sluice.OperationID, error) {
	return w.insertTo(c, alice, a)
}

// insertTo is insert with a recipient other than alice.
func (w *world) insertTo(c sluice.CustomerID, to tron.Address, a money.Amount) (sluice.OperationID, error) {
	w.seq++
	id := sluice.OperationID(fmt.Sprintf("00000000-0000-4000-8000-%012d", w.seq))
	_, created, err := w.store.Insert(w.ctx, sluice.NewOperation{
		ID:          id,
		Request:     sluice.Request{Customer: c, To: to, Amount: a, Asset: sluice.Asset},
		RequestHash: fmt.Sprintf("hash-%d", w.seq),
	})
	if err == nil && !created {
		err = fmt.Errorf("Insert(%s) found the id taken", id)
	}
	return id, err
}

// proc is one worker incarnation with its hookable dependencies.
type proc struct {
	w      *world
	name   string
	worker *sluice.Worker
	node   *hookNode
	signer *hookSigner
	store  *hookStore
	dead   bool
	// crashedAt is the where of the crash that killed the proc, so that a
	// trace can say at which boundary the process died.
	crashedAt string
}

func (w *world) spawn(name string) *proc {
	p := &proc{w: w, name: name}
	p.node = &hookNode{inner: w.node.Client(name), blocks: w.node.Blocks}
	p.signer = &hookSigner{inner: w.signer}
	p.store = &hookStore{Store: w.store}
	p.worker = &sluice.Worker{
		ID: sluice.WorkerID(name),
		Pipeline: &sluice.Pipeline{
			Store: p.store, Node: p.node, Signer: p.signer, Clock: w.clock,
			HotWallet: hotWallet, Config: w.cfg,
		},
		Rand: rand.New(rand.NewPCG(1, uint64(len(name)))),
	}
	return p
}

// tick runs one Tick; a crash panic kills the process.
func (p *proc) tick() (rep sluice.TickReport, crashed bool) {
	p.w.t.Helper()
	if p.dead {
		p.w.t.Fatalf("%s is dead and ticked again", p.name)
	}
	rep, crashed, err := p.tryTick()
	if err != nil {
		p.w.t.Fatalf("%s: Tick: %v", p.name, err)
	}
	return rep, crashed
}

// tryTick is tick for callers that report a Tick error instead of failing
// on it: the scripts print it into their golden output. Any panic other than
// a crash (a bug in the core, or a script error raised inside a hook) goes
// on up.
func (p *proc) tryTick() (rep sluice.TickReport, crashed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(crash)
			if !ok {
				panic(r)
			}
			p.dead, p.crashedAt, crashed = true, c.where, true
		}
	}()
	rep, err = p.worker.Tick(p.w.ctx)
	return rep, false, err
}

// run ticks the live procs, advancing the clock one second whenever nobody
// had anything to claim, until every operation is terminal or the virtual
// time budget is spent.
func (w *world) run(budget time.Duration, procs ...*proc) {
	w.t.Helper()
	deadline := w.clock.Now().Add(budget)
	for !w.settled() {
		if w.clock.Now().After(deadline) {
			w.t.Fatalf("not settled within %s of virtual time:\n%s", budget, w.dump())
		}
		w.round(procs)
	}
}

// round ticks every live proc once; if none of them had work, one second
// of virtual time passes.
func (w *world) round(procs []*proc) {
	claimed := 0
	for _, p := range procs {
		if !p.dead {
			rep, _ := p.tick()
			claimed += rep.Claimed
		}
	}
	if claimed == 0 {
		w.clock.Advance(time.Second)
	}
}

func (w *world) settled() bool {
	for _, op := range w.store.Snapshot().Operations {
		if !op.State.Terminal() {
			return false
		}
	}
	return true
}

func (w *world) op(id sluice.OperationID) sluice.Operation {
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

func (w *world) dump() string {
	s := ""
	for _, e := range w.store.Snapshot().Events {
		s += fmt.Sprintf("  #%d %s %s %s->%s token=%d txid=%s %s\n", e.Seq, e.At.Format("15:04:05"), e.Worker, e.From, e.To, e.Token, e.Txid.Short(), e.Note)
	}
	for _, a := range w.node.Wire() {
		s += fmt.Sprintf("  wire: %s %s %s\n", a.Worker, a.Txid.Short(), a.Answer)
	}
	return s
}

// --- ground truth helpers ---

// inclusions returns the txids on chain, in chain order.
func (w *world) inclusions() []tron.Txid {
	var ids []tron.Txid
	for _, in := range w.node.Inclusions() {
		ids = append(ids, in.Txid)
	}
	return ids
}

func (w *world) rebuilds(id sluice.OperationID) []sluice.Event {
	var out []sluice.Event
	for _, e := range w.events(id) {
		if !e.RetiredTxid.IsZero() {
			out = append(out, e)
		}
	}
	return out
}

// auditEvidence re-checks a rebuild's (or give-up's) evidence against the
// chain, from outside the core: the proof must be one anyone could verify
// after the fact. It returns what does not check out, nothing if all does.
func (w *world) auditEvidence(e sluice.Event) []string {
	ev := e.Evidence
	if ev == nil {
		return []string{fmt.Sprintf("event #%d carries no evidence", e.Seq)}
	}
	// The txid whose death the evidence claims: the one retired, or, on a
	// review that retires nothing, the operation's current one.
	dead := e.RetiredTxid
	if dead.IsZero() {
		dead = e.Txid
	}
	var bad []string
	if !ev.Proves() || ev.Txid != dead {
		bad = append(bad, fmt.Sprintf("evidence %s does not prove the death of %s", ev, dead.Short()))
	}
	if ev.Lookup == tron.Included {
		return append(bad, w.auditReceipt(*ev)...)
	}
	var blk tron.Block
	ok := false
	for _, b := range w.node.Blocks() {
		if b.Number == ev.SolidNumber {
			blk, ok = b, true
		}
	}
	if !ok || !blk.Time.Equal(ev.SolidTime) {
		bad = append(bad, fmt.Sprintf("evidence solid block #%d@%s, chain has %v (found %v)", ev.SolidNumber, ev.SolidTime, blk.Time, ok))
	}
	if blk.Time.Before(ev.Expiration.Add(ev.Margin)) {
		bad = append(bad, fmt.Sprintf("solid time %s is before expiration %s + margin %s", blk.Time, ev.Expiration, ev.Margin))
	}
	for _, id := range w.inclusions() {
		if id == dead {
			bad = append(bad, fmt.Sprintf("dead txid %s is on chain", id.Short()))
		}
	}
	return bad
}

// auditReceipt checks the other proof of death: the txid is on chain, in
// the block the evidence names, with the failure receipt it names, it moved
// no token, and that block is at or below a solid block that exists.
func (w *world) auditReceipt(ev sluice.Evidence) []string {
	var bad []string
	found := false
	for _, in := range w.node.Inclusions() {
		if in.Txid != ev.Txid {
			continue
		}
		found = true
		if in.BlockNumber != ev.BlockNumber || in.Receipt != ev.Receipt {
			bad = append(bad, fmt.Sprintf("chain has %s in #%d with receipt %s, evidence says #%d with %s",
				ev.Txid.Short(), in.BlockNumber, in.Receipt, ev.BlockNumber, ev.Receipt))
		}
		if len(in.Moved) > 0 {
			bad = append(bad, fmt.Sprintf("%s moved tokens on chain", ev.Txid.Short()))
		}
	}
	if !found {
		bad = append(bad, fmt.Sprintf("%s is not on chain", ev.Txid.Short()))
	}
	if solid := w.node.Solid(); solid.Number < ev.SolidNumber || ev.BlockNumber > ev.SolidNumber {
		bad = append(bad, fmt.Sprintf("block #%d is not at or below a solid block (evidence solid #%d, chain solid #%d)",
			ev.BlockNumber, ev.SolidNumber, solid.Number))
	}
	return bad
}

func (w *world) wantState(id sluice.OperationID, want sluice.State) sluice.Operation {
	w.t.Helper()
	op := w.op(id)
	if op.State != want {
		w.t.Fatalf("%s state = %s, want %s (reason %q)\n%s", id, op.State, want, op.Reason, w.dump())
	}
	return op
}

// --- hookable dependencies ---

type hookNode struct {
	inner tron.Node
	// beforeBroadcast may panic(crash{}) (the request never leaves) or
	// answer itself (ok=true) without forwarding.
	beforeBroadcast func(tx tron.Transaction) (res tron.BroadcastResult, err error, ok bool)
	// afterBroadcast may panic(crash{}): the node acted, the caller never
	// learns the answer.
	afterBroadcast func(tx tron.Transaction, res tron.BroadcastResult, err error)
	// solidLag > 0 answers SolidBlock with the block that many below the
	// node's solid one, as a lagging node behind a balancer would, while
	// lookups still come from the node itself.
	solidLag int64
	blocks   func() []tron.Block
}

func (h *hookNode) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	if h.beforeBroadcast != nil {
		if res, err, ok := h.beforeBroadcast(tx); ok {
			return res, err
		}
	}
	res, err := h.inner.Broadcast(ctx, tx)
	if h.afterBroadcast != nil {
		h.afterBroadcast(tx, res, err)
	}
	return res, err
}
func (h *hookNode) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	return h.inner.Lookup(ctx, id)
}
func (h *hookNode) HeadBlock(ctx context.Context) (tron.Block, error) { return h.inner.HeadBlock(ctx) }
func (h *hookNode) SolidBlock(ctx context.Context) (tron.Block, error) {
	b, err := h.inner.SolidBlock(ctx)
	if err != nil || h.solidLag == 0 {
		return b, err
	}
	for _, old := range h.blocks() {
		if old.Number == b.Number-h.solidLag {
			return old, nil
		}
	}
	panic(fmt.Sprintf("no block #%d below solid #%d", b.Number-h.solidLag, b.Number))
}

type hookSigner struct {
	inner tron.Signer
	calls int
	// before may panic(crash{}).
	before func(raw tron.RawData)
	// fail, if set, is every signing's error (a KMS that is down).
	fail error
}

func (h *hookSigner) Sign(ctx context.Context, raw tron.RawData) ([]byte, error) {
	h.calls++
	if h.before != nil {
		h.before(raw)
	}
	if h.fail != nil {
		return nil, h.fail
	}
	return h.inner.Sign(ctx, raw)
}

type hookStore struct {
	sluice.Store
	// beforeCAS runs before the change reaches the store; the zombie stories
	// let the rest of the world move on inside it.
	beforeCAS func(c sluice.Change)
	// afterCAS sees every write's outcome, fenced ones included: the
	// scripts' trace is made of these.
	afterCAS func(c sluice.Change, op sluice.Operation, err error)
	// afterClaim sees what each claim took, so a tick can say which rows
	// (and which tokens) it worked.
	afterClaim func(ops []sluice.Operation, err error)
	// afterPark sees every park: a park writes no event, so the trace
	// would not show it otherwise.
	afterPark func(p sluice.Park, op sluice.Operation, err error)
}

func (h *hookStore) Park(ctx context.Context, p sluice.Park) (sluice.Operation, error) {
	op, err := h.Store.Park(ctx, p)
	if h.afterPark != nil {
		h.afterPark(p, op, err)
	}
	return op, err
}

func (h *hookStore) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	if h.beforeCAS != nil {
		h.beforeCAS(c)
	}
	op, err := h.Store.CAS(ctx, c)
	if h.afterCAS != nil {
		h.afterCAS(c, op, err)
	}
	return op, err
}

func (h *hookStore) Claim(ctx context.Context, worker sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	ops, err := h.Store.Claim(ctx, worker, limit)
	if h.afterClaim != nil {
		h.afterClaim(ops, err)
	}
	return ops, err
}
