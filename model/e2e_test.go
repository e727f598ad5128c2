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
	"net/http"
	"net/http/httptest"
	"slices"
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
	deposits      []sluice.Credit
	t             *testing.T
	ctx           context.Context
	clock         *storetest.Clock
	store         *store.Memory
	watch         *watched
	node          *mocknode.Node
	intake        *intake.Service
	api           http.Handler
	worker        *sluice.Worker
	cfg           sluice.Config
	start         time.Time
	step          int64
	intakeRecords []IntakeRecord
	readRecords   []ReadRecord
}

// e2eCustomer is the one customer of the end-to-end runs, funded at start.
const e2eCustomer = "e2e-cust"

// e2eLease is the store's lease in the end-to-end runs.
const e2eLease = 30 * time.Second

// watched is the worker's store as the world sees it: every claim that took
// a row, every write that landed (with the event it appended), every
// release that gave a lease up and every envelope stored, recorded from
// outside the store and attributed to the process that made the call (not
// to the worker id the core passes).
type watched struct {
	*store.Memory
	clock     sluice.Clock
	proc      string // the one process that calls this store
	claims    []ClaimRecord
	writes    []WriteRecord
	releases  []ReleaseRecord
	parks     []ReleaseRecord
	envelopes []sluice.Envelope
}

func (s *watched) Claim(ctx context.Context, worker sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	ops, err := s.Memory.Claim(ctx, worker, limit)
	for _, op := range ops {
		s.claims = append(s.claims, ClaimRecord{Op: op.ID, Token: op.Token, Proc: s.proc, At: s.clock.Now()})
	}
	return ops, err
}

func (s *watched) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	row, err := s.Memory.CAS(ctx, c)
	if err != nil {
		return row, err
	}
	evs := s.Memory.Snapshot().Events // one worker, one call at a time: the last event is this write's
	s.writes = append(s.writes, WriteRecord{Seq: evs[len(evs)-1].Seq, Op: c.ID, Token: row.Token,
		Proc: s.proc, At: s.clock.Now(), Terminal: c.To.Terminal()})
	if c.Envelope != nil && !slices.ContainsFunc(s.envelopes, func(e sluice.Envelope) bool { return e.Txid == row.Envelope.Txid }) {
		s.envelopes = append(s.envelopes, row.Envelope) // first stored
	}
	return row, nil
}

func (s *watched) Park(ctx context.Context, p sluice.Park) (sluice.Operation, error) {
	row, err := s.Memory.Park(ctx, p)
	if err == nil {
		r := ReleaseRecord{Op: p.ID, Token: p.Token, Proc: s.proc, At: s.clock.Now()}
		s.releases = append(s.releases, r)
		s.parks = append(s.parks, r)
	}
	return row, err
}

func (s *watched) Release(ctx context.Context, id sluice.OperationID, token sluice.FencingToken, after time.Duration) error {
	held, _ := s.Memory.Get(ctx, id)
	err := s.Memory.Release(ctx, id, token, after)
	if err == nil && !held.State.Terminal() && held.ClaimedBy != "" && held.Token == token {
		s.releases = append(s.releases, ReleaseRecord{Op: id, Token: token, Proc: s.proc, At: s.clock.Now()})
	}
	return err
}

func newE2E(t *testing.T) *e2e {
	t.Helper()
	clock := &storetest.Clock{}
	signer := tron.NewHMACSigner([]byte("model-e2e-key"))
	st := store.NewMemory(clock, e2eLease)
	watch := &watched{Memory: st, clock: clock, proc: "w1"}
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
	deposit := sluice.Credit{Ref: "e2e-deposit", Customer: e2eCustomer, Amount: 1_000_000 * 1_000_000}
	if _, _, err := st.Credit(context.Background(), deposit); err != nil {
		t.Fatal(err)
	}
	svc := &intake.Service{Store: st}
	return &e2e{
		deposits: []sluice.Credit{deposit},
		t:        t, ctx: context.Background(), clock: clock, store: st, watch: watch, node: node,
		intake: svc, api: intake.NewHandler(svc), cfg: cfg,
		worker: &sluice.Worker{
			ID: "w1",
			Pipeline: &sluice.Pipeline{
				Store: watch, Node: node.Client("w1"), Signer: signer, Clock: clock,
				HotWallet: hotWallet, Config: cfg,
			},
			Rand: rand.New(rand.NewPCG(1, 2)),
		},
		start: clock.Now(),
	}
}

