package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"time"
)

// Sim is one run: virtual time, processes, and the choice tape. It is not
// safe for concurrent use; independent runs are independent Sims.
type Sim struct {
	start, now time.Time
	elapsed    time.Duration // now - start, which timers are kept in
	strategy   Strategy

	procs  []*Proc
	ready  []*Proc // runnable at the current instant, in the order they became so
	spare  []Proc  // storage for the next processes Spawn makes (kernel_procs)
	timers timerHeap
	seq    int64 // timer tie-breaker: earlier sleeps wake first
	cur    *Proc

	tape     []Choice
	steps    int
	stepsMax int
	stopped  bool
	failure  error

	tracing bool
	events  []Event
	procIDs []int // scratch for scheduling asks
	// random is the strategy when it is exactly *Random (PCT embeds it,
	// and reads Procs). It never reads Ask.Procs, so scheduling asks go
	// without them (building the list was most of a choice's cost outside
	// the strategy), and it is called directly, not through the interface
	// (a few percent of a yield point).
	random *Random

	observer Observer
	stepFP   []Access // what the current step touched (only with an observer)
	last     int      // id of the process that ran the last step (-1: none)

	// Set by a process that parked: it ended its step and took the next
	// decision (handoff; nil when the run is over) before switching back.
	handoff *Proc
	parked  bool
	// alwaysSwitch makes park switch to Run at every yield and leave the
	// decision to it: the kernel as it was before park decided, kept so a
	// test can hold the two to the same runs.
	alwaysSwitch bool
	resumes      int // coroutine switches into processes, for tests
}

// Access is one touch of shared state by a step: a key naming what was
// touched, and whether it was written. Two steps of different processes
// commute unless they touch one key and at least one of them writes it.
type Access struct {
	Key   string
	Write bool
}

// Observer learns what each step touched; exhaustive search uses it to skip
// interleavings that only reorder commuting steps.
type Observer interface {
	// StepStart is asked before each step; false ends the run (ErrPruned).
	StepStart(proc int) bool
	StepDone(proc int, footprint []Access)
}

// ErrPruned ends a run that a strategy found redundant.
var ErrPruned = errors.New("sim: run pruned")

// Observing reports whether an observer wants footprints, so callers can
// skip building keys otherwise.
func (s *Sim) Observing() bool { return s.observer != nil }

// Touch records that the current step read or wrote key. Without an
// observer it costs nothing.
func (s *Sim) Touch(key string, write bool) {
	if s.observer != nil {
		s.stepFP = append(s.stepFP, Access{Key: key, Write: write})
	}
}

// Options configure a run.
type Options struct {
	Start    time.Time // virtual time at step 0
	StepsMax int       // scheduling steps before the run fails with ErrBudget
	Tracing  bool      // record events (Event) as well as choices
	Observer Observer  // told each step's footprint (see Touch)
	// Tape, if not nil, is storage for the tape: the run appends to
	// Tape[:0], so a caller that runs seed after seed can hand back the
	// last run's tape once it no longer needs it.
	Tape []Choice
}

// ErrBudget is returned when the run did not settle within its step budget.
// Worlds report it as a liveness failure.
var ErrBudget = errors.New("sim: step budget exhausted")

// New makes a run that takes its decisions from strategy.
func New(strategy Strategy, o Options) *Sim {
	if o.StepsMax <= 0 {
		panic(fmt.Sprintf("sim.New: StepsMax %d must be positive", o.StepsMax))
	}
	// A chaos run makes about ten thousand choices; growing the tape from
	// nothing showed up as a sixth of the run time.
	tape := o.Tape[:0]
	if tape == nil {
		tape = make([]Choice, 0, 8192)
	}
	s := &Sim{start: o.Start, now: o.Start, strategy: strategy, stepsMax: o.StepsMax, tracing: o.Tracing,
		tape: tape, observer: o.Observer, last: -1}
	s.random, _ = strategy.(*Random)
	if a, ok := o.Observer.(attacher); ok {
		a.Attach(s)
	}
	return s
}

// attacher is an Observer that also wants the run's Sim, handed to it by
// New before the run starts (exhaustive search reads the run's clock and
// which processes finished: see ExhaustiveRun.Attach).
type attacher interface{ Attach(*Sim) }

// Now is virtual time. It is the clock of everything inside the run.
func (s *Sim) Now() time.Time { return s.now }

// Elapsed is virtual time since the start.
func (s *Sim) Elapsed() time.Duration { return s.elapsed }

// Steps is how many scheduling steps have run.
func (s *Sim) Steps() int { return s.steps }

// Tape is the choice tape so far. It determines the run completely.
func (s *Sim) Tape() []Choice { return s.tape }

