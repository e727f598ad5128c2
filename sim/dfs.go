package sim

import (
	"fmt"
	"slices"
	"strings"
)

// Bounds limit an exhaustive search.
type Bounds struct {
	// Preemptions bounds deviations from the default schedule (the process
	// that ran last, if it is still runnable, else the first runnable one):
	// delay bounding. Each other pick at a scheduling decision costs one.
	// A negative value means no bound (NoPreemptionBound).
	Preemptions int
	// Budgets bound the fault classes Cost names.
	Budgets map[string]int
	// Cost classifies a non-scheduling pick: explore false means only pick 0
	// is explored for this kind (data the search does not branch on); a
	// non-empty class means the pick costs one of Budgets[class]. Pick 0
	// must be free: it is the "no fault" answer.
	Cost func(kind string, pick int) (class string, explore bool)
}

// NoPreemptionBound is the Bounds.Preemptions that lets every scheduling
// decision take every runnable process.
const NoPreemptionBound = -1

// Exhaustive enumerates choice tapes depth first within Bounds, re-running
// the world from the start for each. With Reduce it keeps sleep sets
// (Godefroid) over the steps' footprints (see Sim.Touch): once the
// subtree where process p moves first has been explored, p sleeps in its
// siblings' subtrees until some step that does not commute with p's step
// runs, so interleavings that only reorder commuting steps are run once.
//
// The reduction is exact for the world's shared state as the footprints
// describe it, so every footprint must name everything a step reads or
// writes that another process could see (scenarios checks this by
// comparing the histories reduced and full searches reach). Combined with
// a preemption bound it is not exact: "preemption" depends on which
// process ran last, which reordering commuting steps changes, so the
// representative the reduced search keeps for a class of schedules may
// need more preemptions than the bound allows. Without a preemption bound
// nothing is lost.
type Exhaustive struct {
	b         Bounds
	reduce    bool
	path      []*dnode
	searching bool // Search has been called
	Stats     ExhaustiveStats
}

// ExhaustiveStats count what the search did.
type ExhaustiveStats struct {
	Schedules int  // runs made to the end
	Pruned    int  // runs cut short because every runnable process slept
	Complete  bool // the bounded space was exhausted
}

type sleeper struct {
	proc int
	fp   []Access
}

type dnode struct {
	kind    string
	n       int
	pick    int
	allowed []int
	done    []int
	sched   bool
	procs   []int
	base    []sleeper // the sleep set when the node was reached
	tried   []sleeper // explored picks, with their first step's footprint
	fp      map[int][]Access
}

// NewExhaustive starts a search.
func NewExhaustive(b Bounds, reduce bool) *Exhaustive {
	return &Exhaustive{b: b, reduce: reduce}
}

// ExhaustiveRun is one run of the search: the Strategy and Observer to give sim.New.
type ExhaustiveRun struct {
	e       *Exhaustive
	cur     []sleeper
	pending *dnode
	used    map[string]int
	preempt int
	over    bool // its run has been reported; the search has moved on
}

// Search runs the whole search: run is called once per schedule, with the
// run to give sim.New as its Strategy and Observer, and reports whether
// that run was pruned (sim.ErrPruned) and whether the search should stop
// there (a budget reached, a first failure). Stats say how far it got.
//
// The search owns its protocol: a run is reported exactly once, by
// returning from run, and the next schedule is chosen only then. Calling
// Search twice, calling it from inside run, or asking a finished run for
// picks panics with a sentence saying which.
func (e *Exhaustive) Search(run func(r *ExhaustiveRun) (pruned, stop bool)) {
	if e.searching {
		panic("sim: Exhaustive.Search called twice (or from inside its own run): a search runs once; start another with NewExhaustive")
	}
	e.searching = true
	for {
		if e.Stats.Schedules+e.Stats.Pruned > 0 && !e.backtrack() {
			e.Stats.Complete = true
			return
		}
		r := &ExhaustiveRun{e: e, used: map[string]int{}}
		pruned, stop := run(r)
		r.over = true
		if pruned {
			e.Stats.Pruned++
		} else {
			e.Stats.Schedules++
		}
		if stop {
			return
		}
	}
}

// backtrack moves to the next unexplored alternative of the deepest node
// that has one.
func (e *Exhaustive) backtrack() bool {
	for len(e.path) > 0 {
		n := e.path[len(e.path)-1]
		n.done = append(n.done, n.pick)
		if n.sched && e.reduce {
			n.tried = append(n.tried, sleeper{n.procs[n.pick], n.fp[n.pick]})
		}
		for _, alt := range n.allowed {
			if !slices.Contains(n.done, alt) {
				n.pick = alt
				return true
			}
		}
		e.path = e.path[:len(e.path)-1]
	}
	return false
}

