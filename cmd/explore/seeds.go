package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"sluicesim/model"
	"sluicesim/reports"
	"sluicesim/scenarios"
)

// explore runs the seed range in parallel and summarizes.
func explore(o *options, stdout, stderr io.Writer) int {
	cfg := o.config()
	// Seed k of this shard is seedStart + shardI + k*shardN.
	total := 0
	if o.seeds > o.shardI {
		total = (o.seeds-o.shardI-1)/o.shardN + 1
	}
	seedAt := func(k int) uint64 { return o.seedStart + uint64(o.shardI+k*o.shardN) }
	agg := reports.NewAggregate(o.seedStart+uint64(o.shardI), o.shardN, total, violationsListedMax)
	var done atomic.Int64
	began := time.Now()

	stopProgress := make(chan struct{})
	var progressWG sync.WaitGroup
	if o.progress {
		progressWG.Add(1)
		go func() {
			defer progressWG.Done()
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stopProgress:
					fmt.Fprint(stderr, "\r\033[K")
					return
				case <-tick.C:
					d := done.Load()
					rate := float64(d) / time.Since(began).Seconds()
					fmt.Fprintf(stderr, "\r\033[Kseeds %d/%d  %.0f seeds/s  seeds with violations so far: %d", d, total, rate, agg.FailedCount())
				}
			}
		}()
	}

	// A signal ends the range where it stands: the seeds in flight finish,
	// no new one starts, and the summary speaks of the seeds run, which
	// are a prefix of the range, as under -duration. A second signal kills
	// at once (the handler is gone by then).
	var interrupted atomic.Bool
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		interrupted.Store(true)
		signal.Stop(sigs)
		fmt.Fprintln(stderr, "\nexplore: interrupted: finishing the seeds in flight, then summarising those run (interrupt again to quit at once)")
	}()
	defer func() {
		signal.Stop(sigs) // no send after it returns: the close below is safe
		close(sigs)
	}()
	stop := func(int) bool { return interrupted.Load() }
	if o.duration > 0 {
		deadline := began.Add(o.duration)
		// The first seed always runs: a budget too short for one seed
		// still says something.
		stop = func(k int) bool { return interrupted.Load() || k > 0 && !time.Now().Before(deadline) }
	}
	var rs *recheckSet
	if o.recheck > 0 {
		rs = newRecheckSet(o.recheck)
	}
	watch := func(seedOf func(k int) uint64) *seedWatch {
		return o.watch(stderr, func(k int) string { return o.seedName(cfg.Name, cfg.Mutant, seedOf(k)) })
	}
	ran := forEachSeed(total, o.parallel, stop, watch(seedAt), func(k int) {
		ro := rs.options(seedAt(k), o.runOptions())
		ro.Now = time.Now
		res := scenarios.Run(cfg, seedAt(k), ro)
		rs.note(res)
		agg.Add(seedOf(res))
		done.Add(1)
	})
	if ran < total {
		// A time budget or a signal ended the run: the seeds run are the
		// first ran of the range, and the summary speaks of those.
		total, o.seeds = ran, ran
	}
	stopped := interrupted.Load()
	var rechecked int
	var mismatches []recheckMismatch
	if rs != nil && !stopped {
		rechecked, mismatches = rs.rerun(cfg, o.runOptions(), o.parallel, watch)
	}
	elapsed := time.Since(began)
	close(stopProgress)
	progressWG.Wait()

	sum := summary{
		Mode: "seeds", World: cfg.Name, Mutant: cfg.Mutant, Strategy: o.strategy, Store: o.storeKind, SeedStart: o.seedStart, Seeds: o.seeds,
		Shard: fmt.Sprintf("%d/%d", o.shardI, o.shardN), SeedsRun: total, Interrupted: stopped,
	}
	failures := sum.fill(agg)
	sum.Swarm = cfg.Swarm
	if o.strategy == "pct" {
		sum.PCTDepth = o.pctDepth
	}
	sum.Coverage = coverageOf(agg)
	if rs != nil {
		sum.Recheck = &RecheckInfo{Fraction: o.recheck, Rechecked: rechecked, Mismatches: len(mismatches)}
	}

	fmt.Fprintf(stdout, "world %s%s, strategy %s, store %s, seeds %d..%d", cfg.Name, mutantNote(cfg), o.strategy, o.storeKind, o.seedStart, o.seedStart+uint64(o.seeds)-1)
	if o.shardN > 1 {
		fmt.Fprintf(stdout, ", shard %d/%d", o.shardI, o.shardN)
	}
	fmt.Fprintf(stdout, ": %d seeds run, %d with violations\n", total, sum.SeedsFailed)
	if o.seedRandom {
		fmt.Fprintf(stdout, "a fresh range: -seed-start random chose %d (re-run it with -seed-start %d -seeds %d)\n", o.seedStart, o.seedStart, o.seeds)
	}
	if stopped {
		fmt.Fprintf(stdout, "INTERRUPTED: the first %d seeds of the range ran; this summary is of those alone\n", total)
	} else if o.duration > 0 {
		fmt.Fprintf(stdout, "time budget %s: %d seeds fitted\n", o.duration, total)
	}
	printCounts(stdout, cfg, &sum, o.requireCov)

	code := exitOK
	var pages []reports.Failure
	if len(failures) > 0 {
		code = exitViolation
		ro := o.runOptions()
		ro.Tracing = true
		traced := scenarios.Run(cfg, failures[0].Seed, ro)
		pages, sum.FirstFailure = firstFailureArtifacts(o, cfg, failures, traced, "", stdout, stderr)
	}

	if rs != nil {
		printRecheck(stdout, o.recheck, rechecked, mismatches)
		if len(mismatches) > 0 {
			code = exitViolation
		}
	}
	if o.requireCov && code == exitOK && len(missingCoverage(cfg, sum.Coverage)) > 0 {
		code = exitInconclusive
	}
	if stopped && code != exitViolation {
		code = exitInterrupted
	}

	if o.report != "" {
		if err := writeExploreReport(o, cfg, agg, pages, total, elapsed, stdout); err != nil {
			fmt.Fprintln(stderr, "explore:", err)
			return exitUsage
		}
	}

	sum.Timing = timing(elapsed.Seconds(), total, agg)
	if err := writeJSON(o.json, sum); err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "\nran %d seeds in %.1fs (%.1f seeds/s, %d workers; checkers %.1f%% of run time; live heap %.0f MiB, %d goroutines)\n",
		total, elapsed.Seconds(), float64(total)/elapsed.Seconds(), o.parallel, 100*agg.CheckShare(),
		sum.Timing["heap_live_mib"], int(sum.Timing["goroutines"]))
	return code
}

