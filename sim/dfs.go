package sim

import (
	"fmt"
	"slices"
	"sort"
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

// Exhaustive enumerates choice tapes depth first within Bounds: every
// schedule whose preemptions and faults stay within them.
//
// Without reduction it runs the world from the start for each.
//
// With reduction it runs only some, and it is exact under the bounds it is
// given: every other schedule within them is shown, without running the
// world, to reach a state a run or an explored schedule reached, with no
// fewer preemptions spent; so the reduced search reaches every outcome the
// full search reaches with the same bounds, and no other. Three things
// let it:
//
//   - Records and prediction (predict). Every run made is kept as a
//     record: its steps, their footprints (Sim.Touch), their order in
//     happens-before, and what each did to the scheduler. A schedule that
//     departs from a recorded one at a decision is first played against
//     the record with the kernel's scheduling rules (runnable queue,
//     timers, the default pick) simulated: as long as each step it takes
//     comes after exactly the steps it came after in the record (it only
//     reorders commuting steps), the step does what it did there. The
//     world runs only from the first step that cannot be predicted so:
//     where the schedule reverses two conflicting steps, or takes another
//     fault, for the first time.
//   - A cache of the states at the end of each instant (simState.key): the
//     class of the steps done (a hash that commuting steps reordered do
//     not change), who sleeps in which order, who ran last, the faults
//     spent. A schedule that reaches one already explored with no fewer
//     preemptions spent has nothing left that the earlier one did not
//     explore. States record the scheduler as well as the world, because a
//     preemption bound counts deviations from a default that depends on
//     it: this is what sleep sets alone got wrong under a bound.
//   - Without a preemption bound, sleep sets (Godefroid) too, which are
//     exact there: once the subtree where process p moves first is
//     explored, p sleeps in its siblings' subtrees until a step that does
//     not commute with p's step runs.
//
// All rest on the footprints, as the old sleep sets did: every step must
// name everything it reads or writes that another process (or the outcome)
// could see; so a step whose footprint writes nothing changes nothing the
// outcome depends on (a run that stops before such steps ends as one that
// took them), and a step that wakes a process (Proc.Wake) must not commute
// with that process's sleeps. The kernel adds two of its own: a step that
// stops the run (Sim.Stop) writes every key, since it ends every other
// process's turn; and a record stands for a schedule only if each process
// is there the child of the same spawning step (record.spawn), since
// processes are numbered in spawn order. The search checks what it can:
// a live run that does not repeat a predicted scheduling decision fails
// it. scenarios compares the outcomes reduced and full searches reach, and
// sim tests the reduction against the full search on random programs.
type Exhaustive struct {
	b         Bounds
	reduce    bool
	path      []*dnode
	searching bool
	Stats     ExhaustiveStats

	classes []string       // the budget classes, sorted
	class   map[string]int // a class's index in classes (and in simState.used)

	// Reduction only.
	seen   []seenState   // instant ends reached (see seenBefore)
	stored int           // states stored since the table last grew
	finals map[h128]bool // the classes of runs that ended by themselves
	recent []*record     // the latest runs' records, newest last: more to predict from
	spare  []*record     // records neither recent nor held by a node: reused (record.reset)
	hint   int           // how many steps a run records, about
	sleep  bool          // sleep sets: only without a preemption bound, where they are exact

	spareNodes  []*dnode    // nodes backtracked past, for reuse (newNode)
	spareStates []*simState // their states
	tr          *tracker    // the live run's (one at a time)
	scratch     *simState   // predict's

	// Tests only: how many records are recent (recentRecords), and
	// whether storage is reused at all (records, nodes, states, the
	// tracker); TestReuseChangesNothing compares searches with and without.
	recentMax int
	reuse     bool
	recycled  int // records reused
}

// ExhaustiveStats count what the search did.
type ExhaustiveStats struct {
	Schedules int  // runs made to the end
	Pruned    int  // runs cut short as redundant: they reached an explored state (or every runnable process slept)
	Predicted int  // schedules settled without running the world (reduction)
	Complete  bool // the bounded space was exhausted
	// Diverged counts runs that asked another decision than the path
	// replayed into them: the world is not deterministic, or a step
	// touched what its footprint does not name. Either way the reduction's
	// guarantee does not hold, complete or not.
	Diverged int
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
	next    int // index in allowed of the next alternative to explore
	sched   bool
	procs   []int
	steps   int // steps done before the decision was asked
	// Reduction only, where there are alternatives: the run at the
	// decision (for a choice, as its step began), and for a choice, the
	// stepping process and the path index of its step's first choice.
	st          *simState
	proc, first int
	// Sleep sets: the sleep set when the node was reached, the explored
	// picks with their step's footprint, and each pick's footprint.
	// For a choice, base is the sleep set as its step began, and holder
	// the scheduling decision whose pick took the step.
	base, tried []sleeper
	fps         [][]Access
	holder      *dnode
}

// NewExhaustive starts a search.
func NewExhaustive(b Bounds, reduce bool) *Exhaustive {
	e := &Exhaustive{b: b, reduce: reduce, sleep: reduce && b.Preemptions < 0, class: map[string]int{}, recentMax: recentRecords, reuse: true}
	for c := range b.Budgets {
		e.classes = append(e.classes, c)
	}
	sort.Strings(e.classes)
	for i, c := range e.classes {
		e.class[c] = i
	}
	if reduce {
		e.seen, e.finals = make([]seenState, 1<<12), map[h128]bool{}
	}
	return e
}

// ExhaustiveRun is one run of the search: the Strategy and Observer to give
// sim.New. A reducing search also needs the run's Sim (Attach).
type ExhaustiveRun struct {
	e    *Exhaustive
	st   *simState
	over bool // its run has been reported; the search has moved on

	// Reduction only.
	virtual  bool // a prediction: no world, driven by predict
	sim      *Sim
	rec      *record
	tr       *tracker
	cut      bool      // the run reached an explored state: it ends at the next scheduling point
	asked    bool      // the coming step was picked at a scheduling decision
	choices  []Choice  // asked during the current step
	pending  int       // the record index of the last step, until the next scheduling point shows what it did; -1: none
	fresh    int       // steps the search already knows: states up to there are not looked up
	stepping int       // the process taking the current step
	first    int       // the path index of the current step's first choice, or -1
	used0    []int     // the faults spent as the current step began
	sleeping []sleeper // the sleep set
	next     *dnode    // the scheduling decision whose pick takes the coming step
	blocked  bool      // every runnable process slept
	looked   int       // instant ends looked up
	one      [1]int    // scratch: the one process runnable at a step not picked at a decision
}

// lookAhead is how many instant ends a live run looks up (and records)
// past the steps the search already knew: further on, a state is rarely
// met again, and recording every one of every run would make the cache as
// large as all the runs together (millions of states for pair with two
// crashes). Looking up fewer only explores more.
const lookAhead = 32

// Attach gives a reducing search's run its Sim, whose clock tells it when
// virtual time moved between two steps. sim.New calls it when the run is
// the Observer it is given; a Sim made otherwise must be attached before
// Run.
func (r *ExhaustiveRun) Attach(s *Sim) { r.sim = s }

// Search runs the whole search: run is called once per schedule that must
// be run, with the run to give sim.New as its Strategy and Observer, and
// reports whether that run was pruned (sim.ErrPruned) and whether the
// search should stop there (a budget reached, a first failure). Stats say
// how far it got.
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
	fresh := 0
	for started := false; ; started = true {
		if started {
			if !e.backtrack() {
				e.Stats.Complete = true
				return
			}
			if e.reduce {
				var settled bool
				if settled, fresh = e.predict(); settled {
					e.Stats.Predicted++
					continue
				}
			}
		}
		r := &ExhaustiveRun{e: e, st: &simState{last: -1, used: make([]int, len(e.classes))}, fresh: fresh, first: -1, pending: -1}
		if e.reduce {
			r.rec, r.tr = e.newRecord(), e.tracker()
			r.st.src = r.rec
		}
		pruned, stop := run(r)
		r.finish(pruned)
		if e.reduce {
			e.hint = max(e.hint, len(r.rec.steps)+len(r.rec.steps)/8)
			if len(e.recent) == e.recentMax {
				old := e.recent[0]
				e.recent = slices.Delete(e.recent, 0, 1)
				e.retire(old)
			}
			e.recent = append(e.recent, r.rec)
		}
		switch {
		case r.cut || r.blocked:
			e.Stats.Pruned++
		case pruned:
			panic("sim: a run of an exhaustive search was pruned by something other than the search")
		default:
			e.Stats.Schedules++
		}
		if stop {
			return
		}
	}
}

