package reports

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"sluicesim/model"
	"sluicesim/sluice"
)

// Seed is what one seed's run contributes to a report: the caller copies
// it from the simulator's result (reports knows nothing of the worlds).
type Seed struct {
	Seed       uint64
	Steps      int
	Violations []model.Violation
	Tally      []model.Tally
	Outcomes   model.Outcomes
	Stats      model.Stats
	// Coverage counts, per named condition, how often the run reached
	// it; the aggregate counts the seeds that reached each (a count > 0).
	Coverage map[string]int
	// Wall-clock costs of the run and of its checkers (zero when not
	// measured).
	Elapsed, CheckTime time.Duration
}

// Failed reports whether the seed violated an invariant.
func (s *Seed) Failed() bool { return len(s.Violations) > 0 }

// Aggregate folds seeds in as they finish, from any goroutine, keeping
// memory flat however many seeds run: sums for the tally and the
// per-invariant counts, histograms for the charts, and only the
// lowest-numbered failing seeds, enough to list the first FailuresKept
// violations. Every sum commutes, so nothing depends on which seed finished
// first.
type Aggregate struct {
	mu             sync.Mutex
	transitions    [sluice.StateCount][sluice.StateCount]int
	confirmSeconds []int
	rebuilds       []int
	steps          []int
	added          int         // seeds given a slot in steps (a prefix, see stepsSeen)
	stepCounts     map[int]int // steps -> seeds, of merged shards (AddMerged)
	coverage       map[string]int
	elapsed        time.Duration // summed over seeds: wall time inside runs
	checkTime      time.Duration // of which the checkers
	outcomes       model.Outcomes
	tally          map[string]int
	perInvariant   map[string]int
	failed         int
	failures       []*Seed
	firstSeed      uint64 // seed k of the run is firstSeed + k*stride
	stride         int
	seeds          int // seeds in the range: slots of steps beyond are not the run's
	keep           int
}

// NewAggregate folds the seeds firstSeed, firstSeed+stride, ... (seeds of
// them), keeping the keep lowest-numbered failing seeds.
func NewAggregate(firstSeed uint64, stride, seeds, keep int) *Aggregate {
	a := &Aggregate{tally: map[string]int{}, perInvariant: map[string]int{},
		firstSeed: firstSeed, stride: stride, steps: make([]int, 0, min(seeds, stepsReserved)), seeds: seeds, keep: keep}
	for _, inv := range model.InvariantNames() {
		a.perInvariant[inv] = 0
	}
	return a
}

// stepsReserved bounds the per-seed step slots made ready up front.
const stepsReserved = 1 << 16

// bump adds one to h[i], growing the histogram as needed.
func bump(h []int, i int) []int {
	for len(h) <= i {
		h = append(h, 0)
	}
	h[i]++
	return h
}

// Add folds one seed in. The aggregate keeps s if it failed (its Tally is
// dropped: it is in the sums).
func (a *Aggregate) Add(s *Seed) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.elapsed += s.Elapsed
	a.checkTime += s.CheckTime
	a.outcomes = a.outcomes.Add(s.Outcomes)
	for i, row := range s.Stats.Transitions {
		for j, n := range row {
			a.transitions[i][j] += n
		}
	}
	for _, d := range s.Stats.ConfirmTimes {
		a.confirmSeconds = bump(a.confirmSeconds, int(d/time.Second))
	}
	for _, k := range s.Stats.Rebuilds {
		a.rebuilds = bump(a.rebuilds, k)
	}
	if k := int(s.Seed - a.firstSeed); a.stride > 0 && k >= 0 && k%a.stride == 0 && k/a.stride < a.seeds {
		// The slots grow with the seeds run, not with the range asked:
		// -duration may cap a run at a million seeds and stop after a
		// thousand. Seeds finish out of order on several cores, so a slot
		// may be filled before the ones below it.
		i := k / a.stride
		for len(a.steps) <= i {
			a.steps = append(a.steps, 0)
		}
		a.steps[i] = s.Steps
		a.added++
	}
	for name, n := range s.Coverage {
		// A name with a count of 0 is listed, with no seed: a condition
		// never reached must show.
		if a.coverage == nil {
			a.coverage = map[string]int{}
		}
		if _, ok := a.coverage[name]; !ok {
			a.coverage[name] = 0
		}
		if n > 0 {
			a.coverage[name]++
		}
	}
	for _, t := range s.Tally {
		a.tally[t.Kind] += t.Count
	}
	if !s.Failed() {
		return
	}
	a.failed++
	hit := map[string]bool{}
	for _, v := range s.Violations {
		if !hit[v.Invariant] {
			hit[v.Invariant] = true
			a.perInvariant[v.Invariant]++
		}
	}
	s.Tally = nil
	a.failures = append(a.failures, s)
	if len(a.failures) > 2*a.keep {
		a.trim()
	}
}

// trim keeps the lowest-numbered failing seeds; each has at least one
// violation, so these hold the first keep violations.
func (a *Aggregate) trim() {
	slices.SortFunc(a.failures, func(x, y *Seed) int { return cmp.Compare(x.Seed, y.Seed) })
	if len(a.failures) > a.keep {
		a.failures = a.failures[:a.keep]
	}
}

// Failures are the kept failing seeds, lowest first.
func (a *Aggregate) Failures() []*Seed {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.trim()
	return a.failures
}

// CheckShare is the fraction of the runs' wall time the checkers took.
func (a *Aggregate) CheckShare() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.elapsed == 0 {
		return 0
	}
	return float64(a.checkTime) / float64(a.elapsed)
}

// FailedCount is the number of seeds with a violation so far.
func (a *Aggregate) FailedCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failed
}

// PerInvariant counts, per invariant name, the seeds that violated it.
func (a *Aggregate) PerInvariant() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.perInvariant
}

// Outcomes are the withdrawals' outcomes summed over seeds.
func (a *Aggregate) Outcomes() model.Outcomes {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.outcomes
}

// Faults is the summed tally, sorted by kind.
func (a *Aggregate) Faults() []model.Tally {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]model.Tally, 0, len(a.tally))
	for k, v := range a.tally {
		out = append(out, model.Tally{Kind: k, Count: v})
	}
	return model.MergeTallies(out)
}

// Fill sets the parts of r that come from the seeds: failed count, faults,
// invariant table, outcomes and the charts' data.
func (a *Aggregate) Fill(r *Run) {
	r.Faults = a.Faults()
	a.mu.Lock()
	defer a.mu.Unlock()
	r.SeedsFailed = a.failed
	r.Transitions = a.transitions
	r.ConfirmSeconds = a.confirmSeconds
	r.Rebuilds = a.rebuilds
	r.StepsPerSeed = a.stepsPerSeed()
	r.Invariants = r.Invariants[:0]
	for _, inv := range model.Invariants {
		r.Invariants = append(r.Invariants, InvariantCount{Name: inv.Name, Doc: inv.Doc, SeedsViolated: a.perInvariant[inv.Name]})
	}
	o := a.outcomes
	r.Outcomes = &o
}
