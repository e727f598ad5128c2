package model

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// CheckAuditLog checks that the event log is a faithful, append-only account
// of every operation, and that every rebuild was justified by the chain.
//
// Seq strictly increases over the whole log. Per operation, in log order:
// the first event is the creation none->requested; every later event starts
// where the previous one ended and is an edge of the state machine; fencing
// tokens never go back (the row's token is at least the last one its log
// used); and the log replays to the row: the last event's state and txid are
// the row's state and envelope txid, and that txid is its raw_data's.
//
// A txid is only ever replaced by retiring it (RetiredTxid is the txid the
// operation held), and a rebuild always names the txid it retires. A retired
// txid that may have been sent (the transition starts from broadcasting or
// broadcast) carries evidence that holds against the chain: about that txid,
// citing a block that is on the chain with that number and time at or below
// the final solid head, and the txid was never included at all. The
// evidence is not taken at its word: its expiration must be the retired
// envelope's own raw_data expiration (from Envelopes, what the world saw
// stored), its margin the configured SafetyMargin, and the model checks the
// proof itself (solid time at least expiration plus margin, lookup
// unknown) with those re-derived values. A txid retired without such evidence (a stale
// envelope rebuilt from signed) must never have been sent: not on the wire,
// never accepted, never included. The rebuilds keep the stuck policy, read
// by the model (stuckRebuild), not by its code: a txid a lookup proved dead
// is rebuilt only once RebuildAfter has passed since the first write-ahead
// and before CancelAfter, and an operation rebuilds at most Rebuilds times
// whatever retired its txids. A wait writes nothing: the waits the world
// saw a worker decide on chain answers that prove its txid dead are held to
// the same reading (stuckWaits). Every confirmation that landed, the
// automation's or an operator's, names a txid whose block was at or below
// the chain's solid head at that moment (confirmedWhenSolid). Every
// worker's write-ahead was made with at least MinValidity left before the
// envelope's expiration, by the head block the node answered in that step
// (freshWriteAheads); every envelope a worker built expires within
// ExpirationWindow of the head the node answered in that step, and at
// least MinValidity past it (expirationsFromHead).
func CheckAuditLog(s *Snapshot) []Violation {
	s = withMemo(s)
	var vs []Violation
	add := func(id sluice.OperationID, format string, args ...any) {
		vs = append(vs, Violation{Invariant: AuditLog, Operation: id, Message: fmt.Sprintf(format, args...)})
	}
	ix := s.index()
	c := auditContext{s: s, ix: ix, onChain: ix.onChain}

	for i := 1; i < len(s.Events); i++ {
		if e, prev := s.Events[i], s.Events[i-1]; e.Seq <= prev.Seq {
			add(e.OperationID, "op %s event #%d follows event #%d: Seq must strictly increase", e.OperationID, e.Seq, prev.Seq)
		}
	}

	for _, slot := range ix.byID {
		evs := ix.eventsOf(slot)
		if len(evs) == 0 {
			continue // a row without events: below
		}
		id := ix.ids[slot]
		var maxToken sluice.FencingToken
		rebuilds, overBudget := 0, false
		for k, pos := range evs {
			e := &s.Events[pos]
			// Built only for a message: this loop runs over every event.
			at := lazyAt{id, e}
			if k == 0 {
				if e.From != sluice.None || e.To != sluice.Requested {
					add(id, "%s: the log must open with the creation none->requested", at)
				}
			} else {
				prev := &s.Events[evs[k-1]]
				if e.From != prev.To {
					add(id, "%s does not start where event #%d left it (%s)", at, prev.Seq, prev.To)
				}
				operator := strings.HasPrefix(string(e.Worker), sluice.OperatorPrefix)
				switch {
				case operator && e.From == e.To:
					if Terminal(e.From) {
						add(id, "%s: an operator retried a terminal operation", at)
					}
				case operator:
					if !OperatorLegal(e.From, e.To) {
						add(id, "%s is not a transition an operator may make", at)
					}
					vs = append(vs, c.operatorAction(at, prev, e)...)
				case !Legal(e.From, e.To):
					add(id, "%s is not a legal transition", at)
				}
				if e.Token < maxToken {
					add(id, "%s has token %d, below token %d used before: fencing tokens went back", at, e.Token, maxToken)
				}
				vs = append(vs, c.txidChange(at, prev, e)...)
				if e.To == sluice.Signing && !e.RetiredTxid.IsZero() {
					// Every rebuild spends the budget, whatever retired
					// the txid: each new txid is one the chain must be
					// asked about for ever.
					// Judged by the budget of the release the rebuilding
					// worker ran, once an operation (its first rebuild
					// past it).
					if rebuilds++; !overBudget && rebuilds > s.rebuildsBy(string(e.Worker)) && s.Stuck.RebuildAfter > 0 {
						overBudget = true
						add(id, "%s is rebuild %d, but the stuck policy allows %d: with the budget spent, a dead txid is cancelled or sent to review", at, rebuilds, s.rebuildsBy(string(e.Worker)))
					}
				}
			}
			maxToken = max(maxToken, e.Token)
		}
		vs = append(vs, c.writeAheads(id, evs)...)
		last := &s.Events[evs[len(evs)-1]]
		row := ix.row(s, id)
		switch {
		case row == nil:
			add(id, "op %s has %d events but no row", id, len(evs))
		default:
			if last.To != row.State {
				add(id, "op %s: the log replays to %s (event #%d), but the row is %s", id, last.To, last.Seq, row.State)
			}
			if last.Txid != row.Envelope.Txid {
				add(id, "op %s: the log ends on txid %s (event #%d), but the row holds %s", id, txidOrNone(last.Txid), last.Seq, txidOrNone(row.Envelope.Txid))
			}
			if t := row.Envelope.Txid; !t.IsZero() && t != row.Envelope.Raw.Txid() {
				add(id, "op %s: the row's txid %s is not its raw_data's txid %s", id, t.Short(), row.Envelope.Raw.Txid().Short())
			}
			if row.Token < maxToken {
				add(id, "op %s: the row's token %d is below token %d its log already used: fencing tokens went back", id, row.Token, maxToken)
			}
		}
	}
	for i := range s.Operations {
		if op := &s.Operations[i]; len(ix.events(op.ID)) == 0 {
			add(op.ID, "op %s is %s but has no events", op.ID, op.State)
		}
	}
	vs = append(vs, c.confirmedWhenSolid()...)
	vs = append(vs, c.freshWriteAheads()...)
	vs = append(vs, c.expirationsFromHead()...)
	vs = append(vs, c.referencesSolid()...)
	return finish(append(vs, c.stuckWaits()...))
}

