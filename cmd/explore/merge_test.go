package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sluicesim/scenarios"
)

// summaryWithoutTiming reads a -json summary as generic JSON, timing (the
// one part that differs between runs) removed, with every occurrence of
// dir replaced by "$DIR": two runs writing into two directories name
// their files alike.
// readSummary reads the -json summary at path.
func readSummary(t *testing.T, path string) summary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sum summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return sum
}

func summaryWithoutTiming(t *testing.T, path, dir string) string {
	t.Helper()
	v := readJSON(t, path)
	delete(v, "timing")
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(out), dir, "$DIR")
}

// runShards runs shard I/n of args for each I into dir/shard-I.json (a
// failing shard's trace beside it, not in the current directory), in this
// process, and returns the paths.
func runShards(t *testing.T, dir string, n int, args ...string) []string {
	t.Helper()
	var paths []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		code, _, errOut := cli(t, append(slices.Clone(args), "-shard", fmt.Sprintf("%d/%d", i, n), "-json", p,
			"-trace", filepath.Join(dir, fmt.Sprintf("shard-%d.trace.jsonl", i)))...)
		if code != exitOK && code != exitViolation {
			t.Fatalf("shard %d/%d: exit %d: %s", i, n, code, errOut)
		}
		paths = append(paths, p)
	}
	return paths
}

// TestMergeEqualsOneRun is issue 18's acceptance: explore merge of four
// shards of 4,000 chaos seeds writes the summary that one process running
// the 4,000 seeds writes, count for count, histograms, tallies and
// outcomes included, timing aside.
func TestMergeEqualsOneRun(t *testing.T) {
	// The collector settings explore's main sets: 8,000 chaos seeds under
	// the test binary's default GOGC take several times as long.
	defer scenarios.BatchGC()()
	one, shards := t.TempDir(), t.TempDir()
	n := 4000
	if raceDetector {
		n = 400 // the sums are the point here, not the goroutines
	}
	args := []string{"-world", "chaos", "-seeds", strconv.Itoa(n)}
	if code, _, errOut := cli(t, append(args, "-json", filepath.Join(one, "s.json"))...); code != exitOK {
		t.Fatalf("one run: exit %d: %s", code, errOut)
	}
	paths := runShards(t, shards, 4, args...)
	// The shards in another order than their indices: a merge sums.
	slices.Reverse(paths)
	code, out, errOut := cli(t, append([]string{"merge", "-json", filepath.Join(shards, "s.json")}, paths...)...)
	if code != exitOK {
		t.Fatalf("merge: exit %d\n%s%s", code, out, errOut)
	}
	want := summaryWithoutTiming(t, filepath.Join(one, "s.json"), one)
	got := summaryWithoutTiming(t, filepath.Join(shards, "s.json"), shards)
	if got != want {
		t.Errorf("the merged summary differs from one run's at %s", firstDiff(want, got))
	}
	// The parts the issue names, so that a summary that lost them (and so
	// compared equal empty) fails too.
	sum := readSummary(t, filepath.Join(shards, "s.json"))
	steps := 0
	for _, s := range sum.Histograms.Steps {
		steps += s.Seeds
	}
	if sum.SeedsRun != n || steps != n || len(sum.Histograms.Transitions) == 0 || len(sum.Histograms.ConfirmSeconds) == 0 ||
		len(sum.Faults) == 0 || sum.Outcomes.Requested == 0 || sum.Shard != "0/1" || sum.Model == "" {
		t.Errorf("merged summary lacks counts: seeds_run %d, steps histogram %d seeds, %d transitions, %d confirm buckets, %d fault kinds, %d requested, shard %q, model %q",
			sum.SeedsRun, steps, len(sum.Histograms.Transitions), len(sum.Histograms.ConfirmSeconds), len(sum.Faults), sum.Outcomes.Requested, sum.Shard, sum.Model)
	}
}

var timingsElement = regexp.MustCompile(`<p class="timings">[^<]*</p>`)

