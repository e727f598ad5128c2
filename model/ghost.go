package model

import (
	"cmp"
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
	o := ownership{
		byOp:   make(map[sluice.OperationID][]tron.Txid),
		owners: make(map[tron.Txid][]sluice.OperationID),
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
	m := make(map[tron.Txid][]mocknode.Inclusion, len(s.Inclusions))
	for _, in := range s.Inclusions {
		m[in.Txid] = append(m[in.Txid], in)
	}
	return m
}

// rowsByID indexes the rows by id; with duplicate ids (an intake-uniqueness
// violation) the first row wins.
func rowsByID(s *Snapshot) map[sluice.OperationID]*sluice.Operation {
	m := make(map[sluice.OperationID]*sluice.Operation, len(s.Operations))
	for i := range s.Operations {
		if _, ok := m[s.Operations[i].ID]; !ok {
			m[s.Operations[i].ID] = &s.Operations[i]
		}
	}
	return m
}

// opKey is the id a client's record names, as intake would store it: a
// UUID's case is the only thing intake canonicalizes.
func opKey(id string) sluice.OperationID { return sluice.OperationID(strings.ToLower(id)) }

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

// shortHash abbreviates a request hash for messages; "" reads as "none".
func shortHash(h string) string {
	switch {
	case h == "":
		return "none"
	case len(h) > 8:
		return h[:8]
	}
	return h
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
