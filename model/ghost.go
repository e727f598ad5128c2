package model

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// This file holds the checkers' own readings of the snapshot: who owns which
// txid, which inclusions moved money, which row an id names. Every map here
// is an index only; results are built by walking the snapshot's slices or
// sorted keys, so map order never reaches a message.

// ownership is the ghost state of txid ownership: an operation's history is
// every txid its events named (current or retired) plus its row's envelope.
type ownership struct {
	byOp   [][]tron.Txid                      // by the index's slot: first-seen order, no repeats
	owners map[tron.Txid][]sluice.OperationID // sorted, no repeats
	ix     *index
}

// of is id's history: its txids in first-seen order.
func (o ownership) of(id sluice.OperationID) []tron.Txid {
	if k, ok := o.ix.slot[id]; ok {
		return o.byOp[k]
	}
	return nil
}

func readOwnership(s *Snapshot) ownership {
	if s.memo != nil && s.memo.own != nil {
		return *s.memo.own
	}
	o := computeOwnership(s)
	if s.memo != nil {
		s.memo.own = &o
	}
	return o
}

// computeOwnership reads each operation's events in log order, then its
// rows in insertion order: per operation, the order in which a walk of the
// whole log and then of every row would first see each txid.
func computeOwnership(s *Snapshot) ownership {
	ix := s.index()
	o := ownership{byOp: make([][]tron.Txid, len(ix.ids)), ix: ix}
	// Each operation's txids are a slice of arena, capped at its end: an
	// arena that grows leaves them where they were.
	arena := make([]tron.Txid, 0, len(s.Envelopes)+len(s.Operations))
	for k := range ix.ids {
		start := len(arena)
		add := func(t tron.Txid) {
			if !t.IsZero() && !slices.Contains(arena[start:], t) {
				arena = append(arena, t)
			}
		}
		for _, i := range ix.eventsOf(int32(k)) {
			add(s.Events[i].Txid)
			add(s.Events[i].RetiredTxid)
		}
		for _, i := range ix.rowsOf(int32(k)) {
			add(s.Operations[i].Envelope.Txid)
		}
		if len(arena) > start {
			o.byOp[k] = arena[start:len(arena):len(arena)]
		}
	}
	o.owners = make(map[tron.Txid][]sluice.OperationID, len(arena))
	// The owners' backing, one each to start; shared lists the txids with
	// more than one owner.
	ids := make([]sluice.OperationID, len(arena))
	var shared []tron.Txid
	for k, ts := range o.byOp {
		for _, t := range ts {
			if prev, ok := o.owners[t]; ok {
				if len(prev) == 1 {
					shared = append(shared, t)
				}
				o.owners[t] = append(prev, ix.ids[k]) // prev is full: copies
				continue
			}
			ids[0] = ix.ids[k]
			o.owners[t], ids = ids[:1:1], ids[1:]
		}
	}
	for _, t := range shared {
		slices.Sort(o.owners[t])
	}
	return o
}

// moved reports whether an inclusion moved tokens: a SUCCESS receipt with a
// decoded Transfer log. Any other receipt is on chain but moved nothing.
func moved(in mocknode.Inclusion) bool {
	return in.Receipt == tron.ReceiptSuccess && in.TransferOK
}

// row is the row with id; with duplicate ids (an intake-uniqueness
// violation) the first row wins.
func (ix *index) row(s *Snapshot, id sluice.OperationID) *sluice.Operation {
	if k, ok := ix.slot[id]; ok && ix.rowStart[k] < ix.rowStart[k+1] {
		return &s.Operations[ix.rowPos[ix.rowStart[k]]]
	}
	return nil
}

// opKey is the id a client's record names, by the model's own reading: a
// UUID's canonical lowercase form, or, for an id the model refuses, its
// lowercase spelling (such a record never names a row).
func opKey(id string) sluice.OperationID { return opKeyIn(id, nil) }

// opKeyIn is opKey with a new string made in texts (nil: its own).
func opKeyIn(id string, texts *textArena) sluice.OperationID {
	if key, code := refOperationIDCode(id, texts); code == 0 {
		return key
	}
	return sluice.OperationID(strings.ToLower(id))
}