// Tracing reports whether events are being recorded; callers skip building
// descriptions when they are not.
func (s *Sim) Tracing() bool { return s.tracing }

// Events returns the recorded events (empty unless tracing).
func (s *Sim) Events() []Event { return s.events }

// Event records a one-line description of something that happened, stamped
// with the virtual time, the step and the current process. Callers should
// check Tracing first, so that exploration pays nothing for descriptions.
func (s *Sim) Event(text string) { s.Record(text, nil) }

// Record is Event with the event's fields as JSON, which the kernel keeps
// and writes without reading.
func (s *Sim) Record(text string, data json.RawMessage) {
	if !s.tracing {
		return
	}
	name := ""
	if s.cur != nil {
		name = s.cur.name
	}
	s.events = append(s.events, Event{Step: s.steps, Tape: len(s.tape), At: s.elapsed, Proc: name, Text: text, Data: data})
}

// Choose asks the strategy to pick one of n alternatives for a decision of
// the given kind, and records the answer on the tape. n == 1 is not a
// decision and is not recorded.
func (s *Sim) Choose(kind string, n int) int { return s.ask(Ask{Kind: kind, N: n}) }

// Chance is a yes/no decision that the random strategy answers yes with
// probability p. Other strategies see an ordinary two-way choice; pick 1 is
// yes. p <= 0 is no decision at all: the world has no such fault, so it is
// not recorded and no strategy explores it. So is a NaN p: written as
// !(p > 0), so that the direct draw below and Random.Pick (which draws a
// Chance only when P > 0) never see one and cannot answer it differently.
func (s *Sim) Chance(kind string, p float64) bool {
	if !(p > 0) {
		return false
	}
	if r := s.random; r != nil && s.failure == nil {
		// Random.Pick's draw, taken directly: most of a chaos run's ten
		// thousand choices are faults asked this way, and building the
		// Ask for the strategy was a good part of each one's cost.
		pick := r.chance(p)
		s.record(kind, 2, pick)
		return pick == 1
	}
	return s.ask(Ask{Kind: kind, N: 2, P: p}) == 1
}

func (s *Sim) ask(a Ask) int {
	if a.N < 1 {
		panic(fmt.Sprintf("sim: choice %q with %d alternatives", a.Kind, a.N))
	}
	if a.N == 1 {
		return 0
	}
	if s.failure != nil {
		// The run is over (a divergence, say); answer something valid so
		// the caller reaches its next yield, where the scheduler stops.
		return 0
	}
	var pick int
	var err error
	if s.random != nil {
		pick, err = s.random.Pick(a, len(s.tape))
	} else {
		pick, err = s.strategy.Pick(a, len(s.tape))
	}
	if err != nil {
		s.fail(err)
		return 0
	}
	if pick < 0 || pick >= a.N {
		panic(fmt.Sprintf("sim: strategy picked %d of %d for %q", pick, a.N, a.Kind))
	}
	s.record(a.Kind, a.N, pick)
	return pick
}

// record puts a decision and its answer on the tape.
func (s *Sim) record(kind string, n, pick int) {
	s.tape = append(s.tape, Choice{Kind: kind, N: n, Pick: pick})
}

// Current is the running process (nil between steps).
func (s *Sim) Current() *Proc { return s.cur }

// Stop ends the run at the next scheduling point.
func (s *Sim) Stop() {
	s.stopped = true
	if s.observer != nil {
		// A stop ends every other process's turn, so the step that
		// stops must not commute with any step that touches anything:
		// it writes every key (a step that touches nothing has no effect
		// anyone sees, so which came first makes no difference).
		s.stepFP = append(s.stepFP, Access{Key: stopKey, Write: true})
	}
}

// stopKey is the key a stopping step writes: every key (see overlap).
const stopKey = "*"

// Fail ends the run with err at the next scheduling point. The first
// failure wins.
func (s *Sim) fail(err error) {
	if s.failure == nil {
		s.failure = err
	}
	s.stopped = true
}

// Spawn creates a process that starts running fn at the current instant.
func (s *Sim) Spawn(name string, fn func(p *Proc)) *Proc {
	p := s.newProc()
	*p = Proc{sim: s, name: name, id: len(s.procs), fn: fn}
	s.procs = append(s.procs, p)
	s.ready = append(s.ready, p)
	return p
}

// body runs the process's function on its coroutine, turning a panic into
// the run's failure (the kernel's own kill sentinel aside), and marks the
// process finished when the function is over.
func (p *Proc) body() {
	defer func() {
		p.finished = true
		if r := recover(); r != nil {
			if _, ok := r.(killed); ok {
				return
			}
			p.sim.fail(&PanicError{Proc: p.name, Value: r, Stack: string(debug.Stack())})
		}
	}()
	p.fn(p)
}

