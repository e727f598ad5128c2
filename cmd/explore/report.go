package main

import (
	"cmp"
	"fmt"
	"io"
	"time"

	"sluicesim/model"
	"sluicesim/reports"
	"sluicesim/scenarios"
)

// reportPagesMax caps the failure pages: each needs a traced re-run.
const reportPagesMax = 10

// failurePage is a failing run's page: its trace goes into the report
// directory under name, and the page's replay command names it there, so
// that a copied report replays. rerun is "" when no seed reproduces it.
func failurePage(o *options, res *scenarios.Result, name, rerun string) reports.Failure {
	return reports.Failure{
		Seed: res.Seed, Violations: res.Violations,
		Replay: replayCommand(inDir(o.report, name)), Rerun: rerun,
		Traced: tracedOf(res), TraceFile: name,
	}
}

// failurePages re-runs failing seeds with tracing for their report pages;
// first, when not nil, is the first failure's traced run, made already.
func failurePages(o *options, cfg scenarios.Config, failures []*reports.Seed, first *scenarios.Result) []reports.Failure {
	var out []reports.Failure
	for i, s := range failures[:min(len(failures), reportPagesMax)] {
		res := first
		if i > 0 || res == nil {
			ro := o.runOptions()
			ro.Tracing = true
			res = scenarios.Run(cfg, s.Seed, ro)
		}
		rp := o.reproOf(cfg.Name, cfg.Mutant, s.Seed)
		out = append(out, failurePage(o, res, rp.traceName(), rp.rerun(rp.traceName())))
	}
	return out
}

// writeExploreReport renders the HTML report of a seed-range run.
func writeExploreReport(o *options, cfg scenarios.Config, agg *reports.Aggregate, pages []reports.Failure,
	total int, elapsed time.Duration, stdout io.Writer) error {
	return writeReport(o.report, exploreRun(o, cfg, agg, pages, total, elapsed), stdout)
}

// exploreRun is the report of a seed-range run.
func exploreRun(o *options, cfg scenarios.Config, agg *reports.Aggregate, pages []reports.Failure,
	total int, elapsed time.Duration) *reports.Run {
	r := &reports.Run{
		World: cfg.Name, Strategy: o.strategyName(), Mutant: cfg.Mutant,
		SeedStart: o.seedStart, Seeds: o.seeds, SeedsRun: total,
		Shard: fmt.Sprintf("%d/%d", o.shardI, o.shardN), Elapsed: elapsed,
		Failures: pages,
	}
	agg.Fill(r)
	seeds := map[string]int{}
	for _, c := range agg.Coverage() {
		seeds[c.Name] = c.Seeds
	}
	for _, l := range scenarios.CoverageTable(cfg, seeds) {
		r.Coverage = append(r.Coverage, reports.CoverageRow(l))
	}
	if len(r.StepsPerSeed) > total {
		// A time budget stopped the run before the seeds it had room for.
		r.StepsPerSeed = r.StepsPerSeed[:total]
	}
	return r
}

// seedOf is what a run contributes to a report.
func seedOf(res *scenarios.Result) *reports.Seed {
	return &reports.Seed{Seed: res.Seed, Steps: res.Steps, Violations: res.Violations, Tally: res.Tally,
		Outcomes: res.Outcomes, Stats: res.Stats, Elapsed: res.Elapsed, CheckTime: res.CheckTime, Coverage: res.Coverage}
}

// tracedOf is what a traced run shows on its report page.
func tracedOf(res *scenarios.Result) *reports.Traced {
	return &reports.Traced{Steps: res.Steps, Virtual: res.Virtual, Trace: res.Trace,
		Snapshot: res.Snapshot, Linearizability: res.Linearizability}
}

