package main

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"sluicesim/scenarios"
)

// shrink minimizes a failing trace and writes the minimal one.
func shrink(o *options, stdout, stderr io.Writer) int {
	began := time.Now()
	t, err := readTraceFile(o.shrink)
	if err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	out := o.trace
	if out == "" {
		out = shrunkTraceName(o.shrink)
		// -trace was checked with the other outputs; this default is
		// checked here, before the shrinking's many runs.
		if err := checkWritable(out); err != nil {
			fmt.Fprintf(stderr, "explore: %s: cannot write the shrunk trace there: %v (give -trace)\n", out, err)
			return exitUsage
		}
	}
	var progress func(string)
	if o.progress {
		progress = func(s string) { fmt.Fprintf(stderr, "\r\033[Kshrinking: %s", s) }
	}
	sr, err := scenarios.Shrink(t, o.shrinkBudget, progress)
	if o.progress {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		fmt.Fprintf(stderr, "explore: %s: %v\n", o.shrink, err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "shrinking %s: %s, %d steps\n", o.shrink, sr.Invariant, sr.Original.Steps)
	for _, s := range sr.Steps {
		fmt.Fprintln(stdout, "  "+s)
	}
	fmt.Fprintf(stdout, "shrunk to %d steps (%.0f%% of the original) after %d runs; world %s, seed %d, withdrawals %v, %d workers\n",
		sr.Best.Steps, 100*float64(sr.Best.Steps)/float64(sr.Original.Steps), sr.Tried, sr.Config.Name, sr.Seed, sr.Config.Only, sr.Config.Workers)
	printVerdict(stdout, sr.Best.Violations)
	if err := writeArtifacts(stdout, out, sr.Best); err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "replay: %s\n", replayCommand(out))
	world, mutant, rerun := traceRun(sr.Best.Trace.Header)
	one := &oneRun{mode: "shrink", world: world, mutant: mutant, strategy: sr.Best.Trace.Header.Strategy, res: sr.Best,
		trace: out, traceName: filepath.Base(out), rerun: rerun, notes: sr.Steps,
		what: fmt.Sprintf("shrunk from %s (%d steps): seed %d of a smaller world (withdrawals %v, %d workers), %d steps",
			o.shrink, sr.Original.Steps, sr.Seed, sr.Config.Only, sr.Config.Workers, sr.Best.Steps)}
	one.elapsed = time.Since(began)
	return finishOne(o, one, func(s *summary) {
		s.Shrink = &shrinkInfo{From: o.shrink, Invariant: sr.Invariant, OriginalSteps: sr.Original.Steps, Steps: sr.Best.Steps,
			Runs: sr.Tried, Withdrawals: sr.Config.Only, Workers: sr.Config.Workers, Edits: sr.Steps}
	}, exitViolation, stdout, stderr)
}