// newNode is a node for a new decision: one the search backtracked past
// if there is one (millions of nodes are made on pair with two crashes).
// Its slices keep their storage; the caller sets every field.
func (e *Exhaustive) newNode() *dnode {
	if k := len(e.spareNodes); k > 0 {
		n := e.spareNodes[k-1]
		e.spareNodes = e.spareNodes[:k-1]
		return n
	}
	return &dnode{}
}

// free takes a node the search backtracked past: nothing refers to it any
// more (a node's holder is an ancestor of it, the run that reached it is
// over), so it and its state are kept for reuse.
func (e *Exhaustive) free(n *dnode) {
	if n.st != nil {
		e.spareStates = append(e.spareStates, n.st)
		n.st = nil
	}
	e.spareNodes = append(e.spareNodes, n)
}

// newState is a state to clone into: a freed node's if there is one.
func (e *Exhaustive) newState() *simState {
	if k := len(e.spareStates); k > 0 {
		st := e.spareStates[k-1]
		e.spareStates = e.spareStates[:k-1]
		return st
	}
	return &simState{}
}

// tracker is the search's tracker, reset for a new run.
func (e *Exhaustive) tracker() *tracker {
	if e.tr == nil || !e.reuse {
		e.tr = newTracker()
	} else {
		e.tr.reset()
	}
	return e.tr
}