// stuckWaits judges the waits the world saw the stuck policy decide, by
// the model's own reading of the policy: a txid a lookup did not find, from
// a node whose solid head reached the fetched solid block, whose time is at
// or past the txid's expiration plus the margin, is dead; the policy then
// waits only while it has waited less than RebuildAfter since the first
// write-ahead, has rebuilds left, and has waited less than CancelAfter.
// Otherwise it rebuilds, cancels or sends to review, and a wait leaves the
// customer's money held for nothing. A step that got its row's txid
// settled (solid, SUCCESS) and wrote nothing (WaitRecord.Settled) is
// reported whatever the policy.
func (c auditContext) stuckWaits() []Violation {
	p := c.s.Stuck
	var vs []Violation
	for i := range c.s.Waits {
		r := &c.s.Waits[i]
		if r.Settled != 0 {
			vs = append(vs, Violation{Invariant: AuditLog, Operation: r.Op, Message: fmt.Sprintf(
				"op %s: %s got txid %s included in block #%d, solid, with receipt SUCCESS, and wrote nothing (%q): only a confirmation, or a review when the logs are not the payment asked, follows such an answer; a paid withdrawal left open, its money held",
				r.Op, r.Proc, r.Txid.Short(), r.Settled, r.Reason)})
			continue
		}
		if r.Taken {
			vs = append(vs, Violation{Invariant: AuditLog, Operation: r.Op, Message: fmt.Sprintf(
				"op %s: %s sent txid %s, got it answered as taken by a node, with the row in broadcasting, and wrote nothing (%q): the row must record that a node holds the transaction (broadcast), or it shows a taken transaction as never accepted, and the stuck policy reads it so",
				r.Op, r.Proc, r.Txid.Short(), r.Reason)})
			continue
		}
		if p.RebuildAfter <= 0 {
			continue
		}
		raw, ok := c.ix.envelope(c.s, r.Txid)
		if !ok || r.LookupSolid < r.SolidNumber || r.SolidTime.Before(time.UnixMilli(raw.Expiration).Add(c.s.SafetyMargin)) {
			continue // no proof of death: waiting is all the policy may do
		}
		first, ok := c.ix.firstWriteAhead(c.s, r.Op)
		if !ok {
			continue // never sent: nothing to wait for; not a stuck wait
		}
		waited := r.SolidTime.Sub(first)
		rebuilds := c.rebuildsBefore(r.Op, r.Txid)
		var should string
		switch {
		case waited >= p.CancelAfter:
			should = fmt.Sprintf("at or past CancelAfter %s it cancels or sends to review", p.CancelAfter)
		case rebuilds >= c.s.rebuildsBy(r.Proc):
			should = fmt.Sprintf("with %d rebuilds of %d spent it cancels or sends to review", rebuilds, c.s.rebuildsBy(r.Proc))
		case waited >= p.RebuildAfter:
			should = fmt.Sprintf("past RebuildAfter %s it rebuilds", p.RebuildAfter)
		default:
			continue
		}
		vs = append(vs, Violation{Invariant: AuditLog, Operation: r.Op, Message: fmt.Sprintf(
			"op %s: %s waited (%q) on txid %s, which solid block #%d at %s proves dead (unknown to a node solid to #%d), %s after the first write-ahead: %s",
			r.Op, r.Proc, r.Reason, r.Txid.Short(), r.SolidNumber, stamp(r.SolidTime), r.LookupSolid, waited, should)})
	}
	return vs
}

