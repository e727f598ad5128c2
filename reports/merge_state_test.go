package reports

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"sluicesim/model"
	"sluicesim/sluice"
)

// syntheticSeed is a seed's contribution with every histogram fed, drawn
// from seed so that halves and wholes see the same seeds.
func syntheticSeed(seed uint64) *Seed {
	rng := rand.New(rand.NewPCG(seed, 7))
	s := &Seed{Seed: seed, Steps: 4000 + rng.IntN(1500),
		Tally:    []model.Tally{{Kind: "worker-crash", Count: rng.IntN(3)}},
		Outcomes: model.Outcomes{Requested: 60, Confirmed: 58 + rng.IntN(3)},
		Coverage: map[string]int{"edge:a": rng.IntN(2), "edge:b": 1}}
	s.Stats.Transitions[sluice.None][sluice.Requested] = 60
	s.Stats.Transitions[sluice.Broadcast][sluice.Signing] = rng.IntN(2)
	s.Stats.ConfirmTimes = []time.Duration{time.Duration(rng.IntN(90)) * time.Second}
	s.Stats.Rebuilds = []int{rng.IntN(4)}
	if seed%97 == 0 {
		s.Violations = []model.Violation{{Invariant: "funds", Message: "m"}}
	}
	return s
}

// TestMergeStatesEqualsOneAggregate: the states of shards (seeds k mod 3)
// merge, in any order, into the state one aggregate of all seeds has, and
// an aggregate rebuilt from it fills the report's charts as that one
// does (the steps as a multiset: the chart never reads their order).
func TestMergeStatesEqualsOneAggregate(t *testing.T) {
	const seeds = 3000
	whole := NewAggregate(1, 1, seeds, 1000)
	var parts []*Aggregate
	for i := range 3 {
		parts = append(parts, NewAggregate(uint64(1+i), 3, (seeds-i-1)/3+1, 1000))
	}
	for k := range seeds {
		whole.Add(syntheticSeed(uint64(1 + k)))
		parts[k%3].Add(syntheticSeed(uint64(1 + k)))
	}
	merged, err := MergeStates(parts[2].State(), parts[0].State(), parts[1].State())
	if err != nil {
		t.Fatal(err)
	}
	if want := whole.State(); !reflect.DeepEqual(merged, want) {
		t.Fatalf("merged state differs from one aggregate's:\n got %+v\nwant %+v", merged, want)
	}
	if len(merged.Transitions) != 2 || len(merged.Steps) < 100 {
		t.Fatalf("the fixture feeds too little: %d transitions, %d step counts", len(merged.Transitions), len(merged.Steps))
	}
	rebuilt := NewAggregate(1, 1, 0, 1000)
	var cov [][]CoverageSeeds
	for _, p := range parts {
		cov = append(cov, p.Coverage())
	}
	if err := rebuilt.AddMerged(merged, Totals{Failed: whole.FailedCount(), PerInvariant: whole.PerInvariant(),
		Outcomes: whole.Outcomes(), Faults: whole.Faults(), Coverage: MergeCoverage(cov...)}); err != nil {
		t.Fatal(err)
	}
	var a, b Run
	whole.Fill(&a)
	rebuilt.Fill(&b)
	slices.Sort(a.StepsPerSeed)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the rebuilt aggregate fills the report otherwise:\n got %+v\nwant %+v", b, a)
	}
	if got, want := rebuilt.Coverage(), whole.Coverage(); !reflect.DeepEqual(got, want) || len(want) != 2 || want[1].Seeds != seeds {
		t.Errorf("coverage %v, want %v (edge:b reached by all %d seeds)", got, want, seeds)
	}
}

// TestStateStaysSmall: 100,000 seeds' state serializes to a summary part
// of tens of kilobytes, not one entry per seed.
func TestStateStaysSmall(t *testing.T) {
	const seeds = 100_000
	agg := NewAggregate(1, 1, seeds, 1000)
	for k := range seeds {
		s := syntheticSeed(uint64(1 + k))
		// Swarm seeds: from hundreds to tens of thousands of steps, most
		// counts distinct.
		s.Steps = 500 + int(uint64(k)*7919%40000)
		agg.Add(s)
	}
	st := agg.State()
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, st) {
		t.Fatalf("the state does not read back as written: %v", err)
	}
	if len(b) > 400_000 {
		t.Errorf("the state of %d seeds is %d bytes: want it bounded by the distinct step counts, not the seeds", seeds, len(b))
	}
}

// TestMergeStatesRefuses: a state not written by State is refused, with
// the part that is wrong named.
func TestMergeStatesRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		st   State
	}{
		{"unknown state", State{Transitions: []TransitionCount{{From: "limbo", To: "signing", Count: 1}}}},
		{"negative transition", State{Transitions: []TransitionCount{{From: "none", To: "requested", Count: -1}}}},
		{"negative bucket", State{ConfirmSeconds: []int{1, -2}}},
		{"negative steps", State{Steps: StepsHistogram{{Steps: 10, Seeds: -1}}}},
	} {
		if _, err := MergeStates(State{}, c.st); err == nil {
			t.Errorf("%s: merged without an error", c.name)
		}
	}
}

// TestStepsHistogramJSON: the compact form reads back, and anything but
// ascending STEPS[*SEEDS] is refused.
func TestStepsHistogramJSON(t *testing.T) {
	h := StepsHistogram{{Steps: 555, Seeds: 1}, {Steps: 600, Seeds: 2}}
	b, err := json.Marshal(h)
	if err != nil || string(b) != `"555 600*2"` {
		t.Fatalf("marshal: %s, %v", b, err)
	}
	var back StepsHistogram
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, h) {
		t.Fatalf("read back %v, %v", back, err)
	}
	for _, bad := range []string{`"600 555"`, `"555 555"`, `"5x"`, `"5*0"`, `"-5"`, `[1, 2]`, `"5*"`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s read without an error", bad)
		}
	}
}
