package store

import (
	"bytes"
	"fmt"
	"strconv"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// notFoundError is what Memory returns for an id it does not hold: op + ": "
// + fmt.Errorf("operation %q: %w", id, sluice.ErrNotFound), with the text
// built only when asked for. Callers that poll for rows not yet inserted
// (an observer watching the log) take this path constantly, and formatting
// two wrapped errors there was most of what they cost.
type notFoundError struct {
	op string // "get", "cas", ...
	id sluice.OperationID
}

func notFound(op string, id sluice.OperationID) error { return &notFoundError{op: op, id: id} }

func (e *notFoundError) Error() string {
	return e.op + ": operation " + strconv.Quote(string(e.id)) + ": " + sluice.ErrNotFound.Error()
}

func (e *notFoundError) Unwrap() error { return sluice.ErrNotFound }

// casFencedError is CAS's answer to a zombie, fmt.Errorf("cas %s %s->%s
// token=%d: row is %s token=%d: %w", ..., sluice.ErrFenced), formatted only
// when read: fenced writes are routine under crashes and lease expiries,
// and the worker that gets one only tests it with errors.Is.
type casFencedError struct {
	id                 sluice.OperationID
	from, to, rowState sluice.State
	token, rowToken    sluice.FencingToken
}

func (e *casFencedError) Error() string {
	return fmt.Sprintf("cas %s %s->%s token=%d: row is %s token=%d: %s",
		e.id, e.from, e.to, e.token, e.rowState, e.rowToken, sluice.ErrFenced)
}

func (e *casFencedError) Unwrap() error { return sluice.ErrFenced }

// slab hands out pointers to zeroed values carved from chunks, so that the
// store's rows and holds, which live as long as the store, cost an
// allocation per chunk rather than one each. A chunk is never moved or
// reused, so a pointer stays valid and unshared for the store's life.
type slab[T any] struct {
	free []T
	next int // the size of the next chunk
}

func (s *slab[T]) alloc() *T {
	if len(s.free) == 0 {
		// Chunks grow from 4 to 64: a store with a handful of rows does not
		// pay for 64 of them.
		s.next = min(max(2*s.next, 4), 64)
		s.free = make([]T, s.next)
	}
	p := &s.free[0]
	s.free = s.free[1:]
	return p
}

// envelopeTxid is e.Raw.Txid(), the txid e's raw_data derives, for an
// envelope about to replace row's. Signing writes the row's own raw_data back
// with a signature added: the row's txid was derived from those very bytes
// when they were stored (CAS refuses any other), so it is the answer without
// hashing them again.
func envelopeTxid(row, e *sluice.Envelope) tron.Txid {
	if !row.Txid.IsZero() && sameRaw(&row.Raw, &e.Raw) {
		return row.Txid
	}
	return e.Raw.Txid()
}

// sameRaw reports whether a and b serialize to the same bytes (every field
// of RawData takes part in RawData.Marshal).
func sameRaw(a, b *tron.RawData) bool {
	return a.RefBlockBytes == b.RefBlockBytes && a.RefBlockHash == b.RefBlockHash &&
		a.Expiration == b.Expiration && a.Timestamp == b.Timestamp && a.FeeLimit == b.FeeLimit &&
		a.Contract.Owner == b.Contract.Owner && a.Contract.Contract == b.Contract.Contract &&
		bytes.Equal(a.Memo, b.Memo) && bytes.Equal(a.Contract.Data, b.Contract.Data)
}

// EventCount is len(Events(id)) without copying the log: ok is false for an
// id the store does not hold. For watchers that only need to know how far
// an operation's log has grown.
func (m *Memory) EventCount(id sluice.OperationID) (n int, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := m.index[id]
	if !ok {
		return 0, false
	}
	return m.meta[i].events, true
}
