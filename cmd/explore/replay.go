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

	"sluicesim/scenarios"
	"sluicesim/sim"
)

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
	named.Swarm, named.SwarmDraw = cfg.Swarm, cfg.SwarmDraw
	if b, err := json.Marshal(named); err != nil || !bytes.Equal(b, h.Config) {
		return h.World, cfg.Mutant, ""
	}
	rp := repro{world: h.World, mutant: cfg.Mutant, seed: h.Seed, pctDepth: depth, swarm: cfg.Swarm}
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
