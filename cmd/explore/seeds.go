package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"sluicesim/model"
	"sluicesim/reports"
	"sluicesim/scenarios"
)

// summary is what -json writes. Everything but Timing is the same from run
// to run of the same flags.
type summary struct {
	World           string             `json:"world"`
	Strategy        string             `json:"strategy"`
	Store           string             `json:"store"`
	SeedStart       uint64             `json:"seed_start"`
	Seeds           int                `json:"seeds"`
	Shard           string             `json:"shard"`
	SeedsRun        int                `json:"seeds_run"`
	SeedsFailed     int                `json:"seeds_failed"`
	PerInvariant    map[string]int     `json:"seeds_failed_per_invariant"`
	Violations      []seedViolation    `json:"violations"`
	ViolationsShown int                `json:"violations_listed"`
	Faults          []model.Tally      `json:"faults"`
	Outcomes        model.Outcomes     `json:"outcomes"`
	FirstFailure    *firstFailure      `json:"first_failure,omitempty"`
	Timing          map[string]float64 `json:"timing"`
}

type seedViolation struct {
	Seed uint64 `json:"seed"`
	model.Violation
}

type firstFailure struct {
	Seed    uint64 `json:"seed"`
	Trace   string `json:"trace"`
	Replay  string `json:"replay"`
	Command string `json:"command"`
}

const violationsListedMax = 1000

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
	var next, done atomic.Int64
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

	var wg sync.WaitGroup
	for range min(o.parallel, total) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := next.Add(1) - 1
				if k >= int64(total) {
					return
				}
				ro := o.runOptions()
				ro.Now = time.Now
				agg.Add(seedOf(scenarios.Run(cfg, seedAt(int(k)), ro)))
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	close(stopProgress)
	progressWG.Wait()

	sum := summary{
		World: cfg.Name, Strategy: o.strategy, Store: o.storeKind, SeedStart: o.seedStart, Seeds: o.seeds,
		Shard: fmt.Sprintf("%d/%d", o.shardI, o.shardN), SeedsRun: total,
		PerInvariant: agg.PerInvariant(), SeedsFailed: agg.FailedCount(),
	}
	failures := agg.Failures()
	var first *reports.Seed
	if len(failures) > 0 {
		first = failures[0]
	}
	for _, res := range failures {
		for _, v := range res.Violations {
			if len(sum.Violations) < violationsListedMax {
				sum.Violations = append(sum.Violations, seedViolation{Seed: res.Seed, Violation: v})
			}
		}
	}
	sum.Faults = agg.Faults()
	sum.Outcomes = agg.Outcomes()
	sum.ViolationsShown = len(sum.Violations)

	fmt.Fprintf(stdout, "world %s%s, strategy %s, store %s, seeds %d..%d", cfg.Name, mutantNote(cfg), o.strategy, o.storeKind, o.seedStart, o.seedStart+uint64(o.seeds)-1)
	if o.shardN > 1 {
		fmt.Fprintf(stdout, ", shard %d/%d", o.shardI, o.shardN)
	}
	fmt.Fprintf(stdout, ": %d seeds run, %d with violations\n\n", total, sum.SeedsFailed)
	fmt.Fprintf(stdout, "withdrawals (all seeds): %s\n", sum.Outcomes)
	fmt.Fprintln(stdout, outcomeVerdict(sum.Outcomes))
	fmt.Fprintln(stdout, "\ninvariant              seeds violated")
	for _, inv := range sortedKeys(sum.PerInvariant) {
		fmt.Fprintf(stdout, "  %-20s %d\n", inv, sum.PerInvariant[inv])
	}
	fmt.Fprintln(stdout, "\nfaults fired (all seeds)")
	fmt.Fprint(stdout, model.FormatTally(sum.Faults))

	code := exitOK
	if first != nil {
		code = exitViolation
		path := o.trace
		if path == "" {
			path = fmt.Sprintf("%s-seed%d.trace.jsonl", cfg.Name, first.Seed)
		}
		ro := o.runOptions()
		ro.Tracing = true
		traced := scenarios.Run(cfg, first.Seed, ro)
		mutantFlag := o.strategyFlags()
		if cfg.Mutant != "" {
			mutantFlag += " -mutant " + cfg.Mutant
		}
		ff := &firstFailure{Seed: first.Seed, Trace: path,
			Replay:  "go run ./cmd/explore -replay " + path,
			Command: fmt.Sprintf("go run ./cmd/explore -world %s%s -seed %d -trace %s", cfg.Name, mutantFlag, first.Seed, path)}
		sum.FirstFailure = ff
		fmt.Fprintf(stdout, "\nfirst failing seed: %d\n", first.Seed)
		printVerdict(stdout, first.Violations)
		if err := writeArtifacts(stdout, path, traced); err != nil {
			fmt.Fprintln(stderr, "explore: writing the trace:", err)
		} else {
			fmt.Fprintf(stdout, "replay: %s\nre-run: %s\n", ff.Replay, ff.Command)
		}
	}

	if o.report != "" {
		if err := writeExploreReport(o, cfg, agg, failures, total, elapsed, stdout); err != nil {
			fmt.Fprintln(stderr, "explore:", err)
			return exitUsage
		}
	}

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	sum.Timing = map[string]float64{
		"seconds":          elapsed.Seconds(),
		"seeds_per_second": float64(total) / elapsed.Seconds(),
		"heap_inuse_mib":   float64(ms.HeapInuse) / (1 << 20),
		"goroutines":       float64(runtime.NumGoroutine()),
		"check_share":      agg.CheckShare(),
	}
	if o.json != "" {
		b, _ := json.MarshalIndent(sum, "", "  ")
		if err := os.WriteFile(o.json, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(stderr, "explore:", err)
			return exitUsage
		}
	}
	fmt.Fprintf(stdout, "\nran %d seeds in %.1fs (%.1f seeds/s, %d workers; checkers %.1f%% of run time; heap in use %.0f MiB, %d goroutines)\n",
		total, elapsed.Seconds(), float64(total)/elapsed.Seconds(), o.parallel, 100*agg.CheckShare(),
		float64(ms.HeapInuse)/(1<<20), runtime.NumGoroutine())
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
