package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"
)

// forEachSeed is the one parallel seed runner of every mode that runs many
// seeds (a seed range, a mutant's hunt for its first kill, a time-bounded
// run): do(k) runs for k = 0, 1, ... n-1 on at most parallel goroutines,
// each index once, claimed in increasing order. Before each claim, stop(k)
// (if not nil) may end the run: no index is claimed after the first that
// stop refused, and the runs already started finish. Claims and stop are
// decided together under one lock, so the indices run are always 0..K-1
// for some K (a time budget never leaves a hole below the last seed run).
// It returns K. Each run stays single-threaded inside the simulator; only
// whole runs go side by side. watch (if not nil) ends the process when one
// run outlasts its timeout.
func forEachSeed(n, parallel int, stop func(k int) bool, watch *seedWatch, do func(k int)) int {
	var mu sync.Mutex
	next, stopped := 0, false
	claim := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if stopped || next >= n {
			return 0, false
		}
		if stop != nil && stop(next) {
			stopped = true
			return 0, false
		}
		next++
		return next - 1, true
	}
	defer watch.start()()
	var wg sync.WaitGroup
	for range min(parallel, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k, ok := claim()
				if !ok {
					return
				}
				watch.begin(k)
				do(k)
				watch.end(k)
			}
		}()
	}
	wg.Wait()
	return next
}

// seedWatch is the watchdog of a seed range: a seed is a few milliseconds
// of work in memory and about a second on PostgreSQL, so one that runs for
// minutes is a hang (a store call that never returns, a lock never
// released), and a run that waits for it would wait for ever, silent. The
// watch says which seed, how to run it alone and where every goroutine
// stands, then exits exitHung: the seeds in flight cannot be stopped, and
// no summary of a range with a hole in it would be honest. It reads the
// wall clock, outside the simulator.
type seedWatch struct {
	timeout time.Duration
	// name says which run index k is and how to run it alone.
	name func(k int) string
	out  io.Writer
	exit func(code int) // os.Exit; a test's stub returns

	mu    sync.Mutex
	began map[int]time.Time
	done  int
	fired bool
}

// watch is the watchdog of the options' -seed-timeout (nil when 0).
func (o *options) watch(stderr io.Writer, name func(k int) string) *seedWatch {
	if o.seedTimeout <= 0 {
		return nil
	}
	return &seedWatch{timeout: o.seedTimeout, name: name, out: stderr, exit: os.Exit}
}

// watchRange is the watchdog of a range of seeds from -seed-start of one
// world (and mutant).
func (o *options) watchRange(stderr io.Writer, world, mutant string) *seedWatch {
	return o.watch(stderr, func(k int) string { return o.seedName(world, mutant, o.seedStart+uint64(k)) })
}

// seedName names a seed for the watchdog, with the command that runs it
// alone (watched too, with its events traced).
func (o *options) seedName(world, mutant string, seed uint64) string {
	rp := o.reproOf(world, mutant, seed)
	return fmt.Sprintf("seed %d of world %s (%s store; run it alone: %s%s)", seed, rp.label(), o.storeKind, exploreCmd, rp.flags())
}

func (s *seedWatch) begin(k int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.began[k] = time.Now()
	s.mu.Unlock()
}

func (s *seedWatch) end(k int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	delete(s.began, k)
	s.done++
	s.mu.Unlock()
}

// start begins watching and returns the function that stops it. It looks
// a few times per timeout, at least once a second (at most once a
// millisecond).
func (s *seedWatch) start() (stop func()) {
	if s == nil {
		return func() {}
	}
	s.began = map[int]time.Time{}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(max(min(s.timeout/4, time.Second), time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-tick.C:
				s.check(now)
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// check fires for the lowest run index in flight past the timeout, once.
func (s *seedWatch) check(now time.Time) {
	s.mu.Lock()
	hung, since := -1, time.Time{}
	for k, t := range s.began {
		if now.Sub(t) >= s.timeout && (hung < 0 || k < hung) {
			hung, since = k, t
		}
	}
	if hung < 0 || s.fired {
		s.mu.Unlock()
		return
	}
	s.fired = true
	done := s.done
	s.mu.Unlock()
	fmt.Fprintf(s.out, "\nexplore: %s has run %s without finishing (-seed-timeout %s; %d runs finished before): "+
		"the core, the world or the store hangs. Every goroutine's stack follows; exit %d.\n",
		s.name(hung), now.Sub(since).Round(time.Second), s.timeout, done, exitHung)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	s.out.Write(buf)
	s.exit(exitHung)
}
