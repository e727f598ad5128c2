package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"sluicesim/model"
	"sluicesim/scenarios"
	"sluicesim/sim"
)

// single runs one seed with events traced.
func single(o *options, stdout, stderr io.Writer) int {
	cfg := o.config()
	ro := o.runOptions()
	ro.Tracing = true
	res := scenarios.Run(cfg, o.seed, ro)
	fmt.Fprintf(stdout, "world %s%s, seed %d: %d steps, %s virtual, %d choices, %d events\n",
		cfg.Name, mutantNote(cfg), o.seed, res.Steps, res.Virtual, len(res.Trace.Tape), len(res.Trace.Events))
	printVerdict(stdout, res.Violations)
	if o.trace != "" {
		if err := writeArtifacts(stdout, o.trace, res); err != nil {
			fmt.Fprintln(stderr, "explore:", err)
			return exitUsage
		}
		fmt.Fprintf(stdout, "replay: go run ./cmd/explore -replay %s\n", o.trace)
	}
	if res.Failed() {
		return exitViolation
	}
	return exitOK
}

// readTraceFile opens and checks a trace file; the error names the file.
func readTraceFile(path string) (*sim.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := sim.ReadTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// replay re-runs a trace file.
func replay(o *options, stdout, stderr io.Writer) int {
	t, err := readTraceFile(o.replay)
	if err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	res, err := scenarios.Replay(t)
	if res == nil {
		fmt.Fprintf(stderr, "explore: %s: %v\n", o.replay, err)
		return exitUsage
	}
	if err != nil {
		fmt.Fprintf(stdout, "replay of %s does NOT reproduce: %v\n", o.replay, err)
		printVerdict(stdout, res.Violations)
		return exitViolation
	}
	fmt.Fprintf(stdout, "replay of %s (world %s, seed %d) reproduces it: %d choices, %d events identical\n",
		o.replay, t.Header.World, t.Header.Seed, len(t.Tape), len(t.Events))
	printVerdict(stdout, res.Violations)
	if res.Failed() {
		return exitViolation
	}
	return exitOK
}

// shrink minimizes a failing trace and writes the minimal one.
func shrink(o *options, stdout, stderr io.Writer) int {
	t, err := readTraceFile(o.shrink)
	if err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
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
	out := o.trace
	if out == "" {
		out = strings.TrimSuffix(o.shrink, ".jsonl") + ".shrunk.jsonl"
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
	fmt.Fprintf(stdout, "replay: go run ./cmd/explore -replay %s\n", out)
	return exitViolation
}

func printVerdict(w io.Writer, vs []model.Violation) {
	if len(vs) == 0 {
		fmt.Fprintln(w, "verdict: every invariant holds")
		return
	}
	fmt.Fprintf(w, "verdict: %d violation(s)\n", len(vs))
	for _, v := range vs {
		fmt.Fprintf(w, "  %s: %s\n", v.Invariant, v.Message)
	}
}

func mutantNote(cfg scenarios.Config) string {
	if cfg.Mutant == "" {
		return ""
	}
	return " (mutant " + cfg.Mutant + ")"
}

// writeArtifacts writes a run's trace to path and, when the run violated
// linearizable-intake, porcupine's visualization next to it.
func writeArtifacts(stdout io.Writer, path string, res *scenarios.Result) error {
	if err := writeTrace(path, res.Trace); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "trace: %s\n", path)
	for _, v := range res.Violations {
		if v.Invariant != model.LinearizableIntake || res.Linearizability == nil {
			continue
		}
		html := strings.TrimSuffix(path, ".jsonl") + ".linearizability.html"
		f, err := os.Create(html)
		if err != nil {
			return err
		}
		if err := res.Linearizability.Visualize(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "linearizability visualization: %s\n", html)
		break
	}
	return nil
}

func writeTrace(path string, t *sim.Trace) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := t.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
