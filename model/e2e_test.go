package model

// End to end: the real core (intake, store, worker, pipeline) against the
// mock node under one manual clock, and the checkers over what it left
// behind. This is the check that the checkers read the real data shapes the
// way the hand-built snapshots assume.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

type e2e struct {
	t             *testing.T
	ctx           context.Context
	clock         *storetest.Clock
	store         *store.Memory
	node          *mocknode.Node
	intake        *intake.Service
	worker        *sluice.Worker
	start         time.Time
	step          int64
	intakeRecords []IntakeRecord
}

func newE2E(t *testing.T) *e2e {
	t.Helper()
	clock := &storetest.Clock{}
	signer := tron.NewHMACSigner([]byte("model-e2e-key"))
	st := store.NewMemory(clock, 30*time.Second)
	node := mocknode.New(clock, mocknode.Config{
		Genesis:    clock.Now().Add(-10 * time.Minute),
		HotWallet:  hotWallet,
		HotBalance: 1_000_000 * 1_000_000,
		Verifier:   signer,
	})
	cfg := sluice.DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return &e2e{
		t: t, ctx: context.Background(), clock: clock, store: st, node: node,
		intake: &intake.Service{Store: st},
		worker: &sluice.Worker{
			ID: "w1",
			Pipeline: &sluice.Pipeline{
				Store: st, Node: node.Client("w1"), Signer: signer, Clock: clock,
				HotWallet: hotWallet, Config: cfg,
			},
			Rand: rand.New(rand.NewPCG(1, 2)),
		},
		start: clock.Now(),
	}
}

// submit posts a withdrawal through intake and records what the client was
// told, with the model's own reading of the payload's hash.
func (w *e2e) submit(client, id, to, amount string) {
	w.t.Helper()
	sub := intake.Submission{OperationID: id, ToAddress: to, Amount: amount, Asset: sluice.Asset}
	rec := IntakeRecord{Client: client, ID: id}
	if op, err := intake.Normalize(sub); err == nil {
		rec.RequestHash = op.RequestHash
	}
	w.step++
	rec.Call = w.step
	res, err := w.intake.Submit(w.ctx, sub)
	w.step++
	rec.Return = w.step
	switch {
	case err == nil && res.Created:
		rec.Outcome, rec.Returned, rec.State = Created, res.Operation.RequestHash, res.Operation.State
	case err == nil:
		rec.Outcome, rec.Returned, rec.State = Replayed, res.Operation.RequestHash, res.Operation.State
	case errors.Is(err, sluice.ErrPayloadMismatch):
		rec.Outcome = Conflict
	case errors.Is(err, intake.ErrInvalid):
		rec.Outcome = Invalid
	default:
		rec.Outcome = Failed
	}
	w.intakeRecords = append(w.intakeRecords, rec)
}

func (w *e2e) tick() int {
	w.t.Helper()
	rep, err := w.worker.Tick(w.ctx)
	if err != nil {
		w.t.Fatalf("Tick: %v", err)
	}
	return rep.Claimed
}

func (w *e2e) settle(budget time.Duration) {
	w.t.Helper()
	deadline := w.clock.Now().Add(budget)
	for {
		settled := true
		for _, op := range w.store.Snapshot().Operations {
			settled = settled && op.State.Terminal()
		}
		if settled {
			return
		}
		if w.clock.Now().After(deadline) {
			w.t.Fatalf("not settled within %s", budget)
		}
		if w.tick() == 0 {
			w.clock.Advance(time.Second)
		}
	}
}

func (w *e2e) snapshot() *Snapshot {
	st := w.store.Snapshot()
	return &Snapshot{
		Operations:     st.Operations,
		Events:         st.Events,
		Wire:           w.node.Wire(),
		Accepted:       w.node.Accepted(),
		Inclusions:     w.node.Inclusions(),
		Blocks:         w.node.Blocks(),
		SolidNumber:    w.node.Solid().Number,
		HotWallet:      hotWallet,
		Intake:         w.intakeRecords,
		Healed:         w.start,
		End:            w.clock.Now(),
		LivenessBudget: 30 * time.Minute,
	}
}