// TestMergeWithViolations merges shards of a mutant that fails some
// seeds: the violations list, the failing seeds, first_failure with the
// trace merge re-runs, and the HTML report (every page and trace) equal
// one run's.
func TestMergeWithViolations(t *testing.T) {
	defer scenarios.BatchGC()()
	// Chaos runs swarm seeds by default: merge must re-run the first
	// failing seed as its shard drew it.
	seeds := "800"
	if raceDetector {
		seeds = "200" // the sums and pages are the point here, not the goroutines
	}
	args := []string{"-world", "chaos", "-mutant", "send-before-write-ahead", "-seeds", seeds}
	one, shards := t.TempDir(), t.TempDir()
	code, _, errOut := cli(t, append(args, "-json", filepath.Join(one, "s.json"), "-report", filepath.Join(one, "report"),
		"-trace", filepath.Join(one, "first.trace.jsonl"))...)
	if code != exitViolation {
		t.Fatalf("one run: exit %d, want %d: %s", code, exitViolation, errOut)
	}
	paths := runShards(t, shards, 4, args...)
	code, out, errOut := cli(t, append([]string{"merge", "-json", filepath.Join(shards, "s.json"), "-report", filepath.Join(shards, "report"),
		"-trace", filepath.Join(shards, "first.trace.jsonl")}, paths...)...)
	if code != exitViolation {
		t.Fatalf("merge: exit %d, want %d (a violation)\n%s%s", code, exitViolation, out, errOut)
	}
	want := summaryWithoutTiming(t, filepath.Join(one, "s.json"), one)
	got := summaryWithoutTiming(t, filepath.Join(shards, "s.json"), shards)
	if got != want {
		t.Errorf("the merged summary differs from one run's at %s", firstDiff(want, got))
	}
	sum := readSummary(t, filepath.Join(shards, "s.json"))
	if sum.SeedsFailed < 2 || sum.FirstFailure == nil || len(sum.Violations) == 0 || len(sum.FailingSeeds) < 2 {
		t.Fatalf("the mutant should fail several seeds: %d failed, first failure %v, %d violations", sum.SeedsFailed, sum.FirstFailure, len(sum.Violations))
	}
	// The trace merge wrote by re-running the first failing seed is the
	// single run's, byte for byte.
	sameFile(t, filepath.Join(one, "first.trace.jsonl"), filepath.Join(shards, "first.trace.jsonl"), one, shards)
	// Every file of the report, timing aside.
	names, err := os.ReadDir(filepath.Join(one, "report"))
	if err != nil {
		t.Fatal(err)
	}
	gotNames, _ := os.ReadDir(filepath.Join(shards, "report"))
	if len(gotNames) != len(names) || len(names) < 3 {
		t.Fatalf("the merged report has %d files, one run's %d", len(gotNames), len(names))
	}
	for _, e := range names {
		sameFile(t, filepath.Join(one, "report", e.Name()), filepath.Join(shards, "report", e.Name()), one, shards)
	}

	// A shard whose first failure the re-run does not reproduce (another
	// build, a flag the summary does not record) is refused, not traced.
	spoiled := t.TempDir()
	var files []string
	for i, p := range paths {
		files = append(files, spoil(t, p, spoiled, fmt.Sprintf("s%d.json", i), func(v map[string]any) {
			if vs, _ := v["violations"].([]any); len(vs) > 0 {
				vs[0].(map[string]any)["Message"] = "not what the seed does"
			}
		}))
	}
	merged := filepath.Join(spoiled, "m.json")
	code, _, errOut = cli(t, append([]string{"merge", "-json", merged, "-trace", filepath.Join(spoiled, "t.jsonl")}, files...)...)
	if code != exitUsage || !strings.Contains(errOut, "does not fail here as its shard says") {
		t.Errorf("a first failure that does not reproduce: exit %d, %s", code, errOut)
	}
	for _, p := range []string{merged, filepath.Join(spoiled, "t.jsonl")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a refused merge wrote %s", p)
		}
	}
}

