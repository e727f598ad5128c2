package reports

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
)

// BenchmarkWrite10000Seeds renders a report summarizing 10,000 chaos seeds:
// histograms at that scale, the step counts of every seed, and four traced
// failures (two real ones, each shown twice). A 10,000-seed run takes about
// 50 s on the 2-core machine; the report must add well under 5% (2.5 s).
func BenchmarkWrite10000Seeds(b *testing.B) {
	base := fixtureRuns(b)
	r := *base["chaos-check-then-insert"]
	rng := rand.New(rand.NewPCG(1, 2)) // synthetic, fixed: a benchmark input
	const seeds = 10000
	r.Seeds, r.SeedsRun, r.SeedsFailed = seeds, seeds, 4
	r.StepsPerSeed = make([]int, seeds)
	for i := range r.StepsPerSeed {
		r.StepsPerSeed[i] = 4000 + rng.IntN(1500)
	}
	// 60 withdrawals a seed: 600,000 operations, most confirmed in 10-200 s.
	r.ConfirmSeconds = make([]int, 1300)
	r.Rebuilds = make([]int, 6)
	for range seeds * 60 {
		r.ConfirmSeconds[10+rng.IntN(190)]++
		r.Rebuilds[min(rng.IntN(40), 5)]++
	}
	for i := range r.Transitions {
		for j := range r.Transitions[i] {
			if sluice.CanTransition(sluice.State(i), sluice.State(j)) {
				r.Transitions[i][j] = r.Transitions[i][j] * seeds / 3
			}
		}
	}
	z := base["zombies-send-before-write-ahead"].Failures[0]
	f0 := r.Failures[0]
	f1, f2 := f0, z
	f1.Seed, f2.Seed = 11, 12
	// Each copy carries its trace under its own seed's name: Write refuses
	// two failures that would write one file.
	f1.TraceFile = strings.Replace(f0.TraceFile, fmt.Sprintf("seed%d.", f0.Seed), "seed11.", 1)
	f2.TraceFile = strings.Replace(z.TraceFile, fmt.Sprintf("seed%d.", z.Seed), "seed12.", 1)
	r.Failures = []Failure{f0, z, f1, f2}
	r.Elapsed = 50 * time.Second
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Write(dir, &r); err != nil {
			b.Fatal(err)
		}
	}
}
