package main

import (
	"fmt"
	"io"
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
	var res *scenarios.Result
	forEachSeed(1, 1, nil, o.watch(stderr, func(int) string { return o.seedName(cfg.Name, cfg.Mutant, o.seed) }), func(int) {
		res = scenarios.Run(cfg, o.seed, ro)
	})
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
		if err := writeFile(html, res.Linearizability.Visualize); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "linearizability visualization: %s\n", html)
		break
	}
	return nil
}

func writeTrace(path string, t *sim.Trace) error {
	return writeFile(path, t.Write)
}