// resume runs p until it yields or finishes; its first resume takes a
// coroutine from the pool, and finishing gives it back.
func (p *Proc) resume() {
	if p.c == nil {
		p.c = getCoro()
		p.c.job = p // not p.body: a method value is an allocation
	}
	p.c.next()
	if p.finished {
		putCoro(p.c)
		p.c = nil
	}
}

// Run schedules processes until Stop, a failure, or quiescence (nothing
// runnable and no timers). Every process still alive at the end is killed,
// so no coroutine outlives the run. It returns the failure, if any:
// ErrBudget, a *PanicError, or a strategy error such as a *Divergence.
//
// A process that yields ends its own step and takes the next scheduling
// decision itself (see park), so the loop here resumes whichever process
// that decision picked, and ends a step only for a process that finished.
func (s *Sim) Run() error {
	for {
		p := s.handoff
		s.handoff = nil
		if p == nil {
			if p = s.next(); p == nil {
				break
			}
		}
		s.cur = p
		s.resumes++
		p.resume()
		s.cur = nil
		if s.parked {
			s.parked = false
		} else {
			s.endStep(p)
		}
	}
	for _, p := range s.procs {
		if !p.done {
			// A process that has run unwinds from its yield point (park
			// panics with killed, which body recovers); one that never ran
			// never starts.
			p.dead = true
			if p.c != nil {
				p.resume()
			}
			p.done = true
		}
	}
	s.ready, s.timers = nil, nil
	return s.failure
}

// endStep closes the step p just ran: the observer hears its footprint,
// and p goes back to the runnable list unless it finished or sleeps.
func (s *Sim) endStep(p *Proc) {
	s.last = p.id
	if s.observer != nil {
		s.observer.StepDone(p.id, s.stepFP)
		s.stepFP = s.stepFP[:0]
	}
	switch {
	case p.finished:
		p.done = true
	case p.sleeping:
		// on the timer heap
	default:
		s.ready = append(s.ready, p)
	}
}

// next takes the next scheduling decision and starts the step it picks:
// nil when the run is over (stopped, failed, or nothing left to run).
func (s *Sim) next() *Proc {
	for !s.stopped {
		if len(s.ready) == 0 {
			// Timers of sleeps that Wake ended early are dropped without
			// moving the clock.
			for len(s.timers) > 0 && s.timers[0].stale() {
				s.timers.pop()
			}
			if len(s.timers) == 0 {
				return nil
			}
			// Time moves only when nothing is runnable now.
			s.elapsed = s.timers[0].at
			s.now = s.start.Add(s.elapsed)
			for len(s.timers) > 0 && s.timers[0].at <= s.elapsed {
				t := s.timers.pop()
				if t.stale() {
					continue
				}
				t.p.sleeping = false
				s.ready = append(s.ready, t.p)
			}
			continue
		}
		if s.steps >= s.stepsMax {
			s.fail(ErrBudget)
			return nil
		}
		i := 0
		switch n := len(s.ready); {
		case n == 1:
		case s.random != nil:
			// Random.Pick's draw, taken directly: a chaos run makes a
			// few thousand scheduling picks. The run has not failed
			// here: a failure stops it, and the loop ends on stopped.
			i = s.random.intN(n)
			s.record("sched", n, i)
		default:
			ids := s.procIDs[:0]
			for _, p := range s.ready {
				ids = append(ids, p.id)
			}
			s.procIDs = ids
			i = s.ask(Ask{Kind: "sched", N: n, Procs: ids, Current: s.last})
		}
		if s.failure != nil {
			return nil
		}
		p := s.ready[i]
		if s.observer != nil && !s.observer.StepStart(p.id) {
			s.fail(ErrPruned)
			return nil
		}
		// Shifted by hand: the list is a handful long, and append's
		// memmove cost more than the loop (a percent of a chaos seed).
		n := len(s.ready) - 1
		for j := i; j < n; j++ {
			s.ready[j] = s.ready[j+1]
		}
		s.ready[n] = nil
		s.ready = s.ready[:n]
		s.steps++
		return p
	}
	return nil
}

// Proc is a process: plain sequential Go run as a coroutine. Exactly one
// process runs at a time; it gives up control only at Yield and Sleep.
type Proc struct {
	sim  *Sim
	name string
	id   int

	// Local is the world's own per-process value (its view of the world,
	// say); the kernel never looks at it.
	Local any

	fn       func(p *Proc)
	c        *coro // the coroutine running it, from its first step to its end
	finished bool  // fn has returned (or unwound)

	sleeping bool
	timerSeq int64 // the timer of the current sleep
	woken    bool  // the current sleep was ended by Wake
	dead     bool
	done     bool
}

