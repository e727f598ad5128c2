package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sluicesim/scenarios"
)

// killRow is one line of the kill table.
type killRow struct {
	Mutant      string   `json:"mutant"`
	Breaks      string   `json:"breaks"`
	World       string   `json:"world"`
	Verdict     string   `json:"verdict"` // see the verdict constants in killbudget.go
	SeedsToKill uint64   `json:"seeds_to_kill,omitempty"`
	KillingSeed uint64   `json:"killing_seed,omitempty"`
	Invariants  []string `json:"invariants,omitempty"`
	// Replay re-runs the killing seed and writes its trace (the key is
	// kept from before there was a trace to replay); Trace is that trace
	// in the -report directory, when a report was written.
	Replay   string `json:"replay,omitempty"`
	Trace    string `json:"trace,omitempty"`
	Uncaught string `json:"uncaught,omitempty"`
	SeedsRun int    `json:"seeds_run"`
	Recorded uint64 `json:"recorded_seeds_to_kill,omitempty"` // recordedKills
}

type killTable struct {
	Budget    int            `json:"budget_seeds"`
	SeedStart uint64         `json:"seed_start"`
	Rows      []killRow      `json:"mutants"`
	Baseline  map[string]int `json:"real_core_seeds_failed"` // per world, over the same budget
	Killed    int            `json:"killed"`
	Catchable int            `json:"catchable"`
	// BudgetNeeded is the budget that would judge the mutants that were
	// not given enough seeds (verdict budget-too-small); 0 when none was.
	BudgetNeeded uint64  `json:"budget_needed,omitempty"`
	MedianKill   uint64  `json:"median_seeds_to_kill"`
	WorstKill    uint64  `json:"worst_seeds_to_kill"`
	Timing       float64 `json:"seconds"`
}

// listMutants prints the catalog, one mutant a line: its name first.
func listMutants(w io.Writer) int {
	for _, m := range scenarios.Mutants {
		note := ""
		if m.Uncaught != "" {
			note = "  [no world here catches it: see -mutants]"
		}
		fmt.Fprintf(w, "%-30s %s%s\n", m.Name, m.Breaks, note)
	}
	return exitOK
}

// firstKill runs seeds from start (at most budget of them) in parallel and
// returns the lowest failing seed, or 0. Every seed below the one returned
// has run, so the answer does not depend on scheduling.
func firstKill(cfg scenarios.Config, ro scenarios.Options, start uint64, budget, parallel int, watch *seedWatch) (seed uint64, res *scenarios.Result, run int) {
	var mu sync.Mutex
	bound := budget // index of the lowest failure found so far
	var found *scenarios.Result
	var ran atomic.Int64
	past := func(k int) bool { // no need to run seeds above a kill
		mu.Lock()
		defer mu.Unlock()
		return k >= bound
	}
	forEachSeed(budget, parallel, past, watch, func(k int) {
		r := scenarios.Run(cfg, start+uint64(k), ro)
		ran.Add(1)
		if r.Failed() {
			mu.Lock()
			if k < bound {
				bound, found = k, r
			}
			mu.Unlock()
		}
	})
	if found == nil {
		return 0, nil, int(ran.Load())
	}
	return found.Seed, found, int(bound) + 1
}