// newRecord is an empty record for a run: a spare one if there is one.
func (e *Exhaustive) newRecord() *record {
	if k := len(e.spare); k > 0 {
		rec := e.spare[k-1]
		e.spare = e.spare[:k-1]
		rec.reset()
		e.recycled++
		return rec
	}
	return &record{steps: make([]step, 0, e.hint), clocks: make([]int32, 0, e.hint*8)}
}

// retire takes a record that is no longer recent: if no node on the path
// predicts from it (a node's state names its source record), nothing can
// reach it again, and it is kept for reuse.
func (e *Exhaustive) retire(rec *record) {
	if !e.reuse {
		return
	}
	for _, n := range e.path {
		if n.st != nil && n.st.src == rec {
			return
		}
	}
	if len(e.spare) < spareRecords {
		e.spare = append(e.spare, rec)
	}
}

// spareRecords is how many unused records the search keeps for reuse.
const spareRecords = 4

// backtrack moves to the next unexplored alternative of the deepest node
// that has one.
func (e *Exhaustive) backtrack() bool {
	for len(e.path) > 0 {
		n := e.path[len(e.path)-1]
		if n.sched && e.sleep {
			n.tried = append(n.tried, sleeper{n.procs[n.pick], n.fps[n.pick]})
		}
		if n.next < len(n.allowed) {
			n.pick = n.allowed[n.next]
			n.next++
			return true
		}
		e.path = e.path[:len(e.path)-1]
		if e.reuse {
			e.free(n)
		}
	}
	return false
}

