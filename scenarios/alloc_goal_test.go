package scenarios

import (
	"runtime"
	"testing"
)

// chaosAllocGoal is issue 17's goal for a chaos seed's allocations.
const chaosAllocGoal = 5000

// Goal: a chaos seed stays within issue 17's allocation goal. It was met
// at 3,735 and then crept to 5,162 over the trust work of later sessions
// (the look at every page, the park checks) without anyone re-measuring:
// an allocation count, unlike a time, is the same on any machine and in
// any load, so a test can hold it where a timed test could not. Seeds
// 21 to 220 after twenty that fill the pools, counted process-wide (no
// other test runs meanwhile: parallel tests wait for the sequential ones).
func TestChaosSeedAllocationsWithinTheGoal(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	cfg := Chaos()
	for seed := uint64(1); seed <= 20; seed++ {
		Run(cfg, seed, Options{})
	}
	const n = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for seed := uint64(21); seed < 21+n; seed++ {
		Run(cfg, seed, Options{})
	}
	runtime.ReadMemStats(&after)
	per := float64(after.Mallocs-before.Mallocs) / n
	if per > chaosAllocGoal {
		t.Errorf("a chaos seed makes %.0f allocations (seeds 21 to %d), over issue 17's goal of %d: profile with go test -bench 'ChaosSeed$' -memprofile", per, 20+n, chaosAllocGoal)
	}
	t.Logf("%.0f allocations a chaos seed (goal %d)", per, chaosAllocGoal)
}
