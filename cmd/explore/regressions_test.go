package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sluicesim/scenarios"
)

// corpusFailures is what makes TestRegressionCorpus fail: each trace that
// could not be re-run or that violates an invariant now.
func corpusFailures(t *testing.T, dir string) []string {
	t.Helper()
	results, err := checkRegressions(dir)
	if err != nil {
		t.Fatalf("regression corpus %s: %v", dir, err)
	}
	var bad []string
	for _, r := range results {
		switch {
		case r.Err != nil:
			bad = append(bad, r.Path+": "+r.Err.Error())
		case len(r.Violations) > 0:
			bad = append(bad, r.Path+" (world "+r.World+"): "+strings.Join(r.Violations, "; "))
		}
	}
	return bad
}

// Goal: every seed that ever failed and was kept stays fixed. The corpus
// is at the top of the repository (testdata/regressions); make test runs
// this.
func TestRegressionCorpus(t *testing.T) {
	for _, b := range corpusFailures(t, filepath.Join("..", "..", regressionCorpus)) {
		t.Error(b)
	}
}

// Goal: the corpus check bites. A failing trace planted in a corpus (a
// mutant's kill: its header names the mutant, so its seed fails again)
// makes the same check fail; a trace that cannot be read does too.
func TestPlantedRegressionFails(t *testing.T) {
	dir := t.TempDir()
	cfg := scenarios.Zombies()
	cfg.Mutant = "claim-ignores-lease"
	res := scenarios.Run(cfg, 1, scenarios.Options{Tracing: true})
	if len(res.Violations) == 0 {
		t.Fatal("the planted seed does not fail: pick another")
	}
	if err := writeTrace(filepath.Join(dir, "planted.trace.jsonl"), res.Trace); err != nil {
		t.Fatal(err)
	}
	green := scenarios.Run(scenarios.Pair(), 1, scenarios.Options{Tracing: true})
	if err := writeTrace(filepath.Join(dir, "green.trace.jsonl"), green.Trace); err != nil {
		t.Fatal(err)
	}
	bad := corpusFailures(t, dir)
	if len(bad) != 1 || !strings.Contains(bad[0], "planted.trace.jsonl") || !strings.Contains(bad[0], "one-writer") {
		t.Fatalf("planted failure: got %q", bad)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken.trace.jsonl"), []byte("{not a trace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if bad := corpusFailures(t, dir); len(bad) != 2 || !strings.Contains(bad[0], "broken.trace.jsonl") {
		t.Fatalf("unreadable trace: got %q", bad)
	}
}

// Goal: -regressions keeps the first failing seed of the real core, and
// never a mutant's kill (the checker working, not a regression).
func TestSaveRegressionKeepsOnlyTheRealCore(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	real := scenarios.Run(scenarios.Pair(), 3, scenarios.Options{Tracing: true})
	if err := saveRegression(dir, real, "pair-seed3.trace.jsonl", &out); err != nil {
		t.Fatal(err)
	}
	cfg := scenarios.Zombies()
	cfg.Mutant = "claim-ignores-lease"
	mut := scenarios.Run(cfg, 1, scenarios.Options{Tracing: true})
	if err := saveRegression(dir, mut, "zombies-claim-ignores-lease-seed1.trace.jsonl", &out); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "pair-seed3.trace.jsonl" {
		t.Fatalf("corpus holds %v, want only the real core's trace", entries)
	}
	if !strings.Contains(out.String(), "kept in the regression corpus") {
		t.Errorf("no word of it on the console: %q", out.String())
	}
	code, _, errOut := cli(t, "-mutants", "-regressions", dir)
	if code != exitUsage || !strings.Contains(errOut, "-regressions keeps failures of a seed range") {
		t.Errorf("-mutants -regressions: exit %d, %q", code, errOut)
	}
}
