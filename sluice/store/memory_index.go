package store

import (
	"slices"
	"time"

	"sluicesim/sluice"
)

// The indexes below let Memory answer without scanning every row or event
// and copy without an allocation per byte slice. None of them decides
// anything of its own: each mirrors data held in the rows and the log, and
// every write that changes that data updates them under the same lock.

// gate is what a claim needs of a non-terminal row, kept in Memory.open
// (ordered by row) so that Claim reads one contiguous slice and touches
// only the rows it takes: a scan over the rows themselves, each a pointer
// to a struct of some 400 bytes, was a quarter of a calm run's time.
//
// Invariant: for every non-terminal row r at position i there is exactly one
// gate with row == i, and notBefore, leaseUntil and claimed equal
// r.NotBefore, r.LeaseUntil and r.ClaimedBy != ""; there is none for a
// terminal row. regate restores it after every write; TestClaimMatchesScan
// holds Claim to the scan it replaces over random histories.
type gate struct {
	row        int // position in Memory.rows
	notBefore  time.Time
	leaseUntil time.Time
	claimed    bool
	// plain: notBefore, and leaseUntil if claimed, carry no monotonic
	// reading, so every comparison with them is by wall clock whatever
	// now is; ready is then the later of the two, the first instant at
	// which the row is claimable. A clock that reads no monotonic time (the
	// simulator's, a test's) makes every gate plain; time.Now makes none.
	plain bool
	ready time.Time
}

// claimable is sluice.Operation.Claimable over the gate's copy of the
// fields, for a row known not to be terminal. The time comparisons are
// the same calls on the same values, or for a plain gate one comparison
// by wall clock that gives what both would, so a clock with monotonic
// readings is judged exactly as Claimable judges it;
// TestGateMatchesClaimable holds the two together.
func (g *gate) claimable(now time.Time) bool {
	if g.plain {
		return !g.ready.After(now)
	}
	if g.notBefore.After(now) {
		return false
	}
	return !g.claimed || !g.leaseUntil.After(now)
}

// settle computes plain and ready from the other fields; every change to
// them is followed by it.
func (g *gate) settle() {
	g.plain = noMonotonic(g.notBefore) && (!g.claimed || noMonotonic(g.leaseUntil))
	g.ready = g.notBefore
	if g.plain && g.claimed && g.leaseUntil.After(g.ready) {
		g.ready = g.leaseUntil
	}
}

// noMonotonic reports whether t carries no monotonic clock reading (Round(0)
// strips it and changes nothing else).
func noMonotonic(t time.Time) bool { return t == t.Round(0) }

// horizon is how Claim skips its scan when no row can be claimed yet: most
// claims find nothing (the rows in flight are leased, the parked ones wait),
// and they scanned every open row to learn it. It is a lower bound, by wall
// clock, on the instant at which some open row becomes claimable: exact
// after Claim's scan, lowered by every write (regate) and never raised
// except by a scan, so it is never later than the truth. Only plain gates
// give a bound; one that is not makes it "none" until a scan finds every
// gate plain again.
type horizon struct {
	at   time.Time
	kind horizonKind
}

type horizonKind uint8

const (
	horizonNone  horizonKind = iota // no bound: scan
	horizonAt                       // no row is claimable before at
	horizonNever                    // no open row at all
)

// lower makes h account for g.
func (h *horizon) lower(g *gate) {
	switch {
	case !g.plain:
		h.kind = horizonNone
	case h.kind == horizonNever:
		h.at, h.kind = g.ready, horizonAt
	case h.kind == horizonAt && g.ready.Before(h.at):
		h.at = g.ready
	}
}

// idleAt reports whether h shows that no row is claimable at now.
func (h *horizon) idleAt(now time.Time) bool {
	return h.kind == horizonNever || h.kind == horizonAt && now.Before(h.at)
}

// regate brings row i's gate in line with the row, with mu held: it
// updates it, inserts it (a new row, or one that left a terminal state,
// which no transition does today), or removes it once the row is terminal.
func (m *Memory) regate(i int) {
	row := m.rows[i]
	k := m.gateAt(i)
	found := k < len(m.open) && m.open[k].row == i
	if row.State.Terminal() {
		if found {
			m.open = slices.Delete(m.open, k, k+1)
		}
		return
	}
	g := gateOf(i, row)
	m.horizon.lower(&g)
	if found {
		m.open[k] = g
		return
	}
	m.open = slices.Insert(m.open, k, g)
}

