package scenarios

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"sluicesim/model"
	"sluicesim/sluice"
)

// choiceKinds are the kinds a run asked, in first-asked order.
func choiceKinds(r *Result) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range r.Trace.Tape {
		if !seen[c.Kind] {
			seen[c.Kind] = true
			out = append(out, c.Kind)
		}
	}
	return out
}

// Goal: every choice kind any world asks has a row in the fault table (or
// is the scheduler's or the world's timing), so that exhaustive search,
// Calm, the shrink edits and the tally know of it; a world that asks an
// unclassified kind fails this test, and exhaustive search refuses to run
// it rather than never branch on it.
func TestEveryChoiceKindIsClassified(t *testing.T) {
	asked := map[string]bool{}
	for _, name := range WorldNames() {
		cfg, _ := World(name)
		for seed := uint64(1); seed <= 3; seed++ {
			for _, k := range choiceKinds(Run(cfg, seed, Options{Tracing: true})) {
				asked[k] = true
			}
		}
	}
	var kinds []string
	for k := range asked {
		kinds = append(kinds, k)
	}
	if u := Unclassified(kinds); len(u) > 0 {
		t.Errorf("choice kinds with no row in the fault table: %v", u)
	}
	// Every classified kind is asked by some world: a row that names a
	// kind nobody asks is a typo. Some are rare (an eviction needs a chain
	// event and a full pool): the worlds run on until each has been asked.
	unasked := func() bool {
		for k := range choiceIndex {
			if !asked[k] {
				return true
			}
		}
		return false
	}
	for seed := uint64(4); seed <= 40 && unasked(); seed++ {
		for _, name := range WorldNames() {
			cfg, _ := World(name)
			for _, k := range choiceKinds(Run(cfg, seed, Options{Tracing: true})) {
				asked[k] = true
			}
		}
	}
	for k := range choiceIndex {
		if !asked[k] {
			t.Errorf("the fault table classifies %q, which no world asked (up to 40 seeds each)", k)
		}
	}

	// A fault added without its row: the check names it, and exhaustive
	// search refuses to classify it.
	probe := Run(Pair(), 1, Options{Tracing: true, extraChoice: "dummy-fault"})
	if u := Unclassified(choiceKinds(probe)); !reflect.DeepEqual(u, []string{"dummy-fault"}) {
		t.Errorf("an unclassified dummy choice kind: Unclassified = %v, want [dummy-fault]", u)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), `"dummy-fault" is in no row of the fault table`) {
				t.Errorf("exhaustiveCost of an unclassified kind: recovered %v, want a panic naming it", r)
			}
		}()
		exhaustiveCost("dummy-fault", 1)
	}()
}

// Goal: Calm is chaos with every fault of the table off, and a world with
// faults off fires none of them.
func TestCalmIsChaosWithoutTheTable(t *testing.T) {
	c := Calm()
	for _, f := range Faults {
		if f.Off == nil {
			continue
		}
		off := c
		f.Off(&off)
		if !reflect.DeepEqual(off, c) {
			t.Errorf("calm still has fault %s on", f.Name)
		}
	}
	res := Run(c, 1, Options{})
	for _, tl := range res.Tally {
		if tl.Count > 0 && !benignKinds[tl.Kind] {
			t.Errorf("calm fired %s %d times", tl.Kind, tl.Count)
		}
	}
}

// Goal: in the storefaults world every kind of store failure fires, the
// real core keeps every invariant, and the mutant that reads a failed
// write as a landed one is caught.
func TestStoreFaults(t *testing.T) {
	fired := map[string]int{}
	for seed := uint64(1); seed <= 20; seed++ {
		res := Run(StoreFaults(), seed, Options{})
		for _, v := range res.Violations {
			t.Errorf("seed %d: %s: %s", seed, v.Invariant, v.Message)
		}
		for _, k := range res.Tally {
			fired[k.Kind] += k.Count
		}
	}
	for _, k := range []string{"store-error-before", "store-error-after", "store-stall"} {
		if fired[k] == 0 {
			t.Errorf("%s never fired in 20 seeds", k)
		}
	}
	cfg := StoreFaults()
	cfg.Mutant = "store-error-is-success"
	caught := uint64(0)
	for seed := uint64(1); seed <= 60 && caught == 0; seed++ {
		if len(Run(cfg, seed, Options{}).Violations) > 0 {
			caught = seed
		}
	}
	if caught == 0 {
		t.Error("store-error-is-success: not caught in 60 storefaults seeds (first kill recorded at 37)")
	}
}