// killed unwinds a dead process's stack. It is recovered at the top of the
// process; simulated code must not recover it (sluice recovers nothing).
type killed struct{}

// Name is the process's name.
func (p *Proc) Name() string { return p.name }

// Dead reports whether the process has crashed or been killed. World
// wrappers check it before every effect: a dead process's unwinding code
// must not touch the world.
func (p *Proc) Dead() bool { return p.dead }

// Yield lets the scheduler run any other runnable process at this instant.
func (p *Proc) Yield() { p.park() }

// Sleep suspends the process for d of virtual time (d <= 0 is a Yield).
func (p *Proc) Sleep(d time.Duration) {
	if d <= 0 {
		p.park()
		return
	}
	s := p.sim
	s.seq++
	p.sleeping, p.timerSeq, p.woken = true, s.seq, false
	at := s.elapsed + d
	if at < s.elapsed {
		at = math.MaxInt64 // a sleep past the end of representable time: forever
	}
	s.timers.push(timer{at: at, seq: s.seq, p: p})
	p.park()
}

// Wait sleeps for at most d, or until another process calls Wake on this
// one. It reports whether it was woken (false: d passed).
func (p *Proc) Wait(d time.Duration) bool {
	p.Sleep(d)
	return p.woken
}

// Wake ends a sleeping process's Sleep or Wait now, at the current instant.
// Waking a process that is not asleep does nothing.
func (p *Proc) Wake() {
	if !p.sleeping || p.done {
		return
	}
	p.sleeping, p.woken = false, true
	p.sim.ready = append(p.sim.ready, p)
}

// Crash kills the process where it stands, as kill -9 would: it unwinds at
// once and every world call made while it unwinds fails (the world checks
// Dead). Only the process itself calls Crash, at a yield point.
func (p *Proc) Crash() {
	p.dead = true
	panic(killed{})
}

// ExitIfDead unwinds the calling process if it was marked dead, by panicking
// with the kernel's own sentinel (which the kernel recovers): a wrapper calls
// it after every yield, so that a crashed process has no further effect.
func (p *Proc) ExitIfDead() {
	if p.dead {
		panic(killed{})
	}
}

// park ends the process's step and takes the next scheduling decision on
// the process's own stack, exactly as Run would between steps. When the
// decision picks this process again (always, when nothing else is runnable
// at this instant: about half of a chaos run's yields), it goes on without
// a coroutine switch; a switch to the scheduler and back was most of what
// a yield point cost. Otherwise it hands the picked process to Run.
func (p *Proc) park() {
	s := p.sim
	if s.cur != p {
		panic(fmt.Sprintf("sim: process %s yielded while not running", p.name))
	}
	if s.alwaysSwitch {
		if !p.c.yield(struct{}{}) || p.dead {
			panic(killed{})
		}
		return
	}
	s.cur = nil
	s.endStep(p)
	q := s.next()
	if q == p {
		// No other process ran, but p may have marked itself dead: its
		// own Crash, whose deferred code yields on the way out. A dead
		// process unwinds at its next yield, as it does after a switch.
		s.cur = p
		if p.dead {
			panic(killed{})
		}
		return
	}
	s.handoff, s.parked = q, true
	if !p.c.yield(struct{}{}) || p.dead {
		panic(killed{})
	}
}

// PanicError is a panic inside simulated code, turned into a failure record
// instead of a crashed explorer.
type PanicError struct {
	Proc  string
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic in %s: %v", e.Proc, e.Value) }

// timer is a sleep's end. Its time is kept as an offset from the run's
// start: comparing two time.Time values was most of the heap's cost.
type timer struct {
	at  time.Duration
	seq int64
	p   *Proc
}

// stale reports whether the timer's sleep was already ended by Wake.
func (t timer) stale() bool { return !t.p.sleeping || t.p.timerSeq != t.seq }

// timerHeap is a binary min-heap of timers by (at, seq), written out rather
// than through container/heap, whose interface boxes every timer pushed or
// popped (an allocation per Sleep). seq is unique, so the order in which
// timers come out is fully determined whatever the heap's shape.
type timerHeap []timer

func (h timerHeap) less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}

func (h *timerHeap) push(t timer) {
	*h = append(*h, t)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *timerHeap) pop() timer {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q[last] = timer{}
	q = q[:last]
	for i := 0; ; {
		small, l, r := i, 2*i+1, 2*i+2
		if l < len(q) && q.less(l, small) {
			small = l
		}
		if r < len(q) && q.less(r, small) {
			small = r
		}
		if small == i {
			break
		}
		q[i], q[small] = q[small], q[i]
		i = small
	}
	*h = q
	return top
}
