//go:build race

package main

// raceDetector: the test binary runs under the race detector, which makes
// every simulated seed several times slower. Tests that run thousands of
// seeds to check sums (not goroutines) scale down under it; the plain pass
// of make test runs them whole.
const raceDetector = true
