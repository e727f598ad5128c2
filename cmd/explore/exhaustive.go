package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"sluicesim/scenarios"
	"sluicesim/sim"
)

// Exhaustive search re-runs the world once per schedule, and the schedules
// multiply with every process: pair (1 withdrawal, 2 workers) completes in
// seconds and pair2 (2 withdrawals) in about as many again (pairnodes, pair
// behind two nodes, within its route, lag and gossip bounds), while zombies
// (8 and 3) or chaos (60 and 6) would not finish in a day. A world beyond
// these bounds is refused unless -exhaustive-any-world asks for it.
const (
	exhaustiveMaxWithdrawals = 2
	exhaustiveMaxWorkers     = 2
)

// exhaustiveTooLarge says why a world is too large to search, or "".
func exhaustiveTooLarge(cfg scenarios.Config) string {
	if cfg.Withdrawals <= exhaustiveMaxWithdrawals && cfg.Workers <= exhaustiveMaxWorkers {
		return ""
	}
	return fmt.Sprintf("-strategy exhaustive: world %s has %d withdrawals and %d workers, and exhaustive search only finishes on worlds of at most %d withdrawals and %d workers (pair, pair2, pairnodes); pick one of those, or add -exhaustive-any-world to search it anyway (bounded by -max-schedules)",
		cfg.Name, cfg.Withdrawals, cfg.Workers, exhaustiveMaxWithdrawals, exhaustiveMaxWorkers)
}

// exhaustiveProgress shows the search's progress on stderr: the search
// reports its counts every thousand runs, and a ticker repeats the latest
// with the time spent, so that a slow world still shows it is alive.
type exhaustiveProgress struct {
	mu    sync.Mutex
	st    sim.ExhaustiveStats
	began time.Time
	stop  chan struct{}
	done  sync.WaitGroup
}

func startExhaustiveProgress(stderr io.Writer) *exhaustiveProgress {
	p := &exhaustiveProgress{began: time.Now(), stop: make(chan struct{})}
	show := func() {
		p.mu.Lock()
		st := p.st
		p.mu.Unlock()
		fmt.Fprintf(stderr, "\r\033[Kexhaustive search: %d schedules, %d cut short, %d settled without running, %.0fs", st.Schedules, st.Pruned, st.Predicted, time.Since(p.began).Seconds())
	}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		show()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				show()
				fmt.Fprint(stderr, "\r\033[K")
				return
			case <-tick.C:
				show()
			}
		}
	}()
	return p
}

func (p *exhaustiveProgress) update(st sim.ExhaustiveStats) {
	p.mu.Lock()
	p.st = st
	p.mu.Unlock()
}

func (p *exhaustiveProgress) finish(st sim.ExhaustiveStats) {
	p.update(st)
	close(p.stop)
	p.done.Wait()
}

