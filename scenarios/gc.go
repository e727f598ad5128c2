package scenarios

import (
	"os"
	"runtime/debug"
)

// BatchGCPercent is the collector's setting for exploration. Runs allocate
// briskly and keep little (a seed's live heap is a few megabytes, gone when
// it ends), so at the default of 100 the collector and the scavenger took
// about a third of a chaos seed's CPU; at 400 the heap between collections
// is a few dozen megabytes and they take a tenth.
const BatchGCPercent = 400

// BatchGC applies BatchGCPercent unless the user set GOGC, and returns
// what restores the previous setting. cmd/explore calls it at startup and
// the benchmarks call it too, so that they measure what explore does.
func BatchGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(BatchGCPercent)
	return func() { debug.SetGCPercent(old) }
}