// writeAheads checks that each txid of an operation's log that went on the
// wire went there after its write-ahead: the log's event into broadcasting
// naming that txid, stamped by the store's clock, at or before the first
// wire attempt, stamped by the node's. The order of the log and of the wire
// alone cannot show it: a store that loses an acknowledged write-ahead (a
// database crash behind an asynchronous commit) writes it again when the
// operation is driven anew, after the bytes went out, and the log then
// reads as if nothing happened. Only the two clocks, the store's and the
// node's, show the send preceded the durable intent. Equal instants pass:
// in a simulation the clock often does not move between a write and a send.
func (c auditContext) writeAheads(id sluice.OperationID, evs []int32) []Violation {
	var vs []Violation
	for k, pos := range evs {
		e := &c.s.Events[pos]
		t := e.Txid
		if t.IsZero() || mentionedBefore(c.s, evs[:k], t) {
			continue
		}
		w, ok := c.ix.firstWire(c.s, t)
		if !ok {
			continue
		}
		var ahead *sluice.Event
		for _, p := range evs[k:] {
			if f := &c.s.Events[p]; f.To == sluice.Broadcasting && f.Txid == t {
				ahead = f
				break
			}
		}
		switch {
		case ahead == nil:
			vs = append(vs, Violation{Invariant: AuditLog, Operation: id, Message: fmt.Sprintf(
				"op %s: txid %s went on the wire (%s at %s), but the log never wrote its write-ahead to broadcasting",
				id, t.Short(), w.Worker, w.At.Format(time.RFC3339Nano))})
		case ahead.At.After(w.At):
			vs = append(vs, Violation{Invariant: AuditLog, Operation: id, Message: fmt.Sprintf(
				"%s wrote the write-ahead of txid %s at %s, %s after %s put it on the wire: the bytes went out before the intent to send was durable (a lost write, written again)",
				lazyAt{id, ahead}, t.Short(), ahead.At.Format(time.RFC3339Nano), ahead.At.Sub(w.At), w.Worker)})
		}
	}
	return vs
}

// mentionedBefore reports whether one of the events at evs names txid t.
func mentionedBefore(s *Snapshot, evs []int32, t tron.Txid) bool {
	for _, p := range evs {
		if s.Events[p].Txid == t {
			return true
		}
	}
	return false
}

