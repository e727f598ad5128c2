package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sluicesim/model"
	"sluicesim/scenarios"
)

// violation is a violation as a summary lists it.
func violation(seed uint64, invariant string) map[string]any {
	return map[string]any{"seed": seed, "Invariant": invariant, "Operation": "op", "Message": "m"}
}

// repeated is n copies of a violation: a seed can have hundreds, and a
// list cut at violationsListedMax no longer shows every failing seed.
func repeated(n int, seed uint64, invariant string) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = violation(seed, invariant)
	}
	return out
}

// failures gives a summary failing seeds: seeds_failed, failing_seeds,
// the violations listed and the per-invariant counts named in perInv (the
// others 0).
func failures(seedsFailed int, failing []uint64, perInv map[string]int, violations ...any) func(map[string]any) {
	return func(v map[string]any) {
		v["seeds_failed"], v["failing_seeds"] = seedsFailed, failing
		// Copies: the cases edit them further.
		vs := make([]any, len(violations))
		for i, x := range violations {
			vs[i] = maps.Clone(x.(map[string]any))
		}
		v["violations"], v["violations_listed"] = vs, len(vs)
		counts := v["seeds_failed_per_invariant"].(map[string]any)
		for k := range counts {
			counts[k] = 0
		}
		for k, n := range perInv {
			counts[k] = n
		}
	}
}

// then applies edits in order.
func then(edits ...func(map[string]any)) func(map[string]any) {
	return func(v map[string]any) {
		for _, e := range edits {
			e(v)
		}
	}
}

// outcomes applies f to a summary's outcomes.
func outcomes(f func(map[string]any)) func(map[string]any) {
	return func(v map[string]any) { f(v["outcomes"].(map[string]any)) }
}

func addInt(m map[string]any, k string, n int) { m[k] = int(m[k].(float64)) + n }

