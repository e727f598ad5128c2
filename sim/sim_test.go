package sim

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newSim(seed uint64) *Sim {
	return New(NewRandom(seed), Options{Start: t0, StepsMax: 10_000, Tracing: true})
}

// first always picks the first alternative: FIFO scheduling.
type first struct{}

func (first) Pick(Ask, int) (int, error) { return 0, nil }

// Goal: virtual time moves only when nothing is runnable, and sleepers wake
// in time order (ties become ready in the order they went to sleep).
func TestTimeMovesOnlyWhenIdle(t *testing.T) {
	s := New(first{}, Options{Start: t0, StepsMax: 1000})
	var log []string
	mark := func(p *Proc, what string) { log = append(log, fmt.Sprintf("%s %s@%s", p.Name(), what, s.Elapsed())) }
	s.Spawn("a", func(p *Proc) {
		mark(p, "start")
		p.Sleep(3 * time.Second)
		mark(p, "woke")
	})
	s.Spawn("b", func(p *Proc) {
		mark(p, "start")
		p.Sleep(3 * time.Second)
		mark(p, "woke")
		p.Sleep(time.Second)
		mark(p, "woke")
	})
	s.Spawn("c", func(p *Proc) {
		for range 3 {
			p.Yield() // stays at t=0 while yielding
		}
		mark(p, "done")
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	var at0, later []string
	for _, l := range log {
		if strings.HasSuffix(l, "@0s") {
			at0 = append(at0, l)
		} else {
			later = append(later, l)
		}
	}
	if len(at0) != 3 {
		t.Errorf("events at t=0: %v, want a, b start and c done", at0)
	}
	wantLater := []string{"a woke@3s", "b woke@3s", "b woke@4s"}
	if !reflect.DeepEqual(later, wantLater) {
		t.Errorf("later events = %v, want %v", later, wantLater)
	}
	if s.Elapsed() != 4*time.Second {
		t.Errorf("elapsed = %s, want 4s", s.Elapsed())
	}
}

// Goal: every decision with more than one alternative lands on the tape;
// a single alternative is not a decision.
func TestChoicesAreRecorded(t *testing.T) {
	s := newSim(7)
	s.Spawn("a", func(p *Proc) {
		s.Choose("one", 1)
		s.Choose("three", 3)
		s.Chance("coin", 0.5)
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range s.Tape() {
		kinds = append(kinds, c.Kind)
	}
	if want := []string{"three", "coin"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("tape kinds = %v, want %v", kinds, want)
	}
}

// world is a small hostile program: processes that race, sleep, crash and
// ask questions, for determinism and replay tests.
func world(s *Sim, out *[]string) {
	for i := range 4 {
		s.Spawn(fmt.Sprintf("p%d", i), func(p *Proc) {
			for j := range 5 {
				*out = append(*out, fmt.Sprintf("%s:%d@%s", p.Name(), j, s.Elapsed()))
				s.Event(fmt.Sprintf("step %d", j))
				if s.Chance("crash", 0.05) {
					p.Crash()
				}
				p.Sleep(time.Duration(s.Choose("sleep", 3)) * time.Second)
			}
		})
	}
}

func runWorld(strategy Strategy) ([]string, []Choice, []Event, error) {
	var out []string
	s := New(strategy, Options{Start: t0, StepsMax: 10_000, Tracing: true})
	world(s, &out)
	err := s.Run()
	return out, s.Tape(), s.Events(), err
}

// Goal: a seed determines the run; a replay of its tape reproduces it.
func TestSeedDeterminesRunAndReplayReproduces(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		out1, tape1, ev1, err1 := runWorld(NewRandom(seed))
		out2, tape2, _, err2 := runWorld(NewRandom(seed))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !reflect.DeepEqual(out1, out2) || !reflect.DeepEqual(tape1, tape2) {
			t.Fatalf("seed %d: two runs differ", seed)
		}
		out3, tape3, ev3, err := runWorld(NewReplay(tape1))
		if err != nil {
			t.Fatalf("seed %d: replay: %v", seed, err)
		}
		if !reflect.DeepEqual(out1, out3) || !reflect.DeepEqual(tape1, tape3) || !reflect.DeepEqual(ev1, ev3) {
			t.Fatalf("seed %d: replay differs from the original run", seed)
		}
	}
	a, _, _, _ := runWorld(NewRandom(1))
	b, _, _, _ := runWorld(NewRandom(2))
	if reflect.DeepEqual(a, b) {
		t.Error("seeds 1 and 2 ran identically; the seed is not reaching the decisions")
	}
}

// Goal: a replay whose run asks another question than the tape recorded
// says where, instead of silently running another schedule.
func TestReplayNamesTheDivergence(t *testing.T) {
	_, tape, _, _ := runWorld(NewRandom(3))
	bent := append([]Choice(nil), tape...)
	bent[5].N++ // a question the run will not ask
	_, _, _, err := runWorld(NewReplay(bent))
	var d *Divergence
	if !errors.As(err, &d) || d.Index != 5 {
		t.Fatalf("replay of a bent tape = %v, want a divergence at choice 5", err)
	}
	// The same number of alternatives asked under another name is
	// another question too.
	renamed := append([]Choice(nil), tape...)
	renamed[7].Kind += "-renamed"
	_, _, _, err = runWorld(NewReplay(renamed))
	if !errors.As(err, &d) || d.Index != 7 || d.Want.Kind != renamed[7].Kind {
		t.Fatalf("replay of a tape with a choice renamed = %v, want a divergence at choice 7", err)
	}
	_, _, _, err = runWorld(NewReplay(tape[:10]))
	if !errors.As(err, &d) || !d.TapeEnded || d.Index != 10 {
		t.Fatalf("replay of a short tape = %v, want the tape to end at choice 10", err)
	}
}

// Goal: a crashed process has no further effect: its deferred code runs,
// but every world call it makes while unwinding fails at once.
func TestCrashedProcessTouchesNothing(t *testing.T) {
	s := newSim(1)
	touched := 0
	worldCall := func(p *Proc) {
		p.ExitIfDead() // what every world wrapper does first
		touched++
	}
	s.Spawn("victim", func(p *Proc) {
		defer worldCall(p) // deferred cleanup that would touch the world
		worldCall(p)
		p.Crash()
		worldCall(p)
	})
	s.Spawn("other", func(p *Proc) { worldCall(p) })
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if touched != 2 {
		t.Errorf("world touched %d times, want 2 (victim once before the crash, other once)", touched)
	}
}

// Goal: a panic in simulated code is a failure record naming the process,
// not a crashed explorer; the other processes are cleaned up.
func TestPanicBecomesFailure(t *testing.T) {
	before := runtime.NumGoroutine()
	s := newSim(1)
	s.Spawn("forever", func(p *Proc) {
		for {
			p.Sleep(time.Second)
		}
	})
	s.Spawn("bad", func(p *Proc) {
		p.Sleep(5 * time.Second)
		panic("broken invariant")
	})
	err := s.Run()
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Proc != "bad" || pe.Value != "broken invariant" || !strings.Contains(pe.Stack, "sim_test.go") {
		t.Fatalf("Run = %v, want a PanicError from bad with its stack", err)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines %d -> %d: a coroutine outlived its run", before, after)
	}
}

// Goal: a run that does not settle within its step budget fails as such.
func TestStepBudget(t *testing.T) {
	s := New(NewRandom(1), Options{Start: t0, StepsMax: 50})
	s.Spawn("spinner", func(p *Proc) {
		for {
			p.Yield()
		}
	})
	if err := s.Run(); !errors.Is(err, ErrBudget) {
		t.Fatalf("Run = %v, want ErrBudget", err)
	}
	if s.Steps() != 50 {
		t.Errorf("steps = %d, want 50", s.Steps())
	}
}

// Goal: Stop ends the run at the next scheduling point and kills every
// live process, leaving no goroutines behind over many runs: the only ones
// left are idle coroutines in the pool, no more than one run needs.
func TestStopLeavesNothingBehind(t *testing.T) {
	before, idleBefore := runtime.NumGoroutine(), idleCoros()
	for i := range 200 {
		s := newSim(uint64(i))
		for j := range 5 {
			s.Spawn(fmt.Sprint("w", j), func(p *Proc) {
				for {
					p.Sleep(time.Second)
				}
			})
		}
		s.Spawn("stopper", func(p *Proc) {
			p.Sleep(10 * time.Second)
			s.Stop()
		})
		if err := s.Run(); err != nil {
			t.Fatal(err)
		}
		if s.Elapsed() != 10*time.Second {
			t.Fatalf("elapsed = %s, want 10s", s.Elapsed())
		}
	}
	after, idle := runtime.NumGoroutine(), idleCoros()
	if after-before > idle-idleBefore || idle-idleBefore > 6 {
		t.Errorf("goroutines %d -> %d after 200 runs, idle coroutines %d -> %d (6 processes a run)", before, after, idleBefore, idle)
	}
}

// idleCoros counts the coroutines waiting in the pool.
func idleCoros() int {
	coroPool.Lock()
	defer coroPool.Unlock()
	return len(coroPool.free)
}

func sampleTrace(t *testing.T) *Trace {
	t.Helper()
	_, tape, events, _ := runWorld(NewRandom(5))
	return &Trace{
		Header: Header{World: "test", Config: []byte(`{"n":1}`), Seed: 5, Strategy: "random", Model: "m1"},
		Tape:   tape, Events: events, Verdict: []byte(`[]`),
	}
}

// Goal: a trace file round-trips exactly.
func TestTraceRoundTrip(t *testing.T) {
	tr := sampleTrace(t)
	// An event's data is the world's business: the kernel writes it back
	// byte for byte, and it takes part in comparing events.
	tr.Events[0].Data = []byte(`{"kind":"cas","op":"op7","token":4}`)
	b := tr.Bytes()
	got, err := ReadTrace(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Tape, tr.Tape) || !reflect.DeepEqual(got.Events, tr.Events) || got.Header.Seed != 5 {
		t.Fatal("trace did not round-trip")
	}
	if !bytes.Equal(got.Bytes(), b) {
		t.Error("re-written trace differs from the original bytes")
	}
	if !strings.Contains(string(b), `"desc":"t=0.000s p`) {
		t.Errorf("events lack their one-line description:\n%.300s", b)
	}
	if !got.Events[0].Same(tr.Events[0]) {
		t.Error("an event with data differs from itself after a round trip")
	}
	other := got.Events[0]
	other.Data = []byte(`{"kind":"cas","op":"op7","token":5}`)
	if other.Same(tr.Events[0]) {
		t.Error("two events that differ only in their data compare the same")
	}
}

// Goal: a truncated, corrupted or foreign trace gets a clear error.
func TestBadTracesAreRefused(t *testing.T) {
	good := string(sampleTrace(t).Bytes())
	lines := strings.SplitAfter(good, "\n")
	// without is the file without line i.
	without := func(i int) string {
		return strings.Join(append(append([]string{}, lines[:i]...), lines[i+1:]...), "")
	}
	// The first choice with an event after it, and the last event: a
	// missing choice shows at the next event's count, a missing last event
	// only at the end line's counts.
	firstChoice, lastEvent := -1, -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, `{"choice"`) && firstChoice < 0:
			firstChoice = i
		case strings.HasPrefix(l, `{"event"`):
			lastEvent = i
		}
	}
	if firstChoice < 0 || lastEvent < firstChoice {
		t.Fatalf("the sample trace needs a choice before an event:\n%s", good)
	}
	desc := strings.Index(good, `"desc":"`) + len(`"desc":"`)
	tests := []struct {
		name, file, want string
	}{
		{"empty", "", "empty file"},
		{"foreign", `{"hello":"world"}` + "\n", "not a sluicesim-trace/1 file"},
		{"not json", "garbage\n", "not a sluicesim-trace/1 file"},
		{"a header's seed negative", strings.Replace(good, `"seed":`, `"seed":-`, 1), "the header does not read: json: cannot unmarshal number -"},
		{"a header's seed a string", strings.Replace(good, `"seed":`, `"seed":"1","x":`, 1), "the header does not read"},
		{"a header with an unknown field", strings.Replace(good, `"seed":`, `"sead":0,"seed":`, 1), `the header does not read: json: unknown field "sead"`},
		{"truncated", strings.Join(lines[:len(lines)/2], ""), "truncated"},
		{"choice missing", without(firstChoice), "choices came before it, the file has"},
		{"last event missing", without(lastEvent), "the end line counts"},
		{"description edited", good[:desc] + "t=99.000s someone else did something else" + good[desc+strings.Index(good[desc:], `"`):], "is not what the event says"},
		{"corrupt line", strings.Replace(good, `{"choice":{"kind"`, `{"choice":{"kindx"`, 1), "line"},
		{"impossible choice", strings.Replace(good, `"pick":0}`, `"pick":9}`, 1), "impossible choice"},
		{"after end", good + lines[1], "after the end line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadTrace(strings.NewReader(tt.file))
			if err == nil || !errors.Is(err, ErrBadTrace) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadTrace = %v, want an ErrBadTrace mentioning %q", err, tt.want)
			}
		})
	}
}