// confirmedWhenSolid checks every confirmation that landed, the
// automation's or an operator's: the txid it confirmed was in a block at or
// below the chain's solid head when the write landed (the world's record,
// from the network's truth). A block above it could still be reorganized
// away, and the payment with it. A confirmed txid that is not on the chain
// at all is at-most-once's and conservation's to report.
func (c auditContext) confirmedWhenSolid() []Violation {
	var vs []Violation
	for i := range c.s.Writes {
		w := &c.s.Writes[i]
		if w.SolidSeen == 0 {
			continue // not a confirmation
		}
		e := writeEvent(c.s, w)
		if e == nil || e.To != sluice.Confirmed {
			continue
		}
		for _, in := range c.onChain[e.Txid] {
			if in.BlockNumber > w.SolidSeen {
				vs = append(vs, Violation{Invariant: AuditLog, Operation: e.OperationID, Message: fmt.Sprintf(
					"%s (by %s) confirmed txid %s in block #%d while the chain's solid head was #%d: a confirmation must wait until its block is solid",
					lazyAt{e.OperationID, e}, w.Proc, e.Txid.Short(), in.BlockNumber, w.SolidSeen)})
			}
		}
	}
	return vs
}

// freshWriteAheads checks every worker's write-ahead the world saw land:
// in its step the node answered a head block (WriteRecord.AheadHead), and
// the envelope's own expiration (its raw data as stored, from Envelopes)
// was at least MinValidity after that head's time. An envelope with less
// left goes out when it can no longer be replaced for free: if it expires
// unincluded, only a proof of death (the expiration plus the margin, on
// solid chain) frees the withdrawal, and the rebuild spends its budget.
// Judged against the node's answer in the step, not the chain's truth:
// the head a lagging node gives is all the worker can know.
func (c auditContext) freshWriteAheads() []Violation {
	if c.s.MinValidity <= 0 {
		return nil
	}
	var vs []Violation
	for i := range c.s.Writes {
		w := &c.s.Writes[i]
		if !w.Ahead {
			continue
		}
		e := writeEvent(c.s, w)
		if e == nil || e.To != sluice.Broadcasting {
			continue
		}
		if w.AheadHead.IsZero() {
			vs = append(vs, Violation{Invariant: AuditLog, Operation: e.OperationID, Message: fmt.Sprintf(
				"%s (by %s) wrote the write-ahead of txid %s in a step where the node answered no head block: nothing showed the envelope had %s left before its expiration",
				lazyAt{e.OperationID, e}, w.Proc, e.Txid.Short(), c.s.MinValidity)})
			continue
		}
		raw, ok := c.ix.envelope(c.s, e.Txid)
		if !ok {
			continue
		}
		if left := time.UnixMilli(raw.Expiration).Sub(w.AheadHead); left < c.s.MinValidity {
			vs = append(vs, Violation{Invariant: AuditLog, Operation: e.OperationID, Message: fmt.Sprintf(
				"%s (by %s) wrote the write-ahead of txid %s with %s left before its expiration by the head the node answered (%s), less than MinValidity %s: a stale envelope must be rebuilt before its first send",
				lazyAt{e.OperationID, e}, w.Proc, e.Txid.Short(), left, stamp(w.AheadHead), c.s.MinValidity)})
		}
	}
	return vs
}

// expirationsFromHead checks every envelope a worker's write stored fresh
// (a build or a rebuild): in its step the node answered a head block
// (WriteRecord.BuiltHead), and the envelope's own expiration is within
// ExpirationWindow of that head's time and at least MinValidity past it.
// An expiration counted from anything else (a worker's clock, which may
// run a year ahead) makes a txid that no solid block can prove dead for as
// long: a withdrawal nobody can rebuild or cancel, or, past the node's
// window, one no node will take.
func (c auditContext) expirationsFromHead() []Violation {
	if c.s.ExpirationWindow <= 0 {
		return nil
	}
	var vs []Violation
	for i := range c.s.Writes {
		w := &c.s.Writes[i]
		if !w.Built {
			continue
		}
		e := writeEvent(c.s, w)
		if e == nil || e.Txid.IsZero() {
			continue
		}
		if w.BuiltHead.IsZero() {
			vs = append(vs, Violation{Invariant: AuditLog, Operation: e.OperationID, Message: fmt.Sprintf(
				"%s (by %s) stored txid %s built in a step where the node answered no head block: its expiration counts from nothing the chain said",
				lazyAt{e.OperationID, e}, w.Proc, e.Txid.Short())})
			continue
		}
		raw, ok := c.ix.envelope(c.s, e.Txid)
		if !ok {
			continue
		}
		after := time.UnixMilli(raw.Expiration).Sub(w.BuiltHead)
		if after > c.s.ExpirationWindow || after < c.s.MinValidity {
			vs = append(vs, Violation{Invariant: AuditLog, Operation: e.OperationID, Message: fmt.Sprintf(
				"%s (by %s) stored txid %s expiring %s after the head the node answered in that step (%s), outside [MinValidity %s, ExpirationWindow %s]: an expiration counts from head chain time",
				lazyAt{e.OperationID, e}, w.Proc, e.Txid.Short(), after, stamp(w.BuiltHead), c.s.MinValidity, c.s.ExpirationWindow)})
		}
	}
	return vs
}