// Pick follows the current path, then extends it with the first allowed
// alternative of each new decision.
func (r *ExhaustiveRun) Pick(a Ask, i int) (int, error) {
	if r.over {
		panic("sim: an ExhaustiveRun was asked for a pick after its run was reported: give each sim.New the run Search just handed out")
	}
	e := r.e
	if i < len(e.path) {
		n := e.path[i]
		if n.kind != a.Kind || n.n != a.N {
			return 0, fmt.Errorf("exhaustive search: decision %d was %q of %d, the run asked %q of %d: the world is not deterministic", i, n.kind, n.n, a.Kind, a.N)
		}
		r.account(n, a)
		return n.pick, nil
	}
	n := &dnode{kind: a.Kind, n: a.N, fp: map[int][]Access{}}
	if a.Kind == "sched" && len(a.Procs) == a.N {
		n.sched, n.procs = true, slices.Clone(a.Procs)
		n.base = slices.Clone(r.cur)
		def := max(slices.Index(a.Procs, a.Current), 0)
		order := append([]int{def}, seq(a.N, def)...)
		for _, k := range order {
			if e.reduce && asleep(r.cur, a.Procs[k]) {
				continue
			}
			if k != def && e.b.Preemptions >= 0 && r.preempt >= e.b.Preemptions {
				continue
			}
			n.allowed = append(n.allowed, k)
		}
	} else {
		for k := range a.N {
			class, explore := "", true
			if e.b.Cost != nil {
				class, explore = e.b.Cost(a.Kind, k)
			}
			if k > 0 && (!explore || (class != "" && r.used[class] >= e.b.Budgets[class])) {
				continue
			}
			n.allowed = append(n.allowed, k)
		}
	}
	if len(n.allowed) == 0 {
		return 0, ErrPruned
	}
	n.pick = n.allowed[0]
	e.path = append(e.path, n)
	r.account(n, a)
	return n.pick, nil
}

// account charges the pick to the run's budgets and sets up the sleep set
// for the step it starts.
func (r *ExhaustiveRun) account(n *dnode, a Ask) {
	if n.sched {
		def := max(slices.Index(a.Procs, a.Current), 0)
		if n.pick != def {
			r.preempt++
		}
		if r.e.reduce {
			r.cur = append(slices.Clone(n.base), n.tried...)
		}
		r.pending = n
		return
	}
	if r.e.b.Cost != nil {
		if class, _ := r.e.b.Cost(n.kind, n.pick); class != "" && n.pick > 0 {
			r.used[class]++
		}
	}
}

// StepStart prunes a run whose next step belongs to a sleeping process:
// every continuation from here was explored in a sibling's subtree.
func (r *ExhaustiveRun) StepStart(proc int) bool {
	return !(r.e.reduce && asleep(r.cur, proc))
}

// StepDone records the step's footprint and wakes the sleepers it does not
// commute with.
func (r *ExhaustiveRun) StepDone(proc int, fp []Access) {
	if r.pending != nil && r.pending.procs[r.pending.pick] == proc {
		if _, ok := r.pending.fp[r.pending.pick]; !ok {
			r.pending.fp[r.pending.pick] = slices.Clone(fp)
		}
		r.pending = nil
	}
	if !r.e.reduce || len(r.cur) == 0 {
		return
	}
	kept := r.cur[:0]
	for _, s := range r.cur {
		if s.proc != proc && !conflict(s.fp, fp) {
			kept = append(kept, s)
		}
	}
	r.cur = kept
}

func asleep(set []sleeper, proc int) bool {
	for _, s := range set {
		if s.proc == proc {
			return true
		}
	}
	return false
}

func seq(n, skip int) []int {
	out := make([]int, 0, n)
	for k := range n {
		if k != skip {
			out = append(out, k)
		}
	}
	return out
}

// conflict reports whether two footprints fail to commute: some key is
// touched by both and written by at least one. A key ending in "*" stands
// for every key with that prefix (a read of all rows, say).
func conflict(a, b []Access) bool {
	for _, x := range a {
		for _, y := range b {
			if (x.Write || y.Write) && overlap(x.Key, y.Key) {
				return true
			}
		}
	}
	return false
}

func overlap(a, b string) bool {
	if a == b {
		return true
	}
	if p, ok := strings.CutSuffix(a, "*"); ok && strings.HasPrefix(b, p) {
		return true
	}
	if p, ok := strings.CutSuffix(b, "*"); ok && strings.HasPrefix(a, p) {
		return true
	}
	return false
}
