package scenarios

import (
	"fmt"

	"sluicesim/sim"
)

// ExhaustiveBounds are the limits of an exhaustive search, in the world's
// terms.
type ExhaustiveBounds struct {
	Crashes, Pauses, Lies int // faults per schedule
	Preemptions           int // deviations from the default schedule (delay bounding)
	StepsMax              int // per run
	SchedulesMax          int // the search stops here, incomplete
	Reduce                bool
	StopAtFirst           bool // stop at the first failing schedule

	// For worlds of several nodes (a one-node world never asks these
	// choices), per schedule: calls sent to a node other than node 0
	// (the producer), times a node falls behind, gossip hops lost.
	Routes, Lags, GossipLosses int

	// Stores makes each run's store (nil: store.Memory), as
	// Options.Stores does for seeds. explore searches the memory store
	// only; a test may give the search a store of its own.
	Stores StoreFactory
}

// DefaultExhaustiveBounds are what `explore -strategy exhaustive` uses
// unless told otherwise.
func DefaultExhaustiveBounds() ExhaustiveBounds {
	return ExhaustiveBounds{Crashes: 1, Pauses: 0, Lies: 0, Preemptions: 1, StepsMax: 5000, SchedulesMax: 200_000, Reduce: true}
}

// ForExhaustive trims a world for exhaustive search: every fault the fault
// table does not mark Exhaustive (reads at random, chain events, clock
// skews, stalls, reverts, slow calls, relays, signer faults) is turned off,
// so the search branches only where the bounds say.
func ForExhaustive(c Config) Config {
	c = withoutFaults(c, func(f Fault) bool { return f.Exhaustive })
	c.FaultsAtWork = true
	return c
}

// ExhaustiveResult is what the search found.
type ExhaustiveResult struct {
	Stats        sim.ExhaustiveStats
	Violations   int     // schedules with a violation
	FirstFailure *Result // the first failing schedule, traced
}

// Exhaust runs every schedule of the world within the bounds (re-running
// the world from the start for each) and checks the invariants on each;
// with Reduce, it runs only those that no run or explored schedule shows
// the outcome of (see sim.Exhaustive), and reaches the same outcomes.
func Exhaust(cfg Config, b ExhaustiveBounds, progress func(sim.ExhaustiveStats)) (*ExhaustiveResult, error) {
	return exhaust(cfg, b, progress, nil)
}

// exhaust is Exhaust with a visitor that sees every run made to the end,
// its Snapshot kept (tests compare what reduced and full searches reach).
func exhaust(cfg Config, b ExhaustiveBounds, progress func(sim.ExhaustiveStats), visit func(*Result)) (*ExhaustiveResult, error) {
	cfg = ForExhaustive(cfg)
	cfg.StepsMax = b.StepsMax
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := sim.NewExhaustive(sim.Bounds{
		Preemptions: b.Preemptions,
		Budgets: map[string]int{"fault": b.Crashes + b.Pauses, "crash": b.Crashes, "pause": b.Pauses, "lie": b.Lies, "jump": 0,
			"route": b.Routes, "lag": b.Lags, "gossip": b.GossipLosses},
		Cost: exhaustiveCost,
	}, b.Reduce)
	out := &ExhaustiveResult{}
	done := 0
	e.Search(func(r *sim.ExhaustiveRun) (pruned, stop bool) {
		res := run(cfg, 1, r, "exhaustive", Options{observer: r, keepSnapshot: visit != nil, Stores: b.Stores})
		done++
		if visit != nil && !res.Pruned {
			visit(res)
		}
		if !res.Pruned && res.Failed() {
			out.Violations++
			if out.FirstFailure == nil {
				// The tape replays the schedule exactly, traced.
				tape := append([]sim.Choice(nil), res.tape...)
				out.FirstFailure = run(cfg, 1, sim.NewReplay(tape), "exhaustive", Options{Tracing: true, Stores: b.Stores})
			}
			if b.StopAtFirst {
				return res.Pruned, true
			}
		}
		if progress != nil && done%1000 == 0 {
			st := e.Stats // this run is counted once it returns
			if res.Pruned {
				st.Pruned++
			} else {
				st.Schedules++
			}
			progress(st)
		}
		return res.Pruned, done >= b.SchedulesMax
	})
	out.Stats = e.Stats
	if out.Stats.Complete && out.Stats.Schedules == 0 {
		return out, fmt.Errorf("exhaustive search ran no schedule")
	}
	return out, nil
}
