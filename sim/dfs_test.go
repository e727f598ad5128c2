package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// twoProcs runs two processes of two steps each; step keys come from key.
func twoProcs(e *Exhaustive, key func(proc, step int) string) (orders map[string]bool) {
	orders = map[string]bool{}
	e.Search(func(r *ExhaustiveRun) (bool, bool) {
		s := New(r, Options{Start: t0, StepsMax: 100, Observer: r})
		r.Attach(s)
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
// bound; with it, commuting steps are run in one order, and conflicting
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
	for _, pre := range []int{10, NoPreemptionBound} {
		reduced := NewExhaustive(Bounds{Preemptions: pre}, true)
		if got := len(twoProcs(reduced, own)); got != 1 || !reduced.Stats.Complete || reduced.Stats.Schedules != 1 {
			t.Errorf("preemptions %d, independent steps, reduced: %d orders, stats %+v; want 1 run", pre, got, reduced.Stats)
		}
		conflicting := NewExhaustive(Bounds{Preemptions: pre}, true)
		if got := len(twoProcs(conflicting, shared)); got != 6 || conflicting.Stats.Schedules != 6 {
			t.Errorf("preemptions %d, conflicting steps, reduced: %d orders, stats %+v; want 6 runs", pre, got, conflicting.Stats)
		}
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

// toy is a small random program: processes taking a few steps each that
// read and write shared keys (each write derived from everything the
// process read so far), yield or sleep between steps (sleeps of equal
// length tie on the timer heap), one of them spawning a child, one waiting
// to be woken by another, some asking for a fault. Its outcome is the
// shared values and each process's own state: a function of which writes
// each read saw, as in a world whose footprints are complete. The waker
// wakes only a process that says it is waiting, and both touch the key
// that says so, as the worlds' servers and clients do.
type toy struct {
	procs [][]toyStep
	child []toyStep
	// child2 is spawned by a spawn2 step (of another process than the
	// first child's spawner): the kernel numbers the two children in the
	// order they were spawned, so one number names either child.
	child2 []toyStep
}

type toyStep struct {
	reads, writes []string
	fault         bool          // ask for a fault: yes writes key "f"
	sleep         time.Duration // after the step; 0 yields
	spawn, wait   bool          // spawn the child; wait (up to 3s) to be woken
	wake          bool          // wake the waiting process (process 1)
	spawn2        bool          // spawn the second child (toy.child2)
	stop          bool          // stop the run after the step's accesses
}

func randomToy(rng *rand.Rand, procs, steps int) toy {
	keys := []string{"a", "b", "row:1", "row:2"}
	step := func() toyStep {
		var s toyStep
		for range 1 + rng.IntN(2) {
			k := keys[rng.IntN(len(keys))]
			switch rng.IntN(5) {
			case 0:
				s.reads = append(s.reads, "row:*")
			case 1, 2:
				s.reads = append(s.reads, k)
			default:
				s.writes = append(s.writes, k)
			}
		}
		if rng.IntN(4) == 0 {
			s.sleep = time.Duration(1+rng.IntN(2)) * time.Second
		}
		s.fault = rng.IntN(5) == 0
		return s
	}
	var t toy
	for p := range procs {
		var ss []toyStep
		for range steps {
			ss = append(ss, step())
		}
		if p == 0 {
			ss[rng.IntN(steps)].spawn = true
		}
		if p == 1 && procs > 2 {
			ss[rng.IntN(steps)].wait = true
		}
		if p == 2 {
			ss[rng.IntN(steps)].wake = true
		}
		t.procs = append(t.procs, ss)
	}
	t.child = []toyStep{step(), step()}
	return t
}

func mixed(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// withSpawnersAndStop adds to t a second spawner (a step of process 1
// spawns child2, which races the first child's numbering) and, in half the
// programs, a step that stops the run.
func (t toy) withSpawnersAndStop(rng *rand.Rand, keys int) toy {
	keyNames := []string{"a", "b", "row:1", "row:2"}[:keys]
	t.procs = slices.Clone(t.procs)
	for i := range t.procs {
		t.procs[i] = slices.Clone(t.procs[i])
	}
	p1 := t.procs[1]
	p1[rng.IntN(len(p1))].spawn2 = true
	t.child2 = []toyStep{{writes: []string{keyNames[rng.IntN(keys)]}}, {reads: []string{keyNames[rng.IntN(keys)]}}}
	if rng.IntN(2) == 0 {
		p := t.procs[rng.IntN(len(t.procs))]
		p[rng.IntN(len(p))].stop = true
	}
	return t
}

// run runs the toy under the search's run r and returns its outcome ("" if
// the run was cut short).
func (t toy) run(r *ExhaustiveRun) (string, error) {
	out, _, err := t.runWith(r, r)
	return out, err
}

func (t toy) runWith(st Strategy, r *ExhaustiveRun) (string, *Sim, error) {
	o := Options{Start: t0, StepsMax: 1000}
	if r != nil {
		o.Observer = r
	}
	s := New(st, o)
	if r != nil {
		r.Attach(s)
	}
	vals := map[string]uint64{}
	local := map[string]uint64{}
	var waiter *Proc
	waiting := false
	var body func(name string, steps []toyStep) func(p *Proc)
	body = func(name string, steps []toyStep) func(p *Proc) {
		return func(p *Proc) {
			h := mixed(14695981039346656037, name)
			for _, st := range steps {
				for _, k := range st.reads {
					s.Touch(k, false)
					if k == "row:*" {
						h = mixed(h, fmt.Sprint(vals["row:1"], vals["row:2"]))
					} else {
						h = mixed(h, fmt.Sprint(vals[k]))
					}
				}
				for _, k := range st.writes {
					s.Touch(k, true)
					vals[k] = mixed(h, k)
				}
				if st.fault && s.Chance("fault", 0.5) {
					s.Touch("f", true)
					vals["f"] = mixed(h, "f")
				}
				if st.spawn {
					s.Spawn("child", body("child", t.child))
				}
				if st.spawn2 {
					s.Spawn("child2", body("child2", t.child2))
				}
				if st.stop {
					s.Stop()
					return
				}
				if st.wake {
					s.Touch("w", true)
					vals["w"]++
					if waiting {
						waiter.Wake()
					}
				}
				if st.wait {
					s.Touch("w", true)
					h = mixed(h, fmt.Sprint(vals["w"]))
					waiting = true
					woken := p.Wait(3 * time.Second)
					s.Touch("w", true)
					waiting = false
					local[name+" woken"] = map[bool]uint64{true: 1}[woken]
					continue
				}
				p.Sleep(st.sleep)
			}
			// The process's end is seen in the outcome: its step says so
			// (a stop before it means it never ends).
			s.Touch("end:"+name, true)
			local[name] = h
		}
	}
	for i, steps := range t.procs {
		name := fmt.Sprint("p", i)
		q := s.Spawn(name, body(name, steps))
		if i == 1 {
			waiter = q
		}
	}
	err := s.Run()
	if err != nil {
		return "", s, err
	}
	return fmt.Sprint(vals, local, s.Elapsed()), s, nil
}

// outcomes runs a whole search of the toy and returns the outcomes its
// runs reached.
func (t toy) outcomes(tb testing.TB, b Bounds, reduce bool) (map[string]bool, ExhaustiveStats) {
	seen, stats, complete := t.outcomesWithin(tb, b, reduce, 0)
	if !complete {
		tb.Fatalf("incomplete: %+v", stats)
	}
	return seen, stats
}

// outcomesWithin runs a search of the toy of at most max runs (0: no
// limit) and returns the outcomes its runs reached; complete is false when
// it stopped at the limit.
func (t toy) outcomesWithin(tb testing.TB, b Bounds, reduce bool, max int) (seen map[string]bool, stats ExhaustiveStats, complete bool) {
	e := NewExhaustive(b, reduce)
	seen = map[string]bool{}
	runs := 0
	e.Search(func(r *ExhaustiveRun) (bool, bool) {
		out, err := t.run(r)
		if err == ErrPruned {
			return true, false
		}
		if err != nil {
			tb.Fatal(err)
		}
		seen[out] = true
		runs++
		return false, max > 0 && runs >= max
	})
	return seen, e.Stats, e.Stats.Complete
}

// Goal: the reduction is exact under the bounds it is given: on random
// small programs (yields, sleeps that tie, a spawn, a wait and a wake,
// faults), the reduced search reaches exactly the outcomes the full search
// reaches, with the same preemption bound (none, 0, 1 or 2) and fault
// budget; and it runs fewer schedules.
func TestReductionIsExactUnderBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 17))
	var full, reduced, predicted int
	for prog := range 30 {
		procs, steps, bounds := 3, 3, []int{0, 1}
		switch prog % 3 {
		case 1:
			steps, bounds = 2, []int{2}
		case 2:
			steps, bounds = 1, []int{NoPreemptionBound}
		}
		toy := randomToy(rng, procs, steps)
		for _, pre := range bounds {
			for _, faults := range []int{0, 1} {
				b := Bounds{Preemptions: pre, Budgets: map[string]int{"fault": faults}, Cost: func(kind string, pick int) (string, bool) { return "fault", true }}
				want, fst := toy.outcomes(t, b, false)
				got, rst := toy.outcomes(t, b, true)
				full, reduced, predicted = full+fst.Schedules, reduced+rst.Schedules+rst.Pruned, predicted+rst.Predicted
				for o := range want {
					if !got[o] {
						t.Fatalf("program %d, preemptions %d, faults %d: the reduced search (%+v) misses an outcome the full search (%d schedules) reached: %s\n%+v", prog, pre, faults, rst, fst.Schedules, o, toy)
					}
				}
				for o := range got {
					if !want[o] {
						t.Fatalf("program %d, preemptions %d, faults %d: the reduced search reached an outcome the full search did not: %s", prog, pre, faults, o)
					}
				}
			}
		}
	}
	t.Logf("full search: %d schedules; reduced: %d runs, %d schedules settled without running", full, reduced, predicted)
	if reduced*2 > full {
		t.Errorf("the reduced search ran %d schedules, the full one %d: want at most half", reduced, full)
	}
}

// Goal: the reduction stays exact when two processes spawn children at
// the same instant (each child's number depends on which spawner ran
// first, so a record may give a number to the other child) and when a
// step stops the run (it ends every other process's turn, whatever their
// footprints). Random programs as TestReductionIsExactUnderBounds', each
// with a second spawner and, in half of them, a stopping step.
func TestReductionIsExactWithSpawnersAndStop(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 3))
	var checked, skipped, full, reduced int
	for prog := range 60 {
		steps, bounds := 2, []int{0, 1, 2}
		if prog%2 == 1 {
			steps, bounds = 1, []int{NoPreemptionBound}
		}
		toy := randomToy(rng, 3, steps).withSpawnersAndStop(rng, 2+rng.IntN(3))
		for _, pre := range bounds {
			b := Bounds{Preemptions: pre, Budgets: map[string]int{"fault": 1}, Cost: func(kind string, pick int) (string, bool) { return "fault", true }}
			// A few programs' full searches run to millions of schedules
			// (two children, waits and sleeps): those are left out.
			want, fst, ok := toy.outcomesWithin(t, b, false, 5_000)
			if !ok {
				skipped++
				continue
			}
			got, rst, _ := toy.outcomesWithin(t, b, true, 0)
			checked, full, reduced = checked+1, full+fst.Schedules, reduced+rst.Schedules+rst.Pruned
			for o := range want {
				if !got[o] {
					t.Fatalf("program %d, preemptions %d: the reduced search (%+v) misses an outcome the full search (%d schedules) reached: %s\n%+v", prog, pre, rst, fst.Schedules, o, toy)
				}
			}
			for o := range got {
				if !want[o] {
					t.Fatalf("program %d, preemptions %d: the reduced search reached an outcome the full search did not: %s", prog, pre, o)
				}
			}
		}
	}
	t.Logf("%d searches (%d left out as too large): full search: %d schedules; reduced: %d runs", checked, skipped, full, reduced)
	if checked < 100 {
		t.Errorf("only %d searches compared", checked)
	}
}

