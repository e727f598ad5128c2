package sim

import "slices"

// A record is what the exhaustive search keeps of a run it made: every
// step, with what it touched, the choices it asked, its place in the run's
// happens-before order, and what it did to the scheduler (whether its
// process stayed runnable, which processes it spawned or woke, when a
// process that went to sleep woke). Schedules are predicted from records
// (see predict).
type record struct {
	steps []step // no pointers in a step: what it holds by the slice lives in the record
	// The steps' vector clocks, footprints, choices and processes made
	// runnable, end to end (see step).
	clocks  []int32
	accs    []Access
	choices []Choice
	made    []int32
	byProc  [][]int32 // per process: its steps, as indexes into steps
	// spawn is, per process, who spawned it: the spawning step's hash and
	// which of its spawns it was (zero for the processes the run began
	// with). Processes are numbered in spawn order, so one number may be
	// different processes in two records (two spawners ran in the other
	// order); predict switches records only where they agree.
	spawn []h128
	clean bool // the run ended by itself (Stop, or nothing left to run), not cut short or failed
	// stopped: it ended by Stop after its last step (not because nothing
	// was left to run)
	stopped bool
	// sums has a bit set for each step's psum (a Bloom filter of one
	// hash): holds rules most records out with one load each, where the
	// steps themselves are four dependent loads into cold memory.
	sums [sumWords]uint64
}

// sumWords is the size of record.sums in words: 8192 bits, a few percent
// of false positives for the few hundred steps of a run on pair.
const sumWords = 128

func (r *record) hasSum(h h128) bool {
	return r.sums[h.a/64%sumWords]&(1<<(h.a%64)) != 0
}

type step struct {
	hash h128 // the step's content and causal past (see tracker)
	psum h128 // the sum of the hashes of its process's steps up to it
	// For endAsleep: when its timer fired (-1: the run ended first, or
	// another step woke it first, at instant wokenAt).
	wakeAt, wokenAt int64
	proc            int32
	procs           int32 // how many processes the run had before the step
	// Its vector clock is record.clocks[vc:vc+nvc]: at q, how many steps
	// of process q it comes after in happens-before (program order, and
	// conflicting footprints); at proc, its own number, from 1.
	vc, nvc int32
	// Its footprint and choices are record.accs[fp:fp+nfp] and
	// record.choices[ch:ch+nch]; record.made[mk:mk+nmk] are the processes
	// that became runnable during it, in order: spawned ones (ids from
	// procs on) and woken ones.
	fp, nfp, ch, nch, mk, nmk int32
	end                       stepEnd
}

type stepEnd uint8

const (
	endUnknown  stepEnd = iota // the run ended right after the step
	endRunnable                // the process yielded and stayed runnable
	endAsleep                  // the process sleeps (or waits) on a timer
	endFinished                // the process returned or crashed
)

// add appends a step with its vector clock, footprint and choices.
func (r *record) add(s step, vc []int32, fp []Access, choices []Choice) int {
	i := len(r.steps)
	s.vc, s.nvc = int32(len(r.clocks)), int32(len(vc))
	r.clocks = append(r.clocks, vc...)
	s.fp, s.nfp = int32(len(r.accs)), int32(len(fp))
	r.accs = append(r.accs, fp...)
	s.ch, s.nch = int32(len(r.choices)), int32(len(choices))
	r.choices = append(r.choices, choices...)
	for len(r.byProc) <= int(s.proc) {
		if n := len(r.byProc); n < cap(r.byProc) {
			// A reused record: the process's list from its last run, emptied.
			r.byProc = r.byProc[:n+1]
			r.byProc[n] = r.byProc[n][:0]
			continue
		}
		r.byProc = append(r.byProc, make([]int32, 0, 64))
	}
	if own := r.byProc[s.proc]; len(own) > 0 {
		s.psum = r.steps[own[len(own)-1]].psum
	}
	s.psum = s.psum.add(s.hash)
	r.sums[s.psum.a/64%sumWords] |= 1 << (s.psum.a % 64)
	r.steps = append(r.steps, s)
	r.byProc[s.proc] = append(r.byProc[s.proc], int32(i))
	return i
}

// reset empties the record for another run, keeping its storage: a
// record is about 100 KB on pair, and allocating (and zeroing, and
// collecting) one per run was the largest cost of the search after the
// world itself.
func (r *record) reset() {
	r.steps, r.clocks, r.accs, r.choices, r.made = r.steps[:0], r.clocks[:0], r.accs[:0], r.choices[:0], r.made[:0]
	r.byProc, r.spawn = r.byProc[:0], r.spawn[:0]
	r.clean, r.stopped = false, false
	r.sums = [sumWords]uint64{}
}

// spawned notes that process p was the j-th spawn of the step with hash by.
func (r *record) spawned(p int, by h128, j int) {
	for len(r.spawn) <= p {
		r.spawn = append(r.spawn, h128{})
	}
	r.spawn[p] = by.mix(uint64(j))
}