// outcomeVerdict is one line on what the withdrawals' outcomes say, so that
// a run that confirmed nothing, or failed many, cannot be missed.
func outcomeVerdict(o model.Outcomes) string {
	switch {
	case o.Requested == 0:
		return "  NOTHING was requested: this run tested no withdrawal"
	case o.Confirmed == 0:
		return "  NOTHING was confirmed: no withdrawal was paid in any seed"
	case o.Confirmed == o.Requested:
		return "  every valid withdrawal was confirmed"
	}
	return fmt.Sprintf("  %.1f%% of valid withdrawals confirmed; failures by verified reason above (progress checks each)",
		100*float64(o.Confirmed)/float64(o.Requested))
}

func sortedKeys(m map[string]int) []string {
	// Invariants first in their stable order, then anything else (panics).
	var keys []string
	seen := map[string]bool{}
	for _, k := range model.InvariantNames() {
		if _, ok := m[k]; ok {
			keys = append(keys, k)
			seen[k] = true
		}
	}
	var rest []string
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(keys, rest...)
}

// printCounts prints what a seed range's summary counts (a merge of shards
// prints the same): how the withdrawals ended, the seeds per invariant,
// the faults that fired and the coverage reached.
func printCounts(w io.Writer, cfg scenarios.Config, sum *summary, requireCov bool) {
	fmt.Fprintf(w, "\nwithdrawals (all seeds): %s\n", sum.Outcomes)
	fmt.Fprintln(w, outcomeVerdict(sum.Outcomes))
	fmt.Fprintln(w, "\ninvariant              seeds violated")
	for _, inv := range sortedKeys(sum.PerInvariant) {
		fmt.Fprintf(w, "  %-20s %d\n", inv, sum.PerInvariant[inv])
	}
	fmt.Fprintln(w, "\nfaults fired (all seeds)")
	fmt.Fprint(w, model.FormatTally(sum.Faults))
	printCoverage(w, cfg, sum.Coverage, requireCov)
}

// firstFailureArtifacts writes what the first failing seed of a seed range
// leaves, from its traced run: the failing seeds' report pages (with
// -report), its trace (where -trace says, else into the report, else
// under its own name here), a copy in the regression corpus (with
// -regressions), and the replay and re-run commands. Seeds mode and
// explore merge share it; how says how the trace was made, if not by the
// run itself.
func firstFailureArtifacts(o *options, cfg scenarios.Config, failures []*reports.Seed, traced *scenarios.Result, how string,
	stdout, stderr io.Writer) ([]reports.Failure, *firstFailure) {
	first := failures[0]
	rp := o.reproOf(cfg.Name, cfg.Mutant, first.Seed)
	var pages []reports.Failure
	if o.report != "" {
		pages = failurePages(o, cfg, failures, traced)
	}
	path := o.trace
	if path == "" && o.report == "" {
		path = rp.traceName()
	}
	fmt.Fprintf(stdout, "\nfirst failing seed: %d%s\n", first.Seed, how)
	printVerdict(stdout, first.Violations)
	if path != "" {
		// The path was checked before the run, so this is rare; the
		// violation stays the verdict (exit 1).
		if err := writeArtifacts(stdout, path, traced); err != nil {
			fmt.Fprintln(stderr, "explore: writing the trace:", err)
			path = "" // nothing to replay: say so rather than name a file that is not there
		}
	} else {
		// The report holds the trace; point at its copy rather than
		// write a second one into the current directory.
		path = inDir(o.report, pages[0].TraceFile)
		fmt.Fprintf(stdout, "trace: %s (in the report)\n", path)
	}
	if o.regressions != "" {
		if err := saveRegression(o.regressions, traced, rp.traceName(), stdout); err != nil {
			fmt.Fprintln(stderr, "explore: keeping the trace in the regression corpus:", err)
		}
	}
	ff := &firstFailure{Seed: first.Seed, Trace: path, Command: rp.rerun(rp.traceName())}
	if path != "" {
		ff.Replay = replayCommand(path)
		fmt.Fprintf(stdout, "replay: %s\n", ff.Replay)
	} else {
		fmt.Fprintln(stdout, "replay: none (the trace could not be written; the re-run below writes it again)")
	}
	fmt.Fprintf(stdout, "re-run: %s\n", ff.Command)
	return pages, ff
}
