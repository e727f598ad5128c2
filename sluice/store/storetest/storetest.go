package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
)

// Factory returns a new, empty store that reads time from clock and grants
// leases of the given duration. Each subtest calls it once.
type Factory func(t *testing.T, clock sluice.Clock, lease time.Duration) sluice.Store

// Lease is the lease duration the suite gives every store.
const Lease = 30 * time.Second

// Run checks the whole sluice.Store contract against stores made by newStore.
func Run(t *testing.T, newStore Factory) {
	all := append(cases[:len(cases):len(cases)], perStateCases()...)
	all = append(all, refusedInsertCases()...)
	all = append(all, ledgerCases...)
	all = append(all, parkCases...)
	all = append(all, resolveCases()...)
	all = append(all, listCases...)
	for _, tc := range all {
		t.Run(tc.name, func(t *testing.T) {
			clock := &Clock{}
			s := newStore(t, clock, Lease)
			if s == nil {
				t.Fatal("factory returned a nil store")
			}
			e := &env{t: t, ctx: t.Context(), clock: clock, s: s}
			e.fund()
			tc.run(e)
		})
	}
}

// testCase is one subtest of Run.
type testCase = struct {
	name string
	run  func(*env)
}

var cases = []testCase{
	{"Insert/CreatesRequestedRowAndEvent", testInsertCreates},
	{"Insert/ReplayChangesNothing", testInsertReplay},
	{"UnknownOperation", testUnknownOperation},
	{"Claim/LeasesAndBumpsToken", testClaimLeases},
	{"Claim/RejectsBadArguments", testClaimValidation},
	{"Claim/RespectsLimitOldestFirst", testClaimLimitOldestFirst},
	{"Claim/SkipsLiveLeaseTakesExpired", testClaimLeaseExpiry},
	{"Claim/TokenGrowsWithEveryClaim", testClaimTokenGrows},
	{"Claim/SkipsTerminal", testClaimSkipsTerminal},
	{"CAS/AppliesChangeAndAppendsEvent", testCASHappyPath},
	{"CAS/KeepsFieldsNotGiven", testCASKeepsUnsetFields},
	{"CAS/StaleTokenIsFenced", testCASStaleToken},
	{"CAS/WrongFromStateIsFenced", testCASWrongFrom},
	{"CAS/FencingIsCheckedFirst", testCASFencingFirst},
	{"CAS/IllegalTransitionRefused", testCASIllegal},
	{"CAS/TransitionMatrix", testCASTransitionMatrix},
	{"CAS/LapsedLeaseWritesUntilReclaimed", testCASLapsedLease},
	{"Terminal/RowsAreBricks", testTerminalBricks},
	{"Txid/BelongsToOneOperationForever", testTxidTaken},
	{"Txid/SameOperationKeepsItsTxid", testTxidKept},
	{"Txid/EnvelopeMustMatchRaw", testEnvelopeMismatch},
	{"Release/StaleIsNoOp", testReleaseStale},
	{"Release/AnotherWorkerClaimsAtOnce", testReleaseImmediate},
	{"Release/AfterDelaysClaimExactly", testReleaseAfter},
	{"Release/TokenStillWritesButLeaseIsGone", testReleaseThenCAS},
	{"Events/InOrderPerOperation", testEventsOrder},
	{"InvalidValuesWriteNothing", testInvalidValues},
	{"NoAliasing", testNoAliasing},
	{"CanceledContextWritesNothing", testCanceledContext},
}

// ---------------------------------------------------------------------------
// Fixtures.

// env is one subtest's world: a fresh store and its clock.
type env struct {
	t     *testing.T
	ctx   context.Context
	clock *Clock
	s     sluice.Store
	envs  int // envelopes minted, so every envelope has its own txid
}

var (
	hotWallet = tron.AddressFromBytes20([20]byte{0xaa, 0x01, 0x02, 0x03})
	recipient = tron.AddressFromBytes20([20]byte{0xbb, 0x04, 0x05, 0x06})
)

// customer pays for every operation newOp makes. Run credits it with
// fixtureFunds before each subtest, enough for every insert a subtest makes;
// the ledger tests use customers of their own, whose every number they
// know.
const (
	customer     sluice.CustomerID = "storetest-customer"
	fixtureFunds money.Amount      = 1_000_000_000_000
	fixtureRef   string            = "storetest:fixture"
)

// fund credits customer with fixtureFunds.
func (e *env) fund() {
	e.t.Helper()
	acct, credited, err := e.s.Credit(e.ctx, sluice.Credit{Ref: fixtureRef, Customer: customer, Amount: fixtureFunds})
	if err != nil || !credited {
		e.t.Fatalf("fixture: Credit(%s, %d) = credited %v, %v", customer, fixtureFunds, credited, err)
	}
	want := sluice.Account{Customer: customer, Balance: fixtureFunds, Deposited: fixtureFunds}
	for _, d := range diffAccount(acct, want) {
		e.t.Fatalf("fixture: Credit returned %s", d)
	}
}

// id is a canonical lowercase UUID, as intake mints them, so a store that
// keeps ids in a uuid column accepts it.
func id(n int) sluice.OperationID {
	return sluice.OperationID(fmt.Sprintf("00000000-0000-4000-8000-%012d", n))
}

func newOp(n int) sluice.NewOperation {
	sum := sha256.Sum256([]byte(id(n)))
	return sluice.NewOperation{
		ID:          id(n),
		Request:     sluice.Request{Customer: customer, To: recipient, Amount: 1_000_000 + 1, Asset: sluice.Asset},
		RequestHash: hex.EncodeToString(sum[:]),
	}
}

// insert creates operation n, which must be new.
func (e *env) insert(n int) sluice.Operation {
	e.t.Helper()
	return e.insertOp(newOp(n))
}

// insertOp creates op, which must be new.
func (e *env) insertOp(op sluice.NewOperation) sluice.Operation {
	e.t.Helper()
	row, created, err := e.s.Insert(e.ctx, op)
	if err != nil || !created {
		e.t.Fatalf("Insert(%s) = created %v, err %v; want a new row", op.ID, created, err)
	}
	return row
}

// credit deposits amount to c under ref, which must be new.
func (e *env) credit(ref string, c sluice.CustomerID, amount money.Amount) sluice.Account {
	e.t.Helper()
	acct, credited, err := e.s.Credit(e.ctx, sluice.Credit{Ref: ref, Customer: c, Amount: amount})
	if err != nil || !credited {
		e.t.Fatalf("Credit(%s, %s, %d) = credited %v, %v; want a new credit", ref, c, amount, credited, err)
	}
	return acct
}

func (e *env) get(id sluice.OperationID) sluice.Operation {
	e.t.Helper()
	op, err := e.s.Get(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Get(%s): %v", id, err)
	}
	return op
}

func (e *env) events(id sluice.OperationID) []sluice.Event {
	e.t.Helper()
	evs, err := e.s.Events(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Events(%s): %v", id, err)
	}
	return evs
}

func (e *env) claim(worker sluice.WorkerID, limit int) []sluice.Operation {
	e.t.Helper()
	ops, err := e.s.Claim(e.ctx, worker, limit)
	if err != nil {
		e.t.Fatalf("Claim(%s, %d): %v", worker, limit, err)
	}
	return ops
}

// claimID claims one row and requires it to be want: tests arrange that it
// is the oldest claimable row.
func (e *env) claimID(worker sluice.WorkerID, want sluice.OperationID) sluice.Operation {
	e.t.Helper()
	ops := e.claim(worker, 1)
	if len(ops) != 1 || ops[0].ID != want {
		e.t.Fatalf("Claim(%s, 1) = %v, want exactly %s", worker, ids(ops), want)
	}
	return ops[0]
}

// claimNone requires that nothing is claimable.
func (e *env) claimNone(worker sluice.WorkerID) {
	e.t.Helper()
	if ops := e.claim(worker, 100); len(ops) != 0 {
		e.t.Errorf("Claim(%s, 100) = %v, want nothing claimable", worker, ids(ops))
	}
}

func (e *env) cas(c sluice.Change) sluice.Operation {
	e.t.Helper()
	op, err := e.s.CAS(e.ctx, c)
	if err != nil {
		e.t.Fatalf("CAS(%s %s->%s token=%d): %v", c.ID, c.From, c.To, c.Token, err)
	}
	return op
}

// envelope mints an unsigned envelope with a txid no other envelope in this
// subtest has: the memo carries the operation id and a counter.
func (e *env) envelope(id sluice.OperationID) sluice.Envelope {
	e.envs++
	now := e.clock.Now()
	raw := tron.RawData{
		RefBlockBytes: [2]byte{0x12, 0x34},
		RefBlockHash:  [8]byte{1, 2, 3, 4, 5, 6, 7, 8},
		Expiration:    now.Add(time.Minute).UnixMilli(),
		Timestamp:     now.UnixMilli(),
		FeeLimit:      30_000_000,
		Memo:          []byte(fmt.Sprintf("%s#%d", id, e.envs)),
		Contract: tron.TriggerSmartContract{
			Owner:    hotWallet,
			Contract: tron.USDTContract,
			Data:     tron.EncodeTransfer(recipient, 1_000_001),
		},
	}
	return sluice.Envelope{Txid: raw.Txid(), Raw: raw}
}