// referencesSolid checks every envelope a worker's write stored fresh: its
// TAPoS reference names a block of the chain at or below the solid head
// when the write landed (WriteRecord.BuiltSolid, the network's truth), as
// TRON.md says sluice does. A reference to the head, or to any block above
// the solid one, is refused TAPOS_ERROR by a node a block behind, and dies
// with its block when a reorg orphans it: an envelope that can never land,
// its withdrawal waiting out an expiration and spending a rebuild. The
// reference is matched by hand (the block number's bytes 6..8, the id's
// bytes 8..16), not with tron's own Ref.
func (c auditContext) referencesSolid() []Violation {
	var vs []Violation
	for i := range c.s.Writes {
		w := &c.s.Writes[i]
		if !w.Built || w.BuiltSolid <= 0 || w.BuiltSolid >= int64(len(c.s.Blocks)) {
			continue
		}
		e := writeEvent(c.s, w)
		if e == nil || e.Txid.IsZero() {
			continue
		}
		raw, ok := c.ix.envelope(c.s, e.Txid)
		if !ok {
			continue
		}
		// The one block at or below the solid head, within TAPoS's window
		// of 65,536, whose number ends in the reference's two bytes.
		low := int64(raw.RefBlockBytes[0])<<8 | int64(raw.RefBlockBytes[1])
		n := w.BuiltSolid - (w.BuiltSolid-low)&0xffff
		if n >= 0 {
			if id := c.s.Blocks[n].ID; c.s.Blocks[n].Number == n && [8]byte(id[8:16]) == raw.RefBlockHash {
				continue
			}
		}
		vs = append(vs, Violation{Invariant: AuditLog, Operation: e.OperationID, Message: fmt.Sprintf(
			"%s (by %s) stored txid %s whose TAPoS reference (block number ending %04x, id bytes %x) names no block at or below the solid head %d when it landed: a reference above the solid block is refused by a node behind it and dies with it in a reorg (TRON.md: sluice references the solid block)",
			lazyAt{e.OperationID, e}, w.Proc, e.Txid.Short(), low, raw.RefBlockHash, w.BuiltSolid)})
	}
	return vs
}

// writeEvent is the event write w appended (Events is in Seq order), nil
// when the log does not hold it.
func writeEvent(s *Snapshot, w *WriteRecord) *sluice.Event {
	k, ok := slices.BinarySearchFunc(s.Events, w.Seq, func(e sluice.Event, seq int64) int { return cmp.Compare(e.Seq, seq) })
	if !ok {
		return nil
	}
	return &s.Events[k]
}

// lazyAt names an event in messages ("op X event #N from->to"), formatted
// only when printed.
type lazyAt struct {
	id sluice.OperationID
	e  *sluice.Event
}

func (a lazyAt) String() string {
	return fmt.Sprintf("op %s event #%d %s->%s", a.id, a.e.Seq, a.e.From, a.e.To)
}

type auditContext struct {
	s       *Snapshot
	ix      *index
	onChain map[tron.Txid][]mocknode.Inclusion
}

