package sim

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Goal: Random draws from its PCG exactly what a rand.Rand over the same
// PCG draws for IntN and Float64, in any mix of the two, so that every
// seed's tape is what it was when Random asked a rand.Rand.
func TestRandomDrawsAsRand(t *testing.T) {
	if ^uint(0)>>32 == 0 {
		t.Skip("rand.Rand draws small bounds differently on 32-bit platforms")
	}
	bounds := []int{1, 2, 3, 5, 6, 7, 10, 13, 64, 100, 1000, 1 << 30, 3 << 40, 1<<62 + 3, math.MaxInt}
	for seed := uint64(0); seed < 200; seed++ {
		r := NewRandom(seed)
		ref := rand.New(rand.NewPCG(seed, 0x5eed_51c3_d00d_f00d))
		for i := range 500 {
			if i%7 == 3 {
				if got, want := r.float64(), ref.Float64(); got != want {
					t.Fatalf("seed %d draw %d: float64 %v, rand.Rand %v", seed, i, got, want)
				}
				continue
			}
			n := bounds[(i*int(seed+1))%len(bounds)]
			if got, want := r.intN(n), ref.IntN(n); got != want {
				t.Fatalf("seed %d draw %d: intN(%d) %d, rand.Rand %d", seed, i, n, got, want)
			}
		}
	}
}