// sameFile fails unless the files are equal once their directories'
// names and the wall-clock timings are masked.
func sameFile(t *testing.T, a, b, dirA, dirB string) {
	t.Helper()
	read := func(p, dir string) string {
		x, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return timingsElement.ReplaceAllString(strings.ReplaceAll(string(x), dir, "$DIR"), "")
	}
	if x, y := read(a, dirA), read(b, dirB); x != y {
		t.Errorf("%s differs from one run's at %s", filepath.Base(b), firstDiff(x, y))
	}
}

// fixtureShards runs the four shards of a small run into a temporary
// directory, for the tests to merge, copy and spoil; seed is a summary of
// another mode (-seed).
func fixtureShards(t *testing.T) (shards []string, seed string) {
	t.Helper()
	dir := t.TempDir()
	shards = runShards(t, dir, 4, "-world", "pair", "-seeds", "40")
	seed = filepath.Join(dir, "seed.json")
	if code, _, errOut := cli(t, "-world", "pair", "-seed", "3", "-json", seed); code != exitOK {
		t.Fatalf("-seed 3: exit %d: %s", code, errOut)
	}
	return shards, seed
}

// spoil copies the shard summary at src into dir/name with edit applied to
// its JSON, and returns the copy's path.
func spoil(t *testing.T, src, dir, name string, edit func(map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	edit(v)
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func setField(k string, val any) func(map[string]any) { return func(v map[string]any) { v[k] = val } }

// refusal is a case of TestMergeRefuses: the files merged, the file the
// message names ("" for none) and what it must say.
type refusal struct {
	name  string
	files []string
	named string
	says  []string
}

// TestMergeRefuses: every way shards can fail to add up to one run is
// refused with exit 2, a message naming the file and what is wrong, and
// nothing written (no summary, no report directory, no trace).
func TestMergeRefuses(t *testing.T) {
	shards, seedSummary := fixtureShards(t)
	dir := t.TempDir()
	s0, s1, s2, s3 := shards[0], shards[1], shards[2], shards[3]
	bad := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A shard of another run replaces shard 1, so that only it is wrong.
	other := func(name string, edit func(map[string]any)) []string {
		return []string{s0, spoil(t, s1, dir, name, edit), s2, s3}
	}
	// The contradictions are made from bases that pass every check: each
	// is refused for its own contradiction, not for its base's.
	bases, contra := contradictions(t, dir, shards)
	for _, p := range bases {
		sf, err := readShard(p)
		if err == nil {
			err = consistent(sf)
		}
		if err != nil {
			t.Errorf("a base of the contradictions does not pass: %s: %v", p, err)
		}
	}
	for _, c := range append([]refusal{
		{"unreadable", []string{s0, filepath.Join(dir, "absent.json"), s2, s3}, filepath.Join(dir, "absent.json"), []string{"no such file"}},
		{"malformed", []string{s0, bad("broken.json", `{"mode": "seeds",`), s2, s3}, filepath.Join(dir, "broken.json"), []string{"not an explore -json summary"}},
		{"not a summary", []string{s0, bad("trace.json", `{"world": "pair", "events": []}`), s2, s3}, filepath.Join(dir, "trace.json"), []string{"not an explore -json summary", "events"}},
		{"trailing data", []string{s0, bad("two.json", `{"mode":"seeds"} {}`), s2, s3}, filepath.Join(dir, "two.json"), []string{"data after the summary"}},
		{"another mode", []string{seedSummary, s1}, seedSummary, []string{`mode "seed"`}},
		{"another world", other("world.json", setField("world", "chaos")), filepath.Join(dir, "world.json"), []string{"world", `"chaos"`, `"pair"`}},
		{"unknown world", other("nowhere.json", setField("world", "nowhere")), filepath.Join(dir, "nowhere.json"), []string{"nowhere"}},
		{"unknown mutant", other("nomutant.json", setField("mutant", "no-such-mutant")), filepath.Join(dir, "nomutant.json"), []string{"no-such-mutant"}},
		{"another mutant", other("mutant.json", setField("mutant", "amount-scale")), filepath.Join(dir, "mutant.json"), []string{"mutant", `"amount-scale"`}},
		{"another strategy", other("strategy.json", func(v map[string]any) { v["strategy"], v["pct_depth"] = "pct", 3 }), filepath.Join(dir, "strategy.json"), []string{"strategy", `"pct"`}},
		{"pct without depth", other("nodepth.json", setField("strategy", "pct")), filepath.Join(dir, "nodepth.json"), []string{"strategy pct without pct_depth"}},
		{"another pct depth", other("depth.json", setField("pct_depth", 5)), filepath.Join(dir, "depth.json"), []string{"pct_depth 5"}},
		{"another store", other("store.json", setField("store", "postgres")), filepath.Join(dir, "store.json"), []string{"store", `"postgres"`}},
		{"another model", other("model.json", setField("model", "worlds/1")), filepath.Join(dir, "model.json"), []string{"model", `"worlds/1"`}},
		{"no model", other("nomodel.json", func(v map[string]any) { delete(v, "model") }), filepath.Join(dir, "nomodel.json"), []string{"no model version"}},
		{"swarm", other("swarm.json", setField("swarm", true)), filepath.Join(dir, "swarm.json"), []string{"swarm true"}},
		{"recheck", other("recheck.json", setField("recheck", map[string]any{"fraction": 0.1, "rechecked": 1, "mismatches": 0})), filepath.Join(dir, "recheck.json"), []string{"recheck fraction 0.1", "none"}},
		{"another seed start", other("start.json", setField("seed_start", 2)), filepath.Join(dir, "start.json"), []string{"seed range (seed_start) 2"}},
		{"another seed count", other("seeds.json", setField("seeds", 41)), filepath.Join(dir, "seeds.json"), []string{"seed range (seeds) 41"}},
		{"another N", []string{s0, s1, s2, spoil(t, s3, dir, "n.json", setField("shard", "3/5"))}, filepath.Join(dir, "n.json"), []string{"number of shards N 5", "4"}},
		{"a shard twice", []string{s0, s1, s2, s3, s1}, s1, []string{"shard 1/4 again", "overlap"}},
		{"a copy of a shard", []string{s0, s1, s2, s3, spoil(t, s2, dir, "copy.json", func(map[string]any) {})}, filepath.Join(dir, "copy.json"), []string{"shard 2/4 again", s2}},
		{"missing", []string{s0, s3, s1}, "", []string{"shards 2 of 4 missing", "0, 1, 3", "-partial"}},
		{"seeds run short", other("short.json", setField("seeds_run", 3)), filepath.Join(dir, "short.json"), []string{"seeds_run 3", "has 10"}},
		{"violation outside the shard", other("outside.json", func(v map[string]any) {
			v["violations"] = []any{map[string]any{"seed": 4, "Invariant": "funds", "Message": "m"}}
			v["violations_listed"] = 1
		}), filepath.Join(dir, "outside.json"), []string{"seed 4", "not in shard 1/4"}},
		{"histograms short", other("hist.json", func(v map[string]any) { v["histograms"] = map[string]any{} }), filepath.Join(dir, "hist.json"), []string{"steps count 0 seeds"}},
	}, contra...) {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			js, report, trace := filepath.Join(out, "m.json"), filepath.Join(out, "report"), filepath.Join(out, "t.jsonl")
			code, stdout, stderr := cli(t, append([]string{"merge", "-json", js, "-report", report, "-trace", trace}, c.files...)...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d\n%s%s", code, exitUsage, stdout, stderr)
			}
			if c.named != "" && !strings.Contains(stderr, c.named+":") {
				t.Errorf("the message does not name %s: %s", c.named, stderr)
			}
			for _, s := range c.says {
				if !strings.Contains(stderr, s) {
					t.Errorf("the message does not say %q: %s", s, stderr)
				}
			}
			if entries, _ := os.ReadDir(out); len(entries) > 0 {
				t.Errorf("refusing wrote %v", entries)
			}
		})
	}
}

