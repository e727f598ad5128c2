package sim

import (
	"fmt"
	"strings"
	"testing"
)

// twoProcs runs two processes of two steps each; step keys come from key.
func twoProcs(e *Exhaustive, key func(proc, step int) string) (orders map[string]bool) {
	orders = map[string]bool{}
	e.Search(func(r *ExhaustiveRun) (bool, bool) {
		s := New(r, Options{Start: t0, StepsMax: 100, Observer: r})
		order := ""
		for i := range 2 {
			s.Spawn(fmt.Sprint("p", i), func(p *Proc) {
				for j := range 2 {
					s.Touch(key(i, j), true)
					order += fmt.Sprintf("%d%d ", i, j)
					p.Yield()
				}
			})
		}
		err := s.Run()
		if err == nil {
			orders[order] = true
		} else if err != ErrPruned {
			panic(err)
		}
		return err == ErrPruned, false
	})
	return orders
}

// Goal: without reduction the search runs every interleaving within the
// bound; with it, commuting steps are interleaved once, and conflicting
// ones still in every order.
func TestExhaustiveAndSleepSets(t *testing.T) {
	b := Bounds{Preemptions: 10}
	shared := func(int, int) string { return "x" }
	own := func(i, _ int) string { return fmt.Sprint("k", i) }

	full := NewExhaustive(b, false)
	// Each process makes three steps (the last one returns): C(6,3) = 20
	// schedules, which show as 6 distinct orders of the four touches.
	if got := len(twoProcs(full, own)); got != 6 || !full.Stats.Complete || full.Stats.Schedules != 20 {
		t.Errorf("no reduction: %d distinct orders, stats %+v; want 20 schedules, 6 orders", got, full.Stats)
	}
	reduced := NewExhaustive(b, true)
	if got := len(twoProcs(reduced, own)); got != 1 || !reduced.Stats.Complete {
		t.Errorf("independent steps with sleep sets: %d orders, stats %+v; want 1", got, reduced.Stats)
	}
	conflicting := NewExhaustive(b, true)
	if got := len(twoProcs(conflicting, shared)); got != 6 {
		t.Errorf("conflicting steps with sleep sets: %d orders, stats %+v; want 6", got, conflicting.Stats)
	}
	// Delay bounding: with no deviation only the default schedule runs;
	// with one, p1 may go first or cut in once.
	none := NewExhaustive(Bounds{Preemptions: 0}, false)
	if got := len(twoProcs(none, own)); got != 1 || none.Stats.Schedules != 1 {
		t.Errorf("no deviations: %d orders, stats %+v; want the one default schedule", got, none.Stats)
	}
	unbounded := NewExhaustive(Bounds{Preemptions: NoPreemptionBound}, false)
	if twoProcs(unbounded, own); unbounded.Stats.Schedules != 20 {
		t.Errorf("no preemption bound: %+v, want all 20 schedules", unbounded.Stats)
	}
	one := NewExhaustive(Bounds{Preemptions: 1}, false)
	twoProcs(one, own)
	if one.Stats.Schedules <= 1 || one.Stats.Schedules >= 20 {
		t.Errorf("one deviation: %d schedules, want between the default and all 20", one.Stats.Schedules)
	}
}

// Goal: fault decisions branch only within their budget, and data kinds
// not at all.
func TestExhaustiveBudgets(t *testing.T) {
	b := Bounds{Budgets: map[string]int{"crash": 1}, Cost: func(kind string, pick int) (string, bool) {
		if kind == "crash" {
			return "crash", true
		}
		return "", false
	}}
	e := NewExhaustive(b, false)
	runs := 0
	e.Search(func(r *ExhaustiveRun) (bool, bool) {
		s := New(r, Options{Start: t0, StepsMax: 100, Observer: r})
		s.Spawn("p", func(p *Proc) {
			for range 3 {
				s.Chance("crash", 0.5)
				s.Choose("data", 4)
			}
		})
		runs++
		return s.Run() == ErrPruned, false
	})
	if runs != 4 || !e.Stats.Complete {
		t.Errorf("runs = %d (%+v), want 4: no crash, or one crash at each of 3 points", runs, e.Stats)
	}
}

// Goal: the search's protocol cannot be misused quietly: a second Search,
// and a run asked for picks after it was reported, panic saying which.
func TestSearchProtocolMisuse(t *testing.T) {
	mustPanic := func(what, want string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			if s, _ := r.(string); !strings.Contains(s, want) {
				t.Errorf("%s: recovered %v, want a panic saying %q", what, r, want)
			}
		}()
		f()
	}
	e := NewExhaustive(Bounds{}, false)
	var kept *ExhaustiveRun
	e.Search(func(r *ExhaustiveRun) (bool, bool) {
		kept = r
		s := New(r, Options{Start: t0, StepsMax: 10})
		s.Spawn("p", func(p *Proc) { p.Yield() })
		return s.Run() == ErrPruned, true
	})
	mustPanic("second Search", "called twice", func() { e.Search(func(*ExhaustiveRun) (bool, bool) { return false, true }) })
	mustPanic("stale run", "after its run was reported", func() { kept.Pick(Ask{Kind: "x", N: 2}, 0) })
	inner := NewExhaustive(Bounds{}, false)
	mustPanic("nested Search", "from inside its own run", func() {
		inner.Search(func(*ExhaustiveRun) (bool, bool) {
			inner.Search(func(*ExhaustiveRun) (bool, bool) { return false, true })
			return false, true
		})
	})
}
