package sim

import "slices"

// predict plays the schedule the search just moved to (the deepest node
// took its next alternative) against the records of runs already made,
// without running the world.
//
// Each step it takes is the next step of that process in a record, taken
// once every step that step comes after in the record's happens-before is
// done, and no step it did not come after: then the steps done are a
// prefix of the record's run up to reordering commuting steps, so the step
// reads what it read in the record and does the same again (its footprint,
// its choices, its effect on the scheduler). It starts from the record of
// the run the node was reached in, and turns to another recent record
// that did exactly the same steps so far (the same hashes, process by
// process) when that one has no such step: the schedule reversed two
// conflicting steps, or took another fault, there. Scheduling decisions are
// made by the search as in a live run (Pick), on the kernel's runnable
// queue, timers and default pick, simulated here.
//
// settled says the schedule needs no run: it reached an instant's end
// already explored (Exhaustive.seenBefore), or ended having done the same
// steps as a run that ended by itself. If not, known is how many of its
// steps the prediction vouched for: a live run takes over from there (and
// looks states up only after them).
func (e *Exhaustive) predict() (settled bool, known int) {
	x := len(e.path) - 1
	n := e.path[x]
	if n.st == nil {
		return false, n.steps
	}
	// The prediction's state lives only until it returns (a node it makes
	// clones it): one scratch state serves them all.
	if e.scratch == nil || !e.reuse {
		e.scratch = &simState{}
	}
	st := n.st.cloneInto(e.scratch)
	r := &ExhaustiveRun{e: e, st: st, virtual: true}
	i := x
	var p int
	if n.sched {
		k, _ := r.Pick(Ask{Kind: "sched", N: len(st.ready), Procs: st.ready, Current: st.last}, i)
		p, i = st.ready[k], i+1
	} else {
		p, i = n.proc, n.first
		r.sleeping, r.next = slices.Clone(n.base), n.holder
	}
	for {
		known = st.steps
		if e.sleep && asleep(r.sleeping, p) {
			return true, known
		}
		r.stepping, r.first = p, -1
		// From a choice node on, the step's first choices are on the path:
		// the step must be one that made them.
		s := e.stepFor(st, p, e.path[min(i, len(e.path)):])
		if s == nil {
			return false, known
		}
		for _, c := range st.src.choicesOf(s) {
			if k, err := r.Pick(Ask{Kind: c.Kind, N: c.N}, i); err != nil || k != c.Pick {
				panic("sim: exhaustive search predicted a choice it then did not make")
			}
			i++
		}
		src := st.src
		r.slept(p, src.footprint(s))
		st.at[st.ids[p]]++
		st.steps++
		st.sum = st.sum.add(s.hash)
		st.last = p
		st.ready, _ = remove(st.ready, p)
		for _, m32 := range src.madeBy(s) {
			m := int(m32)
			if m >= int(s.procs) {
				// Spawned: the kernel numbers processes in spawn order.
				st.ids = append(st.ids, m)
				for len(st.at) <= m {
					st.at = append(st.at, 0)
				}
				st.ready = append(st.ready, len(st.ids)-1)
				continue
			}
			w := slices.Index(st.ids, m)
			var asleep bool
			if st.sleepers, asleep = remove(st.sleepers, w); !asleep {
				return false, known
			}
			st.ready = append(st.ready, w)
		}
		switch s.end {
		case endRunnable:
			st.ready = append(st.ready, p)
		case endAsleep:
			st.sleepers = append(st.sleepers, p)
		case endUnknown:
			// The last step of a record: if the run stopped after it, so
			// does this one, having done the record's steps but those it
			// had not reached yet. It ends as that run did if those only
			// read and picked no fault (a step that writes nothing
			// changes nothing anyone sees), or as some other run did.
			return src.clean && src.stopped && (quietRest(src, st) || e.finals[st.sum]), known
		}
		if len(st.ready) == 0 {
			if len(st.sleepers) == 0 {
				if e.finals[st.sum] {
					return true, known
				}
				return false, known
			}
			if e.seenBefore(st) {
				return true, known
			}
			if !advance(st) {
				return false, st.steps
			}
		}
		if len(st.ready) == 1 {
			p = st.ready[0]
			continue
		}
		k, err := r.Pick(Ask{Kind: "sched", N: len(st.ready), Procs: st.ready, Current: st.last}, i)
		if err != nil {
			return true, st.steps // every runnable process sleeps
		}
		p, i = st.ready[k], i+1
	}
}