// seenBefore looks up an instant's end: reached before with no more
// preemptions spent, it has nothing new. Otherwise it is recorded.
//
// The table is a cache, not a set: a state lands in one slot by its key
// and evicts whatever was there. Forgetting a state only means exploring
// it again, so the search stays exact, and its memory stays put however
// long it runs (a map of every state reached grew to hundreds of MB on
// pair with two crashes). Depth first, the states worth remembering are
// the recent ones.
func (e *Exhaustive) seenBefore(st *simState) bool {
	k := st.key()
	slot := &e.seen[k.a&uint64(len(e.seen)-1)]
	if slot.a == k.a && slot.b == uint32(k.b>>32) && slot.preempt > 0 && int(slot.preempt)-1 <= st.preempt {
		return true
	}
	*slot = seenState{a: k.a, b: uint32(k.b >> 32), preempt: int32(st.preempt) + 1}
	if e.stored++; e.stored > len(e.seen) && len(e.seen) < seenStates {
		// A search that stores many states gets a larger table (a small
		// one costs a small search nothing).
		old := e.seen
		e.seen, e.stored = make([]seenState, 4*len(old)), 0
		for _, s := range old {
			if s.preempt > 0 {
				e.seen[s.a&uint64(len(e.seen)-1)] = s
			}
		}
	}
	return false
}

// seenStates is the largest size of the cache of instant ends: 16 MB.
const seenStates = 1 << 20

// A seenState is a state's key (96 of its 128 bits: a 16-byte slot, where
// the whole key took 24) and the fewest preemptions spent there, plus one
// (0: an empty slot).
type seenState struct {
	a       uint64
	b       uint32 // the high half of the key's second lane
	preempt int32
}

// Pick follows the current path, then extends it with the first allowed
// alternative of each new decision.
func (r *ExhaustiveRun) Pick(a Ask, i int) (int, error) {
	if r.over {
		panic("sim: an ExhaustiveRun was asked for a pick after its run was reported: give each sim.New the run Search just handed out")
	}
	e := r.e
	sched := a.Kind == "sched" && len(a.Procs) == a.N
	if sched && e.reduce && !r.virtual {
		r.observe(a.Procs)
		r.asked = true
	}
	if r.cut {
		return 0, ErrPruned
	}
	if !sched && r.first < 0 {
		r.first = i
		if e.reduce {
			r.used0 = append(r.used0[:0], r.st.used...)
		}
	}
	if i < len(e.path) {
		n := e.path[i]
		if n.kind != a.Kind || n.n != a.N {
			e.Stats.Diverged++
			return 0, fmt.Errorf("exhaustive search: decision %d was %q of %d, the run asked %q of %d: the world is not deterministic", i, n.kind, n.n, a.Kind, a.N)
		}
		if sched && !slices.Equal(n.procs, a.Procs) {
			e.Stats.Diverged++
			return 0, fmt.Errorf("exhaustive search: decision %d was among processes %v, the run had %v runnable: the world is not deterministic, or a step touched what its footprint does not name", i, n.procs, a.Procs)
		}
		r.account(n, a)
		return n.pick, nil
	}
	n := e.newNode()
	*n = dnode{kind: a.Kind, n: a.N, steps: r.st.steps, allowed: n.allowed[:0], procs: n.procs[:0]}
	if sched {
		n.sched, n.procs = true, append(n.procs, a.Procs...)
		def := max(slices.Index(a.Procs, a.Current), 0)
		n.allowed = append(n.allowed, def)
		if e.b.Preemptions < 0 || r.st.preempt < e.b.Preemptions {
			for k := range a.N {
				if k != def {
					n.allowed = append(n.allowed, k)
				}
			}
		}
		if e.sleep {
			n.base, n.fps = slices.Clone(r.sleeping), make([][]Access, a.N)
			n.allowed = slices.DeleteFunc(n.allowed, func(k int) bool { return asleep(r.sleeping, a.Procs[k]) })
			if len(n.allowed) == 0 {
				r.blocked = true
				return 0, ErrPruned
			}
		}
	} else {
		for k := range a.N {
			class, explore := "", true
			if e.b.Cost != nil {
				class, explore = e.b.Cost(a.Kind, k)
			}
			if k > 0 && (!explore || (class != "" && !r.affords(class))) {
				continue
			}
			n.allowed = append(n.allowed, k)
		}
	}
	if e.reduce && len(n.allowed) > 1 {
		n.st, n.proc, n.first = r.st.cloneInto(e.newState()), r.stepping, r.first
		if !sched {
			// Prediction takes the step again from its start.
			copy(n.st.used, r.used0)
			if e.sleep {
				n.base, n.holder = slices.Clone(r.sleeping), r.next
			}
		}
	}
	n.pick, n.next = n.allowed[0], 1
	e.path = append(e.path, n)
	r.account(n, a)
	return n.pick, nil
}

