package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock sluice.Clock, lease time.Duration) sluice.Store {
		return store.NewMemory(clock, lease)
	})
}

func opID(n int) sluice.OperationID {
	return sluice.OperationID(fmt.Sprintf("00000000-0000-4000-8000-%012d", n))
}

// payer pays every operation newOp makes; newMemory credits it with enough
// for all of them.
const payer sluice.CustomerID = "payer"

func newOp(n int) sluice.NewOperation {
	return sluice.NewOperation{
		ID:          opID(n),
		Request:     sluice.Request{Customer: payer, To: tron.AddressFromBytes20([20]byte{byte(n)}), Amount: 5, Asset: sluice.Asset},
		RequestHash: fmt.Sprintf("hash-%d", n),
	}
}

// newMemory is store.NewMemory with payer credited.
func newMemory(t *testing.T, clock sluice.Clock, lease time.Duration) *store.Memory {
	t.Helper()
	m := store.NewMemory(clock, lease)
	if _, _, err := m.Credit(t.Context(), sluice.Credit{Ref: "fixture", Customer: payer, Amount: 1_000_000}); err != nil {
		t.Fatal(err)
	}
	return m
}

func envelope(memo string) sluice.Envelope {
	raw := tron.RawData{Timestamp: 1, Memo: []byte(memo), Contract: tron.TriggerSmartContract{Data: []byte{1, 2, 3}}}
	return sluice.Envelope{Txid: raw.Txid(), Raw: raw}
}

