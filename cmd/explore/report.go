package main

import (
	"fmt"
	"io"
	"time"

	"sluicesim/model"
	"sluicesim/reports"
	"sluicesim/scenarios"
)

// reportPagesMax caps the failure pages: each needs a traced re-run.
const reportPagesMax = 10

// failurePages re-runs failing seeds with tracing for their report pages.
func failurePages(o *options, cfg scenarios.Config, failures []*reports.Seed) []reports.Failure {
	var out []reports.Failure
	for _, res := range failures[:min(len(failures), reportPagesMax)] {
		ro := o.runOptions()
		ro.Tracing = true
		trace := fmt.Sprintf("%s-seed%d.trace.jsonl", cfg.Name, res.Seed)
		mutant := ""
		if cfg.Mutant != "" {
			mutant = " -mutant " + cfg.Mutant
		}
		out = append(out, reports.Failure{
			Seed: res.Seed, Violations: res.Violations,
			Replay: "go run ./cmd/explore -replay " + trace,
			Rerun: fmt.Sprintf("go run ./cmd/explore -world %s%s%s -seed %d -trace %s",
				cfg.Name, o.strategyFlags(), mutant, res.Seed, trace),
			Traced: tracedOf(scenarios.Run(cfg, res.Seed, ro)),
		})
	}
	return out
}

// writeExploreReport renders the HTML report of a seed-range run.
func writeExploreReport(o *options, cfg scenarios.Config, agg *reports.Aggregate, failures []*reports.Seed,
	total int, elapsed time.Duration, stdout io.Writer) error {
	r := &reports.Run{
		World: cfg.Name, Strategy: o.strategyName(), Mutant: cfg.Mutant,
		SeedStart: o.seedStart, Seeds: o.seeds, SeedsRun: total,
		Shard: fmt.Sprintf("%d/%d", o.shardI, o.shardN), Elapsed: elapsed,
		Failures: failurePages(o, cfg, failures),
	}
	agg.Fill(r)
	return writeReport(o.report, r, stdout)
}

// seedOf is what a run contributes to a report.
func seedOf(res *scenarios.Result) *reports.Seed {
	return &reports.Seed{Seed: res.Seed, Steps: res.Steps, Violations: res.Violations, Tally: res.Tally,
		Outcomes: res.Outcomes, Stats: res.Stats, Elapsed: res.Elapsed, CheckTime: res.CheckTime}
}

// tracedOf is what a traced run shows on its report page.
func tracedOf(res *scenarios.Result) *reports.Traced {
	return &reports.Traced{Steps: res.Steps, Virtual: res.Virtual, Trace: res.Trace,
		Snapshot: res.Snapshot, Linearizability: res.Linearizability}
}

// writeKillTableReport renders the kill table, with a page for each
// mutant's killing seed.
func writeKillTableReport(o *options, table killTable, elapsed time.Duration, stdout io.Writer) error {
	r := &reports.Run{
		World: "mutant catalog", Strategy: o.strategyName(), SeedStart: o.seedStart, Seeds: table.Budget,
		Shard: "0/1", Elapsed: elapsed,
	}
	for _, row := range table.Rows {
		r.Mutants = append(r.Mutants, reports.MutantRow{
			Name: row.Mutant, Breaks: row.Breaks, World: row.World, Verdict: row.Verdict,
			SeedsToKill: row.SeedsToKill, KillingSeed: row.KillingSeed, SeedsRun: row.SeedsRun,
			Invariants: row.Invariants, Replay: row.Replay, Uncaught: row.Uncaught,
		})
	}
	for _, inv := range model.Invariants {
		r.Invariants = append(r.Invariants, reports.InvariantCount{Name: inv.Name, Doc: inv.Doc})
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