// txidChange checks how event e changed the operation's txid after prev.
func (c auditContext) txidChange(at lazyAt, prev, e *sluice.Event) []Violation {
	var vs []Violation
	add := func(format string, args ...any) {
		vs = append(vs, Violation{Invariant: AuditLog, Operation: e.OperationID, Message: at.String() + " " + fmt.Sprintf(format, args...)})
	}
	rebuild := e.To == sluice.Signing && (e.From == sluice.Signed || e.From == sluice.Broadcasting || e.From == sluice.Broadcast)
	if e.RetiredTxid.IsZero() {
		if rebuild {
			add("is a rebuild but retires no txid")
		}
		if !prev.Txid.IsZero() && e.Txid != prev.Txid {
			add("replaces txid %s by %s without retiring it", prev.Txid.Short(), txidOrNone(e.Txid))
		}
		return vs
	}
	if e.RetiredTxid != prev.Txid {
		add("retires txid %s, but the operation held %s", e.RetiredTxid.Short(), txidOrNone(prev.Txid))
	}
	if rebuild && e.Txid == e.RetiredTxid {
		add("rebuilds but keeps the retired txid %s", e.RetiredTxid.Short())
	}
	if e.From != sluice.Broadcasting && e.From != sluice.Broadcast {
		// Before the write-ahead nothing was sent, so no proof is needed,
		// provided nothing was in fact sent: no broadcast of it, no
		// acceptance, no inclusion.
		if c.ix.onWire(e.RetiredTxid) {
			add("retires txid %s without proof of death as never sent, but it was on the wire", e.RetiredTxid.Short())
		}
		if c.ix.acceptedByNode(e.RetiredTxid) {
			add("retires txid %s without proof of death as never sent, but the node accepted it", e.RetiredTxid.Short())
		}
		for _, in := range c.onChain[e.RetiredTxid] {
			add("retires txid %s without proof of death as never sent, but it is on chain in block #%d with receipt %s", e.RetiredTxid.Short(), in.BlockNumber, in.Receipt)
		}
		return vs
	}

	ev := e.Evidence
	if ev == nil {
		add("retires txid %s, which may have been sent, without evidence of its death", e.RetiredTxid.Short())
		return vs
	}
	if ev.Txid != e.RetiredTxid {
		add("retires txid %s with evidence about another txid (%s)", e.RetiredTxid.Short(), ev)
	}
	expiration, margin := ev.Expiration, ev.Margin
	if len(c.s.Envelopes) > 0 {
		// An envelope the world did not see stored (a live check sees only
		// the rows' last ones) cannot be re-derived; a write that bypassed
		// the world's view is one-writer's to report.
		if raw, ok := c.ix.envelope(c.s, e.RetiredTxid); ok {
			if expiration = time.UnixMilli(raw.Expiration); !ev.Expiration.Equal(expiration) {
				add("retires txid %s with evidence claiming expiration %s, but its raw_data expires at %s",
					e.RetiredTxid.Short(), stamp(ev.Expiration), stamp(expiration))
			}
		}
	}
	if c.s.SafetyMargin > 0 {
		if margin = c.s.SafetyMargin; ev.Margin != margin {
			add("retires txid %s with evidence using margin %s, but the configured safety margin is %s", e.RetiredTxid.Short(), ev.Margin, margin)
		}
	}
	if ev.Lookup == tron.Included {
		// Proof by a failed receipt: the txid is on chain for good, in a
		// solid block, and moved nothing.
		vs = append(vs, c.failedReceiptProof(at, e.RetiredTxid, ev)...)
		return vs
	}
	if ev.Lookup != tron.Unknown || ev.SolidTime.Before(expiration.Add(margin)) || ev.LookupSolid < ev.SolidNumber {
		add("retires txid %s with evidence that proves nothing (%s): the solid time must reach expiration %s + margin %s and the lookup must be unknown from a node whose own solid head reached the cited block",
			e.RetiredTxid.Short(), ev, stamp(expiration), margin)
	}
	if bad := c.citedBlock(ev); bad != "" {
		add("retires txid %s with evidence citing %s (%s)", e.RetiredTxid.Short(), bad, ev)
	}
	for _, in := range c.onChain[e.RetiredTxid] {
		add("retires txid %s as dead, but it is on chain in block #%d with receipt %s", e.RetiredTxid.Short(), in.BlockNumber, in.Receipt)
	}
	if e.To == sluice.Signing && c.s.Stuck.RebuildAfter > 0 {
		if why := c.stuckRebuild(e, ev); why != "" {
			add("rebuilds txid %s %s", e.RetiredTxid.Short(), why)
		}
	}
	return vs
}

