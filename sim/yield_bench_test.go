package sim

import "testing"

// BenchmarkYieldAlone is a yield point with nothing else runnable: the
// process decides and goes on without a coroutine switch.
func BenchmarkYieldAlone(b *testing.B) { benchYields(b, 1) }

// BenchmarkYieldAmongTwo is a yield point with another process runnable:
// a scheduling choice, and a switch to the other process half the time.
func BenchmarkYieldAmongTwo(b *testing.B) { benchYields(b, 2) }

func benchYields(b *testing.B, procs int) {
	const perRun = 10_000
	b.ReportAllocs()
	for b.Loop() {
		s := New(NewRandom(1), Options{Start: t0, StepsMax: 1 << 30})
		for range procs {
			s.Spawn("p", func(p *Proc) {
				for range perRun / procs {
					p.Yield()
				}
			})
		}
		if err := s.Run(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perRun), "ns/yield")
}
