package main

import (
	"fmt"
	"io"
	"time"

	"sluicesim/scenarios"
	"sluicesim/sim"
)

// exhaustive enumerates the world's schedules within bounds.
func exhaustive(o *options, stdout, stderr io.Writer) int {
	cfg := o.config()
	b := o.bounds
	reduction := "sleep sets over step footprints"
	if !b.Reduce {
		reduction = "none"
	}
	preemptions := fmt.Sprintf("<= %d", b.Preemptions)
	if b.Preemptions < 0 {
		preemptions = "unbounded"
	}
	fmt.Fprintf(stdout, "world %s%s, strategy exhaustive: crashes <= %d, pauses <= %d, lies <= %d, preemptions %s, steps <= %d; reduction: %s\n",
		cfg.Name, mutantNote(cfg), b.Crashes, b.Pauses, b.Lies, preemptions, b.StepsMax, reduction)
	began := time.Now()
	var progress func(sim.ExhaustiveStats)
	if o.progress {
		progress = func(st sim.ExhaustiveStats) {
			fmt.Fprintf(stderr, "\r\033[Kschedules %d, pruned %d", st.Schedules, st.Pruned)
		}
	}
	res, err := scenarios.Exhaust(cfg, b, progress)
	if o.progress {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	st := res.Stats
	if st.Complete {
		fmt.Fprintf(stdout, "complete within bounds: %d schedules (%d more cut short as redundant), %d with violations\n", st.Schedules, st.Pruned, res.Violations)
	} else {
		fmt.Fprintf(stdout, "NOT complete: the budget of %d runs ran out after %d schedules (%d cut short as redundant), %d with violations\n",
			b.SchedulesMax, st.Schedules, st.Pruned, res.Violations)
	}
	code := exitOK
	if res.FirstFailure != nil {
		code = exitViolation
		printVerdict(stdout, res.FirstFailure.Violations)
		path := o.trace
		if path == "" {
			path = cfg.Name + "-exhaustive.trace.jsonl"
		}
		if err := writeArtifacts(stdout, path, res.FirstFailure); err != nil {
			fmt.Fprintln(stderr, "explore:", err)
			return exitUsage
		}
		fmt.Fprintf(stdout, "replay: go run ./cmd/explore -replay %s\n", path)
	}
	elapsed := time.Since(began)
	fmt.Fprintf(stdout, "\nexplored in %.1fs (%.0f runs/s)\n", elapsed.Seconds(), float64(st.Schedules+st.Pruned)/elapsed.Seconds())
	return code
}
