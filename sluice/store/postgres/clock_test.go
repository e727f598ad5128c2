package postgres

import (
	"context"
	"testing"
	"time"

	"sluicesim/sluice"
)

// Goal: in production the database's own clock judges leases (Options.Clock
// is nil), and every time rule holds on it, not only on the manual clock the
// conformance suite injects: a lease ends by itself, a CAS renews it, a
// release's delay holds the row back, an operator's retry frees the row
// at once, and the times the store writes come from the database. The clock function is declared STABLE (one value per
// statement's transaction, as now() is), neither VOLATILE (two reads in one
// statement could disagree) nor IMMUTABLE (the planner could fold it into a
// cached plan). Method: a lease of 1.5 s, real sleeps kept short; every
// assertion leaves a margin of a third of the lease (500 ms) either side.
// (600 ms, a 200 ms margin, flipped once on a 2-core machine running two
// other jobs: a claim landed after the renewed lease.)
func TestDatabaseClock(t *testing.T) {
	pool := freshPool(t)
	ctx := context.Background()
	var volatility string
	if err := pool.QueryRow(ctx, `SELECT provolatile::text FROM pg_proc WHERE proname = 'sluice_now_ns'`).Scan(&volatility); err != nil {
		t.Fatal(err)
	}
	if volatility != "s" {
		t.Errorf("sluice_now_ns volatility = %q, want s (STABLE)", volatility)
	}

	const lease = 1500 * time.Millisecond
	s := New(pool, Options{Lease: lease}) // no Clock: the database's
	fund(t, s)
	op := sluice.NewOperation{ID: "00000000-0000-4000-8000-000000000001", RequestHash: "h",
		Request: sluice.Request{Customer: payer, To: [21]byte{0x41, 1}, Amount: 1, Asset: sluice.Asset}}
	before := time.Now()
	row, created, err := s.Insert(ctx, op)
	if err != nil || !created {
		t.Fatalf("Insert = %v, %v", created, err)
	}
	if d := row.CreatedAt.Sub(before); d < -time.Minute || d > time.Minute {
		t.Errorf("CreatedAt %s is %s from this machine's clock: not the database's now()", row.CreatedAt, d)
	}
	claim := func(w sluice.WorkerID) []sluice.Operation {
		t.Helper()
		ops, err := s.Claim(ctx, w, 1)
		if err != nil {
			t.Fatalf("Claim(%s): %v", w, err)
		}
		return ops
	}

	// A lease ends by itself.
	got := claim("w1")
	if len(got) != 1 {
		t.Fatalf("first claim took %d rows, want 1", len(got))
	}
	if n := len(claim("w2")); n != 0 {
		t.Errorf("a claim right after another took %d rows: the lease is not live on the database's clock", n)
	}
	time.Sleep(lease + lease/3)
	got = claim("w2")
	if len(got) != 1 {
		t.Fatalf("a claim after the lease lapsed took %d rows, want 1", len(got))
	}

	// A CAS renews the lease: two thirds of a lease after the claim, the
	// write pushes its end a whole lease further.
	time.Sleep(2 * lease / 3)
	if _, err := s.CAS(ctx, sluice.Change{ID: op.ID, Token: got[0].Token, Worker: "w2", From: sluice.Requested, To: sluice.Validated, Note: "validated"}); err != nil {
		t.Fatalf("CAS: %v", err)
	}
	time.Sleep(2 * lease / 3) // past the claim's lease, within the renewed one
	if n := len(claim("w3")); n != 0 {
		t.Errorf("a claim within the lease the CAS renewed took %d rows", n)
	}

	// A release holds the row back for its delay, on the database's clock.
	if err := s.Release(ctx, op.ID, got[0].Token, lease); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if n := len(claim("w3")); n != 0 {
		t.Errorf("a claim right after a release with a delay took %d rows", n)
	}
	time.Sleep(lease + lease/3)
	got = claim("w3")
	if len(got) != 1 {
		t.Fatalf("a claim after the release's delay took %d rows, want 1", len(got))
	}

	// A park starts a spell on the database's clock, and the next park of
	// the spell keeps its start: the park backoff and ParkFor measure the
	// spell from it, so a spell with no start never backs off and never
	// reaches ParkFor.
	parked, err := s.Park(ctx, sluice.Park{ID: op.ID, Token: got[0].Token, Worker: "w3", After: lease, Reason: "bandwidth"})
	if err != nil {
		t.Fatalf("Park: %v", err)
	}
	if d := parked.ParkedSince.Sub(before); parked.ParkedSince.IsZero() || d < -time.Minute || d > time.Minute {
		t.Fatalf("a park on the database's clock: ParkedSince %s (%s from this machine's clock), want the database's now()", parked.ParkedSince, d)
	}
	if d := parked.NotBefore.Sub(parked.ParkedSince); d != lease {
		t.Errorf("a park's NotBefore is %s after its spell's start, want its wait %s", d, lease)
	}
	time.Sleep(lease + lease/3)
	got = claim("w3")
	if len(got) != 1 {
		t.Fatalf("a claim after the park's wait took %d rows, want 1", len(got))
	}
	again, err := s.Park(ctx, sluice.Park{ID: op.ID, Token: got[0].Token, Worker: "w3", After: lease, Reason: "bandwidth"})
	if err != nil {
		t.Fatalf("Park: %v", err)
	}
	if !again.ParkedSince.Equal(parked.ParkedSince) {
		t.Errorf("a second park of the spell moved its start from %s to %s", parked.ParkedSince, again.ParkedSince)
	}

	// An operator's resolution writes on the database's clock too: a
	// retry makes the parked row claimable at once, by the database's
	// now() (blind bug 149 gave it the injected clock's, NULL here, and
	// every operator action failed in production only).
	retried, err := s.Resolve(ctx, sluice.Resolution{ID: op.ID, From: again.State, To: again.State, Operator: "alice", Why: "retry"})
	if err != nil {
		t.Fatalf("an operator's retry on the database's clock: %v", err)
	}
	if d := retried.NotBefore.Sub(before); d < -time.Minute || d > time.Minute {
		t.Errorf("a retry's NotBefore %s is %s from this machine's clock: not the database's now()", retried.NotBefore, d)
	}
	if n := len(claim("w4")); n != 1 {
		t.Errorf("a claim right after an operator's retry of a parked row took %d rows, want 1", n)
	}
}