// script drives a small fixed history: two operations, one rebuilt once
// with evidence and then failed, one left signing, plus a refused write.
// It returns the txids the first operation used, oldest first.
func script(t *testing.T, m *store.Memory, clock *storetest.Clock) []tron.Txid {
	t.Helper()
	ctx := t.Context()
	must := func(op sluice.Operation, err error) sluice.Operation {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	for _, n := range []int{2, 1} {
		if _, _, err := m.Insert(ctx, newOp(n)); err != nil {
			t.Fatal(err)
		}
	}
	ops, err := m.Claim(ctx, "w1", 2)
	if err != nil || len(ops) != 2 {
		t.Fatalf("Claim = %v, %v; want two rows", ops, err)
	}
	a, b := ops[0], ops[1]
	clock.Advance(time.Second)
	e1, e2, e3 := envelope("a1"), envelope("a2"), envelope("b1")
	a = must(m.CAS(ctx, sluice.Change{ID: a.ID, Token: a.Token, Worker: "w1", From: sluice.Requested, To: sluice.Validated}))
	a = must(m.CAS(ctx, sluice.Change{ID: a.ID, Token: a.Token, Worker: "w1", From: sluice.Validated, To: sluice.Signing, Envelope: &e1, Builds: 1}))
	a = must(m.CAS(ctx, sluice.Change{ID: a.ID, Token: a.Token, Worker: "w1", From: sluice.Signing, To: sluice.Signed}))
	a = must(m.CAS(ctx, sluice.Change{ID: a.ID, Token: a.Token, Worker: "w1", From: sluice.Signed, To: sluice.Broadcasting}))
	clock.Advance(time.Minute)
	ev := &sluice.Evidence{Txid: e1.Txid, SolidNumber: 9, Lookup: tron.Unknown}
	a = must(m.CAS(ctx, sluice.Change{ID: a.ID, Token: a.Token, Worker: "w1", From: sluice.Broadcasting, To: sluice.Signing,
		Envelope: &e2, Builds: 2, RetiredTxid: e1.Txid, Evidence: ev}))
	b = must(m.CAS(ctx, sluice.Change{ID: b.ID, Token: b.Token, Worker: "w1", From: sluice.Requested, To: sluice.Validated}))
	if _, err := m.CAS(ctx, sluice.Change{ID: b.ID, Token: b.Token, Worker: "w1", From: sluice.Validated, To: sluice.Signing, Envelope: &e1}); !errors.Is(err, sluice.ErrTxidTaken) {
		t.Fatalf("CAS with a retired txid of another operation: %v, want ErrTxidTaken", err)
	}
	must(m.CAS(ctx, sluice.Change{ID: b.ID, Token: b.Token, Worker: "w1", From: sluice.Validated, To: sluice.Signing, Envelope: &e3, Builds: 1}))
	must(m.CAS(ctx, sluice.Change{ID: a.ID, Token: a.Token, Worker: "w1", From: sluice.Signing, To: sluice.Failed, Reason: "gave up", Hold: sluice.HoldRelease}))
	return []tron.Txid{e1.Txid, e2.Txid}
}

// Goal: Snapshot is the whole store, rows in insertion order and events
// contiguous from Seq 1, agreeing with Get and Events, and sharing nothing
// with the store.
func TestSnapshot(t *testing.T) {
	clock := &storetest.Clock{}
	m := newMemory(t, clock, time.Minute)
	script(t, m, clock)
	snap := m.Snapshot()

	if got, want := []sluice.OperationID{snap.Operations[0].ID, snap.Operations[1].ID}, []sluice.OperationID{opID(2), opID(1)}; len(snap.Operations) != 2 || !reflect.DeepEqual(got, want) {
		t.Fatalf("Snapshot operations = %v, want %v in insertion order", got, want)
	}
	for i, ev := range snap.Events {
		if ev.Seq != int64(i+1) {
			t.Errorf("Snapshot.Events[%d].Seq = %d, want %d (contiguous from 1)", i, ev.Seq, i+1)
		}
	}
	var fromEvents []sluice.Event
	for _, op := range snap.Operations {
		got, err := m.Get(t.Context(), op.ID)
		if err != nil || !reflect.DeepEqual(got, op) {
			t.Errorf("Get(%s) = %+v, %v; want the snapshot's row %+v", op.ID, got, err, op)
		}
		evs, err := m.Events(t.Context(), op.ID)
		if err != nil {
			t.Fatal(err)
		}
		fromEvents = append(fromEvents, evs...)
	}
	if len(fromEvents) != len(snap.Events) {
		t.Errorf("Snapshot has %d events, Events of all rows %d", len(snap.Events), len(fromEvents))
	}

	// Scribble over the snapshot; a fresh one must not notice.
	before := cloneSnapshot(m.Snapshot())
	for i := range snap.Operations {
		op := &snap.Operations[i]
		op.State = sluice.Confirmed
		if len(op.Envelope.Raw.Memo) > 0 {
			op.Envelope.Raw.Memo[0] ^= 0xff
			op.Envelope.Raw.Contract.Data[0] ^= 0xff
		}
	}
	for i := range snap.Events {
		if snap.Events[i].Evidence != nil {
			snap.Events[i].Evidence.SolidNumber = -1
		}
		if snap.Events[i].Decision != nil {
			snap.Events[i].Decision.Reason = "scribbled"
		}
	}
	for i := range snap.Accounts {
		snap.Accounts[i].Balance++
	}
	for i := range snap.Holds {
		snap.Holds[i].State = sluice.HoldSettled
	}
	for i := range snap.Credits {
		snap.Credits[i].Amount++
	}
	if after := m.Snapshot(); !reflect.DeepEqual(after, before) {
		t.Errorf("mutating a Snapshot changed the store:\n got %+v\nwant %+v", after, before)
	}
}

// cloneSnapshot shares nothing with s, so that comparing it with a later
// snapshot would catch a store whose snapshots share its memory.
func cloneSnapshot(s store.Snapshot) store.Snapshot {
	out := store.Snapshot{
		Operations: append([]sluice.Operation(nil), s.Operations...),
		Events:     append([]sluice.Event(nil), s.Events...),
		Accounts:   append([]sluice.Account(nil), s.Accounts...),
		Credits:    append([]sluice.Credit(nil), s.Credits...),
		Holds:      append([]sluice.Hold(nil), s.Holds...),
	}
	for i := range out.Operations {
		env := &out.Operations[i].Envelope
		env.Signature = bytes.Clone(env.Signature)
		env.Raw.Memo = bytes.Clone(env.Raw.Memo)
		env.Raw.Contract.Data = bytes.Clone(env.Raw.Contract.Data)
	}
	for i := range out.Events {
		if ev := out.Events[i].Evidence; ev != nil {
			c := *ev
			out.Events[i].Evidence = &c
		}
		if d := out.Events[i].Decision; d != nil {
			c := *d
			out.Events[i].Decision = &c
		}
	}
	return out
}

// Goal: a txid stays owned by its operation after it is retired and after
// the operation is terminal; TxidOwner sees both.
func TestTxidOwner(t *testing.T) {
	clock := &storetest.Clock{}
	m := newMemory(t, clock, time.Minute)
	used := script(t, m, clock)
	for i, txid := range used {
		if owner, ok := m.TxidOwner(txid); !ok || owner != opID(2) {
			t.Errorf("TxidOwner(build %d %s) = %q, %v; want %s, true", i+1, txid.Short(), owner, ok, opID(2))
		}
	}
	b := envelope("b1")
	if owner, ok := m.TxidOwner(b.Txid); !ok || owner != opID(1) {
		t.Errorf("TxidOwner(%s) = %q, %v; want %s, true", b.Txid.Short(), owner, ok, opID(1))
	}
	if owner, ok := m.TxidOwner(envelope("never").Txid); ok {
		t.Errorf("TxidOwner(unused txid) = %q, true; want false", owner)
	}
}

// Goal: the same calls give the same store, byte for byte: the simulator
// compares trace hashes of a seed run twice, and the store is in the trace.
func TestDeterministic(t *testing.T) {
	var snaps []store.Snapshot
	for range 2 {
		clock := &storetest.Clock{}
		m := newMemory(t, clock, time.Minute)
		script(t, m, clock)
		snaps = append(snaps, m.Snapshot())
	}
	if !reflect.DeepEqual(snaps[0], snaps[1]) {
		t.Errorf("two runs of the same script differ:\n%+v\n%+v", snaps[0], snaps[1])
	}
}

func TestNewMemoryRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clock sluice.Clock
		lease time.Duration
	}{{"nil clock", nil, time.Minute}, {"zero lease", &storetest.Clock{}, 0}, {"negative lease", &storetest.Clock{}, -time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("NewMemory(%s) did not panic", tc.name)
				}
			}()
			store.NewMemory(tc.clock, tc.lease)
		})
	}
}