// affords reports whether the run may spend one more fault of class.
func (r *ExhaustiveRun) affords(class string) bool {
	i, ok := r.e.class[class]
	return ok && r.st.used[i] < r.e.b.Budgets[class]
}

// account charges the pick to the run's budgets, and records a choice in
// the step that asked it.
func (r *ExhaustiveRun) account(n *dnode, a Ask) {
	if n.sched {
		if n.pick != max(slices.Index(a.Procs, a.Current), 0) {
			r.st.preempt++
		}
		if r.e.sleep {
			r.sleeping, r.next = append(slices.Clone(n.base), n.tried...), n
		}
		return
	}
	if r.e.b.Cost != nil {
		if class, _ := r.e.b.Cost(n.kind, n.pick); class != "" && n.pick > 0 {
			r.st.used[r.e.class[class]]++
		}
	}
	if r.rec != nil {
		r.choices = append(r.choices, Choice{Kind: n.kind, N: n.n, Pick: n.pick})
	}
}

// StepStart begins a step of proc; false ends the run (it reached an
// explored state).
func (r *ExhaustiveRun) StepStart(proc int) bool {
	if !r.e.reduce {
		return true
	}
	if r.sim == nil {
		panic("sim: a reducing exhaustive search needs each run's Sim: give sim.New the run as its Observer, or call ExhaustiveRun.Attach")
	}
	if !r.asked {
		r.one[0] = proc
		r.observe(r.one[:])
	}
	r.asked = false
	if r.cut {
		return false
	}
	if r.e.sleep && asleep(r.sleeping, proc) {
		r.blocked = true
		return false
	}
	r.stepping, r.first, r.choices = proc, -1, r.choices[:0]
	return true
}

// StepDone records the step: its footprint, its place in happens-before.
func (r *ExhaustiveRun) StepDone(proc int, fp []Access) {
	if !r.e.reduce {
		return
	}
	st := r.st
	vc, h := r.tr.step(proc, st.now, fp, r.choices)
	r.pending = r.rec.add(step{hash: h, proc: int32(proc), procs: int32(len(st.ids)), wakeAt: -1, wokenAt: -1}, vc, fp, r.choices)
	st.at[proc]++
	st.steps++
	st.sum = st.sum.add(h)
	st.last = proc
	r.slept(proc, fp)
}

// slept records the footprint of the step a scheduling decision's pick
// took (every variant of it, as the search explores them), and wakes the
// sleepers the step does not commute with.
func (r *ExhaustiveRun) slept(proc int, fp []Access) {
	if !r.e.sleep {
		return
	}
	if n := r.next; n != nil && n.procs[n.pick] == proc {
		for _, a := range fp {
			if !slices.Contains(n.fps[n.pick], a) {
				n.fps[n.pick] = append(n.fps[n.pick], a)
			}
		}
		r.next = nil
	}
	kept := r.sleeping[:0]
	for _, z := range r.sleeping {
		if z.proc != proc && !conflict(z.fp, fp) {
			kept = append(kept, z)
		}
	}
	r.sleeping = kept
}

func asleep(set []sleeper, proc int) bool {
	for _, z := range set {
		if z.proc == proc {
			return true
		}
	}
	return false
}

