package main

import (
	"sync"
	"sync/atomic"
)

// forEachSeed is the one parallel seed runner of every mode that runs many
// seeds (a seed range, a mutant's hunt for its first kill): do(k) runs for
// k = 0, 1, ... n-1 on at most parallel goroutines, each index once, claimed
// in increasing order. Before each claim, stop(k) (if not nil) may end that
// goroutine: the runs already started finish. Each run stays
// single-threaded inside the simulator; only whole runs go side by side.
func forEachSeed(n, parallel int, stop func(k int) bool, do func(k int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(parallel, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= n || stop != nil && stop(k) {
					return
				}
				do(k)
			}
		}()
	}
	wg.Wait()
}