// spawner is who spawned process p (see record.spawn).
func (r *record) spawner(p int) h128 {
	if p < len(r.spawn) {
		return r.spawn[p]
	}
	return h128{}
}

// sum is the sum of the hashes of process p's first k steps.
func (r *record) sum(p, k int) h128 {
	if k == 0 {
		return h128{}
	}
	return r.steps[r.byProc[p][k-1]].psum
}

func (r *record) clock(s *step) []int32      { return r.clocks[s.vc : s.vc+s.nvc] }
func (r *record) footprint(s *step) []Access { return r.accs[s.fp : s.fp+s.nfp] }
func (r *record) choicesOf(s *step) []Choice { return r.choices[s.ch : s.ch+s.nch] }
func (r *record) madeBy(s *step) []int32     { return r.made[s.mk : s.mk+s.nmk] }

// last is the index of process p's latest step.
func (r *record) last(p int) int {
	s := r.byProc[p]
	return int(s[len(s)-1])
}

// h128 is a 128-bit hash in two independent 64-bit lanes. Sums of them
// (add) are order-independent, which is what makes a set of steps hash the
// same in whatever order commuting steps ran.
type h128 struct{ a, b uint64 }

func (h h128) add(o h128) h128 { return h128{h.a + o.a, h.b + o.b} }