// stuckRebuild says what is wrong with the timing of a rebuild of a txid a
// lookup proved dead, or "": the model's own reading of the stuck policy
// (seed 004), not its code. The wait runs from the operation's first
// write-ahead (the store's stamp in the log) to the time of the solid block
// the evidence cites (held to the chain by citedBlock), which is what a
// worker whose own clock is off can judge. Before RebuildAfter, the
// replacement was not yet due: fees paid for a transaction that may only
// have been slow. At or past CancelAfter, the policy gives up (cancel, or
// review when our own trouble was involved): a rebuild there keeps a
// withdrawal alive past the point the customer was promised an answer.
func (c auditContext) stuckRebuild(e *sluice.Event, ev *sluice.Evidence) string {
	p := c.s.Stuck
	first, ok := c.ix.firstWriteAhead(c.s, e.OperationID)
	if !ok {
		return "proven dead, but the log has no write-ahead to count the stuck policy's wait from"
	}
	waited := ev.SolidTime.Sub(first)
	switch {
	case waited < p.RebuildAfter:
		return fmt.Sprintf("proven dead by solid block #%d at %s, %s after the first write-ahead at %s: before RebuildAfter %s, the stuck policy waits",
			ev.SolidNumber, stamp(ev.SolidTime), waited, stamp(first), p.RebuildAfter)
	case waited >= p.CancelAfter:
		return fmt.Sprintf("proven dead by solid block #%d at %s, %s after the first write-ahead at %s: at or past CancelAfter %s, the stuck policy cancels or sends to review",
			ev.SolidNumber, stamp(ev.SolidTime), waited, stamp(first), p.CancelAfter)
	}
	return ""
}

// failedReceiptProof checks evidence that txid t died by a failed receipt
// against the chain: the node that showed the receipt called its block
// solid (by the evidence: only that node can say a block is final; another
// node's solid height proves nothing about a fork this one may be on), the
// chain has t in the cited block, at or below the cited solid block and the
// final solid head, with the cited receipt, which is not SUCCESS; and t has
// no other inclusion.
func (c auditContext) failedReceiptProof(at lazyAt, t tron.Txid, ev *sluice.Evidence) []Violation {
	var vs []Violation
	add := func(format string, args ...any) {
		vs = append(vs, Violation{Invariant: AuditLog, Operation: at.id, Message: at.String() + " " + fmt.Sprintf(format, args...)})
	}
	if ev.Receipt == "" || ev.Receipt == tron.ReceiptSuccess || ev.BlockNumber <= 0 || ev.BlockNumber > ev.SolidNumber || !ev.SeenSolid {
		add("retires txid %s with evidence that proves nothing (%s): an inclusion proves death only with a failed receipt in a block at or below the cited solid block, which the node that showed it calls solid", t.Short(), ev)
	}
	if bad := c.citedBlock(ev); bad != "" {
		add("retires txid %s with evidence citing %s (%s)", t.Short(), bad, ev)
	}
	found := false
	for _, in := range c.onChain[t] {
		switch {
		case in.Receipt == tron.ReceiptSuccess:
			add("retires txid %s as dead by a failed receipt, but it is on chain in block #%d with SUCCESS", t.Short(), in.BlockNumber)
		case in.BlockNumber == ev.BlockNumber && in.Receipt == ev.Receipt && in.BlockNumber <= c.s.SolidNumber:
			found = true
		}
	}
	if !found {
		add("retires txid %s citing receipt %s in block #%d, but the final chain has no such solid inclusion", t.Short(), ev.Receipt, ev.BlockNumber)
	}
	return vs
}