// TestMergePartial: with -partial, missing shards are merged over and
// listed in the summary; the counts are the shards given.
func TestMergePartial(t *testing.T) {
	shards, _ := fixtureShards(t)
	dir := t.TempDir()
	js, report := filepath.Join(dir, "m.json"), filepath.Join(dir, "report")
	code, out, errOut := cli(t, "merge", "-partial", "-json", js, "-report", report, shards[0], shards[3])
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "PARTIAL") || !strings.Contains(out, "shards 1, 2 of 4 missing") {
		t.Errorf("the console does not say the merge is partial:\n%s", out)
	}
	sum := readSummary(t, js)
	if !slices.Equal(sum.MissingShards, []int{1, 2}) || sum.SeedsRun != 20 {
		t.Errorf("missing_shards %v, seeds_run %d: want [1 2] and 20", sum.MissingShards, sum.SeedsRun)
	}
	// The report says it too, with the seeds it leaves out.
	idx, err := os.ReadFile(filepath.Join(report, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<b>PARTIAL</b>", "shards 1, 2 of 4 missing", "shard 1/4: seeds 2, 6, …, 38", "shard 2/4: seeds 3, 7, …, 39"} {
		if !strings.Contains(string(idx), want) {
			t.Errorf("the partial report's index lacks %q", want)
		}
	}
	// A complete merge says nothing of missing shards.
	code, _, errOut = cli(t, append([]string{"merge", "-partial", "-json", js}, shards...)...)
	b, _ := os.ReadFile(js)
	if code != exitOK || bytes.Contains(b, []byte("missing_shards")) {
		t.Errorf("a complete merge: exit %d, %s, summary lists missing shards: %v", code, errOut, bytes.Contains(b, []byte("missing_shards")))
	}
}

