package tron

import (
	"bytes"
	"crypto/sha256"
	"sync"
)

// SHA256Memo is sha256.Sum256 with a memory: a direct-mapped table of the
// last inputs (of at most MemoKeyMax bytes) and their sums, for callers
// that hash the same bytes again and again across runs, such as the mock
// node's block ids (every run of a world produces the same empty blocks
// until its first transaction, and exhaustive search re-runs one world
// tens of thousands of times). A hit requires the whole input to be equal,
// so a sum never depends on what was remembered, only how fast it comes.
// The zero value is ready and safe for concurrent use; it must not be
// copied after first use. It holds about 1.5 MB.
type SHA256Memo struct {
	mu    sync.Mutex
	slots [memoSlots]memoSlot
}

const (
	memoSlotBits = 12
	memoSlots    = 1 << memoSlotBits
	// MemoKeyMax is the longest input remembered: a mock block of up to 8
	// transactions (72 bytes of header, 32 per txid). Longer ones are
	// hashed every time.
	MemoKeyMax = 72 + 32*8
)

type memoSlot struct {
	n   int // length of key; 0 for an empty slot
	key [MemoKeyMax]byte
	sum [32]byte
}

// Sum is sha256.Sum256(b).
func (m *SHA256Memo) Sum(b []byte) [32]byte {
	if len(b) == 0 || len(b) > MemoKeyMax {
		return sha256.Sum256(b)
	}
	s := &m.slots[foldSlot(b, memoSlotBits)]
	m.mu.Lock()
	if s.n == len(b) && bytes.Equal(s.key[:s.n], b) {
		sum := s.sum
		m.mu.Unlock()
		return sum
	}
	m.mu.Unlock()
	sum := sha256.Sum256(b)
	m.mu.Lock()
	s.n = copy(s.key[:], b)
	s.sum = sum
	m.mu.Unlock()
	return sum
}

// IDChains keeps lists of 32-byte ids that only grow, one per key, shared
// by every caller in the process: the mock node keeps there, per genesis
// time, the ids of the chain in which nothing happens, which every run of
// every world begins with (the package that uses it may not lock: it runs
// under the simulator, and a lock here is invisible to it). Entries below
// a list's length never change once it is returned, so a caller may read
// a list it was given without a lock while others grow it. The zero value
// is ready and safe for concurrent use; it must not be copied after first
// use.
type IDChains struct {
	mu    sync.Mutex
	lists map[int64][][32]byte
}

// Grow returns key's list with at least n entries, appending next(i, list)
// for each missing entry i in order (list holds entries 0..i-1), under the
// lock: next must not call the IDChains.
func (c *IDChains) Grow(key int64, n int, next func(i int, list [][32]byte) [32]byte) [][32]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lists == nil {
		c.lists = map[int64][][32]byte{}
	}
	list := c.lists[key]
	for len(list) < n {
		list = append(list, next(len(list), list))
	}
	c.lists[key] = list
	return list
}
