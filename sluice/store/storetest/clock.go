package storetest

import (
	"fmt"
	"sync"
	"time"
)

// Epoch is where every Clock starts: a fixed instant, so that times in test
// failures are the same on every run.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Clock is a manual clock for the store under test (the database's now()).
// Time moves only when the test says so, which is what lets the suite hit a
// lease's expiry to the nanosecond. The zero value reads Epoch. It is safe
// for concurrent use, since stores under test may be hit from goroutines.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration // since Epoch
}

// Now returns the current instant, in UTC.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Epoch.Add(c.offset)
}

// Advance moves the clock forward by d. Moving backwards is refused, since
// a test that does it by accident would test nothing it meant to; use Set.
func (c *Clock) Advance(d time.Duration) {
	if d < 0 {
		panic(fmt.Sprintf("storetest.Clock.Advance(%s): negative duration; use Set to move back", d))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// Set moves the clock to t, in either direction.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = t.Sub(Epoch)
}
