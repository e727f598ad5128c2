package tron

import (
	"crypto/sha256"
	"math/rand/v2"
	"sync"
	"testing"
)

// Goal: SHA256Memo.Sum is sha256.Sum256, whatever was asked before: inputs
// from a pool of 6,144 (each asked about five times: hits; more than the
// 4,096 slots: collisions), of every length around the limit (too long:
// never remembered), many differing only in their second half, from four
// goroutines at once (run with -race).
func TestSHA256MemoIsSum256(t *testing.T) {
	// 24 random bases, each in 256 variants that differ in a few bytes of
	// the second half: variants of one base collide in a slot now and
	// then, and only a comparison of every byte tells them apart.
	r := rand.New(rand.NewPCG(1, 9))
	var pool [][]byte
	for range 24 {
		base := make([]byte, 2+r.IntN(MemoKeyMax+7))
		for j := range base {
			base[j] = byte(r.Uint32())
		}
		for range 256 {
			b := append([]byte(nil), base...)
			for range 3 {
				b[len(b)/2+r.IntN(len(b)-len(b)/2)] = byte(r.Uint32())
			}
			pool = append(pool, b)
		}
	}
	var m SHA256Memo
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for range 8000 {
				b := pool[r.IntN(len(pool))]
				if got, want := m.Sum(b), sha256.Sum256(b); got != want {
					t.Errorf("Sum(%x) = %x, want %x", b, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