// rowIntent is what a row says it will pay: the fields the store holds,
// read as an Intent so that it compares with what the client meant.
func rowIntent(op *sluice.Operation) Intent {
	return Intent{ID: op.ID, Customer: op.Request.Customer, To: [21]byte(op.Request.To), Units: uint64(op.Request.Amount), Asset: op.Request.Asset}
}

// describeIntent is "<units> units of <asset> to <address>" with the
// model's own address encoding.
func describeIntent(in Intent) string {
	return fmt.Sprintf("%d units of %s to %s", in.Units, in.Asset, Base58Address(in.To))
}

// intents is, per operation id, what the withdrawal was meant to be, by
// the clients' own payloads: the one a client sent and was told Created;
// failing that (the creator's answer was lost), a valid payload some client
// sent under the id that the row holds; failing that, nothing (and
// intake-uniqueness reports a row no request created). Never the row alone:
// a row that disagrees with every client is what the oracle must catch.
func intents(s *Snapshot) *intentsByID {
	if s.memo != nil && s.memo.meant != nil {
		return s.memo.meant
	}
	ix := s.index()
	out := &intentsByID{ix: ix, bySlot: make([]int32, len(ix.ids))}
	for k := range out.bySlot {
		out.bySlot[k] = -1
	}
	if s.memo != nil {
		s.memo.meant = out
	}
	for i := range s.Intake {
		if s.Intake[i].Outcome != Created {
			continue
		}
		if rd := ix.sentOf(i); rd.bad == "" {
			if _, ok := out.at(rd.in.ID); !ok {
				out.set(rd.in.ID, ix.intakeSent[i])
			}
		}
	}
	for i := range s.Intake {
		rd := ix.sentOf(i)
		if rd.bad != "" {
			continue
		}
		if _, ok := out.at(rd.in.ID); ok {
			continue
		}
		if row := ix.row(s, rd.in.ID); row != nil && SameInstruction(rd.in, rowIntent(row)) {
			out.set(rd.in.ID, ix.intakeSent[i])
		}
	}
	return out
}

// intentsByID is intents' answer: per id, the reading of the payload that
// says what was meant (a position in ix.readings).
type intentsByID struct {
	ix        *index
	bySlot    []int32                      // by the id's slot; -1: none
	unslotted map[sluice.OperationID]int32 // ids without a slot (no event, no row)
}

// at is where the reading of what id was meant to be is.
func (m *intentsByID) at(id sluice.OperationID) (int32, bool) {
	if k, ok := m.ix.slot[id]; ok {
		return m.bySlot[k], m.bySlot[k] >= 0
	}
	i, ok := m.unslotted[id]
	return i, ok
}

// set records that the reading at i says what id was meant to be.
func (m *intentsByID) set(id sluice.OperationID, i int32) {
	if k, ok := m.ix.slot[id]; ok {
		m.bySlot[k] = i
		return
	}
	if m.unslotted == nil {
		m.unslotted = make(map[sluice.OperationID]int32)
	}
	m.unslotted[id] = i
}

// of is what id was meant to be; ok is false when no client's payload
// says.
func (m *intentsByID) of(id sluice.OperationID) (Intent, bool) {
	if i, ok := m.at(id); ok {
		return m.ix.readings[i].in, true
	}
	return Intent{}, false
}

// sortedKeys returns a map's keys in order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// finish sorts violations by (Invariant, Operation, Message) and drops exact
// repeats.
func finish(vs []Violation) []Violation {
	slices.SortFunc(vs, func(a, b Violation) int {
		return cmp.Or(
			cmp.Compare(a.Invariant, b.Invariant),
			cmp.Compare(a.Operation, b.Operation),
			cmp.Compare(a.Message, b.Message),
		)
	})
	return slices.Compact(vs)
}

func shortTxids(ts []tron.Txid) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.Short()
	}
	return strings.Join(parts, ",")
}