// observe learns the runnable processes at a scheduling point (in the
// kernel's order), and from them and the clock what the last step did:
// whether its process stayed runnable, which processes it spawned or woke,
// and, if time moved on, which sleepers woke.
func (r *ExhaustiveRun) observe(ready []int) {
	st := r.st
	now := int64(r.sim.Elapsed())
	if r.pending < 0 {
		// The processes spawned before the run started.
		for _, q := range ready {
			for len(st.ids) <= q {
				st.ids, st.at = append(st.ids, len(st.ids)), append(st.at, 0)
			}
		}
		st.ready, st.now = append(st.ready[:0], ready...), now
		return
	}
	s := &r.rec.steps[r.pending]
	r.pending = -1
	p := int(s.proc)
	rest, _ := remove(st.ready, p)
	if now == st.now {
		// Time stood still: the runnable queue is what was left of it, then
		// what the step spawned or woke, then the process if it yielded.
		if len(ready) < len(rest) || !slices.Equal(ready[:len(rest)], rest) {
			panic(fmt.Sprintf("sim: exhaustive search lost track of the runnable queue: had %v after a step of %d, the kernel has %v", rest, p, ready))
		}
		made := ready[len(rest):]
		s.end = r.asleepOrDone(p)
		if len(made) > 0 && made[len(made)-1] == p {
			s.end, made = endRunnable, made[:len(made)-1]
		}
		s.mk, s.nmk = int32(len(r.rec.made)), int32(len(made))
		for _, q := range made {
			r.rec.made = append(r.rec.made, int32(q))
		}
		spawns := 0
		for _, q := range made {
			if q >= len(st.ids) {
				if q != len(st.ids) {
					panic(fmt.Sprintf("sim: exhaustive search lost track of process ids: %d spawned, %d known", q, len(st.ids)))
				}
				st.ids, st.at = append(st.ids, q), append(st.at, 0)
				r.tr.spawned(q, s.hash, spawns)
				r.rec.spawned(q, s.hash, spawns)
				spawns++
				continue
			}
			// Woken: a sleeper it was.
			var ok bool
			if st.sleepers, ok = remove(st.sleepers, q); !ok {
				panic(fmt.Sprintf("sim: exhaustive search lost track of the sleepers: %d woke, sleepers were %v", q, st.sleepers))
			}
			w := &r.rec.steps[r.rec.last(q)]
			w.wokenAt = now
		}
		if s.end == endAsleep {
			st.sleepers = append(st.sleepers, p)
		}
		st.ready = append(st.ready[:0], ready...)
		return
	}
	// Time moved on: nothing was runnable after the step, so it ended its
	// process's turn; the instant is over (a state to look up), and the
	// sleepers whose timers came due woke, in timer order.
	if len(rest) > 0 {
		panic(fmt.Sprintf("sim: exhaustive search lost track of the runnable queue: %v were runnable when time moved", rest))
	}
	if s.end = r.asleepOrDone(p); s.end == endAsleep {
		st.sleepers = append(st.sleepers, p)
	}
	st.ready = st.ready[:0]
	if st.steps > r.fresh && r.looked < lookAhead {
		r.looked++
		if r.e.seenBefore(st) {
			r.cut = true
		}
	}
	for _, q := range ready {
		var ok bool
		if st.sleepers, ok = remove(st.sleepers, q); !ok {
			panic(fmt.Sprintf("sim: exhaustive search lost track of the sleepers: %d woke, sleepers were %v", q, st.sleepers))
		}
		r.rec.steps[r.rec.last(q)].wakeAt = now
	}
	st.ready, st.now = append(st.ready, ready...), now
}

func (r *ExhaustiveRun) asleepOrDone(p int) stepEnd {
	if r.sim.finished(p) {
		return endFinished
	}
	return endAsleep
}

// finish closes a run once it is reported: if it ended by itself, its
// record is complete and its class one whose outcome is known.
func (r *ExhaustiveRun) finish(pruned bool) {
	r.over = true
	if !r.e.reduce || r.sim == nil {
		return
	}
	if r.rec.clean = !pruned && !r.cut && !r.blocked && r.sim.endedCleanly(); r.rec.clean {
		r.rec.stopped = r.sim.wasStopped()
		r.e.finals[r.st.sum] = true
		if r.pending >= 0 && !r.rec.stopped {
			// Nothing was left to run: the last step ended its process's
			// turn, and spawned or woke nothing.
			s := &r.rec.steps[r.pending]
			s.end = r.asleepOrDone(int(s.proc))
		}
	}
}

// recentRecords is how many of the latest runs' records prediction may
// turn to besides a node's own.
const recentRecords = 256

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
