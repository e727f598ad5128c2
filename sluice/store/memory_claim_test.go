package store_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
)

// Goal: Claim takes exactly the rows, in exactly the order, that the plain
// definition gives: the first limit rows in insertion order that are
// Claimable at the claim's instant. Memory answers from an index (gates of
// the open rows) that every write must keep in step; this holds it to the
// definition, evaluated over a Snapshot taken just before each claim, and
// Open to a count of the non-terminal rows.
//
// Method: seeded random histories of inserts, claims, CASes along random
// legal edges (terminal ones included), releases, parks and operator
// resolutions, under a clock that jumps forward and, sometimes, back; and
// again under a clock whose readings sometimes carry a monotonic reading
// (as time.Now's do) and sometimes not, so that rows hold both kinds and
// Claim's horizon, which only plain times give, must fall back to its scan.
func TestClaimMatchesScan(t *testing.T) {
	for seed := range uint64(30) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { claimMatchesScan(t, seed, &storetest.Clock{}) })
		t.Run(fmt.Sprint(seed, "/mixed"), func(t *testing.T) { claimMatchesScan(t, seed, newMixedClock(seed)) })
	}
}

// testClock is what claimMatchesScan needs of a clock.
type testClock interface {
	sluice.Clock
	Advance(time.Duration)
	Set(time.Time)
}

// mixedClock reads storetest.Clock's instants, each either as it is (no
// monotonic reading) or, at random, as a time with the same wall clock and
// a monotonic reading as well. Both readings move together, so comparisons
// give the same answers either way, which is what lets the test's plain
// scan stand for the truth.
type mixedClock struct {
	storetest.Clock
	mono time.Time // storetest.Epoch's wall clock, with a monotonic reading
	r    *rand.Rand
}

func newMixedClock(seed uint64) *mixedClock {
	now := time.Now()
	return &mixedClock{mono: now.Add(storetest.Epoch.Sub(now.Round(0))), r: rand.New(rand.NewPCG(seed, 23))}
}

func (c *mixedClock) Now() time.Time {
	t := c.Clock.Now()
	if c.r.IntN(2) == 0 {
		return t
	}
	return c.mono.Add(t.Sub(storetest.Epoch))
}

func claimMatchesScan(t *testing.T, seed uint64, clock testClock) {
	ctx := t.Context()
	r := rand.New(rand.NewPCG(seed, 17))
	m := newMemory(t, clock, 10*time.Second)
	inserted := 0
	workers := []sluice.WorkerID{"w1", "w2", "w3"}
	pick := func(snap store.Snapshot) (sluice.Operation, bool) {
		if len(snap.Operations) == 0 {
			return sluice.Operation{}, false
		}
		return snap.Operations[r.IntN(len(snap.Operations))], true
	}
	for step := range 400 {
		snap := m.Snapshot()
		switch k := r.IntN(20); {
		case k < 3:
			inserted++
			if _, _, err := m.Insert(ctx, newOp(inserted)); err != nil {
				t.Fatal(err)
			}
		case k < 8:
			limit := 1 + r.IntN(4)
			now := clock.Now()
			var want []sluice.OperationID
			for _, row := range snap.Operations {
				if len(want) < limit && row.Claimable(now) {
					want = append(want, row.ID)
				}
			}
			ops, err := m.Claim(ctx, workers[r.IntN(len(workers))], limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []sluice.OperationID
			for _, op := range ops {
				got = append(got, op.ID)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: Claim(limit %d) at %s took %v, want %v", step, limit, now.Format(time.RFC3339Nano), got, want)
			}
		case k < 12:
			op, ok := pick(snap)
			if !ok {
				continue
			}
			var tos []sluice.State
			for _, tr := range sluice.Transitions() {
				if tr.From == op.State {
					tos = append(tos, tr.To)
				}
			}
			if len(tos) == 0 {
				continue
			}
			to := tos[r.IntN(len(tos))]
			c := sluice.Change{ID: op.ID, Token: op.Token, Worker: op.ClaimedBy, From: op.State, To: to}
			switch to {
			case sluice.Confirmed:
				c.Hold = sluice.HoldSettle
			case sluice.Failed, sluice.Rejected:
				c.Hold = sluice.HoldRelease
			case sluice.Signing:
				raw := tron.RawData{Timestamp: int64(step), Memo: []byte(fmt.Sprint(seed, "/", step))}
				c.Envelope = &sluice.Envelope{Txid: raw.Txid(), Raw: raw}
			}
			if _, err := m.CAS(ctx, c); err != nil {
				t.Fatalf("step %d: CAS %s->%s: %v", step, c.From, c.To, err)
			}
		case k < 14:
			if op, ok := pick(snap); ok {
				if err := m.Release(ctx, op.ID, op.Token, time.Duration(r.IntN(20))*time.Second); err != nil {
					t.Fatal(err)
				}
			}
		case k < 15:
			if op, ok := pick(snap); ok && !op.State.Terminal() {
				if _, err := m.Park(ctx, sluice.Park{ID: op.ID, Token: op.Token, Worker: "w1", After: time.Duration(r.IntN(30)) * time.Second, Reason: "test"}); err != nil {
					t.Fatal(err)
				}
			}
		case k < 16:
			op, ok := pick(snap)
			if !ok {
				continue
			}
			res := sluice.Resolution{ID: op.ID, From: op.State, To: op.State, Operator: "op", Why: "test"}
			switch op.State {
			case sluice.Requested, sluice.Validated:
				if r.IntN(2) == 0 {
					res.To, res.Hold = sluice.Failed, sluice.HoldRelease
				}
			case sluice.Review:
				res.To, res.Hold = sluice.Failed, sluice.HoldRelease
			}
			if op.State.Terminal() && op.State != sluice.Review {
				continue
			}
			if _, err := m.Resolve(ctx, res); err != nil {
				t.Fatalf("step %d: Resolve %s->%s: %v", step, res.From, res.To, err)
			}
		case k < 19:
			clock.Advance(time.Duration(r.IntN(8000)) * time.Millisecond)
		default:
			clock.Set(clock.Now().Add(-time.Duration(r.IntN(15)) * time.Second))
		}
		open := 0
		for _, row := range m.Snapshot().Operations {
			if !row.State.Terminal() {
				open++
			}
		}
		if got := m.Open(); got != open {
			t.Fatalf("step %d: Open() = %d, want %d non-terminal rows", step, got, open)
		}
	}
}