func joinIDs(ids []sluice.OperationID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = string(id)
	}
	return strings.Join(parts, ", ")
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// reading is one payload as the model reads it: its intent, why it is
// invalid ("" when valid), its key, and its value for the porcupine model
// (linKey: "" for an invalid payload).
type reading struct {
	in  Intent
	bad string
	key string
	lin string
}

// readPayload is the model's reading of p.
func readPayload(p Payload) reading { return readPayloadIn(p, nil) }

// readPayloadIn is readPayload with the reading's strings written in texts
// (nil: a string of their own).
func readPayloadIn(p Payload, texts *textArena) reading {
	in, bad := readIntent(p, texts)
	r := reading{in: in, bad: bad}
	if bad == "" {
		// Two payloads share a key exactly when they are the same
		// instruction.
		var buf [128]byte
		sum := sha256.Sum256(appendKeyText(buf[:0], in))
		var hexSum [2 * sha256.Size]byte
		hex.Encode(hexSum[:], sum[:])
		// One string holds both: the key is the lin value's first part
		// (linKey(key, in) is key + "/" + customer).
		r.lin = texts.join(hexSum[:], '/', string(in.Customer))
		r.key = r.lin[:len(hexSum)]
	}
	return r
}

// textArena makes strings in shared blocks: a run reads tens of payloads,
// and their strings need not be one allocation each. A string it made is
// never written again (a strings.Builder only ever appends, and a full
// block is left as it is for a new one).
type textArena struct {
	b     strings.Builder
	block int // the size of a new block, in bytes
}

// str is string(x), made in the arena (a string of its own when a is nil).
func (a *textArena) str(x []byte) string {
	if a == nil || len(x) > textBlockMax {
		return string(x)
	}
	a.room(len(x))
	start := a.b.Len()
	a.b.Write(x)
	return a.b.String()[start:]
}

// cat is x + y, made in the arena (a string of its own when a is nil).
func (a *textArena) cat(x, y string) string {
	n := len(x) + len(y)
	if a == nil || n > textBlockMax {
		return x + y
	}
	a.room(n)
	start := a.b.Len()
	a.b.WriteString(x)
	a.b.WriteString(y)
	return a.b.String()[start:]
}

// room makes sure the current block has n bytes free.
func (a *textArena) room(n int) {
	if a.b.Cap()-a.b.Len() < n {
		a.b = strings.Builder{}
		a.b.Grow(max(n, min(a.block, textBlockMax)))
	}
}

// textBlockMax bounds a block: a string longer than this gets its own.
const textBlockMax = 4 << 10

// join is x + sep + y, made in the arena (a string of its own when a is nil).
func (a *textArena) join(x []byte, sep byte, y string) string {
	n := len(x) + 1 + len(y)
	if a == nil || n > textBlockMax {
		var b strings.Builder
		b.Grow(n)
		b.Write(x)
		b.WriteByte(sep)
		b.WriteString(y)
		return b.String()
	}
	a.room(n)
	start := a.b.Len()
	a.b.Write(x)
	a.b.WriteByte(sep)
	a.b.WriteString(y)
	return a.b.String()[start:]
}

// appendKeyText appends what a valid intent's key hashes:
// "<id>|<to, hex>|<units>|<asset>".
func appendKeyText(b []byte, in Intent) []byte {
	b = append(b, in.ID...)
	b = append(b, '|')
	b = hex.AppendEncode(b, in.To[:])
	b = append(b, '|')
	b = strconv.AppendUint(b, in.Units, 10)
	b = append(b, '|')
	return append(b, in.Asset...)
}

// memo holds what several checkers derive from one snapshot: the index
// (with the payloads' readings) and what is built on it. Every entry is
// computed on first use and only read after; the checkers never change
// what they get from it.
type memo struct {
	ix    *index
	own   *ownership
	meant *intentsByID
	judge *judge
	waits []time.Time // claimWaits, once asked for
}

// withMemo is the checkers' own shallow copy of s with an empty memo, so
// that the caller's snapshot is never written. Every checker starts with
// it: called alone, a checker builds the index once for itself.
func withMemo(s *Snapshot) *Snapshot {
	if s.memo != nil {
		return s
	}
	c := *s
	c.memo = &memo{}
	return &c
}
