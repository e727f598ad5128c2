package tron

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"
)

// randomRaw is one of a small pool of raw_data (so that the caches see
// repeats and collisions), sometimes with a memo too long to be cached.
func randomRaw(r *rand.Rand) RawData {
	memo := []byte("sluice:0b0e4c1e-8f7a-4a55-9d8f-2a8f5d5a6f01:1")
	memo[len(memo)-1] = byte('0' + r.IntN(10))
	if r.IntN(20) == 0 {
		memo = bytes.Repeat(memo, 8)
	}
	return RawData{
		RefBlockBytes: [2]byte{byte(r.IntN(3))},
		Expiration:    int64(r.IntN(4)),
		Timestamp:     int64(r.IntN(4)),
		FeeLimit:      30_000_000,
		Memo:          memo,
		Contract:      TriggerSmartContract{Owner: USDTContract, Contract: USDTContract, Data: EncodeTransfer(USDTContract, uint64(r.IntN(3)))},
	}
}

// Goal: a TxidCache answers RawData.Txid whatever it saw before, including
// a raw_data whose memo was changed in place after it was hashed: the zero
// value, and sized ones (NewTxidCache) from one slot to more than the pool
// of raw_data the test draws from.
func TestTxidCacheMatchesTxid(t *testing.T) {
	for _, n := range []int{0, 1, 3, 64, 1 << 20} {
		r := rand.New(rand.NewPCG(5, 6))
		c := &TxidCache{}
		if n > 0 {
			c = NewTxidCache(n)
		}
		for i := range 20000 {
			raw := randomRaw(r)
			if got, want := c.Txid(&raw), raw.Txid(); got != want {
				t.Fatalf("room %d, step %d: cached %s, want %s", n, i, got, want)
			}
			raw.Memo[r.IntN(len(raw.Memo))] ^= 1 << r.IntN(8)
			if got, want := c.Txid(&raw), raw.Txid(); got != want {
				t.Fatalf("room %d, step %d, memo changed in place: cached %s, want %s", n, i, got, want)
			}
		}
	}
}

// Goal: NewTxidCache(n) has room for at least n (up to its bound of
// 1,024), in a power of two of slots, and the zero value four.
func TestTxidCacheRoom(t *testing.T) {
	raw := randomRaw(rand.New(rand.NewPCG(1, 2)))
	for _, c := range []struct{ n, want int }{{0, 4}, {1, 2}, {2, 2}, {3, 4}, {64, 64}, {65, 128}, {256, 256}, {5000, 1024}} {
		tc := &TxidCache{}
		if c.n > 0 {
			tc = NewTxidCache(c.n)
		}
		tc.Txid(&raw)
		if got := len(tc.c.slots); got != c.want {
			t.Errorf("NewTxidCache(%d): %d slots, want %d", c.n, got, c.want)
		}
	}
}

// Goal: the signer's cache of signatures gives crypto/hmac's answer over
// the txid whatever it saw before, and Verify still refuses what it must.
func TestHMACSignerCacheMatchesCryptoHMAC(t *testing.T) {
	key := []byte("hot wallet key")
	s := NewHMACSigner(key)
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 5000 {
		raw := randomRaw(r)
		id := raw.Txid()
		m := hmac.New(sha256.New, key)
		m.Write(id[:])
		want := m.Sum(nil)
		got, err := s.Sign(context.Background(), raw)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("step %d: Sign = %x, %v; want %x", i, got, err, want)
		}
		if !s.Verify(raw, want) {
			t.Fatalf("step %d: Verify refused crypto/hmac's signature", i)
		}
		raw.Timestamp++
		if s.Verify(raw, want) {
			t.Fatalf("step %d: Verify accepted the signature of other bytes", i)
		}
	}
}

// Goal: the caches are safe for concurrent use (run with -race), a
// TxidCache shared by pipelines as well.
func TestRawCacheConcurrent(t *testing.T) {
	var own TxidCache
	shared := NewTxidCache(64)
	s := NewHMACSigner([]byte("k"))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for range 2000 {
				raw := randomRaw(r)
				if own.Txid(&raw) != raw.Txid() || shared.Txid(&raw) != raw.Txid() {
					t.Error("cached txid differs")
					return
				}
				sig, _ := s.Sign(context.Background(), raw)
				if !s.Verify(raw, sig) {
					t.Error("Verify refused Sign's signature")
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Goal: AppendTransfer and TransferLog lay out exactly what the allocating
// versions they replaced did.
func TestTransferEncodingsUnchanged(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 11))
	for range 1000 {
		var to, from Address
		to[0], from[0] = AddressPrefix, AddressPrefix
		for i := 1; i < len(to); i++ {
			to[i], from[i] = byte(r.Uint32()), byte(r.Uint32())
		}
		amount := r.Uint64()
		old := make([]byte, 4+32+32)
		copy(old, TransferSelector[:])
		body := to.Bytes20()
		copy(old[4+12:4+32], body[:])
		binary.BigEndian.PutUint64(old[4+32+24:], amount)
		prefix := []byte("sluice:x:1")
		got := AppendTransfer(prefix, to, amount)
		if !bytes.Equal(got, old) || cap(got) != len(got) || !bytes.Equal(EncodeTransfer(to, amount), old) {
			t.Fatalf("AppendTransfer = %x (cap %d), want %x", got, cap(got), old)
		}
		var data [32]byte
		binary.BigEndian.PutUint64(data[24:], amount)
		l := TransferLog(USDTContract, from, to, amount)
		if l.Address != USDTContract.Bytes20() || len(l.Topics) != 3 || cap(l.Topics) != 3 ||
			l.Topics[0] != TransferTopic || l.Topics[1] != pad32(from) || l.Topics[2] != pad32(to) ||
			!bytes.Equal(l.Data, data[:]) || cap(l.Data) != 32 {
			t.Fatalf("TransferLog = %+v", l)
		}
	}
}