// Goal: a chance of zero never fires and is not a decision.
func TestZeroChanceNeverFires(t *testing.T) {
	s := newSim(1)
	fired := 0
	s.Spawn("a", func(p *Proc) {
		for range 1000 {
			if s.Chance("never", 0) {
				fired++
			}
		}
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if fired != 0 || len(s.Tape()) != 0 {
		t.Errorf("fired %d times, tape %d long; want 0 and 0", fired, len(s.Tape()))
	}
}

// Goal: Wait ends early when woken, and runs to its timeout otherwise.
func TestWaitAndWake(t *testing.T) {
	s := New(first{}, Options{Start: t0, StepsMax: 1000})
	var woken, timedOut bool
	var wokeAt, timedOutAt time.Duration
	waiter := s.Spawn("waiter", func(p *Proc) {
		woken = p.Wait(10 * time.Second)
		wokeAt = s.Elapsed()
		timedOut = !p.Wait(2 * time.Second)
		timedOutAt = s.Elapsed()
	})
	s.Spawn("waker", func(p *Proc) {
		p.Sleep(3 * time.Second)
		waiter.Wake()
		waiter.Wake() // waking twice is harmless
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if !woken || wokeAt != 3*time.Second {
		t.Errorf("first wait: woken=%v at %s, want woken at 3s", woken, wokeAt)
	}
	if !timedOut || timedOutAt != 5*time.Second {
		t.Errorf("second wait: timed out=%v at %s, want a timeout at 5s (the stale 10s timer must not fire)", timedOut, timedOutAt)
	}
	if s.Elapsed() != 5*time.Second {
		t.Errorf("run ended at %s; want 5s: a stale timer must not move the clock", s.Elapsed())
	}
}

// Goal: PCT runs the highest-priority runnable process: with depth 1 (no
// change points) a process, once chosen, runs until it blocks, and the
// schedule is a pure function of the seed; its tape replays like any other.
func TestPCT(t *testing.T) {
	run := func(strategy Strategy) ([]string, []Choice) {
		var order []string
		s := New(strategy, Options{Start: t0, StepsMax: 10_000})
		for i := range 3 {
			s.Spawn(fmt.Sprint("p", i), func(p *Proc) {
				for j := range 3 {
					order = append(order, fmt.Sprintf("%s:%d", p.Name(), j))
					p.Yield()
				}
			})
		}
		if err := s.Run(); err != nil {
			t.Fatal(err)
		}
		return order, s.Tape()
	}
	order, tape := run(NewPCT(5, 1, 100))
	for i := 0; i < len(order); i += 3 {
		if order[i][:2] != order[i+2][:2] {
			t.Fatalf("depth 1 interleaved processes: %v", order)
		}
	}
	again, _ := run(NewPCT(5, 1, 100))
	if !reflect.DeepEqual(order, again) {
		t.Errorf("same seed, different PCT schedules: %v vs %v", order, again)
	}
	replayed, _ := run(NewReplay(tape))
	if !reflect.DeepEqual(order, replayed) {
		t.Errorf("replay of a PCT tape differs: %v vs %v", order, replayed)
	}
}

// Goal: the tape digest tells tapes apart by any choice's kind, count or
// pick, and agrees on equal tapes.
func TestTapeDigest(t *testing.T) {
	base := []Choice{{Kind: "sched", N: 3, Pick: 1}, {Kind: "fault", N: 2, Pick: 0}}
	same := append([]Choice(nil), base...)
	if TapeDigest(base) != TapeDigest(same) {
		t.Fatal("equal tapes, different digests")
	}
	for i, other := range [][]Choice{
		{{Kind: "sched", N: 3, Pick: 2}, {Kind: "fault", N: 2, Pick: 0}},
		{{Kind: "sched", N: 4, Pick: 1}, {Kind: "fault", N: 2, Pick: 0}},
		{{Kind: "schee", N: 3, Pick: 1}, {Kind: "fault", N: 2, Pick: 0}},
		{{Kind: "sched", N: 3, Pick: 1}},
		{{Kind: "fault", N: 2, Pick: 0}, {Kind: "sched", N: 3, Pick: 1}},
	} {
		if TapeDigest(other) == TapeDigest(base) {
			t.Errorf("tape %d: same digest as a different tape", i)
		}
	}
}