// signed is env with a signature; the txid does not change.
func signed(env sluice.Envelope) sluice.Envelope {
	env.Signature = []byte("sig:" + env.Txid.String())
	return env
}

// change is the Change a correct worker holding op would write to move it
// to the given state: a fresh envelope into signing (retiring the old one,
// with evidence when it may have been sent), the signature into signed, a
// reason into failed or rejected.
func (e *env) change(op sluice.Operation, worker sluice.WorkerID, to sluice.State) sluice.Change {
	c := sluice.Change{
		ID:     op.ID,
		Token:  op.Token,
		Worker: worker,
		From:   op.State,
		To:     to,
		Note:   fmt.Sprintf("%s->%s", op.State, to),
	}
	// The hold action the pipeline gives the edge: the tests that mean to
	// break the hold rules set another one.
	c.Hold = sluice.HoldFor(to)
	switch to {
	case sluice.Signing:
		env := e.envelope(op.ID)
		c.Envelope = &env
		c.Builds = op.Builds + 1
		c.RetiredTxid = op.Envelope.Txid
		if op.State == sluice.Broadcasting || op.State == sluice.Broadcast {
			c.Evidence = evidenceFor(op.Envelope)
		}
	case sluice.Signed:
		env := signed(op.Envelope)
		c.Envelope = &env
	case sluice.Failed, sluice.Rejected:
		c.Reason = "test reason: " + to.String()
	}
	return c
}

func evidenceFor(env sluice.Envelope) *sluice.Evidence {
	exp := time.UnixMilli(env.Raw.Expiration).UTC()
	return &sluice.Evidence{
		Txid:        env.Txid,
		Expiration:  exp,
		Margin:      time.Minute,
		SolidNumber: 4242,
		SolidTime:   exp.Add(time.Minute + 3*time.Second),
		Lookup:      tron.Unknown,
		LookupSolid: 4250,
	}
}

// step moves op one edge forward as worker and returns the new row.
func (e *env) step(op sluice.Operation, worker sluice.WorkerID, to sluice.State) sluice.Operation {
	e.t.Helper()
	return e.cas(e.change(op, worker, to))
}

// pathTo is the shortest legal way from requested to each state, derived
// from the transition table (breadth first, in table order), so that a new
// state is reachable in every test without anyone writing its path down.
var pathTo = func() map[sluice.State][]sluice.State {
	paths := map[sluice.State][]sluice.State{sluice.Requested: {}}
	queue := []sluice.State{sluice.Requested}
	for len(queue) > 0 {
		from := queue[0]
		queue = queue[1:]
		for _, t := range sluice.Transitions() {
			if _, seen := paths[t.To]; t.From != from || seen {
				continue
			}
			paths[t.To] = append(slices.Clone(paths[from]), t.To)
			queue = append(queue, t.To)
		}
	}
	return paths
}()

// drive inserts operation n, claims it as worker and walks it to state. The
// new row must be the oldest claimable one; callers leave older rows leased
// or terminal.
func (e *env) drive(n int, worker sluice.WorkerID, state sluice.State) sluice.Operation {
	e.t.Helper()
	path, ok := pathTo[state]
	if !ok {
		e.t.Fatalf("drive: no path to %s", state)
	}
	e.insert(n)
	op := e.claimID(worker, id(n))
	for _, to := range path {
		op = e.step(op, worker, to)
	}
	return op
}

// record is a row, its event log, its hold and its customer's account at
// one moment, to prove that a refused call changed nothing.
type record struct {
	op      sluice.Operation
	events  []sluice.Event
	hold    sluice.Hold
	holdErr bool // the store had no hold to read
	account sluice.Account
}

func (e *env) record(id sluice.OperationID) record {
	e.t.Helper()
	// Deep copies, so that a store handing out its own slices cannot make a
	// change invisible by changing the record too.
	r := record{op: cloneOperation(e.get(id)), events: cloneEvents(e.events(id))}
	h, err := e.s.Hold(e.ctx, id)
	if err != nil && !errors.Is(err, sluice.ErrNotFound) {
		e.t.Fatalf("Hold(%s): %v", id, err)
	}
	r.hold, r.holdErr = h, err != nil
	r.account = e.account(r.op.Request.Customer)
	return r
}

// unchanged reports every difference between the row, log, hold and account
// now and before.
func (e *env) unchanged(what string, id sluice.OperationID, before record) {
	e.t.Helper()
	now := e.record(id)
	for _, d := range diffOperation(now.op, before.op) {
		e.t.Errorf("after %s: row %s", what, d)
	}
	for _, d := range diffEvents(now.events, before.events) {
		e.t.Errorf("after %s: events %s", what, d)
	}
	if now.holdErr != before.holdErr {
		e.t.Errorf("after %s: hold found %v, before %v", what, !now.holdErr, !before.holdErr)
	}
	for _, d := range diffHold(now.hold, before.hold) {
		e.t.Errorf("after %s: %s", what, d)
	}
	for _, d := range diffAccount(now.account, before.account) {
		e.t.Errorf("after %s: %s", what, d)
	}
}

// account reads c's account, which must exist, and requires it balanced.
func (e *env) account(c sluice.CustomerID) sluice.Account {
	e.t.Helper()
	a, err := e.s.Account(e.ctx, c)
	if err != nil {
		e.t.Fatalf("Account(%s): %v", c, err)
	}
	if !a.Balanced() {
		e.t.Errorf("Account(%s) = %+v: balance + held + paid != deposited", c, a)
	}
	return a
}

func (e *env) hold(id sluice.OperationID) sluice.Hold {
	e.t.Helper()
	h, err := e.s.Hold(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Hold(%s): %v", id, err)
	}
	return h
}

func ids(ops []sluice.Operation) []sluice.OperationID {
	out := make([]sluice.OperationID, len(ops))
	for i, op := range ops {
		out[i] = op.ID
	}
	return out
}

// ---------------------------------------------------------------------------
// Insert.