// fixedClock never moves and holds no lock. The concurrency tests use it
// where they want the race detector to see the store's own synchronization
// and nothing else: a clock with a mutex would order the goroutines' store
// accesses by itself and hide a store that forgot to lock.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// Goal: concurrent inserts of one id create it exactly once (intake's
// ON CONFLICT race). Run with -race.
func TestConcurrentInsert(t *testing.T) {
	t.Run("fast clock", func(t *testing.T) { concurrentInsert(t, fixedClock{storetest.Epoch}) })
	// A clock that takes a while (a database's now() under load) widens
	// any window between the existence check and the insert: a store that
	// reads the clock outside its critical section is caught here, where
	// a fast clock lets the race hide.
	t.Run("slow clock", func(t *testing.T) { concurrentInsert(t, slowClock{storetest.Epoch}) })
}

// slowClock is a fixed clock whose every reading takes a millisecond.
type slowClock struct{ t time.Time }

func (c slowClock) Now() time.Time {
	time.Sleep(time.Millisecond)
	return c.t
}

func concurrentInsert(t *testing.T, clock sluice.Clock) {
	const inserters = 32
	ctx := t.Context()
	m := newMemory(t, clock, time.Minute)
	created := make([]bool, inserters)
	var wg sync.WaitGroup
	for i := range inserters {
		wg.Go(func() {
			op, c, err := m.Insert(ctx, newOp(0))
			if err != nil || op.ID != opID(0) || op.State != sluice.Requested {
				t.Errorf("Insert = %s %s, %v", op.ID, op.State, err)
			}
			created[i] = c
		})
	}
	wg.Wait()
	n := 0
	for _, c := range created {
		if c {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d of %d concurrent inserts created the row, want exactly 1", n, inserters)
	}
	if evs, err := m.Events(ctx, opID(0)); err != nil || len(evs) != 1 {
		t.Errorf("Events after concurrent inserts = %d events, %v; want 1", len(evs), err)
	}
}

// grant is one claim handed out: the row and the token it was granted under.
type grant struct {
	id    sluice.OperationID
	token sluice.FencingToken
}

// Goal: concurrent claimers never share a row (SKIP LOCKED exclusivity).
// Method: time stands still, so no lease expires and every row must be
// granted exactly once, under token 1, to exactly one worker. Grants are
// collected per worker and merged afterwards, so the test itself adds no
// synchronization the race detector could mistake for the store's.
func TestConcurrentClaim(t *testing.T) {
	const (
		rows    = 64
		workers = 8
		rounds  = 50
	)
	ctx := t.Context()
	m := newMemory(t, fixedClock{storetest.Epoch}, time.Minute)
	for i := 1; i <= rows; i++ {
		if _, _, err := m.Insert(ctx, newOp(i)); err != nil {
			t.Fatal(err)
		}
	}
	got := make([][]grant, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range rounds {
				ops, err := m.Claim(ctx, sluice.WorkerID(fmt.Sprintf("w%d", w)), 2)
				if err != nil {
					t.Error(err)
					return
				}
				for _, op := range ops {
					got[w] = append(got[w], grant{op.ID, op.Token})
				}
			}
		})
	}
	wg.Wait()
	holder := map[sluice.OperationID]int{}
	for w, gs := range got {
		for _, g := range gs {
			if other, dup := holder[g.id]; dup {
				t.Errorf("%s granted to both w%d and w%d under a live lease", g.id, other, w)
			}
			holder[g.id] = w
			if g.token != 1 {
				t.Errorf("%s granted under token %d, want 1 (its only claim)", g.id, g.token)
			}
		}
	}
	if len(holder) != rows {
		t.Errorf("%d of %d rows were claimed, want all", len(holder), rows)
	}
}