// Goal: three withdrawals settled by the real core, one of them through a
// proof-of-death rebuild, plus a replay, a conflict and an invalid post,
// keep every invariant. Method: the first transaction is evicted after its
// acceptance and every re-send of it is lost, so it dies and is rebuilt.
func TestEndToEndRealRunKeepsEveryInvariant(t *testing.T) {
	w, s := runE2E(t)
	if got := Check(s); len(got) != 0 {
		t.Fatalf("Check: %d violations, want none:\n%s", len(got), describe(got))
	}
	rebuilds := 0
	for _, e := range s.Events {
		if e.Evidence != nil {
			rebuilds++
		}
	}
	if rebuilds != 1 || len(s.Inclusions) != 3 {
		t.Errorf("setup: %d rebuilds with evidence and %d inclusions, want 1 and 3", rebuilds, len(s.Inclusions))
	}
	if got := w.node.Balance(alice); got != 1_500_000+2_000_000+3_000_000 {
		t.Errorf("alice's balance = %d, want 6500000", got)
	}
}

// Goal: the checkers catch tampering with a real run's snapshot, not just
// with hand-built ones.
func TestEndToEndTamperedRunIsCaught(t *testing.T) {
	for _, tc := range []struct {
		name      string
		invariant string
		tamper    func(s *Snapshot)
	}{
		{"evidence dropped", AuditLog, func(s *Snapshot) {
			for i := range s.Events {
				s.Events[i].Evidence = nil
			}
		}},
		{"amount off by one", Conservation, func(s *Snapshot) { s.Inclusions[0].Transfer.Amount++ }},
		{"retired txid included", AuditLog, func(s *Snapshot) {
			for _, e := range s.Events {
				if !e.RetiredTxid.IsZero() {
					s.Inclusions = append(s.Inclusions, mocknode.Inclusion{Txid: e.RetiredTxid, BlockNumber: 1, Receipt: tron.ReceiptRevert})
				}
			}
		}},
		{"replay told another state", IntakeUniqueness, func(s *Snapshot) {
			for i := range s.Intake {
				if s.Intake[i].Outcome == Replayed {
					s.Intake[i].State = sluice.Rejected
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s := runE2E(t)
			tc.tamper(s)
			got := Check(s)
			found := false
			for _, v := range got {
				found = found || v.Invariant == tc.invariant
			}
			if !found {
				t.Errorf("want a %s violation, got:\n%s", tc.invariant, describe(got))
			}
		})
	}
}

func runE2E(t *testing.T) (*e2e, *Snapshot) {
	t.Helper()
	w := newE2E(t)
	ids := make([]string, 3)
	for i := range ids {
		ids[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)
	}
	w.submit("c1", ids[0], alice.String(), "1.5")
	w.submit("c1", ids[1], alice.String(), "2")
	w.submit("c2", ids[2], alice.String(), "3")
	w.submit("c3", ids[0], alice.String(), "1.50")    // a replay: same instruction
	w.submit("c4", ids[1], bob.String(), "2")         // a conflict: another payload
	w.submit("c5", "not-a-uuid", alice.String(), "1") // refused at the door

	w.tick()
	first, err := w.store.Get(w.ctx, sluice.OperationID(ids[0]))
	if err != nil {
		t.Fatal(err)
	}
	if first.State != sluice.Broadcast {
		t.Fatalf("setup: %s is %s after one tick, want broadcast", first.ID, first.State)
	}
	dead := first.Envelope.Txid
	if !w.node.Evict(dead) {
		t.Fatal("setup: Evict found nothing in the pool")
	}
	w.node.SetFaults(func(c mocknode.Call) mocknode.Fault {
		if c.Kind == mocknode.Broadcast && c.Txid == dead {
			return mocknode.LoseRequest
		}
		return mocknode.None
	})
	w.settle(time.Hour)
	// Let the chain run on so that every inclusion is well below the solid head.
	w.clock.Advance(2 * time.Minute)
	return w, w.snapshot()
}
