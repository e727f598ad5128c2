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

// Goal: IDChains.Grow gives every caller the same list for a key, each
// entry computed once from those before it, while goroutines grow the
// lists of a few keys at once and read what they were given without a
// lock (run with -race: make test does; an unlocked Grow races here).
func TestIDChainsGrowConcurrently(t *testing.T) {
	// next chains each entry to the one before it, as the mock node's
	// block ids are, so an entry computed from a torn or stale list
	// differs from the definition.
	next := func(key int64) func(i int, list [][32]byte) [32]byte {
		return func(i int, list [][32]byte) [32]byte {
			var b [40]byte
			if i > 0 {
				copy(b[:], list[i-1][:])
			}
			b[32], b[33] = byte(key), byte(i)
			return sha256.Sum256(b[:])
		}
	}
	want := func(key int64, n int) [][32]byte {
		var list [][32]byte
		for i := range n {
			list = append(list, next(key)(i, list))
		}
		return list
	}
	wants := map[int64][][32]byte{}
	for key := range int64(3) {
		wants[key] = want(key, 600)
	}
	var c IDChains
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 3))
			for range 400 {
				key, n := int64(r.IntN(3)), 1+r.IntN(600)
				list := c.Grow(key, n, next(key))
				if len(list) < n {
					t.Errorf("Grow(%d, %d) has %d entries", key, n, len(list))
					return
				}
				for i, id := range list {
					if id != wants[key][i] {
						t.Errorf("Grow(%d, %d): entry %d is %x, want %x", key, n, i, id, wants[key][i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
