// Package tiny is benchab's test subject: two quick benchmarks, one with
// sub-benchmarks and a custom unit.
package tiny

import "testing"

var sink int

func BenchmarkSum(b *testing.B) {
	for b.Loop() {
		s := 0
		for i := range 1000 {
			s += i
		}
		sink = s
	}
}

func BenchmarkSizes(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(map[int]string{10: "small", 100: "large"}[n], func(b *testing.B) {
			for b.Loop() {
				sink = len(make([]byte, n))
			}
			b.ReportMetric(float64(n), "bytes/op")
		})
	}
}