// mutants runs every mutant against its natural world with a seed budget
// and prints the kill table. A catchable mutant that survives the seeds it
// took when recorded fails the run; one that survives a smaller budget
// makes the table inconclusive (killTableExit).
func mutants(o *options, budget int, stdout, stderr io.Writer) int {
	began := time.Now()
	// The recorded seeds to kill are of these settings only.
	recorded := o.seedStart == 1 && o.strategy == "random" && o.storeKind == "memory" && o.swarm == swarmAuto
	table := killTable{Budget: budget, SeedStart: o.seedStart, Baseline: map[string]int{}}
	var kills []uint64
	worldsUsed := map[string]bool{}
	for i, m := range scenarios.Mutants {
		if o.storeKind == "postgres" && !m.OnStore() {
			continue // a mutant of the node or the configuration says nothing new about a store
		}
		world := m.World
		if world == "" {
			world = "chaos"
		}
		worldsUsed[world] = true
		cfg, _ := scenarios.World(world)
		cfg.Mutant = m.Name
		cfg.Swarm = o.swarmFor(world)
		if o.progress {
			fmt.Fprintf(stderr, "\r\033[Kmutant %d/%d: %s", i+1, len(scenarios.Mutants), m.Name)
		}
		seed, res, ran := firstKill(cfg, o.runOptions(), o.seedStart, budget, o.parallel, o.watchRange(stderr, world, m.Name))
		row := killRow{Mutant: m.Name, Breaks: m.Breaks, World: world, Uncaught: m.Uncaught, SeedsRun: ran, Recorded: recordedKills[m.Name]}
		if m.Uncaught == "" {
			table.Catchable++
		}
		if res != nil {
			row.Verdict = verdictKilled
			if m.Uncaught != "" {
				row.Verdict = verdictKilledListed
			}
			row.KillingSeed, row.SeedsToKill = seed, seed-o.seedStart+1
			if m.Uncaught == "" && killedLate(m.Name, row.SeedsToKill, recorded) {
				row.Verdict = verdictKilledLate
			}
			for _, v := range res.Violations {
				if !slices.Contains(row.Invariants, v.Invariant) {
					row.Invariants = append(row.Invariants, v.Invariant)
				}
			}
			rp := o.reproOf(world, m.Name, seed)
			row.Replay = rp.rerun(rp.traceName())
			table.Killed++
			kills = append(kills, row.SeedsToKill)
		} else {
			row.Verdict = survivorVerdict(m, budget)
		}
		table.Rows = append(table.Rows, row)
	}
	// The real core under the same budgets, on every world the table used.
	var names []string
	for w := range worldsUsed {
		names = append(names, w)
	}
	slices.Sort(names)
	for _, world := range names {
		cfg, _ := scenarios.World(world)
		cfg.Swarm = o.swarmFor(world)
		_, res, _ := firstKill(cfg, o.runOptions(), o.seedStart, budget, o.parallel, o.watchRange(stderr, world, ""))
		table.Baseline[world] = 0
		if res != nil {
			table.Baseline[world] = 1
		}
	}
	if o.progress {
		fmt.Fprint(stderr, "\r\033[K")
	}
	slices.Sort(kills)
	if len(kills) > 0 {
		table.MedianKill = kills[len(kills)/2]
		table.WorstKill = kills[len(kills)-1]
	}
	table.BudgetNeeded = budgetNeeded(table.Rows)
	table.Timing = time.Since(began).Seconds()

	fmt.Fprintf(stdout, "kill table: %d mutants, strategy %s, store %s, budget %d seeds each from seed %d\n\n", len(table.Rows), o.strategyName(), o.storeKind, budget, o.seedStart)
	fmt.Fprintf(stdout, "%-30s %-11s %-20s %-6s %s\n", "mutant", "world", "verdict", "seeds", "caught by")
	for _, r := range table.Rows {
		seeds := "-"
		if r.SeedsToKill > 0 {
			seeds = fmt.Sprint(r.SeedsToKill)
		}
		fmt.Fprintf(stdout, "%-30s %-11s %-20s %-6s %s\n", r.Mutant, r.World, r.Verdict, seeds, strings.Join(r.Invariants, ", "))
	}
	fmt.Fprintf(stdout, "\nkilled %d of %d catchable mutants; seeds to first kill: median %d, worst %d\n",
		table.Killed-countVerdict(table.Rows, verdictKilledListed), table.Catchable, table.MedianKill, table.WorstKill)
	if late := countVerdict(table.Rows, verdictKilledLate); late > 0 {
		fmt.Fprintf(stdout, "LATE: %d mutant(s) killed later than the seed recorded for them (below): the checker got slower at them\n", late)
	}
	if short := countVerdict(table.Rows, verdictBudgetTooSmall); short > 0 {
		fmt.Fprintf(stdout, "INCONCLUSIVE: %d mutant(s) survived a budget below the seeds their first kill took when recorded; -seeds %d judges them all\n",
			short, table.BudgetNeeded)
	}
	baselineRed := false
	for _, world := range names {
		status := "green"
		if table.Baseline[world] != 0 {
			status = "RED: the real core fails"
			baselineRed = true
		}
		fmt.Fprintf(stdout, "real core on %s, same budget: %s\n", world, status)
	}
	if o.report != "" {
		// Each kill's trace and page go into the report before the list
		// below prints where they are.
		if err := writeKillTableReport(o, &table, names, time.Since(began), stdout); err != nil {
			fmt.Fprintln(stderr, "explore:", err)
			return exitUsage
		}
	}
	fmt.Fprintln(stdout, "\nwhat each mutant breaks, and how to reproduce its kill:")
	for _, r := range table.Rows {
		fmt.Fprintf(stdout, "  %s: %s\n", r.Mutant, r.Breaks)
		if r.Replay != "" {
			fmt.Fprintf(stdout, "    re-run: %s\n", r.Replay)
		}
		if r.Trace != "" {
			fmt.Fprintf(stdout, "    replay: %s\n", replayCommand(r.Trace))
		}
		if note := survivorNote(r); note != "" {
			fmt.Fprintf(stdout, "    %s\n", note)
		}
	}
	if err := writeJSON(o.json, table); err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "\nran the kill table in %.1fs\n", table.Timing)
	return killTableExit(table.Rows, baselineRed)
}

func countVerdict(rows []killRow, v string) int {
	n := 0
	for _, r := range rows {
		if r.Verdict == v {
			n++
		}
	}
	return n
}

func (o *options) strategyName() string {
	if o.strategy == "pct" {
		return fmt.Sprintf("pct (depth %d)", o.pctDepth)
	}
	return o.strategy
}