// writeKillTableReport renders the kill table, leading the index, with a
// page and a trace for each mutant's killing seed (re-run with tracing);
// it records each kill's trace path in its row.
func writeKillTableReport(o *options, table *killTable, baselineWorlds []string, elapsed time.Duration, stdout io.Writer) error {
	r := &reports.Run{
		World: "mutant catalog", Strategy: o.strategyName(), SeedStart: o.seedStart, Seeds: table.Budget,
		Shard: "0/1", Elapsed: elapsed,
	}
	for _, world := range baselineWorlds {
		status := "green"
		if table.Baseline[world] != 0 {
			status = "RED: the real core fails"
		}
		r.Notes = append(r.Notes, fmt.Sprintf("real core on %s, same budget: %s", world, status))
	}
	if table.BudgetNeeded > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("inconclusive: some mutants survived a budget below the seeds their first kill took when recorded; -seeds %d judges them all", table.BudgetNeeded))
	}
	for i := range table.Rows {
		row := &table.Rows[i]
		r.Mutants = append(r.Mutants, reports.MutantRow{
			Name: row.Mutant, Breaks: row.Breaks, World: row.World, Verdict: row.Verdict,
			SeedsToKill: row.SeedsToKill, KillingSeed: row.KillingSeed, SeedsRun: row.SeedsRun,
			Invariants: row.Invariants, Replay: row.Replay, Uncaught: row.Uncaught, Recorded: row.Recorded,
		})
		if row.KillingSeed == 0 {
			continue
		}
		cfg, _ := scenarios.World(row.World)
		cfg.Mutant = row.Mutant
		cfg.Swarm = o.swarmFor(row.World)
		ro := o.runOptions()
		ro.Tracing = true
		rp := o.reproOf(row.World, row.Mutant, row.KillingSeed)
		page := failurePage(o, scenarios.Run(cfg, row.KillingSeed, ro), rp.traceName(), row.Replay)
		page.World, page.Mutant = row.World, row.Mutant
		r.Failures = append(r.Failures, page)
		row.Trace = inDir(o.report, page.TraceFile)
	}
	return writeReport(o.report, r, stdout)
}

// oneRun is what the modes that show a single run (-seed, -replay,
// -shrink, and the first failing schedule of -strategy exhaustive) give
// -json and -report: the run, traced, and how to reproduce it.
type oneRun struct {
	mode                    string // seed, replay, shrink, exhaustive
	world, mutant, strategy string
	strategyShown           string // the report's strategy ("" for strategy)
	// res is the traced run; nil when there is none to show (an
	// exhaustive search that found no failing schedule).
	res *scenarios.Result
	// trace is where the console's copy of the trace is ("" when none was
	// written); traceName the file name of the report's own copy.
	trace, traceName string
	rerun            string   // "" when no seed reproduces the run
	what             string   // the report's line in place of a seed range
	notes            []string // further lines for the report
	elapsed          time.Duration
}

// aggregate folds the run (if any) the way seeds mode folds its range.
func (r *oneRun) aggregate() (*reports.Aggregate, int, uint64) {
	if r.res == nil {
		return reports.NewAggregate(1, 1, 0, violationsListedMax), 0, 1
	}
	agg := reports.NewAggregate(r.res.Seed, 1, 1, violationsListedMax)
	agg.Add(seedOf(r.res))
	return agg, 1, r.res.Seed
}

// writeOneRunReport renders the report of a single run: its index, and a
// page with the trace when it failed.
func writeOneRunReport(o *options, one *oneRun, stdout io.Writer) error {
	agg, n, seed := one.aggregate()
	r := &reports.Run{
		World: one.world, Strategy: cmp.Or(one.strategyShown, one.strategy), Mutant: one.mutant, SeedStart: seed, Seeds: n, SeedsRun: n,
		Shard: "0/1", Elapsed: one.elapsed, What: one.what, Notes: one.notes,
	}
	if n > 0 {
		agg.Fill(r)
	} else {
		for _, inv := range model.Invariants {
			r.Invariants = append(r.Invariants, reports.InvariantCount{Name: inv.Name, Doc: inv.Doc})
		}
	}
	if one.res != nil && one.res.Failed() {
		r.Failures = []reports.Failure{failurePage(o, one.res, one.traceName, one.rerun)}
	}
	return writeReport(o.report, r, stdout)
}

func writeReport(dir string, r *reports.Run, stdout io.Writer) error {
	index, err := reports.Write(dir, r)
	if err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	fmt.Fprintf(stdout, "report: %s\n", index)
	return nil
}
