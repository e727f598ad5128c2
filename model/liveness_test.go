package model

import (
	"testing"
	"time"

	"sluicesim/sluice"
)

func TestCheckLivenessClean(t *testing.T) { wantClean(t, CheckLiveness) }

// Goal: every way an accepted operation can fail to finish in time is
// reported, naming the operation. Method: break one thing in a clean run.
func TestCheckLivenessCatches(t *testing.T) {
	for _, c := range []corruption{
		{
			name: "op not terminal after the liveness budget", op: opID(8), mention: "still validated at end (builds 0, 1h0m0s after heal), past its deadline",
			break_: func(b *builder) {
				b.create(8, 8_000_000, "c1").claim().step(sluice.Validated, nil)
				b.s.End = t0.Add(time.Hour)
			},
		},
		{
			name: "run ended before the deadline with an op not terminal", op: opID(8), mention: "gave up early",
			break_: func(b *builder) {
				b.create(8, 8_000_000, "c1").claim().step(sluice.Validated, nil)
				b.s.End = t0.Add(budget - time.Minute)
			},
		},
		{
			name: "op became terminal after its deadline", op: opID(opHappy), mention: "past its deadline",
			break_: func(b *builder) {
				late := t0.Add(budget + time.Minute)
				e := b.event(opID(opHappy), sluice.Broadcast, sluice.Confirmed)
				e.At = late
				b.write(e).At = late
				b.row(opID(opHappy)).UpdatedAt = late
				r := b.readOf("r1") // read at the end, so it shows the late confirmation
				r.History[len(r.History)-1] = historyEntry(*e)
			},
		},
		{
			name: "a process failed after an op's deadline", op: opID(8), mention: "past its deadline",
			break_: func(b *builder) {
				b.create(8, 8_000_000, "c1").claim().step(sluice.Validated, nil)
				b.s.End = t0.Add(time.Hour)
				b.s.Failed = true
			},
		},
		{
			name: "budget exhausted", op: "", mention: "step budget ran out",
			break_: func(b *builder) { b.s.BudgetExhausted = true },
		},
		{
			name: "client told created but no row", op: opID(9), mention: "no row exists",
			break_: func(b *builder) {
				b.record("c9", pay(string(opID(9)), alice, 1), Created, sluice.Requested)
			},
			also: []string{IntakeUniqueness},
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, Liveness, CheckLiveness, c) })
	}
}

// Goal: a run that stopped because a process failed does not charge the
// operations it cut off before their deadline (the failure is reported, and
// reads as one bug rather than one per operation in flight), while the same
// cut with no failure is charged. Method: op 8 validated, the run ending a
// minute before its deadline, with and without Failed.
func TestLivenessLeavesAFailedRunsCutToTheFailure(t *testing.T) {
	for _, failed := range []bool{false, true} {
		b := clean(t)
		b.create(8, 8_000_000, "c1").claim().step(sluice.Validated, nil)
		b.s.End = t0.Add(budget - time.Minute)
		b.s.Failed = failed
		got := CheckLiveness(&b.s)
		if charged := len(got) > 0; charged == failed {
			t.Errorf("failed %v: %d violations, want them only when no process failed:\n%s", failed, len(got), describe(got))
		}
	}
}

// Goal: an operation created after the heal point gets the whole budget
// from its creation, not from the heal.
func TestCheckLivenessBudgetRunsFromCreationAfterHeal(t *testing.T) {
	b := clean(t)
	b.s.Healed = b.now // after every clean operation was created
	b.s.LivenessBudget = 2 * time.Minute
	b.tick(10 * time.Minute)
	o := b.create(8, 8_000_000, "c1").claim().build().broadcastAndConfirm()
	b.s.End = b.now
	if d := b.row(o.id).UpdatedAt.Sub(b.s.Healed); d <= b.s.LivenessBudget {
		t.Fatalf("setup: op finished %s after heal, want more than the budget", d)
	}
	if got := CheckLiveness(&b.s); len(got) != 0 {
		t.Errorf("CheckLiveness: %d violations, want none:\n%s", len(got), describe(got))
	}
}

// Goal: an operator settling a review after the liveness deadline is not a
// liveness failure: the automation finished when the operation entered
// review, in time; what a person does with it later is on a person's
// clock. Method: move the operator's resolution of the clean run's review
// past the deadline.
func TestLivenessIgnoresAnOperatorsLateResolution(t *testing.T) {
	b := clean(t)
	late := t0.Add(budget + time.Hour)
	e := b.event(opID(opReviewPaid), sluice.Review, sluice.Confirmed)
	e.At = late
	b.write(e).At = late
	b.row(opID(opReviewPaid)).UpdatedAt = late
	b.s.End = late
	if vs := CheckLiveness(&b.s); len(vs) != 0 {
		t.Errorf("liveness flags an operator's late resolution of a timely review:\n%s", describe(vs))
	}
}
