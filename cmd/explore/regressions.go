package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sluicesim/scenarios"
	"sluicesim/sim"
)

// The regression corpus (testdata/regressions at the top of the
// repository): traces of seeds that once failed on the real core. A fixed
// range re-runs the same seeds every time; a fresh range (-seed-start
// random) finds failures nobody planned for, and each one found is kept
// here, as a trace, so that it is run on every `make test` from then on
// (TestRegressionCorpus). With -regressions DIR, explore adds the first
// failing seed's trace of a seed range to DIR.

// regressionCorpus is the corpus's place, relative to the repository root.
const regressionCorpus = "testdata/regressions"

// saveRegression copies a failing run of the real core into dir. A
// mutant's failure is the checker working, not a regression, so it is not
// kept.
func saveRegression(dir string, res *scenarios.Result, name string, stdout io.Writer) error {
	if res.Trace == nil {
		return errors.New("no trace to keep")
	}
	var cfg scenarios.Config
	if err := strictHeader(res.Trace.Header, &cfg); err != nil {
		return err
	}
	if cfg.Mutant != "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, name)
	if err := writeTrace(path, res.Trace); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kept in the regression corpus: %s (commit it: make test re-runs it from now on)\n", path)
	return nil
}

// strictHeader decodes a trace header's world, refusing fields this build
// does not know (a world it would silently run differently).
func strictHeader(h sim.Header, cfg *scenarios.Config) error {
	d := json.NewDecoder(bytes.NewReader(h.Config))
	d.DisallowUnknownFields()
	return d.Decode(cfg)
}

// regressionResult is what re-running one corpus trace found.
type regressionResult struct {
	Path       string
	Seed       uint64
	World      string
	Violations []string // invariant: message, empty when the seed now passes
	Err        error    // the trace could not be read or run
}

// checkRegressions re-runs every trace in dir by its world (as the header
// records it, mutant included) and its seed, under the strategy it was
// recorded with, and reports each one. A kept failure must now pass: the
// core changed since it failed, so the trace itself no longer replays
// choice for choice, but its seed in its world is still the case that
// once broke the core.
func checkRegressions(dir string) ([]regressionResult, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []regressionResult
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		r := regressionResult{Path: path}
		r.Seed, r.World, r.Violations, r.Err = rerunTrace(path)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b regressionResult) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func rerunTrace(path string) (uint64, string, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", nil, err
	}
	defer f.Close()
	t, err := sim.ReadTrace(f)
	if err != nil {
		return 0, "", nil, err
	}
	var cfg scenarios.Config
	if err := strictHeader(t.Header, &cfg); err != nil {
		return t.Header.Seed, t.Header.World, nil, fmt.Errorf("its world no longer decodes (model %s, this build %s): %w", t.Header.Model, scenarios.ModelVersion, err)
	}
	if err := cfg.Validate(); err != nil {
		return t.Header.Seed, t.Header.World, nil, err
	}
	depth, ok := strategyRepro(t.Header.Strategy)
	if !ok {
		return t.Header.Seed, t.Header.World, nil, fmt.Errorf("strategy %q: only random and PCT seeds re-run by seed", t.Header.Strategy)
	}
	ro := scenarios.Options{PCTDepth: depth}
	res := scenarios.Run(cfg, t.Header.Seed, ro)
	var bad []string
	for _, v := range res.Violations {
		bad = append(bad, v.Invariant+": "+v.Message)
	}
	return t.Header.Seed, t.Header.World, bad, nil
}