// stepFor finds the step process p takes next: the next one of p in the
// prediction's record if it may come now, else in a recent record that did
// the same steps so far (switching the prediction to it).
func (e *Exhaustive) stepFor(st *simState, p int, path []*dnode) *step {
	s, ok := next(st.src, st.ids, st.at, p, path)
	if ok {
		return s
	}
	// Records that did the same steps often share the step p would take
	// next too: one with the same hash comes after the same steps, so one
	// look at it does for all.
	var rejected []h128
	if s != nil {
		rejected = append(rejected, s.hash)
	}
	// What was done, by this run's process numbers.
	at := make([]int32, len(st.ids))
	want := make([]h128, len(st.ids))
	for sid, q := range st.ids {
		at[sid] = st.at[q]
		want[sid] = st.src.sum(q, int(at[sid]))
	}
	var ids []int
	for j := len(e.recent) - 1; j >= 0; j-- {
		rec := e.recent[j]
		// The cheap tests first: the filter of the steps done, then the
		// step p would take next there (none, or one turned down already),
		// then every process's steps (holds).
		if rec == st.src || !mayHold(rec, want, at, st.last) || p >= len(rec.byProc) || int(at[p]) >= len(rec.byProc[p]) ||
			slices.Contains(rejected, rec.steps[rec.byProc[p][at[p]]].hash) || !holds(rec, want, at, st.last) || !sameSpawns(rec, st) {
			continue
		}
		// The same steps, the processes numbered alike: carry on from it.
		if ids == nil {
			ids = make([]int, len(st.ids))
			for sid := range ids {
				ids[sid] = sid
			}
		}
		s, ok := next(rec, ids, at, p, path)
		if ok {
			st.src, st.ids, st.at = rec, ids, slices.Clone(at)
			return s
		}
		rejected = append(rejected, s.hash)
	}
	return nil
}

// next is process p's next step in rec (with the processes and steps done
// given by ids and at), and whether it may be taken: if every step it comes
// after is done, and if its first choices are the picks of path and the
// rest pick no fault (the first alternative, which a new decision takes).
func next(rec *record, ids []int, at []int32, p int, path []*dnode) (*step, bool) {
	q := ids[p]
	if q >= len(rec.byProc) || int(at[q]) >= len(rec.byProc[q]) {
		return nil, false
	}
	s := &rec.steps[rec.byProc[q][at[q]]]
	for j, v := range rec.clock(s) {
		if j != q && (j >= len(at) || v > at[j]) {
			return s, false // it would come before a conflicting step it followed
		}
	}
	choices := rec.choicesOf(s)
	if len(choices) < len(path) {
		return s, false
	}
	for j, c := range choices {
		if j < len(path) && c.Pick != path[j].pick || j >= len(path) && c.Pick != 0 {
			return s, false
		}
	}
	return s, true
}

// quietRest reports whether the steps of rec that st has not done write
// nothing and pick no fault.
func quietRest(rec *record, st *simState) bool {
	for q, own := range rec.byProc {
		var done int32
		if q < len(st.at) {
			done = st.at[q]
		}
		for _, i := range own[done:] {
			s := &rec.steps[i]
			for _, a := range rec.footprint(s) {
				if a.Write {
					return false
				}
			}
			for _, c := range rec.choicesOf(s) {
				if c.Pick != 0 {
					return false
				}
			}
		}
	}
	return true
}

// mayHold is holds through the record's filter (record.sums): false
// means that rec did not do the steps done; true, that it may have. The
// process that ran last goes first here too.
func mayHold(rec *record, want []h128, at []int32, last int) bool {
	if last >= 0 && at[last] > 0 && !rec.hasSum(want[last]) {
		return false
	}
	for p, k := range at {
		if k > 0 && !rec.hasSum(want[p]) {
			return false
		}
	}
	return true
}

// holds reports whether rec did the steps done (want: for each process,
// by number, how many and the sum of their hashes): for each process, as
// many steps, with the same hashes. The process that ran last goes first:
// it is where records part.
func holds(rec *record, want []h128, at []int32, last int) bool {
	same := func(p int) bool {
		k := int(at[p])
		if k == 0 {
			return true // (which process it is, sameSpawns checks)
		}
		return p < len(rec.byProc) && k <= len(rec.byProc[p]) && rec.steps[rec.byProc[p][k-1]].psum == want[p]
	}
	if last >= 0 && !same(last) {
		return false
	}
	for p := range want {
		if p != last && !same(p) {
			return false
		}
	}
	return true
}

// sameSpawns reports whether every process the prediction knows is, by
// its number, the same process in rec: spawned by the same step, as the
// same of its spawns. holds cannot tell for a process that has taken no
// step yet, and the kernel numbers processes in spawn order, so two
// spawners that ran in the other order in rec gave their children each
// other's numbers there.
func sameSpawns(rec *record, st *simState) bool {
	for sid, q := range st.ids {
		if st.src.spawner(q) != rec.spawner(sid) {
			return false
		}
	}
	return true
}

// advance moves virtual time to the earliest timer among the sleepers,
// waking everyone due then in the order they went to sleep, as the kernel
// does. It fails when a sleeper's timer is not known from the record, or
// when one that a step woke early in the record might come due first.
func advance(st *simState) bool {
	src := st.src
	sleep := func(p int) *step {
		q := st.ids[p]
		return &src.steps[src.byProc[q][st.at[q]-1]]
	}
	first := int64(-1)
	for _, p := range st.sleepers {
		if w := sleep(p).wakeAt; w >= 0 && (first < 0 || w < first) {
			first = w
		}
	}
	if first < 0 {
		return false
	}
	for _, p := range st.sleepers {
		// A sleeper a step woke early, at wokenAt: its timer comes due
		// after that instant.
		if s := sleep(p); s.wakeAt < 0 && (s.wokenAt < 0 || first > s.wokenAt) {
			return false
		}
	}
	kept := st.sleepers[:0]
	for _, p := range st.sleepers {
		if sleep(p).wakeAt == first {
			st.ready = append(st.ready, p)
		} else {
			kept = append(kept, p)
		}
	}
	st.sleepers, st.now = kept, first
	return true
}
