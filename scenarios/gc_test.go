package scenarios

import (
	"math"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

// gcSettings reads GOGC and the memory limit without changing them.
func gcSettings() (percent int, limit int64) {
	percent = debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// Goal: exploration collects rarely while little is live (GOGC off under a
// floor), falls back to proportional collection once a run keeps a large
// heap (so a big exhaustive search does not make the collector run back to
// back), and restores what was set before.
func TestBatchGCFloorThenProportional(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	p0, l0 := gcSettings()
	restore := BatchGC()
	if p, l := gcSettings(); p != -1 || l != BatchHeapFloor {
		t.Fatalf("after BatchGC: GOGC %d, limit %d; want off and %d", p, l, BatchHeapFloor)
	}
	// A few collections with little live change nothing.
	for range 3 {
		runtime.GC()
	}
	if p, l := gcSettings(); p != -1 || l != BatchHeapFloor {
		t.Fatalf("small heap: GOGC %d, limit %d; want off and %d", p, l, BatchHeapFloor)
	}
	// Keep more than a fifth of the floor live: the next collection's
	// watcher switches to GOGC=400 without a limit. The finalizer runs on
	// its own goroutine after the cycle, so give it a few cycles.
	big := make([]byte, BatchHeapFloor/4)
	for i := range big {
		big[i] = byte(i)
	}
	switched := false
	for range 50 {
		runtime.GC()
		if p, l := gcSettings(); p == BatchGCPercent && l == math.MaxInt64 {
			switched = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(big)
	if !switched {
		p, l := gcSettings()
		t.Fatalf("large live heap: GOGC %d, limit %d; want %d and no limit", p, l, BatchGCPercent)
	}
	restore()
	if p, l := gcSettings(); p != p0 || l != l0 {
		t.Fatalf("restored GOGC %d, limit %d; want %d, %d", p, l, p0, l0)
	}
}

// Goal: a user's own GOGC or GOMEMLIMIT wins.
func TestBatchGCLeavesUserSettings(t *testing.T) {
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv(env, "200")
			p0, l0 := gcSettings()
			restore := BatchGC()
			if p, l := gcSettings(); p != p0 || l != l0 {
				t.Errorf("%s set: BatchGC changed GOGC %d -> %d, limit %d -> %d", env, p0, p, l0, l)
			}
			restore()
		})
	}
}

// benchGC is BatchGC for a benchmark, with the heap's pages already
// touched: under the floor the heap grows to about BatchHeapFloor before
// the first collection, and a long explore run pays that growth (page
// faults) once in thousands of seeds, while a one-second benchmark would
// pay all of it in whichever benchmark happens to run first.
func benchGC() (restore func()) {
	restore = BatchGC()
	warmHeap.Do(func() {
		var keep [][]byte
		for n := 0; n < BatchHeapFloor*9/10; n += 1 << 20 {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			keep = append(keep, b)
		}
		runtime.KeepAlive(keep)
		keep = nil
		runtime.GC()
	})
	return restore
}

var warmHeap sync.Once
