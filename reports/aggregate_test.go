package reports

import "testing"

// Goal: an aggregate's memory grows with the seeds run, not with the range
// asked (-duration caps a run at a million seeds by default, and a user may
// give a far larger -seeds), and the chart's steps are those of the seeds
// run, none of the range's others as seeds of zero steps. Method: a range
// of 2^40 seeds of which three run, one of them out of order.
func TestAggregateGrowsWithTheSeedsRun(t *testing.T) {
	a := NewAggregate(1, 1, 1<<40, 10)
	for _, seed := range []uint64{1, 3, 2} {
		a.Add(&Seed{Seed: seed, Steps: int(seed) * 10})
	}
	if c := cap(a.steps); c > stepsReserved {
		t.Errorf("the per-seed slots hold room for %d seeds, want at most %d", c, stepsReserved)
	}
	var r Run
	a.Fill(&r)
	if got := r.StepsPerSeed; len(got) != 3 || got[0] != 10 || got[1] != 20 || got[2] != 30 {
		t.Errorf("steps per seed %v, want [10 20 30]", got)
	}
	// A seed outside the range has no slot.
	a.Add(&Seed{Seed: 1 << 41, Steps: 5})
	if len(a.steps) != 3 {
		t.Errorf("a seed outside the range took a slot: %d slots", len(a.steps))
	}
}