// exhaustive enumerates the world's schedules within bounds.
func exhaustive(o *options, stdout, stderr io.Writer) int {
	cfg := o.config()
	b := o.bounds
	// nil, the memory store, but in tests: -store postgres is refused here.
	b.Stores = o.stores
	reduction := "exact within these bounds: schedules are predicted from the steps of runs made (by their footprints), and states cached at each instant's end"
	if !b.Reduce {
		reduction = "none"
	}
	preemptions := fmt.Sprintf("<= %d", b.Preemptions)
	if b.Preemptions < 0 {
		preemptions = "unbounded"
	}
	nodes := ""
	if cfg.Nodes > 1 {
		// Only a world of several nodes asks these choices: a one-node
		// world's line stays as it was.
		nodes = fmt.Sprintf(", routes <= %d, lags <= %d, gossip losses <= %d", b.Routes, b.Lags, b.GossipLosses)
	}
	bounds := fmt.Sprintf("crashes <= %d, pauses <= %d, lies <= %d%s, preemptions %s, steps <= %d; reduction: %s",
		b.Crashes, b.Pauses, b.Lies, nodes, preemptions, b.StepsMax, reduction)
	fmt.Fprintf(stdout, "world %s%s, strategy exhaustive: %s\n", cfg.Name, mutantNote(cfg), bounds)
	began := time.Now()
	var progress func(sim.ExhaustiveStats)
	var shown *exhaustiveProgress
	if o.progress {
		shown = startExhaustiveProgress(stderr)
		progress = shown.update
	}
	res, err := scenarios.Exhaust(cfg, b, progress)
	if shown != nil {
		var st sim.ExhaustiveStats
		if res != nil {
			st = res.Stats
		}
		shown.finish(st)
	}
	if err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	st := res.Stats
	var found string
	switch {
	case st.Diverged > 0:
		// A run that did not ask what its replayed path said shows the
		// search's premise broken: no completeness can be claimed.
		found = fmt.Sprintf("NOT exact: %d runs diverged from the path replayed into them (the world is not deterministic, or a step touched what its footprint does not name), so outcomes may have been missed; %d schedules run, %d cut short, %d settled without running; %d with violations",
			st.Diverged, st.Schedules, st.Pruned, st.Predicted, res.Violations)
	case st.Complete && b.Reduce:
		found = fmt.Sprintf("complete within bounds: %d schedules run; %d more cut short and %d settled without running, each shown to reach a state already explored, so every outcome within the bounds was reached; %d with violations",
			st.Schedules, st.Pruned, st.Predicted, res.Violations)
	case st.Complete:
		found = fmt.Sprintf("complete within bounds: %d schedules run, every one within the bounds; %d with violations", st.Schedules, res.Violations)
	default:
		found = fmt.Sprintf("NOT complete: the budget of %d runs ran out after %d schedules (%d cut short, %d settled without running), %d with violations",
			b.SchedulesMax, st.Schedules, st.Pruned, st.Predicted, res.Violations)
	}
	fmt.Fprintln(stdout, found)
	one := &oneRun{mode: "exhaustive", world: cfg.Name, mutant: cfg.Mutant, strategy: "exhaustive", res: res.FirstFailure,
		traceName: exhaustiveTraceName(cfg.Name, cfg.Mutant), what: "exhaustive search, " + found,
		notes: []string{"bounds: " + bounds}}
	// A search that ran out of budget proved nothing about the schedules
	// it did not reach: inconclusive, as a kill table without enough seeds
	// is, so that a gate cannot take it for a complete one. A violation
	// found says more, and wins.
	code := exitOK
	if !st.Complete || st.Diverged > 0 {
		// A diverged run voids the guarantee as a budget cut does.
		code = exitInconclusive
	}
	if res.FirstFailure != nil {
		code = exitViolation
		one.what += "; the first failing schedule is shown"
		printVerdict(stdout, res.FirstFailure.Violations)
		one.trace = o.trace
		if one.trace == "" && o.report == "" {
			one.trace = one.traceName
		}
		if one.trace != "" {
			if err := writeArtifacts(stdout, one.trace, res.FirstFailure); err != nil {
				fmt.Fprintln(stderr, "explore:", err)
				return exitUsage
			}
		} else {
			one.trace = inDir(o.report, one.traceName)
			fmt.Fprintf(stdout, "trace: %s (in the report)\n", one.trace)
		}
		fmt.Fprintf(stdout, "replay: %s\n", replayCommand(one.trace))
	}
	elapsed := time.Since(began)
	one.elapsed = elapsed
	code = finishOne(o, one, func(s *summary) {
		s.Exhaustive = &exhaustiveInfo{Crashes: b.Crashes, Pauses: b.Pauses, Lies: b.Lies, Preemptions: b.Preemptions,
			StepsMax: b.StepsMax, SchedulesMax: b.SchedulesMax, Reduction: b.Reduce,
			Complete: st.Complete && st.Diverged == 0, Diverged: st.Diverged, Schedules: st.Schedules, Pruned: st.Pruned, Settled: st.Predicted, SchedulesFailed: res.Violations}
		if cfg.Nodes > 1 {
			s.Exhaustive.Routes, s.Exhaustive.Lags, s.Exhaustive.GossipLosses = &b.Routes, &b.Lags, &b.GossipLosses
		}
	}, code, stdout, stderr)
	fmt.Fprintf(stdout, "\nexplored in %.1fs (%.0f runs/s)\n", elapsed.Seconds(), float64(st.Schedules+st.Pruned)/elapsed.Seconds())
	return code
}
