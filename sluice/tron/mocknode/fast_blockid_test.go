package mocknode

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// refBlockID is forkBlockID written out plainly: the definition.
func refBlockID(number int64, t time.Time, parent [32]byte, ids []tron.Txid, fork int) [32]byte {
	b := []byte("mocknode-block-v1")
	if fork > 0 {
		b = append(b, "-fork"...)
		b = binary.BigEndian.AppendUint64(b, uint64(fork))
	}
	b = binary.BigEndian.AppendUint64(b, uint64(number))
	b = binary.BigEndian.AppendUint64(b, uint64(t.UnixMilli()))
	b = append(b, parent[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		b = append(b, id[:]...)
	}
	return sha256.Sum256(b)
}

// Goal: the block id cache never changes an id, and an id is the same
// whether it was looked up or not. Inputs are drawn from a
// small pool so that most repeat (hits), many collide in a slot (the cache
// holds 4,096), some have too many txids to be cached, and four goroutines
// ask at once (run with -race).
func TestBlockIDCacheIsExact(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range 20000 {
				number := int64(r.IntN(6000))
				at := time.UnixMilli(1_700_000_000_000 + number*3000 + int64(r.IntN(2)))
				var parent [32]byte
				parent[r.IntN(32)] = byte(r.IntN(3))
				ids := make([]tron.Txid, r.IntN(11)) // above 8: never cached
				for i := range ids {
					ids[i][r.IntN(32)] = byte(1 + r.IntN(2))
				}
				fork := r.IntN(3)
				want := refBlockID(number, at, parent, ids, fork)
				for _, remember := range []bool{true, false} {
					if got := forkBlockID(number, at, parent, ids, fork, remember); got != want {
						t.Errorf("forkBlockID(%d, %v, %x, %d ids, fork %d, remember %v) = %x, want %x", number, at, parent, len(ids), fork, remember, got, want)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