func (h h128) mix(v uint64) h128 {
	return h128{splitmix(h.a ^ v), splitmix(h.b ^ (v*0xff51afd7ed558ccd + 0x2545f4914f6cdd1d))}
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// tracker follows a live run's happens-before order: a step comes after
// the earlier steps of its process and after every earlier step of another
// process whose footprint conflicts with its own (conflict). Per key it
// keeps the join of the vector clocks of the steps that wrote and that read
// it, and the sums of their hashes.
//
// A step's hash covers its process (and for a process's first step, the
// step that spawned it), its previous step, virtual time, its footprint and
// choices, and the hashes of the earlier steps it conflicts with: all the
// same in every interleaving that only reorders commuting steps, so a step
// hashes the same in all of them, and the sum over the steps done names
// the run's class so far (its Mazurkiewicz trace).
//
// One tracker serves every run of a search, one after the other (reset):
// the keys met, their hashes and which overlap which are facts about the
// keys, not the run, and are kept; what a run did to a key is dropped
// lazily, by run number (keyState.run), when the key is next looked at. A
// key the run has not touched reads as one never touched: no clock, no
// hashes.
type tracker struct {
	keys   []*keyState
	index  map[string]*keyState
	clock  [][]int32 // per process: the clock of its latest step
	last   []h128    // per process: the hash of its latest step, or what it was spawned by
	hashes map[string]h128
	run    int         // the current run's number, from 1
	vc     []int32     // scratch
	states []*keyState // scratch: the current step's keys
}

type keyState struct {
	key     string
	hash    h128        // of the key itself
	related []*keyState // the keys that overlap this one (itself included)
	// What the current run did to the key; stale unless run is the
	// tracker's.
	run         int
	wrote, read []int32
	sumW, sumR  h128
}

func newTracker() *tracker {
	return &tracker{index: map[string]*keyState{}, hashes: map[string]h128{}, run: 1}
}

// reset readies the tracker for another run.
func (t *tracker) reset() {
	t.run++
	t.clock, t.last = t.clock[:0], t.last[:0]
	if len(t.keys) > keysMax {
		// A world whose keys differ from run to run: start the table over
		// rather than let it (and each new key's overlap scan) grow.
		t.keys, t.index, t.hashes = nil, map[string]*keyState{}, map[string]h128{}
	}
}

// keysMax bounds the keys a tracker keeps across runs (pair meets a few
// dozen).
const keysMax = 4096

// grow makes room for process p.
func (t *tracker) grow(p int) {
	for len(t.clock) <= p {
		if n := len(t.clock); n < cap(t.clock) {
			// A process of an earlier run: its clock's storage, emptied.
			t.clock, t.last = t.clock[:n+1], append(t.last, h128{})
			t.clock[n] = t.clock[n][:0]
			continue
		}
		t.clock, t.last = append(t.clock, nil), append(t.last, h128{})
	}
}

// current drops what an earlier run did to the key.
func (t *tracker) current(ks *keyState) {
	if ks.run != t.run {
		ks.run, ks.wrote, ks.read, ks.sumW, ks.sumR = t.run, ks.wrote[:0], ks.read[:0], h128{}, h128{}
	}
}

// state is the key's state, made on first use.
func (t *tracker) state(key string) *keyState {
	if ks := t.index[key]; ks != nil {
		return ks
	}
	ks := &keyState{key: key, hash: t.keyHash(key), run: t.run}
	ks.related = append(ks.related, ks)
	for _, o := range t.keys {
		if overlap(key, o.key) {
			ks.related = append(ks.related, o)
			o.related = append(o.related, ks)
		}
	}
	t.index[key] = ks
	t.keys = append(t.keys, ks)
	return ks
}

func join(into, vc []int32) []int32 {
	for len(into) < len(vc) {
		into = append(into, 0)
	}
	for i, v := range vc {
		into[i] = max(into[i], v)
	}
	return into
}

func (t *tracker) keyHash(key string) h128 {
	if h, ok := t.hashes[key]; ok {
		return h
	}
	x, y := uint64(14695981039346656037), uint64(0xcbf29ce484222325^0x5bd1e995)
	for i := 0; i < len(key); i++ {
		x = (x ^ uint64(key[i])) * 1099511628211
		y = (y ^ uint64(key[i])) * 0x100000001b3b
	}
	h := h128{splitmix(x), splitmix(y)}
	t.hashes[key] = h
	return h
}

// spawned records that process p was spawned by the step with hash by (its
// j-th spawn): p's first step hashes after it, since p's closure is that
// step's doing.
func (t *tracker) spawned(p int, by h128, j int) {
	t.grow(p)
	t.last[p] = by.mix(uint64(j)).mix(0x5370617764)
}

// step records proc's next step, taken at virtual time now, and returns
// its clock and hash.
func (t *tracker) step(proc int, now int64, fp []Access, choices []Choice) ([]int32, h128) {
	t.grow(proc)
	own := t.clock[proc]
	vc := append(t.vc[:0], own...)
	for len(vc) <= proc {
		vc = append(vc, 0)
	}
	k := vc[proc] + 1
	h := t.last[proc].mix(uint64(proc)).mix(uint64(k)).mix(uint64(now))
	var preds h128
	t.states = t.states[:0]
	for _, a := range fp {
		this := t.state(a.Key)
		t.states = append(t.states, this)
		h = h.mix(this.hash.a).mix(this.hash.b)
		if a.Write {
			h = h.mix(1)
		} else {
			h = h.mix(2)
		}
		for _, ks := range this.related {
			t.current(ks)
			vc = join(vc, ks.wrote)
			preds = preds.add(ks.sumW)
			if a.Write {
				vc = join(vc, ks.read)
				preds = preds.add(ks.sumR)
			}
		}
	}
	for _, c := range choices {
		kh := t.keyHash(c.Kind)
		h = h.mix(kh.a).mix(uint64(c.N)).mix(uint64(c.Pick))
	}
	h = h.mix(preds.a).mix(preds.b)
	vc[proc] = k
	t.vc = vc
	for i, a := range fp {
		ks := t.states[i]
		if a.Write {
			ks.wrote, ks.sumW = join(ks.wrote, vc), ks.sumW.add(h)
		} else {
			ks.read, ks.sumR = join(ks.read, vc), ks.sumR.add(h)
		}
	}
	t.clock[proc], t.last[proc] = append(own[:0], vc...), h
	return vc, h
}

// simState is a run as the search needs it to carry on from a decision
// without running the world: the kernel's runnable queue, the process that
// ran last, virtual time, who sleeps in which order (ties on the timer
// heap wake in that order), the faults and preemptions spent, and the
// run's place in its source record (at: how many steps of each of the
// record's processes are done; ids: which record process each of this
// run's processes is). A live run keeps one too, its own record's.
type simState struct {
	ready    []int
	last     int
	now      int64
	sleepers []int
	src      *record
	ids      []int   // this run's process id -> the record's
	at       []int32 // per record process: steps done
	steps    int
	sum      h128  // the hashes of the steps done: the run's class so far
	used     []int // faults spent, per class (Exhaustive.classes)
	preempt  int
}

// cloneInto makes c a copy of s that shares no storage with it, reusing
// c's slices.
func (s *simState) cloneInto(c *simState) *simState {
	ready, sleepers, ids, used, at := c.ready, c.sleepers, c.ids, c.used, c.at
	*c = *s
	c.ready = append(ready[:0], s.ready...)
	c.sleepers = append(sleepers[:0], s.sleepers...)
	c.ids = append(ids[:0], s.ids...)
	c.used = append(used[:0], s.used...)
	c.at = append(at[:0], s.at...)
	return c
}

// key names the state at an instant's end (nothing runnable, time about to
// move): the class of the steps done, who sleeps in which order, who ran
// last (the default pick if it wakes first), virtual time, and the faults
// spent. Two runs at the same key have the same futures; the preemptions
// they may still spend are compared apart (see Exhaustive.seenBefore).
func (s *simState) key() h128 {
	h := s.sum.mix(uint64(s.now)).mix(uint64(int64(s.last))).mix(uint64(len(s.sleepers)))
	for _, p := range s.sleepers {
		h = h.mix(uint64(p))
	}
	for _, n := range s.used {
		h = h.mix(uint64(n))
	}
	return h
}

func remove(ids []int, p int) ([]int, bool) {
	i := slices.Index(ids, p)
	if i < 0 {
		return ids, false
	}
	return append(ids[:i], ids[i+1:]...), true
}