// Goal: under a mixed workload (claims, writes, releases, reads, snapshots)
// while the clock runs leases out, every (row, token) is granted once and
// each row's tokens are exactly 1..n for its n claims: a lost or doubled
// increment would let two workers hold one row under one token.
func TestConcurrentWorkload(t *testing.T) {
	const (
		rows    = 24
		workers = 8
		rounds  = 200
		lease   = 10 * time.Second
	)
	ctx := t.Context()
	clock := &storetest.Clock{}
	m := newMemory(t, clock, lease)
	for i := 1; i <= rows; i++ {
		if _, _, err := m.Insert(ctx, newOp(i)); err != nil {
			t.Fatal(err)
		}
	}
	got := make([][]grant, workers)
	var wg sync.WaitGroup
	for w := range workers {
		worker := sluice.WorkerID(fmt.Sprintf("w%d", w))
		wg.Go(func() {
			for r := range rounds {
				ops, err := m.Claim(ctx, worker, 1+r%3)
				if err != nil {
					t.Error(err)
					return
				}
				for _, op := range ops {
					got[w] = append(got[w], grant{op.ID, op.Token})
					// Write or let go; a lapsed lease means the write may be fenced.
					if op.State == sluice.Requested && r%2 == 0 {
						_, err := m.CAS(ctx, sluice.Change{ID: op.ID, Token: op.Token, Worker: worker, From: op.State, To: sluice.Validated})
						if err != nil && !errors.Is(err, sluice.ErrFenced) {
							t.Errorf("CAS: %v", err)
						}
					}
					if r%3 == 0 {
						if err := m.Release(ctx, op.ID, op.Token, 0); err != nil {
							t.Errorf("Release: %v", err)
						}
					}
				}
				if _, err := m.Get(ctx, opID(r%rows+1)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Go(func() {
		for range rounds {
			clock.Advance(lease / 4)
			_ = m.Snapshot()
		}
	})
	// A watcher polls how far each log has grown (EventCount, what the
	// simulator's clients read) while a late client inserts: the count must
	// be read under the store's lock like every other read, or the race
	// detector stops this test (and production a concurrent map read).
	wg.Go(func() {
		for r := range rounds {
			for i := 1; i <= rows; i++ {
				if _, ok := m.EventCount(opID(i)); !ok {
					t.Errorf("EventCount(%s): not held", opID(i))
					return
				}
			}
			_, _ = m.EventCount(opID(rows + 1 + r))
		}
	})
	wg.Go(func() {
		for r := range rounds {
			if _, _, err := m.Insert(ctx, newOp(rows+1+r)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()

	seen := map[grant]bool{}
	count := map[sluice.OperationID]int{}
	for w, gs := range got {
		for _, g := range gs {
			if seen[g] {
				t.Errorf("%s token %d granted twice (again to w%d)", g.id, g.token, w)
			}
			seen[g] = true
			count[g.id]++
		}
	}
	if len(seen) == 0 {
		t.Fatal("no claims were granted; the test exercised nothing")
	}
	for _, op := range m.Snapshot().Operations {
		// Distinct grants numbering n, each <= the row's token n, are 1..n.
		if int(op.Token) != count[op.ID] {
			t.Errorf("%s: row token %d after %d grants; want equal", op.ID, op.Token, count[op.ID])
		}
		for tok := sluice.FencingToken(1); tok <= op.Token; tok++ {
			if !seen[grant{op.ID, tok}] {
				t.Errorf("%s: token %d was never granted", op.ID, tok)
			}
		}
	}
}

func TestOpenCountsNonTerminalRows(t *testing.T) {
	clock := &storetest.Clock{}
	m := newMemory(t, clock, storetest.Lease)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		if _, _, err := m.Insert(ctx, newOp(i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Open(); got != 3 {
		t.Fatalf("Open() = %d, want 3", got)
	}
	ops, _ := m.Claim(ctx, "w", 1)
	if _, err := m.CAS(ctx, sluice.Change{ID: ops[0].ID, Token: ops[0].Token, Worker: "w", From: sluice.Requested, To: sluice.Rejected, Reason: "test", Hold: sluice.HoldRelease}); err != nil {
		t.Fatal(err)
	}
	if got := m.Open(); got != 2 {
		t.Errorf("Open() after one rejection = %d, want 2", got)
	}
}

// Goal: store.Memory refuses a credit past an Amount's range as every
// store does (storetest.CreditPastBaseUnits). Its account is filled with
// credits through the interface: some 18,000 of the largest.
func TestMemoryCreditPastBaseUnits(t *testing.T) {
	s := store.NewMemory(&storetest.Clock{}, time.Minute)
	storetest.CreditPastBaseUnits(t, s, func(t *testing.T, s sluice.Store, c sluice.CustomerID, d money.Amount) {
		for i := 0; d > 0; i++ {
			a := min(d, money.MaxAmount)
			if _, _, err := s.Credit(t.Context(), sluice.Credit{Ref: fmt.Sprintf("fill:%d", i), Customer: c, Amount: a}); err != nil {
				t.Fatal(err)
			}
			d -= a
		}
	})
}
