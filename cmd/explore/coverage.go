package main

import (
	"fmt"
	"io"
	"strings"

	"sluicesim/reports"
	"sluicesim/scenarios"
)

// Coverage you can see: each named condition of the catalog
// (scenarios.Coverage: every edge of the state machine, and faults at the
// dangerous points) with how many seeds reached it. A green run that never
// crashed a worker between the write-ahead and the send has not tested
// the write-ahead; -require-coverage makes such a run fail.

// coverageOf is the summary's coverage list: every condition of the
// catalog, reached or not, in catalog order (a merge sums it by name).
func coverageOf(agg *reports.Aggregate) []CoverageCount {
	seeds := map[string]int{}
	for _, c := range agg.Coverage() {
		seeds[c.Name] = c.Seeds
	}
	out := make([]CoverageCount, 0, len(scenarios.Coverage))
	for _, name := range scenarios.CoverageNames() {
		out = append(out, CoverageCount{Name: name, Seeds: seeds[name]})
	}
	return out
}

// missingCoverage names the conditions the world (as configured, before
// any swarm draw) is expected to reach that no seed reached.
func missingCoverage(cfg scenarios.Config, list []CoverageCount) []string {
	seeds := map[string]int{}
	for _, c := range list {
		seeds[c.Name] = c.Seeds
	}
	return scenarios.MissingCoverage(cfg, seeds)
}

// printCoverage says how much of what the world should reach was reached,
// naming what was not; the full list is in -json and -report.
func printCoverage(w io.Writer, cfg scenarios.Config, list []CoverageCount, required bool) {
	expected := scenarios.ExpectedCoverage(cfg)
	missing := missingCoverage(cfg, list)
	fmt.Fprintf(w, "\ncoverage: %d of %d conditions this world should reach were reached", len(expected)-len(missing), len(expected))
	if len(missing) == 0 {
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "; never reached: %s\n", strings.Join(missing, ", "))
	if required {
		fmt.Fprintln(w, "-require-coverage: a run that never reached these has not tested them")
	}
}
