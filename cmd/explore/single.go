package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sluicesim/model"
	"sluicesim/scenarios"
	"sluicesim/sim"
)

// single runs one seed with events traced.
func single(o *options, stdout, stderr io.Writer) int {
	began := time.Now()
	cfg := o.config()
	ro := o.runOptions()
	ro.Tracing = true
	res := scenarios.Run(cfg, o.seed, ro)
	fmt.Fprintf(stdout, "world %s%s, seed %d: %d steps, %s virtual, %d choices, %d events\n",
		cfg.Name, mutantNote(cfg), o.seed, res.Steps, res.Virtual, len(res.Trace.Tape), len(res.Trace.Events))
	printVerdict(stdout, res.Violations)
	rp := o.reproOf(cfg.Name, cfg.Mutant, o.seed)
	one := &oneRun{mode: "seed", world: cfg.Name, mutant: cfg.Mutant, strategy: o.strategy, strategyShown: o.strategyName(),
		res: res, traceName: rp.traceName(), rerun: rp.rerun(rp.traceName()), what: fmt.Sprintf("seed %d", o.seed)}
	switch {
	case o.trace != "":
		if err := writeArtifacts(stdout, o.trace, res); err != nil {
			fmt.Fprintln(stderr, "explore:", err)
			return exitUsage
		}
		one.trace = o.trace
	case o.report != "" && res.Failed():
		one.trace = inDir(o.report, one.traceName)
		fmt.Fprintf(stdout, "trace: %s (in the report)\n", one.trace)
	}
	if one.trace != "" {
		fmt.Fprintf(stdout, "replay: %s\n", replayCommand(one.trace))
	}
	code := exitOK
	if res.Failed() {
		code = exitViolation
	}
	one.elapsed = time.Since(began)
	return finishOne(o, one, nil, code, stdout, stderr)
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

// traceRun is what a trace's header says about its run: its world's name
// and mutant, and the command that re-runs it by seed when one does (a
// random or PCT run of a named world as it is; not an exhaustive schedule
// or a shrunk world, which only their trace reproduces).
func traceRun(h sim.Header) (world, mutant, rerun string) {
	var cfg scenarios.Config
	if json.Unmarshal(h.Config, &cfg) != nil {
		return h.World, "", ""
	}
	depth, ok := strategyRepro(h.Strategy)
	named, err := scenarios.World(h.World)
	if err != nil || !ok {
		return h.World, cfg.Mutant, ""
	}
	named.Mutant = cfg.Mutant
	if b, err := json.Marshal(named); err != nil || !bytes.Equal(b, h.Config) {
		return h.World, cfg.Mutant, ""
	}
	rp := repro{world: h.World, mutant: cfg.Mutant, seed: h.Seed, pctDepth: depth}
	return h.World, cfg.Mutant, rp.rerun(rp.traceName())
}

// reportTraceName is the name of a copy of the trace file path in a report
// directory: its own name, so that the reader recognizes it, unless that
// is not a trace's name.
func reportTraceName(path string, rp repro) string {
	if base := filepath.Base(path); strings.HasSuffix(base, ".jsonl") {
		return base
	}
	return rp.traceName()
}

// replay re-runs a trace file. A trace that does not reproduce is refused
// (exit 2) with the first divergence alone: the run it led to is not the
// recorded one, and its verdict (a truncated run's) means nothing.
func replay(o *options, stdout, stderr io.Writer) int {
	began := time.Now()
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
		fmt.Fprintf(stderr, "explore: %s does NOT reproduce, so no verdict is given (the trace was edited, or recorded by another build, or the run is not deterministic): %v\n", o.replay, err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "replay of %s (world %s, seed %d) reproduces it: %d choices, %d events identical\n",
		o.replay, t.Header.World, t.Header.Seed, len(t.Tape), len(t.Events))
	printVerdict(stdout, res.Violations)
	world, mutant, rerun := traceRun(t.Header)
	one := &oneRun{mode: "replay", world: world, mutant: mutant, strategy: t.Header.Strategy, res: res,
		trace: o.replay, traceName: reportTraceName(o.replay, repro{world: world, mutant: mutant, seed: t.Header.Seed}), rerun: rerun,
		what: fmt.Sprintf("replay of %s (seed %d): it reproduces, %d choices and %d events identical", o.replay, t.Header.Seed, len(t.Tape), len(t.Events))}
	code := exitOK
	if res.Failed() {
		code = exitViolation
	}
	one.elapsed = time.Since(began)
	return finishOne(o, one, func(s *summary) {
		s.Replay = &replayInfo{Trace: o.replay, Choices: len(t.Tape), Events: len(t.Events)}
	}, code, stdout, stderr)
}

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
