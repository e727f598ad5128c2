package sim

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// Goal: a process that takes the next scheduling decision itself when it
// parks (and goes on without a coroutine switch when it picks itself) runs
// exactly what the kernel that always switched ran: the same choices, the
// same events, the same observer calls, the same clock, the same ending.
// Random programs mix yields, sleeps, waits and wakes, spawns, choices,
// crashes, stops, panics, step budgets and observers that prune.
func TestParkDecidesAsTheKernelWould(t *testing.T) {
	const programs = 400
	inline := 0
	ends := map[string]int{}
	for prog := range programs {
		seed := uint64(prog)
		for _, strategy := range []string{"random", "pct"} {
			want := runRandomProgram(seed, strategy, true)
			got := runRandomProgram(seed, strategy, false)
			if d := firstDifference(want, got, "always switch", "park decides"); d != "" {
				t.Fatalf("program %d (%s): deciding in park changed the run: %s", prog, strategy, d)
			}
			if got.Resumes > got.Steps {
				t.Fatalf("program %d: %d resumes for %d steps", prog, got.Resumes, got.Steps)
			}
			inline += got.Steps - got.Resumes
			switch {
			case got.PanicProc != "":
				ends["a panic"]++
			case got.Err == "":
				ends["a clean end"]++
			default:
				ends[got.Err]++
			}
		}
	}
	// The point of it: most steps of a lone process need no switch.
	for _, end := range []string{"a panic", "a clean end", ErrBudget.Error(), ErrPruned.Error()} {
		if ends[end] == 0 {
			t.Errorf("no program ended in %s", end)
		}
	}
	if inline == 0 {
		t.Error("no step ever went on without a coroutine switch")
	}
}

// Goal: the kernel's direct draws for a bare *Random (a Chance, a
// scheduling pick) are exactly what Random.Pick answers when asked through
// the Strategy interface: the same tape, and so the same run, whatever the
// program does.
func TestDirectDrawsAreRandomPicks(t *testing.T) {
	decisions := 0
	for prog := range 400 {
		seed := uint64(prog)
		for _, alwaysSwitch := range []bool{false, true} {
			want := runRandomProgram(seed, "random", alwaysSwitch)
			got := runRandomProgram(seed, "random-direct", alwaysSwitch)
			if len(got.Asks) != 0 {
				t.Fatalf("program %d: a bare Random was asked through the interface", prog)
			}
			decisions += len(want.Asks)
			want.Asks = nil
			if d := firstDifference(want, got, "asked", "drawn directly"); d != "" {
				t.Fatalf("program %d (always switch %v): drawing directly changed the run: %s", prog, alwaysSwitch, d)
			}
		}
	}
	if decisions == 0 {
		t.Error("no program made a decision")
	}
}

// programRun is everything a run shows outside the kernel.
type programRun struct {
	Tape      []Choice
	Events    []string
	Observer  []string
	Asks      []string
	Log       []string
	Steps     int
	Elapsed   time.Duration
	Err       string
	Resumes   int // compared only against Steps: fewer is the point
	Finished  []bool
	PanicProc string
}

// pruneObserver records every call and ends the run after a number of
// steps, as exhaustive search prunes a redundant one.
type pruneObserver struct {
	log   *[]string
	limit int
	n     int
}

func (o *pruneObserver) StepStart(proc int) bool {
	o.n++
	*o.log = append(*o.log, fmt.Sprint("start ", proc))
	return o.limit == 0 || o.n < o.limit
}

func (o *pruneObserver) StepDone(proc int, fp []Access) {
	*o.log = append(*o.log, fmt.Sprint("done ", proc, fp))
}

// askLog passes decisions on and records what each was asked, the
// runnable processes and the last step's process included.
type askLog struct {
	Strategy
	log *[]string
}

func (a askLog) Pick(q Ask, at int) (int, error) {
	*a.log = append(*a.log, fmt.Sprint(q.Kind, q.N, q.Procs, q.Current, at))
	return a.Strategy.Pick(q, at)
}

