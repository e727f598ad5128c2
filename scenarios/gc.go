package scenarios

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The collector's setting for exploration. Runs allocate briskly and keep
// little: a chaos seed allocates about 1.7 MB and its live heap is a few
// megabytes, gone when it ends. The collector's cost is per cycle (marking
// what is live, re-growing the coroutine stacks it shrank, assists), so the
// fewer cycles the better while the heap stays small in absolute terms. At
// the default of GOGC=100 the collector and scavenger took about a third
// of a chaos seed's CPU; at GOGC=400, a cycle every few dozen megabytes,
// about 15% of explore's; with a floor of BatchHeapFloor, a cycle every
// ~150 MB, `explore -seeds 4000` ran 15-20% faster on two cores again.
const (
	// BatchHeapFloor is the heap the collector lets grow before it runs,
	// however little is live (a memory limit with GOGC off).
	BatchHeapFloor = 160 << 20
	// BatchGCPercent is the proportional setting a run falls back to once
	// its live heap is large (an exhaustive search's seen-state table can
	// reach hundreds of megabytes): a fixed floor would then make the
	// collector run back to back.
	BatchGCPercent = 400
)

// BatchGC sets the collector for exploration unless the user set GOGC or
// GOMEMLIMIT, and returns what restores the previous settings. cmd/explore
// calls it at startup and the benchmarks call it too, so that they measure
// what explore does.
//
// It starts with GOGC off and a memory limit of BatchHeapFloor, and watches
// the heap that each collection finds live: once that passes a fifth of the
// floor (where GOGC=400 would put its own goal above the floor anyway), it
// switches to GOGC=400 with no limit for the rest of the process.
func BatchGC() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	oldPercent := debug.SetGCPercent(-1)
	oldLimit := debug.SetMemoryLimit(BatchHeapFloor)
	w := &gcWatch{}
	w.arm()
	return func() {
		w.mu.Lock()
		w.stopped = true
		w.mu.Unlock()
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}
}

// gcWatch hears about every collection (a finalizer on an unreachable
// sentinel runs after the cycle that found it dead) until it stops.
type gcWatch struct {
	mu      sync.Mutex
	stopped bool
	sample  [1]metrics.Sample
}

// sentinel is an object of its own so that the finalizer is attached to a
// fresh allocation each cycle (a tiny allocation could share a block with
// something live and never be collected).
type sentinel struct{ _ [16]byte }

func (w *gcWatch) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) { w.cycle() })
}

// cycle runs on the finalizer goroutine after a collection.
func (w *gcWatch) cycle() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if liveHeap(&w.sample) > BatchHeapFloor/(1+BatchGCPercent/100) {
		w.stopped = true
		debug.SetGCPercent(BatchGCPercent)
		debug.SetMemoryLimit(math.MaxInt64)
		return
	}
	w.arm()
}

// liveHeap is the heap the last collection marked live.
func liveHeap(s *[1]metrics.Sample) uint64 {
	s[0].Name = "/gc/heap/live:bytes"
	metrics.Read(s[:])
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