// Goal: reusing storage from run to run (records, nodes, states, the
// tracker) changes nothing: on the random programs of
// TestReductionIsExactUnderBounds, with only two records kept recent so
// that records are retired and reused, the reduced search makes the same
// runs in the same order, reaching the same outcomes, with the same
// counts, whether it reuses storage or allocates afresh.
func TestReuseChangesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 17))
	reused := 0
	for prog := range 30 {
		procs, steps, pre := 3, 3, 1
		switch prog % 3 {
		case 1:
			steps, pre = 2, 2
		case 2:
			steps, pre = 1, NoPreemptionBound
		}
		toy := randomToy(rng, procs, steps)
		b := Bounds{Preemptions: pre, Budgets: map[string]int{"fault": 1}, Cost: func(kind string, pick int) (string, bool) { return "fault", true }}
		var runs [2][]string
		var stats [2]ExhaustiveStats
		for i, reuse := range []bool{false, true} {
			e := NewExhaustive(b, true)
			e.recentMax, e.reuse = 2, reuse
			e.Search(func(r *ExhaustiveRun) (bool, bool) {
				out, err := toy.run(r)
				if err != nil && err != ErrPruned {
					t.Fatal(err)
				}
				runs[i] = append(runs[i], out)
				return err == ErrPruned, false
			})
			stats[i] = e.Stats
			reused += e.recycled
		}
		if stats[0] != stats[1] || !slices.Equal(runs[0], runs[1]) {
			t.Fatalf("program %d: without reuse %+v, %d runs; with reuse %+v, %d runs (or the same counts, other runs)", prog, stats[0], len(runs[0]), stats[1], len(runs[1]))
		}
	}
	if reused == 0 {
		t.Error("no search retired a record for reuse: the test shows nothing")
	}
}

// Goal: a state already explored settles a later visit only if that visit
// has spent no fewer preemptions: one that arrives with more of the bound
// left may reach what the first could not, so it is explored again (and
// then settles the visits after it that spent as much or more).
func TestSeenStateCountsPreemptionsSpent(t *testing.T) {
	e := NewExhaustive(Bounds{Preemptions: 3}, true)
	visit := func(sum uint64, preempt int) bool {
		return e.seenBefore(&simState{sum: h128{sum, ^sum}, now: 7, last: 1, preempt: preempt})
	}
	for _, v := range []struct {
		sum     uint64
		preempt int
		seen    bool
		why     string
	}{
		{1, 2, false, "the first visit"},
		{1, 2, true, "as many spent"},
		{1, 3, true, "more spent"},
		{1, 1, false, "fewer spent: more of the bound left"},
		{1, 1, true, "as many as the best visit"},
		{1, 2, true, "more than the best visit"},
		{2, 1, false, "another state"},
	} {
		if got := visit(v.sum, v.preempt); got != v.seen {
			t.Errorf("state %d with %d preemptions spent (%s): seen before %v, want %v", v.sum, v.preempt, v.why, got, v.seen)
		}
	}
}