// Goal: a new id becomes one requested row, stamped with the store's clock,
// never claimed, with exactly its creation event.
func testInsertCreates(e *env) {
	e.clock.Advance(5 * time.Second)
	now := e.clock.Now()
	want := sluice.Operation{
		ID:          id(1),
		Request:     newOp(1).Request,
		RequestHash: newOp(1).RequestHash,
		State:       sluice.Requested,
		NotBefore:   now,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
	got := e.insert(1)
	for _, d := range diffOperation(got, want) {
		e.t.Errorf("Insert returned row %s", d)
	}
	for _, d := range diffOperation(e.get(id(1)), want) {
		e.t.Errorf("Get after Insert: row %s", d)
	}
	evs := e.events(id(1))
	if len(evs) != 1 {
		e.t.Fatalf("Events after Insert: got %d events, want 1 (the creation event)", len(evs))
	}
	wantEv := sluice.Event{Seq: evs[0].Seq, OperationID: id(1), From: sluice.None, To: sluice.Requested, At: now, Note: "created"}
	for _, d := range diffEvent(evs[0], wantEv) {
		e.t.Errorf("creation event %s", d)
	}
	if evs[0].Seq <= 0 {
		e.t.Errorf("creation event Seq = %d, want > 0", evs[0].Seq)
	}
	amount := newOp(1).Request.Amount
	wantHold := sluice.Hold{Operation: id(1), Customer: customer, Amount: amount, State: sluice.HoldHeld}
	for _, d := range diffHold(e.hold(id(1)), wantHold) {
		e.t.Errorf("after Insert: %s", d)
	}
	wantAcct := sluice.Account{Customer: customer, Balance: fixtureFunds - amount, Held: amount, Deposited: fixtureFunds}
	for _, d := range diffAccount(e.account(customer), wantAcct) {
		e.t.Errorf("after Insert: %s", d)
	}
}

// Goal: intake is idempotent because a replayed insert is a read. Method:
// replay with the same payload, then a different one (the store does not
// judge payloads; intake does), then after the row has moved on; each replay
// must return the current row and write nothing.
func testInsertReplay(e *env) {
	e.insert(1)
	e.clock.Advance(time.Second)

	check := func(what string, op sluice.NewOperation, want record) {
		e.t.Helper()
		got, created, err := e.s.Insert(e.ctx, op)
		if err != nil {
			e.t.Fatalf("%s: Insert: %v", what, err)
		}
		if created {
			e.t.Errorf("%s: Insert created = true, want false", what)
		}
		for _, d := range diffOperation(got, want.op) {
			e.t.Errorf("%s: Insert returned row %s", what, d)
		}
		e.unchanged(what, op.ID, want)
	}

	check("same payload replay", newOp(1), e.record(id(1)))

	other := newOp(1)
	other.Request.Amount = 7
	other.RequestHash = newOp(2).RequestHash
	check("different payload replay", other, e.record(id(1)))

	// Another customer, with money enough: the replay must not hold any
	// of it, nor touch the first customer's hold.
	const rich sluice.CustomerID = "another-customer"
	e.credit("replay:rich", rich, 10*newOp(1).Request.Amount)
	richBefore := e.account(rich)
	other = newOp(1)
	other.Request.Customer = rich
	other.Request.Amount++
	check("replay for another customer and amount", other, e.record(id(1)))
	for _, d := range diffAccount(e.account(rich), richBefore) {
		e.t.Errorf("the other customer's account after the replay: %s", d)
	}
	// And a customer with no account at all: a replay is a read, not a
	// withdrawal, so it is not refused for funds.
	other.Request.Customer = "nobody-at-all"
	check("replay for a customer with no account", other, e.record(id(1)))

	op := e.claimID("w1", id(1))
	e.step(op, "w1", sluice.Validated)
	e.clock.Advance(time.Second)
	check("replay after the row moved on", newOp(1), e.record(id(1)))
	if n := len(e.events(id(1))); n != 2 {
		e.t.Errorf("events after replays and one transition: got %d, want 2", n)
	}
}

// badInserts has one row for each way an insert can break a rule of
// sluice.CheckNewOperation, several for the id, whose form has many ways to
// go wrong. Each mutates a valid operation; refusedInsertCases turns every
// row into a subtest, so every store runs every row.
var badInserts = []struct {
	name   string
	mutate func(*sluice.NewOperation)
}{
	{"ID/Empty", func(op *sluice.NewOperation) { op.ID = "" }},
	{"ID/UpperCase", func(op *sluice.NewOperation) { op.ID = "0A1B2C3D-4E5F-4A6B-8C7D-8E9FA0B1C2D3" }},
	{"ID/MixedCase", func(op *sluice.NewOperation) { op.ID = "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2D3" }},
	{"ID/Braced", func(op *sluice.NewOperation) { op.ID = "{" + op.ID + "}" }},
	{"ID/URN", func(op *sluice.NewOperation) { op.ID = "urn:uuid:" + op.ID }},
	{"ID/NoHyphens", func(op *sluice.NewOperation) { op.ID = sluice.OperationID(strings.ReplaceAll(string(op.ID), "-", "")) }},
	{"ID/HyphenMisplaced", func(op *sluice.NewOperation) { op.ID = "0000000-00000-4000-8000-000000000002" }},
	{"ID/NonHexDigit", func(op *sluice.NewOperation) { op.ID = "0000000g-0000-4000-8000-000000000002" }},
	{"ID/TooShort", func(op *sluice.NewOperation) { op.ID = op.ID[:len(op.ID)-1] }},
	{"ID/TrailingSpace", func(op *sluice.NewOperation) { op.ID += " " }},
	{"ID/Long", func(op *sluice.NewOperation) { op.ID = sluice.OperationID(strings.Repeat("a", 1000)) }},
	{"ID/Nil", func(op *sluice.NewOperation) { op.ID = "00000000-0000-0000-0000-000000000000" }},
	{"RequestHash/Empty", func(op *sluice.NewOperation) { op.RequestHash = "" }},
	{"Customer/Empty", func(op *sluice.NewOperation) { op.Request.Customer = "" }},
	{"Customer/TooLong", func(op *sluice.NewOperation) {
		op.Request.Customer = sluice.CustomerID(strings.Repeat("c", sluice.CustomerMax+1))
	}},
	{"Customer/Space", func(op *sluice.NewOperation) { op.Request.Customer = "two words" }},
	{"Customer/Slash", func(op *sluice.NewOperation) { op.Request.Customer = "a/b" }},
	{"Asset/Empty", func(op *sluice.NewOperation) { op.Request.Asset = "" }},
	{"Amount/Zero", func(op *sluice.NewOperation) { op.Request.Amount = 0 }},
	{"To/ZeroAddress", func(op *sluice.NewOperation) { op.Request.To = tron.Address{} }},
}

// refusedInsertCases makes one subtest per row of badInserts.
func refusedInsertCases() []testCase {
	var out []testCase
	for _, bad := range badInserts {
		out = append(out, testCase{"Insert/Refuses/" + bad.name, func(e *env) { testInsertRefused(e, bad.mutate) }})
	}
	return out
}

// Goal: an insert that breaks a rule of sluice.CheckNewOperation is refused
// with an error matching sluice.ErrInvalidOperation, and stores nothing.
// Method: with one row in the store, insert a new operation broken by mutate,
// then (if the id is still valid) the same breakage under the existing id,
// which a store that looked the id up first would answer as a replay. After
// each, the existing row and its log are unchanged, the refused id is not
// found, and a claim of everything finds only the existing row: no row was
// created under any spelling.
func testInsertRefused(e *env, mutate func(*sluice.NewOperation)) {
	e.insert(1)
	e.clock.Advance(time.Second)
	before := e.record(id(1))

	fresh, existing := newOp(2), newOp(1)
	mutate(&fresh)
	mutate(&existing)
	attempts := []struct {
		what string
		op   sluice.NewOperation
	}{{"a new id", fresh}}
	if existing.ID == id(1) {
		attempts = append(attempts, struct {
			what string
			op   sluice.NewOperation
		}{"the existing id", existing})
	}

	for _, a := range attempts {
		_, created, err := e.s.Insert(e.ctx, a.op)
		if err == nil || created {
			e.t.Errorf("Insert under %s = created %v, err %v; want refused", a.what, created, err)
		}
		if !errors.Is(err, sluice.ErrInvalidOperation) {
			e.t.Errorf("Insert under %s: err = %v, want one matching sluice.ErrInvalidOperation", a.what, err)
		}
		if isSentinel(err) {
			e.t.Errorf("Insert under %s: err = %v is an operating-condition sentinel; want only ErrInvalidOperation", a.what, err)
		}
		e.unchanged("the refused insert under "+a.what, id(1), before)
	}
	if fresh.ID != "" && fresh.ID != id(2) {
		if _, err := e.s.Get(e.ctx, fresh.ID); !errors.Is(err, sluice.ErrNotFound) {
			e.t.Errorf("Get(%.40q) after the refused insert: err = %v, want ErrNotFound", fresh.ID, err)
		}
	}
	if _, err := e.s.Get(e.ctx, id(2)); !errors.Is(err, sluice.ErrNotFound) {
		e.t.Errorf("Get(%s) after the refused insert: err = %v, want ErrNotFound", id(2), err)
	}
	if ops := e.claim("w1", 100); len(ops) != 1 || ops[0].ID != id(1) {
		e.t.Errorf("Claim(w1, 100) after the refused insert = %v, want only %s: the refused insert left a row", ids(ops), id(1))
	}
	if _, err := e.s.Hold(e.ctx, id(2)); !errors.Is(err, sluice.ErrNotFound) {
		e.t.Errorf("Hold(%s) after the refused insert: err = %v, want ErrNotFound", id(2), err)
	}
	if fresh.Request.Customer != customer {
		if _, err := e.s.Account(e.ctx, fresh.Request.Customer); !errors.Is(err, sluice.ErrNotFound) {
			e.t.Errorf("Account(%.40q) after the refused insert: err = %v, want ErrNotFound", fresh.Request.Customer, err)
		}
	}
}

// Goal: every read and write of an unknown id says so; Release, a no-op
// when stale, is a no-op here too.
func testUnknownOperation(e *env) {
	e.insert(1)
	ghost := id(99)
	if _, err := e.s.Get(e.ctx, ghost); !errors.Is(err, sluice.ErrNotFound) {
		e.t.Errorf("Get(unknown) err = %v, want ErrNotFound", err)
	}
	if _, err := e.s.Events(e.ctx, ghost); !errors.Is(err, sluice.ErrNotFound) {
		e.t.Errorf("Events(unknown) err = %v, want ErrNotFound", err)
	}
	c := sluice.Change{ID: ghost, Token: 1, Worker: "w1", From: sluice.Requested, To: sluice.Validated}
	if _, err := e.s.CAS(e.ctx, c); !errors.Is(err, sluice.ErrNotFound) {
		e.t.Errorf("CAS(unknown) err = %v, want ErrNotFound", err)
	}
	if err := e.s.Release(e.ctx, ghost, 1, 0); err != nil {
		e.t.Errorf("Release(unknown) = %v, want nil", err)
	}
	for _, ghost := range []sluice.OperationID{ghost, "not-a-uuid", ""} {
		if _, err := e.s.Park(e.ctx, sluice.Park{ID: ghost, Token: 1, Worker: "w1", After: time.Second, Reason: "r"}); !errors.Is(err, sluice.ErrNotFound) {
			e.t.Errorf("Park(%q) err = %v, want ErrNotFound", ghost, err)
		}
		r := sluice.Resolution{ID: ghost, From: sluice.Requested, To: sluice.Requested, Operator: "op", Why: "why"}
		if _, err := e.s.Resolve(e.ctx, r); !errors.Is(err, sluice.ErrNotFound) {
			e.t.Errorf("Resolve(%q) err = %v, want ErrNotFound", ghost, err)
		}
		if _, err := e.s.Hold(e.ctx, ghost); !errors.Is(err, sluice.ErrNotFound) {
			e.t.Errorf("Hold(%q) err = %v, want ErrNotFound", ghost, err)
		}
	}
	for _, c := range []sluice.CustomerID{"nobody", "", "not a customer id"} {
		if _, err := e.s.Account(e.ctx, c); !errors.Is(err, sluice.ErrNotFound) {
			e.t.Errorf("Account(%q) err = %v, want ErrNotFound", c, err)
		}
	}
}

// ---------------------------------------------------------------------------
// Claim.

// Goal: a claim takes the row, mints token 1, sets the lease from the
// store's clock, and is not an event.
func testClaimLeases(e *env) {
	e.insert(1)
	e.clock.Advance(2 * time.Second)
	before := e.get(id(1))
	got := e.claimID("w1", id(1))
	want := before
	want.Token = 1
	want.ClaimedBy = "w1"
	want.LeaseUntil = e.clock.Now().Add(Lease)
	for _, d := range diffOperation(got, want) {
		e.t.Errorf("Claim returned row %s", d)
	}
	for _, d := range diffOperation(e.get(id(1)), want) {
		e.t.Errorf("Get after Claim: row %s", d)
	}
	if n := len(e.events(id(1))); n != 1 {
		e.t.Errorf("events after a claim: got %d, want 1 (claims are not events)", n)
	}
}

// Goal: a claim that could only be a caller's bug is refused and leases
// nothing. An empty worker id in particular would hold a lease that reads
// as no lease (ClaimedBy == ""), so the next claimer would take the row.
func testClaimValidation(e *env) {
	e.insert(1)
	for _, tc := range []struct {
		worker sluice.WorkerID
		limit  int
	}{{"w1", 0}, {"w1", -1}, {"", 1}} {
		ops, err := e.s.Claim(e.ctx, tc.worker, tc.limit)
		if err == nil {
			e.t.Errorf("Claim(%q, %d) = %v, nil; want an error", tc.worker, tc.limit, ids(ops))
		}
	}
	if op := e.get(id(1)); op.Token != 0 || op.ClaimedBy != "" {
		e.t.Errorf("after refused claims: token %d claimed by %q, want 0 and nobody", op.Token, op.ClaimedBy)
	}
}

// Goal: claims take at most limit rows, oldest first. Method: ids are
// inserted in an order unlike their sort order, a second apart, so neither
// id order nor chance can pass for age order.
func testClaimLimitOldestFirst(e *env) {
	order := []int{3, 1, 4, 2}
	for _, n := range order {
		e.insert(n)
		e.clock.Advance(time.Second)
	}
	got := e.claim("w1", 2)
	if want := []sluice.OperationID{id(3), id(1)}; !slices.Equal(ids(got), want) {
		e.t.Errorf("Claim(w1, 2) = %v, want %v", ids(got), want)
	}
	got = e.claim("w2", 10)
	if want := []sluice.OperationID{id(4), id(2)}; !slices.Equal(ids(got), want) {
		e.t.Errorf("Claim(w2, 10) = %v, want %v", ids(got), want)
	}
	e.claimNone("w3")
}

// Goal: a live lease excludes every other claimer, and the lease ends at
// exactly LeaseUntil: one nanosecond before, the row is still held; at it,
// the next claim takes the row with the next token.
func testClaimLeaseExpiry(e *env) {
	e.insert(1)
	first := e.claimID("w1", id(1))
	e.claimNone("w2")
	e.clock.Advance(Lease - time.Nanosecond)
	e.claimNone("w2")
	e.clock.Advance(time.Nanosecond)
	second := e.claimID("w2", id(1))
	if second.Token != first.Token+1 {
		e.t.Errorf("token after the lease expired and w2 claimed: got %d, want %d", second.Token, first.Token+1)
	}
	if second.ClaimedBy != "w2" {
		e.t.Errorf("ClaimedBy = %q, want w2", second.ClaimedBy)
	}
	if want := e.clock.Now().Add(Lease); !second.LeaseUntil.Equal(want) {
		e.t.Errorf("LeaseUntil = %s, want %s", second.LeaseUntil, want)
	}
}

// Goal: every claim, whoever makes it and however the previous lease ended,
// mints a new token: that is what fences the previous holder.
func testClaimTokenGrows(e *env) {
	e.insert(1)
	op := e.claimID("w1", id(1))
	if op.Token != 1 {
		e.t.Errorf("first claim token = %d, want 1", op.Token)
	}
	if err := e.s.Release(e.ctx, id(1), op.Token, 0); err != nil {
		e.t.Fatalf("Release: %v", err)
	}
	op = e.claimID("w1", id(1)) // the same worker again
	if op.Token != 2 {
		e.t.Errorf("claim after release token = %d, want 2", op.Token)
	}
	e.clock.Advance(Lease)
	op = e.claimID("w2", id(1))
	if op.Token != 3 {
		e.t.Errorf("claim after expiry token = %d, want 3", op.Token)
	}
	// The same worker id again, over its own lapsed lease (no release in
	// between, so the row still names it): a process restarted under a
	// stable id while its predecessor still runs must fence that
	// predecessor, which only a new token does (blind bug 235).
	e.clock.Advance(Lease)
	op = e.claimID("w2", id(1))
	if op.Token != 4 {
		e.t.Errorf("claim by the same worker over its own lapsed lease: token = %d, want 4", op.Token)
	}
}

// Goal: terminal rows are never claimed, however long their lease has been
// gone; NotBefore in the past does not revive them.
func testClaimSkipsTerminal(e *env) {
	e.drive(1, "w1", sluice.Rejected)
	e.drive(2, "w1", sluice.Failed)
	e.drive(3, "w1", sluice.Confirmed)
	e.insert(4)
	e.clock.Advance(10 * Lease)
	got := e.claim("w2", 100)
	if want := []sluice.OperationID{id(4)}; !slices.Equal(ids(got), want) {
		e.t.Errorf("Claim(w2, 100) = %v, want only the live row %v", ids(got), want)
	}
}

// ---------------------------------------------------------------------------
// CAS.

// Goal: a fenced write applies every field it carries, stamps the store's
// clock, renews the lease, and appends exactly one event describing itself.
func testCASHappyPath(e *env) {
	e.insert(1)
	op := e.claimID("w1", id(1))

	e.clock.Advance(7 * time.Second)
	c := e.change(op, "w1", sluice.Validated)
	got := e.cas(c)
	want := op
	want.State = sluice.Validated
	want.UpdatedAt = e.clock.Now()
	want.LeaseUntil = e.clock.Now().Add(Lease)
	for _, d := range diffOperation(got, want) {
		e.t.Errorf("requested->validated: CAS returned row %s", d)
	}
	for _, d := range diffOperation(e.get(id(1)), want) {
		e.t.Errorf("requested->validated: Get row %s", d)
	}

	e.clock.Advance(3 * time.Second)
	c = e.change(got, "w1", sluice.Signing)
	c.Note = "built"
	got = e.cas(c)
	want.State = sluice.Signing
	want.Envelope = *c.Envelope
	want.Builds = 1
	want.UpdatedAt = e.clock.Now()
	want.LeaseUntil = e.clock.Now().Add(Lease)
	for _, d := range diffOperation(got, want) {
		e.t.Errorf("validated->signing: CAS returned row %s", d)
	}

	evs := e.events(id(1))
	if len(evs) != 3 {
		e.t.Fatalf("events: got %d, want 3 (created, validated, signing)", len(evs))
	}
	wantEv := sluice.Event{
		Seq:         evs[2].Seq,
		OperationID: id(1),
		From:        sluice.Validated,
		To:          sluice.Signing,
		Token:       op.Token,
		Worker:      "w1",
		At:          e.clock.Now(),
		Txid:        c.Envelope.Txid,
		Note:        "built",
	}
	for _, d := range diffEvent(evs[2], wantEv) {
		e.t.Errorf("signing event %s", d)
	}

	// A rebuild files the retired txid and its proof of death with the event.
	got = e.step(got, "w1", sluice.Signed)
	got = e.step(got, "w1", sluice.Broadcasting)
	e.clock.Advance(time.Second)
	c = e.change(got, "w1", sluice.Signing)
	c.Reason = "first envelope died"
	got = e.cas(c)
	if got.Builds != 2 || got.Envelope.Txid != c.Envelope.Txid || got.Reason != c.Reason {
		e.t.Errorf("after rebuild: builds %d txid %s reason %q, want 2, %s, %q",
			got.Builds, got.Envelope.Txid.Short(), got.Reason, c.Envelope.Txid.Short(), c.Reason)
	}
	evs = e.events(id(1))
	last := evs[len(evs)-1]
	wantEv = sluice.Event{
		Seq:         last.Seq,
		OperationID: id(1),
		From:        sluice.Broadcasting,
		To:          sluice.Signing,
		Token:       op.Token,
		Worker:      "w1",
		At:          e.clock.Now(),
		Txid:        c.Envelope.Txid,
		RetiredTxid: c.RetiredTxid,
		Evidence:    c.Evidence,
		Note:        c.Note,
	}
	for _, d := range diffEvent(last, wantEv) {
		e.t.Errorf("rebuild event %s", d)
	}
}

// Goal: zero fields in a Change mean "unchanged": the envelope, the build
// count and the reason survive writes that do not carry them, and the event
// still names the operation's current txid.
func testCASKeepsUnsetFields(e *env) {
	op := e.drive(1, "w1", sluice.Signed)
	c := e.change(op, "w1", sluice.Broadcasting)
	if c.Envelope != nil || c.Builds != 0 || c.Reason != "" {
		e.t.Fatalf("fixture: signed->broadcasting change carries fields: %+v", c)
	}
	got := e.cas(c)
	if got.Envelope.Txid != op.Envelope.Txid || string(got.Envelope.Signature) != string(op.Envelope.Signature) {
		e.t.Errorf("envelope after a write without one: txid %s sig %q, want %s %q",
			got.Envelope.Txid.Short(), got.Envelope.Signature, op.Envelope.Txid.Short(), op.Envelope.Signature)
	}
	if got.Builds != 1 {
		e.t.Errorf("Builds after a write with Builds 0: got %d, want 1", got.Builds)
	}
	evs := e.events(id(1))
	if last := evs[len(evs)-1]; last.Txid != op.Envelope.Txid {
		e.t.Errorf("event Txid = %s, want the current txid %s", last.Txid.Short(), op.Envelope.Txid.Short())
	}

	// A reason once written stays when later writes carry none.
	op2 := e.drive(2, "w1", sluice.Requested)
	c = e.change(op2, "w1", sluice.Validated)
	c.Reason = "kept"
	op2 = e.cas(c)
	op2 = e.step(op2, "w1", sluice.Signing)
	if op2.Reason != "kept" {
		e.t.Errorf("Reason after a write with none: got %q, want %q", op2.Reason, "kept")
	}
}

// Goal: the zombie write. Method: w1's lease lapses, w2 claims (new token);
// every write w1 can make with its old token is fenced and changes nothing.
// A token from the future is refused the same way.
func testCASStaleToken(e *env) {
	e.insert(1)
	old := e.claimID("w1", id(1))
	e.clock.Advance(Lease)
	cur := e.claimID("w2", id(1))
	before := e.record(id(1))

	for _, tc := range []struct {
		name  string
		token sluice.FencingToken
	}{{"stale token", old.Token}, {"future token", cur.Token + 1}, {"zero token", 0}} {
		c := e.change(cur, "w1", sluice.Validated)
		c.Token = tc.token
		_, err := e.s.CAS(e.ctx, c)
		if !errors.Is(err, sluice.ErrFenced) {
			e.t.Errorf("CAS with %s %d (row has %d): err = %v, want ErrFenced", tc.name, tc.token, cur.Token, err)
		}
		e.unchanged("CAS with "+tc.name, id(1), before)
	}
	// The rightful holder is unaffected.
	e.step(cur, "w2", sluice.Validated)
}

// Goal: a worker that believes the row is in another state (someone moved
// it on) is fenced, even with the right token.
func testCASWrongFrom(e *env) {
	op := e.drive(1, "w1", sluice.Validated)
	before := e.record(id(1))
	for _, from := range []sluice.State{sluice.Requested, sluice.Signing, sluice.None} {
		c := e.change(op, "w1", sluice.Signing)
		c.From = from
		_, err := e.s.CAS(e.ctx, c)
		if !errors.Is(err, sluice.ErrFenced) {
			e.t.Errorf("CAS from %s on a validated row: err = %v, want ErrFenced", from, err)
		}
		e.unchanged("CAS from "+from.String(), id(1), before)
	}
}

// Goal: a fenced writer learns only that it is fenced, whatever else is
// wrong with its write: the contract orders the checks fencing first.
func testCASFencingFirst(e *env) {
	a := e.drive(1, "w1", sluice.Signing) // owns a txid
	b := e.drive(2, "w1", sluice.Validated)
	e.clock.Advance(Lease)
	e.claimID("w2", id(1))
	b2 := e.claimID("w2", id(2))
	before := e.record(id(2))

	stale := func(c sluice.Change) sluice.Change { c.Token = b.Token; return c }
	wrongFrom := func(c sluice.Change) sluice.Change { c.From = sluice.Requested; return c }
	taken := func(c sluice.Change) sluice.Change { env := a.Envelope; c.Envelope = &env; return c }
	settle := func(c sluice.Change) sluice.Change { c.Hold = sluice.HoldSettle; return c }
	keep := func(c sluice.Change) sluice.Change { c.Hold = sluice.HoldKeep; return c }
	mismatched := func(c sluice.Change) sluice.Change {
		env := *c.Envelope
		env.Txid = a.Envelope.Txid
		c.Envelope = &env
		return c
	}
	for _, tc := range []struct {
		name string
		c    sluice.Change
	}{
		{"stale token, illegal transition", stale(e.change(b2, "w1", sluice.Confirmed))},
		{"stale token, taken txid", taken(stale(e.change(b2, "w1", sluice.Signing)))},
		{"stale token, mismatched envelope", mismatched(stale(e.change(b2, "w1", sluice.Signing)))},
		{"wrong from, illegal transition", wrongFrom(e.change(b2, "w2", sluice.Confirmed))},
		{"wrong from, taken txid", taken(wrongFrom(e.change(b2, "w2", sluice.Validated)))},
		{"stale token, hold closed on a non-closing edge", settle(stale(e.change(b2, "w1", sluice.Signing)))},
		{"wrong from, no hold close on a closing edge", keep(wrongFrom(e.change(b2, "w2", sluice.Rejected)))},
	} {
		_, err := e.s.CAS(e.ctx, tc.c)
		if !errors.Is(err, sluice.ErrFenced) {
			e.t.Errorf("CAS (%s): err = %v, want ErrFenced", tc.name, err)
		}
		e.unchanged("CAS ("+tc.name+")", id(2), before)
	}
}

// Goal: a change, park, release or resolution carrying a value
// PostgreSQL's schema refuses (a negative build count, one past an integer
// column, an action outside the decision enum, a delay whose NotBefore
// would pass 2262) is ErrInvalidChange in every store and writes nothing:
// the in-memory store must not keep what production refuses. Method: each
// against a row the caller holds, then the same calls with the values at
// their bounds, which both stores keep.
func testInvalidValues(e *env) {
	op := e.drive(1, "w1", sluice.Validated)
	before := e.record(id(1))
	for _, tc := range []struct {
		name   string
		mutate func(*sluice.Change)
	}{
		{"builds -1", func(c *sluice.Change) { c.Builds = -1 }},
		{"builds 2^31", func(c *sluice.Change) { c.Builds = math.MaxInt32 + 1 }},
		{"decision action 42", func(c *sluice.Change) { c.Decision = &sluice.Decision{Action: 42, Reason: "r"} }},
		{"decision rebuilds 2^31", func(c *sluice.Change) { c.Decision = &sluice.Decision{Reason: "r", Rebuilds: math.MaxInt32 + 1} }},
	} {
		c := e.change(op, "w1", sluice.Signing)
		tc.mutate(&c)
		if _, err := e.s.CAS(e.ctx, c); !errors.Is(err, sluice.ErrInvalidChange) {
			e.t.Errorf("CAS with %s: err = %v, want ErrInvalidChange", tc.name, err)
		}
		e.unchanged("CAS with "+tc.name, id(1), before)
	}
	for _, after := range []time.Duration{sluice.DelayMax + 1, math.MaxInt64} {
		if err := e.s.Release(e.ctx, id(1), op.Token, after); !errors.Is(err, sluice.ErrInvalidChange) {
			e.t.Errorf("Release after %s: err = %v, want ErrInvalidChange", after, err)
		}
		e.unchanged(fmt.Sprint("Release after ", after), id(1), before)
		if _, err := e.s.Park(e.ctx, sluice.Park{ID: id(1), Token: op.Token, Worker: "w1", After: after, Reason: "r"}); !errors.Is(err, sluice.ErrInvalidChange) {
			e.t.Errorf("Park after %s: err = %v, want ErrInvalidChange", after, err)
		}
		e.unchanged(fmt.Sprint("Park after ", after), id(1), before)
	}
	r := resolution(op, sluice.Validated)
	r.Decision = &sluice.Decision{Action: 42, Reason: "r"}
	if _, err := e.s.Resolve(e.ctx, r); !errors.Is(err, sluice.ErrInvalidChange) {
		e.t.Errorf("Resolve with decision action 42: err = %v, want ErrInvalidChange", err)
	}
	e.unchanged("Resolve with decision action 42", id(1), before)

	c := e.change(op, "w1", sluice.Signing)
	c.Builds = math.MaxInt32
	c.Decision = &sluice.Decision{Action: sluice.Escalate, Reason: "r", Rebuilds: math.MinInt32}
	if got := e.cas(c); got.Builds != math.MaxInt32 {
		e.t.Errorf("CAS with builds 2^31-1: the row has %d", got.Builds)
	}
	parked, err := e.s.Park(e.ctx, sluice.Park{ID: id(1), Token: op.Token, Worker: "w1", After: sluice.DelayMax, Reason: "r"})
	if err != nil {
		e.t.Fatalf("Park after DelayMax: %v", err)
	}
	if want := e.clock.Now().Add(sluice.DelayMax); !parked.NotBefore.Equal(want) {
		e.t.Errorf("Park after DelayMax: NotBefore %s, want %s", parked.NotBefore, want)
	}
}

// Goal: a holder of the row cannot skip or invent an edge, and that check
// comes before the txid check.
func testCASIllegal(e *env) {
	a := e.drive(1, "w1", sluice.Signing)
	b := e.drive(2, "w1", sluice.Requested)
	before := e.record(id(2))
	for _, to := range []sluice.State{sluice.Signing, sluice.Confirmed, sluice.Requested, sluice.None, sluice.State(200)} {
		c := e.change(b, "w1", to)
		_, err := e.s.CAS(e.ctx, c)
		if !errors.Is(err, sluice.ErrIllegalTransition) {
			e.t.Errorf("CAS requested->%s: err = %v, want ErrIllegalTransition", to, err)
		}
		e.unchanged("CAS requested->"+to.String(), id(2), before)
	}
	c := e.change(b, "w1", sluice.Signing)
	env := a.Envelope
	c.Envelope = &env
	if _, err := e.s.CAS(e.ctx, c); !errors.Is(err, sluice.ErrIllegalTransition) {
		e.t.Errorf("CAS requested->signing with a taken txid: err = %v, want ErrIllegalTransition (checked before the txid)", err)
	}
	e.unchanged("illegal CAS with a taken txid", id(2), before)
	// The transition is checked before the hold action: an illegal edge
	// is illegal whatever it would do to the hold.
	for _, tc := range []struct {
		to   sluice.State
		hold sluice.HoldAction
	}{{sluice.Confirmed, sluice.HoldKeep}, {sluice.Signing, sluice.HoldRelease}, {sluice.Failed, sluice.HoldSettle}} {
		c := e.change(b, "w1", tc.to)
		c.Hold = tc.hold
		if _, err := e.s.CAS(e.ctx, c); !errors.Is(err, sluice.ErrIllegalTransition) {
			e.t.Errorf("CAS requested->%s with hold action %q: err = %v, want ErrIllegalTransition (checked before the hold)", tc.to, tc.hold, err)
		}
		e.unchanged("illegal CAS with a hold action", id(2), before)
	}
}

// Goal: the store enforces exactly sluice.CanTransition, no more and no
// less. Method: for every state a row can be in and every target (None
// included), a fresh row is driven there and the holder tries the edge.
func testCASTransitionMatrix(e *env) {
	targets := append([]sluice.State{sluice.None}, sluice.States...)
	n := 0
	for _, from := range sluice.States {
		for _, to := range targets {
			n++
			op := e.drive(n, "w1", from)
			before := e.record(op.ID)
			got, err := e.s.CAS(e.ctx, e.change(op, "w1", to))
			if sluice.CanTransition(from, to) {
				if err != nil {
					e.t.Errorf("CAS %s->%s (an edge): %v", from, to, err)
				} else if got.State != to {
					e.t.Errorf("CAS %s->%s: state = %s", from, to, got.State)
				}
				continue
			}
			if !errors.Is(err, sluice.ErrIllegalTransition) {
				e.t.Errorf("CAS %s->%s (not an edge): err = %v, want ErrIllegalTransition", from, to, err)
			}
			e.unchanged(fmt.Sprintf("CAS %s->%s", from, to), op.ID, before)
		}
	}
}

// Goal: the token alone decides. A worker whose lease lapsed while nobody
// else claimed may still write, and the write renews its lease; the first
// claim after that fences it.
func testCASLapsedLease(e *env) {
	e.insert(1)
	op := e.claimID("w1", id(1))
	e.clock.Advance(2 * Lease)
	op = e.step(op, "w1", sluice.Validated)
	if op.ClaimedBy != "w1" {
		e.t.Errorf("ClaimedBy after a write on a lapsed lease = %q, want w1", op.ClaimedBy)
	}
	if want := e.clock.Now().Add(Lease); !op.LeaseUntil.Equal(want) {
		e.t.Errorf("LeaseUntil after a write on a lapsed lease = %s, want renewed to %s", op.LeaseUntil, want)
	}
	e.claimNone("w2")
	e.clock.Advance(Lease)
	e.claimID("w2", id(1))
	if _, err := e.s.CAS(e.ctx, e.change(op, "w1", sluice.Signing)); !errors.Is(err, sluice.ErrFenced) {
		e.t.Errorf("CAS by w1 after w2 claimed: err = %v, want ErrFenced", err)
	}
}

// ---------------------------------------------------------------------------
// Terminal rows.

// Goal: terminal rows (confirmed, failed, rejected, review) are bricks.
// Entering one clears the lease; afterwards no CAS (even by the last holder,
// with the right token and state), no release and no claim changes
// anything.
func testTerminalBricks(e *env) {
	targets := append([]sluice.State{sluice.None}, sluice.States...)
	var terminal []sluice.State
	for _, s := range sluice.States {
		if s.Terminal() {
			terminal = append(terminal, s)
		}
	}
	if len(terminal) < 4 {
		e.t.Fatalf("terminal states %v: want at least confirmed, failed, rejected and review", terminal)
	}
	for i, state := range terminal {
		op := e.drive(i+1, "w1", state)
		if op.ClaimedBy != "" || !op.LeaseUntil.IsZero() {
			e.t.Errorf("%s row: ClaimedBy %q LeaseUntil %s, want the lease cleared", state, op.ClaimedBy, op.LeaseUntil)
		}
		before := e.record(op.ID)
		for _, to := range targets {
			c := e.change(op, "w1", to)
			_, err := e.s.CAS(e.ctx, c)
			if !errors.Is(err, sluice.ErrIllegalTransition) {
				e.t.Errorf("CAS %s->%s: err = %v, want ErrIllegalTransition", state, to, err)
			}
		}
		if err := e.s.Release(e.ctx, op.ID, op.Token, time.Hour); err != nil {
			e.t.Errorf("Release of a %s row = %v, want nil", state, err)
		}
		e.unchanged("writes to a "+state.String()+" row", op.ID, before)
	}
	e.clock.Advance(10 * Lease)
	e.claimNone("w2")
}

// ---------------------------------------------------------------------------
// Txids.

// Goal: a txid belongs to one operation forever. Method: operation 1 builds
// T1 and rebuilds to T2 (T1 retired); operation 2 may take neither, and the
// refused write changes nothing; a fresh txid is fine.
func testTxidTaken(e *env) {
	a := e.drive(1, "w1", sluice.Signed)
	t1 := a.Envelope
	a = e.step(a, "w1", sluice.Signing) // stale before first send: rebuilt
	t2 := a.Envelope
	if t1.Txid == t2.Txid {
		e.t.Fatalf("fixture: rebuild kept txid %s", t1.Txid.Short())
	}

	b := e.drive(2, "w1", sluice.Validated)
	before := e.record(id(2))
	for _, tc := range []struct {
		name string
		env  sluice.Envelope
	}{{"current txid of another operation", t2}, {"retired txid of another operation", t1}} {
		c := e.change(b, "w1", sluice.Signing)
		env := tc.env
		c.Envelope = &env
		if _, err := e.s.CAS(e.ctx, c); !errors.Is(err, sluice.ErrTxidTaken) {
			e.t.Errorf("CAS with the %s: err = %v, want ErrTxidTaken", tc.name, err)
		}
		e.unchanged("CAS with the "+tc.name, id(2), before)
	}
	if got := e.get(id(1)); got.Envelope.Txid != t2.Txid {
		e.t.Errorf("owner's txid after the refused writes: %s, want %s", got.Envelope.Txid.Short(), t2.Txid.Short())
	}
	e.step(b, "w1", sluice.Signing)
}

// Goal: an operation writing its own txid again (the signature, a re-sign,
// an envelope carried along) is not refused, nor is a rebuild that happens
// to land on a txid the operation once had.
func testTxidKept(e *env) {
	op := e.drive(1, "w1", sluice.Signing)
	t1 := op.Envelope
	op = e.step(op, "w1", sluice.Signed) // same raw, now signed
	if op.Envelope.Txid != t1.Txid {
		e.t.Errorf("txid after signing: %s, want %s", op.Envelope.Txid.Short(), t1.Txid.Short())
	}
	c := e.change(op, "w1", sluice.Broadcasting)
	env := op.Envelope
	c.Envelope = &env
	op = e.cas(c)

	c = e.change(op, "w1", sluice.Signing)
	env = t1 // rebuilt onto its own old txid
	c.Envelope = &env
	op = e.cas(c)
	if op.Envelope.Txid != t1.Txid || len(op.Envelope.Signature) != 0 {
		e.t.Errorf("envelope after rebuilding onto its own txid: %s sig %q, want %s unsigned",
			op.Envelope.Txid.Short(), op.Envelope.Signature, t1.Txid.Short())
	}
}

// Goal: an envelope whose txid is not its raw_data's is refused outright:
// the store must never hold a txid the stored bytes cannot produce.
func testEnvelopeMismatch(e *env) {
	op := e.drive(1, "w1", sluice.Validated)
	before := e.record(id(1))
	c := e.change(op, "w1", sluice.Signing)
	env := *c.Envelope
	env.Raw.Timestamp++ // the txid no longer matches
	c.Envelope = &env
	_, err := e.s.CAS(e.ctx, c)
	if err == nil {
		e.t.Fatal("CAS with Envelope.Txid != Raw.Txid(): err = nil, want an error")
	}
	if isSentinel(err) {
		e.t.Errorf("CAS with a mismatched envelope: err = %v, want a plain error (a caller bug, not an operating condition)", err)
	}
	e.unchanged("CAS with a mismatched envelope", id(1), before)
	// Neither txid was taken by the refused write.
	e.step(op, "w1", sluice.Signing)
}

// ---------------------------------------------------------------------------
// Release.

// Goal: Release under a token that no longer holds the row (stale, never
// claimed, already released) changes nothing and is not an error.
func testReleaseStale(e *env) {
	e.insert(1)
	old := e.claimID("w1", id(1))
	e.clock.Advance(Lease)
	cur := e.claimID("w2", id(1))
	before := e.record(id(1))
	if err := e.s.Release(e.ctx, id(1), old.Token, 0); err != nil {
		e.t.Errorf("stale Release = %v, want nil", err)
	}
	e.unchanged("stale Release", id(1), before)
	e.claimNone("w1")

	if err := e.s.Release(e.ctx, id(1), cur.Token, 0); err != nil {
		e.t.Fatalf("Release: %v", err)
	}
	released := e.record(id(1))
	if err := e.s.Release(e.ctx, id(1), cur.Token, time.Hour); err != nil {
		e.t.Errorf("second Release = %v, want nil", err)
	}
	e.unchanged("Release of a released row", id(1), released)

	e.insert(2)
	never := e.record(id(2))
	if err := e.s.Release(e.ctx, id(2), 0, time.Hour); err != nil {
		e.t.Errorf("Release of a never-claimed row = %v, want nil", err)
	}
	e.unchanged("Release of a never-claimed row", id(2), never)
}

// Goal: a released row does not wait for its lease to run out.
func testReleaseImmediate(e *env) {
	e.insert(1)
	op := e.claimID("w1", id(1))
	if err := e.s.Release(e.ctx, id(1), op.Token, 0); err != nil {
		e.t.Fatalf("Release: %v", err)
	}
	got := e.get(id(1))
	if got.ClaimedBy != "" || !got.LeaseUntil.IsZero() {
		e.t.Errorf("after Release: ClaimedBy %q LeaseUntil %s, want no lease", got.ClaimedBy, got.LeaseUntil)
	}
	if !got.NotBefore.Equal(e.clock.Now()) {
		e.t.Errorf("after Release(after 0): NotBefore %s, want now %s", got.NotBefore, e.clock.Now())
	}
	if n := len(e.events(id(1))); n != 1 {
		e.t.Errorf("events after claim and release: %d, want 1 (neither is an event)", n)
	}
	op2 := e.claimID("w2", id(1))
	if op2.Token != op.Token+1 {
		e.t.Errorf("token after release and reclaim = %d, want %d", op2.Token, op.Token+1)
	}
}

// Goal: after delays claimability to exactly now+after; a negative after
// counts as zero.
func testReleaseAfter(e *env) {
	e.insert(1)
	op := e.claimID("w1", id(1))
	const after = 10 * time.Second
	if err := e.s.Release(e.ctx, id(1), op.Token, after); err != nil {
		e.t.Fatalf("Release: %v", err)
	}
	if got, want := e.get(id(1)).NotBefore, e.clock.Now().Add(after); !got.Equal(want) {
		e.t.Errorf("NotBefore = %s, want %s", got, want)
	}
	e.claimNone("w2")
	e.clock.Advance(after - time.Nanosecond)
	e.claimNone("w2")
	e.clock.Advance(time.Nanosecond)
	op = e.claimID("w2", id(1))

	if err := e.s.Release(e.ctx, id(1), op.Token, -time.Hour); err != nil {
		e.t.Fatalf("Release(negative): %v", err)
	}
	if got, want := e.get(id(1)).NotBefore, e.clock.Now(); !got.Equal(want) {
		e.t.Errorf("NotBefore after a negative after = %s, want now %s", got, want)
	}
	e.claimID("w3", id(1))
}

// Goal: Release does not bump the token, so the releasing worker can still
// write (the token alone decides), but its write must not resurrect a
// lease: "no lease held" is ClaimedBy == "" with a zero LeaseUntil, and the
// row stays claimable by anyone.
func testReleaseThenCAS(e *env) {
	e.insert(1)
	op := e.claimID("w1", id(1))
	if err := e.s.Release(e.ctx, id(1), op.Token, 0); err != nil {
		e.t.Fatalf("Release: %v", err)
	}
	e.clock.Advance(time.Second)
	got := e.step(op, "w1", sluice.Validated)
	if got.ClaimedBy != "" || !got.LeaseUntil.IsZero() {
		e.t.Errorf("after a write on a released row: ClaimedBy %q LeaseUntil %s, want no lease", got.ClaimedBy, got.LeaseUntil)
	}
	e.claimID("w2", id(1))
}

// ---------------------------------------------------------------------------
// Events.

// Goal: each operation's log is its transitions in the order they happened,
// with Seq strictly increasing across the whole store. Method: two
// operations interleave their writes; merging both logs by Seq must give
// back the order of the writes.
func testEventsOrder(e *env) {
	e.insert(1)
	e.insert(2)
	a := e.claimID("w1", id(1))
	b := e.claimID("w2", id(2))
	type write struct {
		id sluice.OperationID
		to sluice.State
	}
	var order []write
	for _, to := range []sluice.State{sluice.Validated, sluice.Signing, sluice.Signed} {
		e.clock.Advance(time.Second)
		a = e.step(a, "w1", to)
		order = append(order, write{id(1), to})
		b = e.step(b, "w2", to)
		order = append(order, write{id(2), to})
	}
	e.step(b, "w2", sluice.Broadcasting)
	order = append(order, write{id(2), sluice.Broadcasting})

	ea, eb := e.events(id(1)), e.events(id(2))
	for _, tc := range []struct {
		id   sluice.OperationID
		evs  []sluice.Event
		want []sluice.State
	}{
		{id(1), ea, []sluice.State{sluice.Requested, sluice.Validated, sluice.Signing, sluice.Signed}},
		{id(2), eb, []sluice.State{sluice.Requested, sluice.Validated, sluice.Signing, sluice.Signed, sluice.Broadcasting}},
	} {
		var got []sluice.State
		prev := sluice.None
		for i, ev := range tc.evs {
			got = append(got, ev.To)
			if ev.OperationID != tc.id {
				e.t.Errorf("Events(%s)[%d] belongs to %s", tc.id, i, ev.OperationID)
			}
			if ev.From != prev {
				e.t.Errorf("Events(%s)[%d].From = %s, want %s (the previous event's To)", tc.id, i, ev.From, prev)
			}
			prev = ev.To
			if i > 0 && ev.Seq <= tc.evs[i-1].Seq {
				e.t.Errorf("Events(%s)[%d].Seq = %d after %d, want strictly increasing", tc.id, i, ev.Seq, tc.evs[i-1].Seq)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			e.t.Errorf("Events(%s) states = %v, want %v", tc.id, got, tc.want)
		}
	}

	// Merge the two logs (creation events aside) by Seq.
	var merged []write
	i, j := 1, 1
	for i < len(ea) || j < len(eb) {
		if j >= len(eb) || (i < len(ea) && ea[i].Seq < eb[j].Seq) {
			merged = append(merged, write{ea[i].OperationID, ea[i].To})
			i++
		} else {
			merged = append(merged, write{eb[j].OperationID, eb[j].To})
			j++
		}
	}
	if fmt.Sprint(merged) != fmt.Sprint(order) {
		e.t.Errorf("writes in Seq order = %v, want the order they were made %v", merged, order)
	}
	if ea[0].Seq >= eb[0].Seq {
		e.t.Errorf("creation Seqs: %d for the first insert, %d for the second; want increasing", ea[0].Seq, eb[0].Seq)
	}
}

// ---------------------------------------------------------------------------
// Aliasing.

// Goal: nothing a caller holds can reach into the store. Method: mutate
// every slice and pointer the store hands out or was handed, then re-read.
func testNoAliasing(e *env) {
	e.insert(1)
	op := e.claimID("w1", id(1))
	op = e.step(op, "w1", sluice.Validated)

	c := e.change(op, "w1", sluice.Signing)
	op = e.cas(c)
	want := cloneOperation(e.get(id(1)))
	// The caller reuses its buffers after the write.
	c.Envelope.Raw.Memo[0] ^= 0xff
	c.Envelope.Raw.Contract.Data[0] ^= 0xff
	for _, d := range diffOperation(e.get(id(1)), want) {
		e.t.Errorf("after mutating the Change's envelope: row %s", d)
	}

	op = e.step(op, "w1", sluice.Signed)
	want = cloneOperation(e.get(id(1)))
	mutate := func(o sluice.Operation) {
		if len(o.Envelope.Signature) == 0 || len(o.Envelope.Raw.Memo) == 0 || len(o.Envelope.Raw.Contract.Data) == 0 {
			e.t.Fatalf("fixture: envelope has an empty slice: %+v", o.Envelope)
		}
		o.Envelope.Signature[0] ^= 0xff
		o.Envelope.Raw.Memo[0] ^= 0xff
		o.Envelope.Raw.Contract.Data[0] ^= 0xff
	}
	mutate(op) // returned by CAS
	for _, d := range diffOperation(e.get(id(1)), want) {
		e.t.Errorf("after mutating the row CAS returned: row %s", d)
	}
	mutate(e.get(id(1)))
	for _, d := range diffOperation(e.get(id(1)), want) {
		e.t.Errorf("after mutating the row Get returned: row %s", d)
	}
	if again, _, err := e.s.Insert(e.ctx, newOp(1)); err == nil {
		mutate(again)
	}
	for _, d := range diffOperation(e.get(id(1)), want) {
		e.t.Errorf("after mutating the row Insert returned: row %s", d)
	}
	if err := e.s.Release(e.ctx, id(1), op.Token, 0); err != nil {
		e.t.Fatalf("Release: %v", err)
	}
	want = cloneOperation(e.get(id(1)))
	claimed := e.claimID("w2", id(1))
	want.Token, want.ClaimedBy, want.LeaseUntil = claimed.Token, claimed.ClaimedBy, claimed.LeaseUntil
	mutate(claimed)
	for _, d := range diffOperation(e.get(id(1)), want) {
		e.t.Errorf("after mutating the row Claim returned: row %s", d)
	}

	// Evidence pointers, in and out.
	op = e.step(e.step(e.get(id(1)), "w2", sluice.Broadcasting), "w2", sluice.Broadcast)
	c = e.change(op, "w2", sluice.Signing)
	e.cas(c)
	wantEvs := cloneEvents(e.events(id(1)))
	c.Evidence.SolidNumber = -1
	for _, d := range diffEvents(e.events(id(1)), wantEvs) {
		e.t.Errorf("after mutating the Change's evidence: events %s", d)
	}
	evs := e.events(id(1))
	last := evs[len(evs)-1]
	if last.Evidence == nil {
		e.t.Fatal("rebuild event has no evidence")
	}
	last.Evidence.SolidNumber = -2
	for _, d := range diffEvents(e.events(id(1)), wantEvs) {
		e.t.Errorf("after mutating evidence Events returned: events %s", d)
	}

	// Decision pointers, in and out, through CAS and Resolve.
	op = e.get(id(1))
	c = e.change(op, "w2", sluice.Signed)
	c.Decision = &sluice.Decision{Action: sluice.Rebuild, Reason: "kept", Waited: time.Minute, Rebuilds: 1}
	op = e.cas(c)
	r := sluice.Resolution{ID: op.ID, From: op.State, To: op.State, Operator: "alice", Why: "retry",
		Decision: &sluice.Decision{Action: sluice.Wait, Reason: "kept too", Waited: time.Hour, Rebuilds: 2}}
	if _, err := e.s.Resolve(e.ctx, r); err != nil {
		e.t.Fatalf("Resolve: %v", err)
	}
	wantEvs = cloneEvents(e.events(id(1)))
	c.Decision.Reason, r.Decision.Reason = "changed", "changed"
	for _, d := range diffEvents(e.events(id(1)), wantEvs) {
		e.t.Errorf("after mutating the decisions given: events %s", d)
	}
	evs = e.events(id(1))
	for _, ev := range evs[len(evs)-2:] {
		if ev.Decision == nil {
			e.t.Fatalf("event %s->%s lost its decision", ev.From, ev.To)
		}
		ev.Decision.Reason = "scribbled"
	}
	for _, d := range diffEvents(e.events(id(1)), wantEvs) {
		e.t.Errorf("after mutating decisions Events returned: events %s", d)
	}
}

// Goal: a call whose context is already canceled fails and writes nothing,
// as a query on a canceled context would.
func testCanceledContext(e *env) {
	e.insert(1)
	before := e.record(id(1))
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, _, err := e.s.Insert(ctx, newOp(2)); err == nil {
		e.t.Error("Insert with a canceled context: err = nil, want an error")
	}
	if _, err := e.s.Get(e.ctx, id(2)); !errors.Is(err, sluice.ErrNotFound) {
		e.t.Errorf("Get after a canceled Insert: err = %v, want ErrNotFound", err)
	}
	if _, err := e.s.Claim(ctx, "w1", 1); err == nil {
		e.t.Error("Claim with a canceled context: err = nil, want an error")
	}
	e.unchanged("canceled Claim", id(1), before)
	op := e.claimID("w1", id(1))
	before = e.record(id(1))
	if _, err := e.s.CAS(ctx, e.change(op, "w1", sluice.Validated)); err == nil {
		e.t.Error("CAS with a canceled context: err = nil, want an error")
	}
	e.unchanged("canceled CAS", id(1), before)
	if err := e.s.Release(ctx, id(1), op.Token, 0); err == nil {
		e.t.Error("Release with a canceled context: err = nil, want an error")
	}
	e.unchanged("canceled Release", id(1), before)
	if _, err := e.s.Park(ctx, sluice.Park{ID: id(1), Token: op.Token, Worker: "w1", After: time.Hour, Reason: "r"}); err == nil {
		e.t.Error("Park with a canceled context: err = nil, want an error")
	}
	e.unchanged("canceled Park", id(1), before)
	r := sluice.Resolution{ID: id(1), From: sluice.Requested, To: sluice.Failed, Operator: "op", Why: "why", Hold: sluice.HoldRelease}
	if _, err := e.s.Resolve(ctx, r); err == nil {
		e.t.Error("Resolve with a canceled context: err = nil, want an error")
	}
	e.unchanged("canceled Resolve", id(1), before)
	if _, _, err := e.s.Credit(ctx, sluice.Credit{Ref: "canceled", Customer: customer, Amount: 5}); err == nil {
		e.t.Error("Credit with a canceled context: err = nil, want an error")
	}
	e.unchanged("canceled Credit", id(1), before)
	if _, _, err := e.s.Credit(ctx, sluice.Credit{Ref: "canceled-new", Customer: "new-customer", Amount: 5}); err == nil {
		e.t.Error("Credit of a new customer with a canceled context: err = nil, want an error")
	}
	if _, err := e.s.Account(e.ctx, "new-customer"); !errors.Is(err, sluice.ErrNotFound) {
		e.t.Errorf("Account after a canceled first Credit: err = %v, want ErrNotFound", err)
	}
	if _, err := e.s.List(ctx, sluice.ListFilter{Limit: 10}); err == nil {
		e.t.Error("List with a canceled context: err = nil, want an error")
	}
	if _, err := e.s.Census(ctx); err == nil {
		e.t.Error("Census with a canceled context: err = nil, want an error")
	}
	if _, err := e.s.Account(ctx, customer); err == nil {
		e.t.Error("Account with a canceled context: err = nil, want an error")
	}
	if _, err := e.s.Hold(ctx, id(1)); err == nil {
		e.t.Error("Hold with a canceled context: err = nil, want an error")
	}
}

// ---------------------------------------------------------------------------
// Rules about states, for every state.

// perStateCases states the claim and fencing rules once per state of the
// transition table, generated from it: a rule about states is only tested
// if it is tested in every state, and a state added to the table is covered
// without anyone remembering to.
func perStateCases() []testCase {
	var out []testCase
	add := func(name string, run func(*env)) { out = append(out, testCase{name, run}) }
	for _, s := range sluice.States {
		add("PerState/"+s.String()+"/ClaimableOnceTheLeaseLapses", func(e *env) { testStateClaimable(e, s) })
		if s.Terminal() {
			continue
		}
		add("PerState/"+s.String()+"/LiveLeaseIsNotTaken", func(e *env) { testStateLiveLease(e, s) })
		add("PerState/"+s.String()+"/TakeoverFencesTheHolder", func(e *env) { testStateTakeover(e, s) })
	}
	return out
}

// Goal: once the holder's lease lapses, a row in a non-terminal state is
// claimed by the next worker under the next token, in the same state; a
// terminal row never is.
func testStateClaimable(e *env, s sluice.State) {
	op := e.drive(1, "w1", s)
	e.clock.Advance(Lease)
	if s.Terminal() {
		e.claimNone("w2")
		return
	}
	got := e.claimID("w2", id(1))
	if got.Token != op.Token+1 || got.State != s || got.ClaimedBy != "w2" {
		e.t.Errorf("claim of a %s row whose lease lapsed: token %d, state %s, holder %q; want token %d, %s, w2",
			s, got.Token, got.State, got.ClaimedBy, op.Token+1, s)
	}
}

// Goal: a row in any non-terminal state is not taken while its lease is
// live, up to the last nanosecond.
func testStateLiveLease(e *env, s sluice.State) {
	e.drive(1, "w1", s)
	e.clock.Advance(Lease - time.Nanosecond)
	e.claimNone("w2")
}

// Goal: in every non-terminal state, once another worker has taken the row
// over, every write the previous holder could make (each legal edge out of
// the state) is fenced and changes nothing.
func testStateTakeover(e *env, s sluice.State) {
	old := e.drive(1, "w1", s)
	e.clock.Advance(Lease)
	e.claimID("w2", id(1))
	for _, t := range sluice.Transitions() {
		if t.From != s {
			continue
		}
		before := e.record(id(1))
		_, err := e.s.CAS(e.ctx, e.change(old, "w1", t.To))
		if !errors.Is(err, sluice.ErrFenced) {
			e.t.Errorf("the previous holder's %s->%s after a takeover: err = %v, want ErrFenced", s, t.To, err)
		}
		e.unchanged(fmt.Sprintf("the fenced %s->%s", s, t.To), id(1), before)
	}
}
