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
