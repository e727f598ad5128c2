package tron

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// rawCache remembers a 32-byte value computed from a raw_data's canonical
// serialization (its txid, or a signature over it) for the last few raw_data
// it saw. The same envelope is hashed over and over: checked by the
// pipeline on every step, signed, and verified by every node it is sent to;
// comparing the serialization with a remembered one is a fraction of a
// sha256 over it.
//
// A hit requires the whole serialization to be equal, so a value comes back
// only for bytes it was computed from: the answer never depends on what was
// cached before, only the speed does. The zero value is ready; a mutex makes
// it safe for concurrent use. It must not be copied after first use.
type rawCache struct {
	mu    sync.Mutex
	bits  int       // 1<<bits slots; rawCacheBits when zero
	slots []rawSlot // made on the first put
}

const (
	rawCacheBits = 2
	// rawCacheBitsMax bounds a sized cache: 1,024 slots, some 300 KB.
	rawCacheBitsMax = 10
	// rawKeyMax is the longest serialization remembered: a sluice
	// transaction takes some 210 bytes (a 36-character operation id in the
	// memo, a 68-byte transfer); a longer one is computed every time.
	rawKeyMax = 256
)

type rawSlot struct {
	n   int // length of key; 0 for an empty slot
	key [rawKeyMax]byte
	val [32]byte
}

// get returns the value remembered for ser, if any.
func (c *rawCache) get(ser []byte) ([32]byte, bool) {
	if len(ser) > rawKeyMax {
		return [32]byte{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slots == nil {
		return [32]byte{}, false
	}
	s := &c.slots[foldSlot(ser, c.bits)]
	if s.n != len(ser) || !bytes.Equal(s.key[:s.n], ser) {
		return [32]byte{}, false
	}
	return s.val, true
}

// put remembers val for ser, in place of whatever its slot held.
func (c *rawCache) put(ser []byte, val [32]byte) {
	if len(ser) > rawKeyMax {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.slots == nil {
		if c.bits == 0 {
			c.bits = rawCacheBits
		}
		c.slots = make([]rawSlot, 1<<c.bits)
	}
	s := &c.slots[foldSlot(ser, c.bits)]
	s.n = copy(s.key[:], ser)
	s.val = val
}

// foldSlot picks a slot (of 1<<bits) from ser's 8-byte words: a fixed
// function, so that the cache holds the same entries for the same history.
// Envelopes differ in their memo (operation id, build number) and
// timestamps, all of which fall into the fold.
func foldSlot(ser []byte, bits int) int {
	var h uint64
	for len(ser) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64(ser)) * 0x9e3779b97f4a7c15
		ser = ser[8:]
	}
	for _, b := range ser {
		h = (h ^ uint64(b)) * 0x9e3779b97f4a7c15
	}
	return int(h >> (64 - bits))
}

// TxidCache is RawData.Txid with a memory of the last few raw_data it
// hashed (see rawCache). The zero value is ready to use, with room for
// four; it is safe for concurrent use and must not be copied after first
// use.
type TxidCache struct{ c rawCache }

// NewTxidCache returns a TxidCache with room for at least n raw_data (up
// to 1,024), for pipelines that share one: the workers of one process
// hand operations to each other.
func NewTxidCache(n int) *TxidCache {
	bits := 1
	for 1<<bits < n && bits < rawCacheBitsMax {
		bits++
	}
	return &TxidCache{c: rawCache{bits: bits}}
}

// Txid is r.Txid().
func (t *TxidCache) Txid(r *RawData) Txid {
	var buf [320]byte // as in RawData.Txid
	ser := r.appendMarshal(buf[:0])
	if id, ok := t.c.get(ser); ok {
		return id
	}
	id := sha256.Sum256(ser)
	t.c.put(ser, id)
	return id
}
