package model

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
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
	byOp   map[sluice.OperationID][]tron.Txid // first-seen order, no repeats
	owners map[tron.Txid][]sluice.OperationID // sorted, no repeats
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

func computeOwnership(s *Snapshot) ownership {
	o := ownership{
		byOp:   make(map[sluice.OperationID][]tron.Txid, len(s.Operations)),
		owners: make(map[tron.Txid][]sluice.OperationID, len(s.Operations)),
	}
	add := func(id sluice.OperationID, t tron.Txid) {
		if t.IsZero() || slices.Contains(o.byOp[id], t) {
			return
		}
		o.byOp[id] = append(o.byOp[id], t)
		o.owners[t] = append(o.owners[t], id)
	}
	for _, e := range s.Events {
		add(e.OperationID, e.Txid)
		add(e.OperationID, e.RetiredTxid)
	}
	for _, op := range s.Operations {
		add(op.ID, op.Envelope.Txid)
	}
	for t := range o.owners {
		slices.Sort(o.owners[t])
	}
	return o
}

// moved reports whether an inclusion moved tokens: a SUCCESS receipt with a
// decoded Transfer log. Any other receipt is on chain but moved nothing.
func moved(in mocknode.Inclusion) bool {
	return in.Receipt == tron.ReceiptSuccess && in.TransferOK
}

// inclusionsByTxid indexes the chain. The mock node includes a txid at most
// once; should two entries ever share one, all are kept, in chain order.
func inclusionsByTxid(s *Snapshot) map[tron.Txid][]mocknode.Inclusion {
	if s.memo != nil && s.memo.onChain != nil {
		return s.memo.onChain
	}
	m := make(map[tron.Txid][]mocknode.Inclusion, len(s.Inclusions))
	for _, in := range s.Inclusions {
		m[in.Txid] = append(m[in.Txid], in)
	}
	if s.memo != nil {
		s.memo.onChain = m
	}
	return m
}

// rowsByID indexes the rows by id; with duplicate ids (an intake-uniqueness
// violation) the first row wins.
func rowsByID(s *Snapshot) map[sluice.OperationID]*sluice.Operation {
	if s.memo != nil && s.memo.rows != nil {
		return s.memo.rows
	}
	m := make(map[sluice.OperationID]*sluice.Operation, len(s.Operations))
	for i := range s.Operations {
		if _, ok := m[s.Operations[i].ID]; !ok {
			m[s.Operations[i].ID] = &s.Operations[i]
		}
	}
	if s.memo != nil {
		s.memo.rows = m
	}
	return m
}

// opKey is the id a client's record names, by the model's own reading: a
// UUID's canonical lowercase form, or, for an id the model refuses, its
// lowercase spelling (such a record never names a row).
func opKey(id string) sluice.OperationID {
	if key, why := refOperationID(id); why == "" {
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
func intents(s *Snapshot) map[sluice.OperationID]Intent {
	if s.memo != nil && s.memo.meant != nil {
		return s.memo.meant
	}
	out := make(map[sluice.OperationID]Intent)
	if s.memo != nil {
		defer func() { s.memo.meant = out }()
	}
	for _, r := range s.Intake {
		if r.Outcome != Created {
			continue
		}
		if in, why := s.sentIntent(&r); why == "" {
			if _, ok := out[in.ID]; !ok {
				out[in.ID] = in
			}
		}
	}
	rows := rowsByID(s)
	for _, r := range s.Intake {
		in, why := s.sentIntent(&r)
		if why != "" {
			continue
		}
		if _, ok := out[in.ID]; ok {
			continue
		}
		if row := rows[in.ID]; row != nil && SameInstruction(in, rowIntent(row)) {
			out[in.ID] = in
		}
	}
	return out
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
// invalid ("" when valid), and its key for the porcupine model.
type reading struct {
	in  Intent
	bad string
	key string
}

// read reads p, once per CheckAll: a run repeats the same few payloads in
// many records, and every checker asks about them. The memo lives in
// CheckAll's own copy of the snapshot (a checker called alone reads
// without one), so the caller's snapshot is never written.
func (s *Snapshot) read(p Payload) reading {
	if s.memo != nil {
		if r, ok := s.memo.readings[p]; ok {
			return r
		}
	}
	in, bad := ReadIntent(p)
	r := reading{in: in, bad: bad}
	if bad == "" {
		// Two payloads share a key exactly when they are the same
		// instruction.
		sum := sha256.Sum256(fmt.Appendf(nil, "%s|%x|%d|%s", in.ID, in.To, in.Units, in.Asset))
		r.key = hex.EncodeToString(sum[:])
	}
	if s.memo != nil {
		s.memo.readings[p] = r
	}
	return r
}

// memo holds what several checkers derive from one snapshot: payload
// readings and the indexes. Every entry is computed on first use and only
// read after; the checkers never change what they get from it.
type memo struct {
	readings map[Payload]reading
	raw      map[*RawPost]reading
	own      *ownership
	onChain  map[tron.Txid][]mocknode.Inclusion
	rows     map[sluice.OperationID]*sluice.Operation
	meant    map[sluice.OperationID]Intent
	judge    *judge
}

// withMemo is the checkers' own shallow copy of s with an empty memo, so
// that the caller's snapshot is never written (a checker called alone on
// it computes without one).
func withMemo(s *Snapshot) *Snapshot {
	if s.memo != nil {
		return s
	}
	c := *s
	c.memo = &memo{readings: make(map[Payload]reading), raw: make(map[*RawPost]reading)}
	return &c
}

// sent is what record r's client meant: its Sent payload, or for a raw
// post the payload ReadPost finds in it (a form ReadPost refuses is an
// invalid request, for the reason it gives), memoized.
func (s *Snapshot) sent(r *IntakeRecord) reading {
	if r.Raw == nil {
		return s.read(r.Sent)
	}
	if s.memo != nil {
		if rd, ok := s.memo.raw[r.Raw]; ok {
			return rd
		}
	}
	p, bad := ReadPost(*r.Raw)
	rd := reading{bad: "request " + bad}
	if bad == "" {
		rd = s.read(p)
	}
	if s.memo != nil {
		s.memo.raw[r.Raw] = rd
	}
	return rd
}

// sentIntent is sent(r) as (intent, why invalid).
func (s *Snapshot) sentIntent(r *IntakeRecord) (Intent, string) {
	rd := s.sent(r)
	return rd.in, rd.bad
}

// intent is ReadIntent(p), memoized.
func (s *Snapshot) intent(p Payload) (Intent, string) {
	r := s.read(p)
	return r.in, r.bad
}

// key is the porcupine model's value for a payload: "" for one the model
// finds invalid.
func (s *Snapshot) key(p Payload) string { return s.read(p).key }
