package main

import (
	"sync"
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
// whole runs go side by side.
func forEachSeed(n, parallel int, stop func(k int) bool, do func(k int)) int {
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
				do(k)
			}
		}()
	}
	wg.Wait()
	return next
}