// contradictions are summaries whose counts contradict one another or
// name what this build does not have, each edited into shard 1 of the
// fixture (pair, seeds 1..40, four shards: shard 1 has seeds 2, 6, ...,
// 38, none failing), each caught by its own check. The failures are made
// up, from bases that pass every check (returned, for the caller to show
// so): each case is a base with one contradiction.
func contradictions(t *testing.T, dir string, shards []string) (bases []string, cases []refusal) {
	s0, s1, s2, s3 := shards[0], shards[1], shards[2], shards[3]
	n := 0
	other := func(edit func(map[string]any)) (string, []string) {
		n++
		p := spoil(t, s1, dir, fmt.Sprintf("contra-%d.json", n), edit)
		return p, []string{s0, p, s2, s3}
	}
	// all edits every shard alike (a re-check must be of every shard);
	// shard 0 is the one named.
	all := func(edit func(map[string]any)) (string, []string) {
		n++
		var out []string
		for i, s := range shards {
			out = append(out, spoil(t, s, dir, fmt.Sprintf("contra-%d-%d.json", n, i), edit))
		}
		return out[0], out
	}
	every := []uint64{2, 6, 10, 14, 18, 22, 26, 30, 34, 38}
	// complete: two failing seeds, every violation listed.
	complete := failures(2, []uint64{2, 6}, map[string]int{"funds": 2, "conservation": 1},
		violation(2, "funds"), violation(2, "conservation"), violation(6, "funds"))
	// capped lists name fewer seeds than failed: the list is cut.
	cappedAt := func(seedsFailed int, failing []uint64, perInv map[string]int, tail ...any) func(map[string]any) {
		vs := append(repeated(violationsListedMax-len(tail), 2, "funds"), tail...)
		return failures(seedsFailed, failing, perInv, vs...)
	}
	var tenSeeds []any
	for _, s := range every[1:] {
		tenSeeds = append(tenSeeds, violation(s, "funds"))
	}
	var out []refusal
	add := func(name string, edit func(map[string]any), says ...string) {
		p, files := other(edit)
		out = append(out, refusal{name, files, p, says})
	}
	addAll := func(name string, edit func(map[string]any), says ...string) {
		p, files := all(edit)
		out = append(out, refusal{name, files, p, says})
	}
	for _, base := range []func(map[string]any){
		complete,
		cappedAt(3, []uint64{2, 6, 10}, map[string]int{"funds": 3}),
		cappedAt(10, every, map[string]int{"funds": 10}, tenSeeds...),
	} {
		p, _ := other(base)
		bases = append(bases, p)
	}

	// The defect reported: counts zeroed, the per-invariant table kept.
	add("failures zeroed, per-invariant kept", then(complete, failures(0, nil, map[string]int{"funds": 2, "conservation": 1})),
		"seeds_failed_per_invariant", "conservation 1", "only 0 seeds failed")
	add("seeds_failed above seeds_run", cappedAt(11, every, map[string]int{"funds": 10, "conservation": 1}, tenSeeds...),
		"seeds_failed 11", "seeds_run 10")
	add("more violations than listed", failures(1, []uint64{2}, map[string]int{"funds": 1}, repeated(violationsListedMax+1, 2, "funds")...),
		"1001 violations listed", "at most 1000")
	add("failing_seeds short", then(complete, setField("failing_seeds", []uint64{2})), "failing_seeds lists 1 seeds", "seeds_failed 2")
	add("failing_seeds out of order", cappedAt(3, []uint64{2, 10, 6}, map[string]int{"funds": 1, "conservation": 2}),
		"failing_seeds [2 10 6]", "ascending")
	add("per-invariant unknown", func(v map[string]any) { v["seeds_failed_per_invariant"].(map[string]any)["nonsense"] = 0 },
		"seeds_failed_per_invariant", `"nonsense"`, "no invariant")
	add("per-invariant negative", cappedAt(2, []uint64{2, 6}, map[string]int{"funds": 2, "liveness": 1, "conservation": -1}),
		"seeds_failed_per_invariant", "conservation -1", "negative")
	add("per-invariant above seeds_failed", cappedAt(1, []uint64{2}, map[string]int{"funds": 2}),
		"seeds_failed_per_invariant: funds 2", "only 1 seeds failed")
	add("per-invariant short of seeds_failed", cappedAt(3, []uint64{2, 6, 10}, map[string]int{"funds": 1}),
		"seeds_failed 3", "counts 1 seed-invariant pairs")
	add("violation of no invariant", then(complete, func(v map[string]any) {
		v["violations"].([]any)[2].(map[string]any)["Invariant"] = "nonsense"
	}), "violations: seed 6", `"nonsense"`, "no invariant")
	add("violations out of seed order", then(complete, func(v map[string]any) {
		vs := v["violations"].([]any)
		v["violations"] = []any{vs[2], vs[0], vs[1]}
	}), "violations: seed 2 listed after seed 6")
	add("violations of more seeds than failed", cappedAt(1, []uint64{2}, map[string]int{"funds": 1, "conservation": 1}, violation(6, "conservation")),
		"violations name 2 seeds", "seeds_failed is 1")
	add("violations and failing_seeds disagree", then(complete, setField("failing_seeds", []uint64{2, 10})),
		"violations name seed 6 where failing_seeds has 10")
	add("complete violations of fewer seeds", then(complete, failures(3, []uint64{2, 6, 10}, map[string]int{"funds": 2, "conservation": 1},
		violation(2, "funds"), violation(2, "conservation"), violation(6, "funds"))),
		"seeds_failed 3", "name 2 seeds")
	add("violations of an invariant counted fewer", cappedAt(3, []uint64{2, 6, 10}, map[string]int{"funds": 1, "conservation": 2}, violation(6, "funds")),
		"seeds_failed_per_invariant: funds 1", "show 2 seeds")
	add("complete violations, an invariant counted more", then(complete, func(v map[string]any) {
		v["seeds_failed_per_invariant"].(map[string]any)["liveness"] = 1
	}), "seeds_failed_per_invariant: liveness 1", "show 0 seeds")

	add("outcome negative", outcomes(func(o map[string]any) { o["requested"] = -1 }), "outcomes: requested -1", "negative")
	add("outcomes do not add up", outcomes(func(o map[string]any) { addInt(o, "accepted", 1) }), "outcomes: accepted", "each accepted withdrawal ends one way")
	add("more parked than accepted", outcomes(func(o map[string]any) { o["parked"] = o["accepted"].(float64) + 1 }), "outcomes: parked", "accepted")
	add("a reason of no withdrawal", outcomes(func(o map[string]any) { o["failed_by"] = []any{map[string]any{"Kind": "x", "Count": 0}} }),
		"outcomes: failed_by", `"x" counts 0`)
	add("reasons out of order", outcomes(func(o map[string]any) {
		addInt(o, "failed", 2)
		addInt(o, "accepted", 2)
		o["failed_by"] = []any{map[string]any{"Kind": "b", "Count": 1}, map[string]any{"Kind": "a", "Count": 1}}
	}), "outcomes: failed_by", `"a" after "b"`)
	add("reasons do not add up", outcomes(func(o map[string]any) {
		addInt(o, "failed", 1)
		addInt(o, "accepted", 1)
	}), "outcomes: failed_by sums to 0", "failed is 1")

	faults := func(f func([]any) []any) func(map[string]any) {
		return func(v map[string]any) { v["faults"] = f(v["faults"].([]any)) }
	}
	add("a fault of no kind", faults(func(fs []any) []any { return append(fs, map[string]any{"Kind": "zz-no-such-fault", "Count": 0}) }),
		`faults: kind "zz-no-such-fault"`)
	add("faults out of order", faults(func(fs []any) []any { return append([]any{fs[1], fs[0]}, fs[2:]...) }), "faults:", "want each kind once, sorted")
	add("a fault fired negatively", faults(func(fs []any) []any { fs[0].(map[string]any)["Count"] = -1; return fs }), "faults:", "-1 is negative")

	coverage := func(f func([]any) []any) func(map[string]any) {
		return func(v map[string]any) { v["coverage"] = f(v["coverage"].([]any)) }
	}
	add("a condition not in the catalog", coverage(func(c []any) []any { return append(c, map[string]any{"name": "edge:nowhere->never", "seeds": 0}) }),
		`coverage: "edge:nowhere->never"`, "catalog")
	add("a condition twice", coverage(func(c []any) []any { return append(c, c[0]) }), "coverage:", "listed twice")
	add("a condition reached by more seeds than ran", coverage(func(c []any) []any { c[0].(map[string]any)["seeds"] = 11; return c }),
		"coverage:", "reached by 11 seeds", "seeds_run 10")

	recheck := func(fraction float64, rechecked, mismatches int) func(map[string]any) {
		return setField("recheck", map[string]any{"fraction": fraction, "rechecked": rechecked, "mismatches": mismatches})
	}
	addAll("a re-check fraction above 1", recheck(1.5, 1, 0), "recheck: fraction 1.5")
	addAll("more re-checked than ran", recheck(0.5, 11, 0), "recheck: rechecked 11", "seeds_run 10")
	addAll("more re-check mismatches than re-checked", recheck(0.5, 2, 3), "recheck: mismatches 3", "rechecked 2")

	// Every shard alike: a shard unlike the first is refused as such.
	addAll("a strategy explore has not", setField("strategy", "dfs"), `strategy "dfs"`)
	addAll("a pct depth without pct", setField("pct_depth", 3), "pct_depth 3 with strategy random")
	addAll("a store explore has not", setField("store", "disk"), `store "disk"`)
	addAll("a replay in a seed range", setField("replay", map[string]any{"trace": "t.jsonl", "choices": 1, "events": 1}), "replay, shrink or exhaustive")
	return bases, out
}