// Goal: the hostile-world faults fire in their worlds, the real core keeps
// every invariant under reorgs, and confirming before the solid block is
// caught once blocks above it can be orphaned.
func TestReorgsAndNodes(t *testing.T) {
	fired := map[string]int{}
	for seed := uint64(1); seed <= 10; seed++ {
		res := Run(Reorgs(), seed, Options{})
		for _, v := range res.Violations {
			t.Errorf("reorgs seed %d: %s: %s", seed, v.Invariant, v.Message)
		}
		for _, k := range res.Tally {
			fired[k.Kind] += k.Count
		}
		for _, k := range Run(Nodes(), seed, Options{}).Tally {
			fired[k.Kind] += k.Count
		}
	}
	for _, k := range []string{"chain-reorg", "chain-tx-orphaned", "node-lag", "chain-gossip-lost"} {
		if fired[k] == 0 {
			t.Errorf("%s never fired in 10 seeds", k)
		}
	}
	cfg := Reorgs()
	cfg.Mutant = "confirm-before-solid"
	caught := false
	for seed := uint64(1); seed <= 20 && !caught; seed++ {
		caught = len(Run(cfg, seed, Options{}).Violations) > 0
	}
	if !caught {
		t.Error("confirm-before-solid: not caught in 20 reorgs seeds (first kill recorded at 1)")
	}
}

// TestConfirmationsRecordTheSolidHead: the world records, on every
// confirmation that lands (the automation's CAS and an operator's
// resolution), the chain's solid head from the network's truth, which
// audit-log holds the confirmed block against; a confirmation recorded
// without it would be checked against nothing. And the mutant that
// confirms on inclusion is now caught in the calm world too, where no
// reorg takes its block away: the check does not wait for the harm.
func TestConfirmationsRecordTheSolidHead(t *testing.T) {
	confirms := 0
	for seed := uint64(1); seed <= 5; seed++ {
		snap := Run(Chaos(), seed, Options{keepSnapshot: true}).Snapshot
		to := map[int64]sluice.State{}
		for _, e := range snap.Events {
			to[e.Seq] = e.To
		}
		for _, w := range snap.Writes {
			switch confirmed := to[w.Seq] == sluice.Confirmed; {
			case confirmed && w.SolidSeen <= 0:
				t.Errorf("seed %d: the confirmation of %s (event #%d) recorded no solid head", seed, w.Op, w.Seq)
			case confirmed:
				confirms++
			case w.SolidSeen != 0:
				t.Errorf("seed %d: write #%d of %s is not a confirmation but recorded solid head %d", seed, w.Seq, w.Op, w.SolidSeen)
			}
		}
	}
	if confirms == 0 {
		t.Fatal("no confirmation in 5 chaos seeds")
	}
	cfg := Calm()
	cfg.Mutant = "confirm-before-solid"
	res := Run(cfg, 1, Options{})
	if !slices.ContainsFunc(res.Violations, func(v model.Violation) bool { return v.Invariant == model.AuditLog }) {
		t.Errorf("confirm-before-solid on calm seed 1: violations %v, want audit-log", res.Violations)
	}
}

// TestFaultKindsNamesEveryTally: every kind a run of any world tallies is
// one FaultKinds lists (explore merge refuses a summary naming another),
// and FaultKinds lists nothing twice, in order.
func TestFaultKindsNamesEveryTally(t *testing.T) {
	known := FaultKinds()
	if !slices.IsSorted(known) || len(slices.Compact(slices.Clone(known))) != len(known) {
		t.Fatalf("FaultKinds is not sorted without repeats: %v", known)
	}
	seeds := uint64(6)
	if testing.Short() {
		seeds = 2
	}
	for _, name := range WorldNames() {
		cfg, err := World(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, swarm := range []bool{false, true} {
			cfg.Swarm = swarm
			for seed := uint64(1); seed <= seeds; seed++ {
				for _, k := range Run(cfg, seed, Options{}).Tally {
					if _, found := slices.BinarySearch(known, k.Kind); !found {
						t.Errorf("world %s, swarm %v, seed %d tallies %q, which FaultKinds does not list", name, swarm, seed, k.Kind)
					}
				}
			}
		}
	}
}