// operatorAction checks an operator's transition against the chain: a
// cancel of an operation whose txid may have been sent carries proof of
// that txid's death; a review resolved as paid names a txid of the
// operation that the chain has in a solid block with SUCCESS.
func (c auditContext) operatorAction(at lazyAt, prev, e *sluice.Event) []Violation {
	var vs []Violation
	add := func(format string, args ...any) {
		vs = append(vs, Violation{Invariant: AuditLog, Operation: at.id, Message: at.String() + " " + fmt.Sprintf(format, args...)})
	}
	switch e.To {
	case sluice.Failed:
		t := prev.Txid
		if t.IsZero() || !c.mayBeSent(t, e.From) {
			return nil
		}
		ev := e.Evidence
		if ev == nil {
			add("is an operator's cancel of txid %s, which may have been sent, without proof of its death", t.Short())
			return vs
		}
		if ev.Txid != t {
			add("is an operator's cancel citing evidence about txid %s, but the operation holds %s", ev.Txid.Short(), t.Short())
		}
		if ev.Lookup == tron.Included {
			return append(vs, c.failedReceiptProof(at, t, ev)...)
		}
		expiration, margin := ev.Expiration, ev.Margin
		if raw, ok := c.ix.envelope(c.s, t); ok {
			expiration = time.UnixMilli(raw.Expiration)
		}
		if c.s.SafetyMargin > 0 {
			margin = c.s.SafetyMargin
		}
		if ev.Lookup != tron.Unknown || ev.SolidTime.Before(expiration.Add(margin)) || ev.LookupSolid < ev.SolidNumber {
			add("is an operator's cancel of txid %s with evidence that proves nothing (%s): the solid time must reach expiration %s + margin %s and the lookup must be unknown",
				t.Short(), ev, stamp(expiration), margin)
		}
		if bad := c.citedBlock(ev); bad != "" {
			add("is an operator's cancel citing %s (%s)", bad, ev)
		}
		for _, in := range c.onChain[t] {
			add("is an operator's cancel of txid %s, but it is on chain in block #%d with receipt %s", t.Short(), in.BlockNumber, in.Receipt)
		}
	case sluice.Confirmed:
		ok := false
		for _, in := range c.onChain[e.Txid] {
			if in.Receipt == tron.ReceiptSuccess && in.BlockNumber <= c.s.SolidNumber {
				ok = true
			}
		}
		if !ok {
			add("resolves the review as paid by txid %s, which the final chain does not have in a solid block with SUCCESS", txidOrNone(e.Txid))
		}
	}
	return vs
}

// mayBeSent reports whether txid t, held in state from, may ever have
// reached a node: from broadcasting on, or anything the world saw on the
// wire, accepted or included.
func (c auditContext) mayBeSent(t tron.Txid, from sluice.State) bool {
	switch from {
	case sluice.Broadcasting, sluice.Broadcast, sluice.Review:
		return true
	}
	return c.ix.onWire(t) || c.ix.acceptedByNode(t) || len(c.onChain[t]) > 0
}

// rebuildsBefore is how many rebuilds id's log holds up to the event that
// built txid t: the budget spent when t became the operation's txid, read
// from the log, not from the row a worker reports.
func (c auditContext) rebuildsBefore(id sluice.OperationID, t tron.Txid) int {
	n := 0
	for _, pos := range c.ix.events(id) {
		e := &c.s.Events[pos]
		if e.To == sluice.Signing && !e.RetiredTxid.IsZero() {
			n++
		}
		if e.Txid == t {
			return n
		}
	}
	return n
}

// citedBlock says what is wrong with the solid block the evidence cites, or "".
func (c auditContext) citedBlock(ev *sluice.Evidence) string {
	blocks := c.ix.blocksAt(c.s, ev.SolidNumber)
	if len(blocks) == 0 {
		return fmt.Sprintf("block #%d, which is not on the chain", ev.SolidNumber)
	}
	for _, b := range blocks {
		if b.Time.Equal(ev.SolidTime) {
			if ev.SolidNumber > c.s.SolidNumber {
				return fmt.Sprintf("block #%d, above the final solid head #%d: it was never solid", ev.SolidNumber, c.s.SolidNumber)
			}
			return ""
		}
	}
	return fmt.Sprintf("block #%d at %s, but the chain's block #%d is at %s", ev.SolidNumber, stamp(ev.SolidTime), ev.SolidNumber, stamp(blocks[0].Time))
}

func txidOrNone(t tron.Txid) string {
	if t.IsZero() {
		return "none"
	}
	return t.Short()
}