// gateAt is where row i's gate is in open, or would be inserted: a binary
// search by hand, as slices.BinarySearchFunc would copy each gate it looks
// at into its comparison.
func (m *Memory) gateAt(i int) int {
	lo, hi := 0, len(m.open)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if m.open[mid].row < i {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// gateOf is the gate of row, at position i.
func gateOf(i int, row *sluice.Operation) gate {
	g := gate{row: i, notBefore: row.NotBefore, leaseUntil: row.LeaseUntil, claimed: row.ClaimedBy != ""}
	g.settle()
	return g
}

// rowMeta is what Memory keeps per row besides the row itself.
type rowMeta struct {
	lastEvent int // position in Memory.events of the row's newest event; -1 before any
	events    int // how many events the row has
	// hold is the row's hold, made by its insert; never nil for a row.
	hold *sluice.Hold
}

// eventChunk is how many events one chunk of the log holds (some 13 KiB),
// so a run's log grows by whole chunks and never copies what it already
// holds, as a doubling slice would on every growth.
const eventChunk = 64

// eventLog is the event log in Seq order, in chunks of eventChunk.
// Invariant: every chunk but the last is full.
type eventLog struct {
	chunks [][]loggedEvent
	n      int
}

// loggedEvent is an event with a link to its operation's previous event,
// which is what Events walks instead of keeping a list per operation.
type loggedEvent struct {
	sluice.Event
	prev int // position of the operation's previous event; -1 for its first
}

func (l *eventLog) len() int { return l.n }

func (l *eventLog) at(p int) *loggedEvent { return &l.chunks[p/eventChunk][p%eventChunk] }

func (l *eventLog) append(e loggedEvent) {
	if l.n%eventChunk == 0 {
		l.chunks = append(l.chunks, make([]loggedEvent, 0, eventChunk))
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, e)
	l.n++
}

// copyOperation returns op sharing no memory with the store.
func copyOperation(op sluice.Operation) sluice.Operation {
	op.Envelope = copyEnvelope(op.Envelope)
	return op
}

// copyEnvelope returns e sharing no memory with the store, its byte slices
// copied into one allocation.
func copyEnvelope(e sluice.Envelope) sluice.Envelope {
	a := make(arena, 0, envelopeBytes(&e))
	a.cloneEnvelope(&e)
	return e
}

// copyEnvelopeTwice returns two copies of e, sharing no memory with e or
// with each other, their byte slices copied into one allocation.
func copyEnvelopeTwice(e sluice.Envelope) (sluice.Envelope, sluice.Envelope) {
	a := make(arena, 0, 2*envelopeBytes(&e))
	f := e
	a.cloneEnvelope(&e)
	a.cloneEnvelope(&f)
	return e, f
}

// copyOperations makes every row of ops (shallow copies of the store's
// rows) share no memory with the store, with one allocation for all their
// byte slices.
func copyOperations(ops []sluice.Operation) {
	n := 0
	for i := range ops {
		n += envelopeBytes(&ops[i].Envelope)
	}
	a := make(arena, 0, n)
	for i := range ops {
		a.cloneEnvelope(&ops[i].Envelope)
	}
}

func envelopeBytes(e *sluice.Envelope) int {
	return len(e.Signature) + len(e.Raw.Memo) + len(e.Raw.Contract.Data)
}

// arena hands out copies of byte slices from one buffer allocated to the
// exact total. Each copy is capped at its length, so a caller appending to
// one reallocates instead of writing over its neighbour.
type arena []byte

func (a *arena) cloneEnvelope(e *sluice.Envelope) {
	e.Signature = a.clone(e.Signature)
	e.Raw.Memo = a.clone(e.Raw.Memo)
	e.Raw.Contract.Data = a.clone(e.Raw.Contract.Data)
}

// clone is bytes.Clone from the arena: nil stays nil and an empty slice
// stays empty but not nil (the arena is never nil: make of a zero length
// is not).
func (a *arena) clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	start := len(*a)
	*a = append(*a, b...)
	return (*a)[start:len(*a):len(*a)]
}