func runRandomProgram(seed uint64, strategy string, alwaysSwitch bool) programRun {
	gen := rand.New(rand.NewPCG(seed, 7)) // the program's shape, not the run's choices
	var st Strategy = NewRandom(seed)
	if strategy == "pct" {
		st = NewPCT(seed, 3, 200)
	}
	var out programRun
	o := Options{Start: t0, StepsMax: 40 + gen.IntN(400), Tracing: true}
	if gen.IntN(3) == 0 {
		o.Observer = &pruneObserver{log: &out.Observer, limit: gen.IntN(150)}
	}
	// Half the programs never stop or panic, so that they run into the
	// step budget or end quiet.
	endings := gen.IntN(2) == 0
	if strategy != "random-direct" {
		// Behind a wrapper the kernel asks the strategy through its
		// interface; a bare *Random it draws from directly.
		st = askLog{st, &out.Asks}
	}
	s := New(st, o)
	s.alwaysSwitch = alwaysSwitch
	var procs []*Proc
	var body func(depth int) func(p *Proc)
	body = func(depth int) func(p *Proc) {
		ops := make([]int, 5+gen.IntN(40))
		for i := range ops {
			ops[i] = gen.IntN(100)
		}
		return func(p *Proc) {
			logf := func(f string, a ...any) {
				out.Log = append(out.Log, fmt.Sprintf("%s@%s: ", p.Name(), s.Elapsed())+fmt.Sprintf(f, a...))
			}
			for i, op := range ops {
				switch {
				case op < 30:
					p.Yield()
				case op < 50:
					p.Sleep(time.Duration(op%4) * time.Millisecond)
				case op < 58:
					logf("woken %v", p.Wait(time.Duration(op%3+1)*time.Millisecond))
				case op < 66:
					if len(procs) > 0 {
						procs[(i*7+op)%len(procs)].Wake()
					}
				case op < 76:
					logf("chose %d", s.Choose("x", 1+op%4))
					s.Event(fmt.Sprint("event ", p.Name(), i))
				case op < 84:
					s.Touch(fmt.Sprint("k", op%3), op%2 == 0)
				case op < 90:
					if depth < 2 && len(procs) < 30 {
						procs = append(procs, s.Spawn(fmt.Sprintf("%s.%d", p.Name(), i), body(depth+1)))
					}
				case op < 94:
					// Some with no such fault: 0, or a NaN, which
					// both ways must leave off the tape.
					if s.Chance("crash", [...]float64{0.3, math.NaN(), 0.3, 0}[op%4]) {
						logf("crash")
						p.Crash()
					}
				case op < 96 && endings:
					s.Stop()
				case op < 97 && endings:
					panic(fmt.Sprint("boom ", p.Name()))
				default:
					p.ExitIfDead()
				}
			}
			logf("end")
		}
	}
	for i := range 1 + gen.IntN(5) {
		procs = append(procs, s.Spawn(fmt.Sprint("p", i), body(0)))
	}
	err := s.Run()
	out.Tape = append([]Choice(nil), s.Tape()...)
	for _, e := range s.Events() {
		out.Events = append(out.Events, fmt.Sprintf("%d %d %s %s %s", e.Step, e.Tape, e.At, e.Proc, e.Text))
	}
	out.Steps, out.Elapsed, out.Resumes = s.Steps(), s.Elapsed(), s.resumes
	if err != nil {
		out.Err = err.Error()
		var pe *PanicError
		if errors.As(err, &pe) {
			out.Err, out.PanicProc = fmt.Sprint(pe.Value), pe.Proc
		}
	}
	for _, p := range procs {
		out.Finished = append(out.Finished, p.finished)
	}
	return out
}

// firstDifference names the first field in which two runs differ, and where
// (wn and gn name the two runs).
func firstDifference(want, got programRun, wn, gn string) string {
	w, g := reflect.ValueOf(want), reflect.ValueOf(got)
	for i := range w.NumField() {
		name := w.Type().Field(i).Name
		if name == "Resumes" {
			continue
		}
		a, b := w.Field(i).Interface(), g.Field(i).Interface()
		if reflect.DeepEqual(a, b) {
			continue
		}
		if w.Field(i).Kind() == reflect.Slice {
			x, y := w.Field(i), g.Field(i)
			for j := range min(x.Len(), y.Len()) {
				if !reflect.DeepEqual(x.Index(j).Interface(), y.Index(j).Interface()) {
					return fmt.Sprintf("%s[%d]: %s %v, %s %v", name, j, wn, x.Index(j), gn, y.Index(j))
				}
			}
			return fmt.Sprintf("%s: %s has %d, %s %d", name, wn, x.Len(), gn, y.Len())
		}
		return fmt.Sprintf("%s: %s %v, %s %v", name, wn, a, gn, b)
	}
	return ""
}

// Goal: a process that crashed itself (Crash) and whose deferred code
// yields on the way out unwinds at that yield, whether or not another
// process is runnable then: a dead process has no further effect, and the
// park that picks the same process again must not differ from a switch.
func TestSelfCrashedProcessUnwindsAtItsNextYield(t *testing.T) {
	for _, alone := range []bool{true, false} {
		for _, alwaysSwitch := range []bool{false, true} {
			s := New(first{}, Options{Start: t0, StepsMax: 100})
			s.alwaysSwitch = alwaysSwitch
			effects := 0
			s.Spawn("w", func(p *Proc) {
				defer func() {
					p.Yield() // deferred world code that yields before it checks Dead
					effects++
				}()
				p.Crash()
			})
			if !alone {
				s.Spawn("other", func(p *Proc) { p.Yield() })
			}
			if err := s.Run(); err != nil {
				t.Fatalf("alone %v, always switch %v: %v", alone, alwaysSwitch, err)
			}
			if effects != 0 {
				t.Errorf("alone %v, always switch %v: the crashed process's deferred code ran past its yield", alone, alwaysSwitch)
			}
		}
	}
}
