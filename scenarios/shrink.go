package scenarios

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"sluicesim/model"
	"sluicesim/sim"
)

// ShrinkResult is the smallest failing run found, traced.
type ShrinkResult struct {
	Invariant      string
	Original, Best *Result
	Config         Config // the shrunk world
	Seed           uint64
	Tried          int // runs made while shrinking
	Steps          []string
}

// Shrink minimizes a failing trace while the same invariant still fails.
// It shrinks the world rather than editing the tape in place: it keeps only
// the withdrawals the violation names, then drops workers, turns each fault
// kind off, and shortens pauses and stalls, one edit at a time. Each
// candidate world is tried on up to budget seeds; the first one that still
// violates the invariant is kept, since the search is for a smaller story,
// not for the same schedule. The result is a fresh trace whose header holds
// the shrunk world: it replays with -replay like any other.
func Shrink(t *sim.Trace, budget int, progress func(string)) (*ShrinkResult, error) {
	orig, err := Replay(t)
	if err != nil {
		return nil, fmt.Errorf("the trace does not reproduce, nothing to shrink: %w", err)
	}
	if !orig.Failed() {
		return nil, fmt.Errorf("the trace's run violates no invariant: nothing to shrink")
	}
	target := orig.Violations[0]
	var cfg Config // the header's whole configuration, as Replay reads it
	if err := strictJSON(t.Header.Config, &cfg); err != nil {
		return nil, err
	}
	sr := &ShrinkResult{Invariant: target.Invariant, Original: orig, Config: cfg, Seed: t.Header.Seed, Best: orig}
	say := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		sr.Steps = append(sr.Steps, msg)
		if progress != nil {
			progress(msg)
		}
	}
	// try runs a candidate world on seeds 1..budget (the original seed
	// first) and keeps it if one still fails the invariant with fewer steps.
	try := func(what string, c Config) bool {
		if c.Validate() != nil {
			return false
		}
		seeds := append([]uint64{sr.Seed}, make([]uint64, 0, budget)...)
		for s := uint64(1); len(seeds) <= budget; s++ {
			if s != sr.Seed {
				seeds = append(seeds, s)
			}
		}
		for _, seed := range seeds {
			sr.Tried++
			res := Run(c, seed, Options{})
			if fails(res, target.Invariant) && res.Steps <= sr.Best.Steps {
				sr.Config, sr.Seed, sr.Best = c, seed, res
				say("%s: still fails %s (seed %d, %d steps)", what, target.Invariant, seed, res.Steps)
				return true
			}
		}
		return false
	}

	// Keep only the withdrawals the violations name, then fewer still.
	if only := namedWithdrawals(orig.Violations, cfg.Withdrawals); len(only) > 0 {
		c := sr.Config
		c.Only = only
		if !try(fmt.Sprintf("keep withdrawals %v", only), c) {
			// The named ones alone do not fail (the bug needs company:
			// a busy worker, a crowded pool): halve the others instead,
			// keeping whichever half still fails, while one does.
			rest := make([]int, 0, cfg.Withdrawals)
			for n := 1; n <= cfg.Withdrawals; n++ {
				if !slices.Contains(only, n) {
					rest = append(rest, n)
				}
			}
			for len(rest) > 1 {
				half := len(rest) / 2
				kept := false
				for _, part := range [][]int{rest[:half], rest[half:]} {
					c := sr.Config
					c.Only = append(slices.Clone(only), part...)
					slices.Sort(c.Only)
					if try(fmt.Sprintf("keep %d withdrawals", len(c.Only)), c) {
						rest, kept = part, true
						break
					}
				}
				if !kept {
					break
				}
			}
		}
		for _, n := range only {
			c := sr.Config
			c.Only = []int{n}
			if len(sr.Config.Only) > 1 && try(fmt.Sprintf("keep withdrawal %d", n), c) {
				break
			}
		}
	}
	for w := 1; w < sr.Config.Workers; w++ {
		c := sr.Config
		c.Workers = w
		if try(fmt.Sprintf("%d workers", w), c) {
			break
		}
	}
	type edit struct {
		what  string
		apply func(*Config)
	}
	// One edit per row of the fault table (each turns its fault off),
	// then the menus shortened.
	var edits []edit
	for _, f := range Faults {
		if f.Off != nil {
			edits = append(edits, edit{"no " + f.Name, f.Off})
		}
	}
	for _, e := range append(edits, []edit{
		{"one node", func(c *Config) { c.Nodes, c.Route, c.NodeLags, c.LagP, c.GossipLossP = 0, "", nil, 0, 0 }},
		{"shortest pause", func(c *Config) { c.Pauses = c.Pauses[:1] }},
		{"shortest stall", func(c *Config) { c.ServerStalls = c.ServerStalls[:1] }},
		{"quickest restart", func(c *Config) { c.RestartDelays = c.RestartDelays[:1] }},
		{"heal sooner", func(c *Config) { c.HealAt = Duration(min(c.HealAt.D(), 2*time.Minute)) }},
	}...) {
		c := sr.Config
		c.Pauses = slices.Clone(c.Pauses)
		e.apply(&c)
		try(e.what, c)
	}
	traced := Run(sr.Config, sr.Seed, Options{Tracing: true})
	if !fails(traced, target.Invariant) {
		return nil, fmt.Errorf("internal: the shrunk run (seed %d) no longer fails when traced", sr.Seed)
	}
	sr.Best = traced
	return sr, nil
}

func fails(r *Result, invariant string) bool {
	for _, v := range r.Violations {
		if v.Invariant == invariant {
			return true
		}
	}
	return false
}

// namedWithdrawals finds the withdrawal numbers of the operations the
// violations name: ids end in the withdrawal's number, in hex.
func namedWithdrawals(vs []model.Violation, total int) []int {
	var out []int
	for _, v := range vs {
		id := string(v.Operation)
		i := strings.LastIndexByte(id, '-')
		if i < 0 {
			continue
		}
		n, err := strconv.ParseUint(id[i+1:], 16, 32)
		if err != nil || n < 1 || int(n) > total || slices.Contains(out, int(n)) {
			continue
		}
		out = append(out, int(n))
	}
	slices.Sort(out)
	return out
}
