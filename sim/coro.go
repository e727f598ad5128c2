package sim

import (
	"iter"
	"sync"
)

// coro is a coroutine that runs process bodies one after another. A chaos
// run spawns a process per HTTP request, and a fresh coroutine each time
// cost a goroutine, its closures, and stack growth from the minimum through
// JSON decoding (runtime.newstack was about a tenth of a seed's CPU).
// Finished processes hand their coroutine back to a pool shared by every
// Sim in the program; a coroutine carries no state from one body to the
// next (job is cleared before the body runs), so which coroutine runs a
// process cannot change what the process does.
type coro struct {
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool
	job   *Proc // the process to run when next resumes an idle coroutine
}

// coroPoolMax bounds the idle coroutines kept: about the most processes a
// chaos run has alive at once, times the explorer's parallelism, with room.
const coroPoolMax = 512

var coroPool struct {
	sync.Mutex
	free []*coro
}

// getCoro returns an idle coroutine: resuming it runs c.job to its end,
// then it yields once more and waits for the next job.
func getCoro() *coro {
	coroPool.Lock()
	if n := len(coroPool.free); n > 0 {
		c := coroPool.free[n-1]
		coroPool.free[n-1] = nil
		coroPool.free = coroPool.free[:n-1]
		coroPool.Unlock()
		return c
	}
	coroPool.Unlock()
	c := &coro{}
	c.next, c.stop = iter.Pull(func(yield func(struct{}) bool) {
		c.yield = yield
		for {
			job := c.job
			c.job = nil
			job.body()
			// Idle: the body returned. Resumed again, it runs the next job;
			// stopped (the pool was full), it ends.
			if !yield(struct{}{}) {
				return
			}
		}
	})
	return c
}

// putCoro makes c idle again: its last body has returned (or never
// started), so it holds no process.
func putCoro(c *coro) {
	c.job = nil
	coroPool.Lock()
	if len(coroPool.free) < coroPoolMax {
		coroPool.free = append(coroPool.free, c)
		coroPool.Unlock()
		return
	}
	coroPool.Unlock()
	c.stop()
}