// TestMergeAcceptsRealRuns: the checks refuse no summary explore writes.
// Shards of real runs of several worlds, mutants and strategies, swarm on
// and off, merge to what one run of their seeds writes: among them a
// mutant of intake that accepts more withdrawals than were validly
// requested, and shards whose violations are cut at violationsListedMax
// (the lists that no longer name every failing seed).
func TestMergeAcceptsRealRuns(t *testing.T) {
	defer scenarios.BatchGC()()
	cut := "1200" // about 1,400 violations a shard of two
	if raceDetector || testing.Short() {
		cut = "300"
	}
	// What a case is there for, checked so that it stays so.
	cutLists := func(t *testing.T, shards []summary) {
		for _, s := range shards {
			if cut == "1200" && len(s.Violations) != violationsListedMax {
				t.Errorf("shard %s lists %d violations: the case is for lists cut at %d", s.Shard, len(s.Violations), violationsListedMax)
			}
		}
	}
	moreAccepted := func(t *testing.T, shards []summary) {
		var o model.Outcomes
		for _, s := range shards {
			o = o.Add(s.Outcomes)
		}
		if o.Accepted <= o.Requested {
			t.Errorf("%d accepted, %d requested: the case is for more accepted", o.Accepted, o.Requested)
		}
	}
	for _, c := range []struct {
		shards int
		args   []string
		is     func(*testing.T, []summary)
	}{
		{2, []string{"-world", "pair", "-mutant", "claim-ignores-lease", "-seeds", cut}, cutLists},
		{3, []string{"-world", "chaos", "-mutant", "amount-trailing-zeros", "-seeds", "120"}, moreAccepted},
		{3, []string{"-world", "chaos", "-swarm=false", "-mutant", "timeout-is-failure", "-seeds", "90", "-recheck", "0.2"}, nil},
		{2, []string{"-world", "storefaults", "-swarm", "-mutant", "store-error-is-success", "-seeds", "60"}, nil},
		{3, []string{"-world", "pair2", "-strategy", "pct", "-pct-depth", "3", "-seeds", "60"}, nil},
		{4, []string{"-world", "calm", "-seeds", "6"}, nil}, // shards of fewer than N seeds too
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			one, shards := t.TempDir(), t.TempDir()
			code, _, errOut := cli(t, append(slices.Clone(c.args), "-json", filepath.Join(one, "s.json"), "-trace", filepath.Join(one, "first.trace.jsonl"))...)
			if code != exitOK && code != exitViolation {
				t.Fatalf("one run: exit %d: %s", code, errOut)
			}
			paths := runShards(t, shards, c.shards, c.args...)
			if c.is != nil {
				var sums []summary
				for _, p := range paths {
					sums = append(sums, readSummary(t, p))
				}
				c.is(t, sums)
			}
			mcode, out, errOut := cli(t, append([]string{"merge", "-json", filepath.Join(shards, "s.json"), "-trace", filepath.Join(shards, "first.trace.jsonl")}, paths...)...)
			if mcode != code {
				t.Fatalf("merge: exit %d, one run's %d\n%s%s", mcode, code, out, errOut)
			}
			want := summaryWithoutTiming(t, filepath.Join(one, "s.json"), one)
			if got := summaryWithoutTiming(t, filepath.Join(shards, "s.json"), shards); got != want {
				t.Errorf("the merged summary differs from one run's at %s", firstDiff(want, got))
			}
		})
	}
}