// submit posts a withdrawal through intake and records what the client was
// told: the payload as it sent it (its own strings) and, for an accepted
// post, the payload of the row the answer carried, written as the answer's
// body writes it.
func (w *e2e) submit(client, id, to, amount string) {
	w.t.Helper()
	sub := intake.Submission{OperationID: id, Customer: e2eCustomer, ToAddress: to, Amount: amount, Asset: sluice.Asset}
	rec := IntakeRecord{Client: client, ID: id, Sent: Payload{ID: id, Customer: e2eCustomer, To: to, Amount: amount, Asset: sluice.Asset}}
	w.step++
	rec.Call = w.step
	res, err := w.intake.Submit(w.ctx, sub)
	w.step++
	rec.Return = w.step
	answer := func(op sluice.Operation) Payload {
		return Payload{ID: string(op.ID), Customer: string(op.Request.Customer), To: op.Request.To.String(), Amount: op.Request.Amount.String(), Asset: op.Request.Asset}
	}
	switch {
	case err == nil && res.Created:
		rec.Outcome, rec.Answer, rec.State = Created, answer(res.Operation), res.Operation.State
	case err == nil:
		rec.Outcome, rec.Answer, rec.State = Replayed, answer(res.Operation), res.Operation.State
	case errors.Is(err, sluice.ErrPayloadMismatch):
		rec.Outcome = Conflict
	case errors.Is(err, intake.ErrInvalid):
		rec.Outcome = Invalid
	default:
		rec.Outcome = Failed
	}
	w.intakeRecords = append(w.intakeRecords, rec)
}

// read GETs id through the HTTP API and records what the body showed, read
// with the model's ReadAnswer, and how long the operation's log was at the
// call and at the return.
func (w *e2e) read(client, id string) {
	w.t.Helper()
	logLen := func() int {
		n := 0
		for _, e := range w.store.Snapshot().Events {
			if string(e.OperationID) == id {
				n++
			}
		}
		return n
	}
	rec := ReadRecord{Client: client, ID: id, Bounded: true}
	w.step++
	rec.Call, rec.LogAtCall = w.step, logLen()
	resp := httptest.NewRecorder()
	w.api.ServeHTTP(resp, httptest.NewRequest(http.MethodGet, "/v1/withdrawals/"+id, nil))
	w.step++
	rec.Return, rec.LogAtReturn = w.step, logLen()
	rec.Status = resp.Code
	switch resp.Code {
	case http.StatusOK:
		a, ok := ReadShown(resp.Body.Bytes())
		if !ok {
			w.t.Fatalf("GET %s: unreadable answer %s", id, resp.Body)
		}
		rec.Present, rec.Answer, rec.State, rec.History, rec.Txid = true, a.Payload, a.State, a.History, a.Txid
	case http.StatusNotFound:
	default:
		w.t.Fatalf("GET %s: status %d: %s", id, resp.Code, resp.Body)
	}
	w.readRecords = append(w.readRecords, rec)
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
		Reads:          w.readRecords,
		Claims:         w.watch.claims,
		Writes:         w.watch.writes,
		Releases:       w.watch.releases,
		Parks:          w.watch.parks,
		Envelopes:      w.watch.envelopes,
		Lease:          e2eLease,
		SafetyMargin:   w.cfg.SafetyMargin,
		BuildsMax:      w.cfg.Stuck.Rebuilds + 1,
		Stuck:          w.cfg.Stuck,
		ParkLimit:      w.cfg.ParkLimit,
		Deposits:       w.deposits,
		Accounts:       st.Accounts,
		Holds:          st.Holds,
		FaultFree:      false, // a transaction is evicted and its re-sends lost
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
	// The world watched the claim protocol and the envelopes, and the reads
	// showed histories: the new checks had something to judge.
	if len(s.Claims) == 0 || len(s.Writes) == 0 || len(s.Envelopes) != 4 || len(s.Reads) != 5 {
		t.Errorf("setup: %d claims, %d writes, %d envelopes, %d reads; want some, some, 4 and 5",
			len(s.Claims), len(s.Writes), len(s.Envelopes), len(s.Reads))
	}
	for _, r := range s.Reads {
		if r.Present && len(r.History) == 0 {
			t.Errorf("setup: read %s (call %d) of %s shows no history", r.Client, r.Call, r.ID)
		}
	}
	want := Outcomes{Requested: 3, Accepted: 3, Confirmed: 3}
	if got := CountOutcomes(s); got.String() != want.String() {
		t.Errorf("CountOutcomes = %s, want %s", got, want)
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
		{"amount off by one", Conservation, func(s *Snapshot) { s.Inclusions[0].Moved[0].Amount++ }},
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
		{"replay shown another amount", IntakeUniqueness, func(s *Snapshot) {
			for i := range s.Intake {
				if s.Intake[i].Outcome == Replayed {
					s.Intake[i].Answer.Amount = "15"
				}
			}
		}},
		{"evidence claiming an earlier expiration", AuditLog, func(s *Snapshot) {
			for i := range s.Events {
				if ev := s.Events[i].Evidence; ev != nil {
					ev.Expiration = ev.Expiration.Add(-time.Minute)
				}
			}
		}},
		{"write by an incarnation that did not claim", OneWriter, func(s *Snapshot) {
			s.Writes[len(s.Writes)-1].Proc = "w9"
		}},
		{"read showing a history the log never had", LinearizableIntake, func(s *Snapshot) {
			r := &s.Reads[len(s.Reads)-1]
			r.History[0].At = "2000-01-01T00:00:00Z"
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

	w.read("r0", ids[2]) // before any worker touched it

	w.tick()
	w.read("r1", ids[0]) // mid-flight
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
	for _, id := range ids {
		w.read("r2", id)
	}
	return w, w.snapshot()
}