// TestMergeCarriesCoverageAndRecheck: the coordinator's fields merge, the
// coverage summed per name (sorted), the re-check counts summed.
func TestMergeCarriesCoverageAndRecheck(t *testing.T) {
	shards, _ := fixtureShards(t)
	dir := t.TempDir()
	// Two conditions of the catalog (a merge refuses a name it does not
	// have), the first in the catalog first.
	a, b := scenarios.CoverageNames()[0], scenarios.CoverageNames()[1]
	var files []string
	for i, s := range shards {
		files = append(files, spoil(t, s, dir, fmt.Sprintf("c%d.json", i), func(v map[string]any) {
			cov := []any{map[string]any{"name": b, "seeds": i}}
			if i%2 == 0 {
				cov = append([]any{map[string]any{"name": a, "seeds": 1}}, cov...)
			}
			v["coverage"] = cov
			v["recheck"] = map[string]any{"fraction": 0.25, "rechecked": 2, "mismatches": i / 3}
		}))
	}
	js := filepath.Join(dir, "m.json")
	code, out, errOut := cli(t, append([]string{"merge", "-json", js}, files...)...)
	// Shard 3 reported a re-check mismatch: the merge fails as its run did.
	if code != exitViolation {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitViolation, out, errOut)
	}
	sum := readSummary(t, js)
	wantCov := []CoverageCount{{Name: a, Seeds: 2}, {Name: b, Seeds: 6}}
	if !slices.Equal(sum.Coverage, wantCov) {
		t.Errorf("coverage %v, want %v", sum.Coverage, wantCov)
	}
	if sum.Recheck == nil || *sum.Recheck != (RecheckInfo{Fraction: 0.25, Rechecked: 8, Mismatches: 1}) {
		t.Errorf("recheck %+v, want fraction 0.25, 8 rechecked, 1 mismatch", sum.Recheck)
	}
}
