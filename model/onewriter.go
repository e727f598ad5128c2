package model

import (
	"fmt"
	"time"

	"sluicesim/sluice"
)

// CheckOneWriter checks the claim protocol against who really did what, as
// the world watched it (Claims, Writes, Releases), not as the store or the
// core recorded it.
//
//   - Every event after an operation's creation was written by a write the
//     world saw, and that write came from the incarnation that claimed the
//     operation with the token the event carries. A write under another
//     holder's token is fencing bypassed, whatever the store allowed.
//   - A claim never takes a row whose lease is live (an operator's
//     resolution aside, which takes the row on purpose): the previous holder's
//     lease runs Lease past its claim and past each of its writes, and ends
//     early only by a release or a terminal write. Two incarnations then
//     never hold one lease at once.
//   - No claim takes a row before the wait its last park or release asked
//     for has passed (claimWaits; an operator's resolution frees it at
//     once).
//   - A claim call that took fewer rows than its limit passed over no row
//     that was due (dueRows).
//   - Tokens of successive claims of an operation strictly increase.
//   - A worker's write is refused as fenced only when another claim (a
//     worker's, or an operator's resolution) took the row after the
//     writer's own. The store fences by token, so a holder whose token is
//     still the row's is refused only for writing from a state the row is
//     not in: it lost track of its own writes (a park judged on the row
//     as claimed, say, after the step had moved it), and stops there, its
//     batch abandoned and its park or review never written.
//   - Every batch a worker claimed is handed back before its next claim
//     (handBacks).
//
// A snapshot without Claims (the world did not watch) is not checked.
func CheckOneWriter(s *Snapshot) []Violation {
	s = withMemo(s)
	if s.Claims == nil {
		return nil
	}
	var vs []Violation
	add := func(id sluice.OperationID, format string, args ...any) {
		vs = append(vs, Violation{Invariant: OneWriter, Operation: id, Message: fmt.Sprintf(format, args...)})
	}
	ix := s.index()
	// Claims, writes and releases by operation, each in its own order: the
	// index's slots, and more for ids it does not know (a claim of an id
	// with no row and no event). A write or release of an id no claim
	// names is never looked up.
	slots := int32(len(ix.ids))
	var extra map[sluice.OperationID]int32
	slotOf := func(id sluice.OperationID) int32 {
		if k, ok := ix.slot[id]; ok {
			return k
		}
		if k, ok := extra[id]; ok {
			return k
		}
		if extra == nil {
			extra = make(map[sluice.OperationID]int32)
		}
		k := slots + int32(len(extra))
		extra[id] = k
		return k
	}
	known := func(id sluice.OperationID) int32 {
		if k, ok := ix.slot[id]; ok {
			return k
		}
		if k, ok := extra[id]; ok {
			return k
		}
		return -1
	}
	bySlot := make([]int32, len(s.Claims)+len(s.Writes)+len(s.Releases))
	claimSlot, writeSlot, releaseSlot := bySlot[:len(s.Claims)], bySlot[len(s.Claims):len(s.Claims)+len(s.Writes)], bySlot[len(s.Claims)+len(s.Writes):]
	for i := range s.Claims {
		claimSlot[i] = slotOf(s.Claims[i].Op)
	}
	for i := range s.Writes {
		writeSlot[i] = known(s.Writes[i].Op)
	}
	for i := range s.Releases {
		releaseSlot[i] = known(s.Releases[i].Op)
	}
	n := int(slots) + len(extra)
	claimPos, claimStart := groupBy(claimSlot, n)
	writePos, writeStart := groupBy(writeSlot, n)
	releasePos, releaseStart := groupBy(releaseSlot, n)
	claimsOf := func(k int32) []int32 { return claimPos[claimStart[k]:claimStart[k+1]] }
	// claimer is the first claim of (slot k's id, token): the one that took
	// the lease (a second is reported below, and never its holder).
	claimer := func(k int32, token sluice.FencingToken) *ClaimRecord {
		for _, i := range claimsOf(k) {
			if s.Claims[i].Token == token {
				return &s.Claims[i]
			}
		}
		return nil
	}
	for k := range int32(n) {
		claims := claimsOf(k)
		for j, i := range claims {
			c := &s.Claims[i]
			for _, p := range claims[:j] {
				if prev := &s.Claims[p]; prev.Token == c.Token {
					add(c.Op, "op %s was claimed twice with token %d: by %s at %s and by %s at %s",
						c.Op, c.Token, prev.Proc, stamp(prev.At), c.Proc, stamp(c.At))
					break
				}
			}
		}
	}
	// A slice indexes the writes by the event each appended (Seqs start at
	// 1 and are dense in practice; a database sequence may skip one). A
	// write naming a Seq no event has is dropped, and so counts for nothing.
	var seqMax int64
	for i := range s.Events {
		seqMax = max(seqMax, s.Events[i].Seq)
	}
	writeBySeq := make([]*WriteRecord, seqMax+1)
	for i := range s.Writes {
		if w := &s.Writes[i]; w.Seq > 0 && w.Seq < int64(len(writeBySeq)) {
			writeBySeq[w.Seq] = w
		}
	}

	// Every event comes from its token's claimer.
	for i := range s.Events {
		e := &s.Events[i]
		if e.From == sluice.None {
			continue
		}
		at := func() string {
			return fmt.Sprintf("op %s event #%d %s->%s (token %d)", e.OperationID, e.Seq, e.From, e.To, e.Token)
		}
		var w *WriteRecord
		if e.Seq > 0 && e.Seq < int64(len(writeBySeq)) {
			w = writeBySeq[e.Seq]
		}
		if w == nil {
			add(e.OperationID, "%s was written by no worker call the world saw", at())
			continue
		}
		c := claimer(ix.evSlot[i], w.Token)
		switch {
		case w.Op != e.OperationID:
			add(e.OperationID, "%s was written by %s's write to op %s", at(), w.Proc, w.Op)
		case c == nil:
			add(e.OperationID, "%s was written by %s under token %d, which no claim granted", at(), w.Proc, w.Token)
		case c.Proc != w.Proc:
			add(e.OperationID, "%s was written by %s, but token %d was granted to %s at %s: one writer per token",
				at(), w.Proc, w.Token, c.Proc, stamp(c.At))
		}
	}

	// A refusal needs a rival: a claim of the operation, made before the
	// refusal, with a token above the writer's.
	for i := range s.Fenced {
		f := &s.Fenced[i]
		k := known(f.Op)
		if k < 0 || claimer(k, f.Token) == nil {
			continue // a token no claim granted: refusing it was right
		}
		rival := false
		for _, c := range claimsOf(k) {
			if int(c) < f.Claims && s.Claims[c].Token > f.Token {
				rival = true
				break
			}
		}
		if !rival {
			from := ""
			if f.From != sluice.None {
				from = " from " + f.From.String()
			}
			add(f.Op, "op %s: %s's %s%s under token %d at %s was refused as fenced, yet no claim had taken the row since its own: "+
				"the holder wrote from a state its own row was not in",
				f.Op, f.Proc, f.Call, from, f.Token, stamp(f.At))
		}
	}

	// Leases, per operation in claim order.
	for k := range int32(n) {
		claims := claimsOf(k)
		for i := 1; i < len(claims); i++ {
			prev, next := &s.Claims[claims[i-1]], &s.Claims[claims[i]]
			id := next.Op
			if next.Token <= prev.Token {
				add(id, "op %s: the claim by %s at %s has token %d, not above token %d of the claim before it",
					id, next.Proc, stamp(next.At), next.Token, prev.Token)
				continue
			}
			if prev.Operator || next.Operator {
				// An operator's resolution takes the row whatever lease is
				// on it (the token moves, fencing the holder) and holds
				// none itself.
				continue
			}
			writes := opWrites{s.Writes, writePos[writeStart[k]:writeStart[k+1]]}
			releases := opReleases{s.Releases, releasePos[releaseStart[k]:releaseStart[k+1]]}
			if until, live := leaseAt(prev, writes, releases, s.Lease, next.At); live {
				add(id, "op %s was claimed by %s at %s (token %d) while %s's lease (token %d) ran until %s",
					id, next.Proc, stamp(next.At), next.Token, prev.Proc, prev.Token, stamp(until))
			}
		}
	}

	// Every claim after the wait its row was let go with (claimWaits: the
	// world's records of the parks and releases, which the store's NotBefore
	// must keep). A claim before it skips a park's backoff or a release's
	// delay: a worker back at a node or a signer that is still short, and
	// the park bounds spent in moments.
	if len(s.Releases) > 0 {
		waits := claimWaits(s)
		for i := range s.Claims {
			if c := &s.Claims[i]; !c.Operator && c.At.Before(waits[i]) {
				add(c.Op, "op %s was claimed by %s at %s (token %d), before %s: the wait its last park or release asked for had not passed",
					c.Op, c.Proc, stamp(c.At), c.Token, stamp(waits[i]))
			}
		}
	}

	// Every claim short of its limit took every due row.
	dueRows(s, add)

	// Every batch handed back before its process's next.
	handBacks{s: s, claimsOf: claimsOf, slot: claimSlot,
		writes: func(k int32) opWrites { return opWrites{s.Writes, writePos[writeStart[k]:writeStart[k+1]]} },
		releases: func(k int32) opReleases {
			return opReleases{s.Releases, releasePos[releaseStart[k]:releaseStart[k+1]]}
		}}.check(add)
	return finish(vs)
}

// handBacks holds every worker's batch to being handed back: each row it
// claimed is released, parked or written into a terminal state under the
// claim's token by the process, before the process claims again. A worker
// that moves on with a row still leased to it leaves the withdrawal idle
// until the lease lapses, and skips the park's backoff and bounds (the
// count of parks that sends a row in trouble to a person). Excused: a
// batch a fence or a store failure of the process's own cut short (the
// core stops at either, and the leases lapse), and a row another claim
// took meanwhile (an operator's resolution, or a lapsed lease taken over:
// the process's release could not land). Only batches followed by another
// of the same process are judged: the last may still be at work when the
// run ends, and a crashed incarnation never claims again.
type handBacks struct {
	s        *Snapshot
	claimsOf func(k int32) []int32
	slot     []int32 // each claim's operation slot
	writes   func(k int32) opWrites
	releases func(k int32) opReleases
}

func (h handBacks) check(add func(id sluice.OperationID, format string, args ...any)) {
	s := h.s
	type batch struct{ from, to int } // positions in Claims, to exclusive
	var open map[string]batch
	var reported map[sluice.OperationID]bool
	for i := range s.Claims {
		c := &s.Claims[i]
		if c.Operator || !c.First {
			continue
		}
		b, ok := open[c.Proc]
		if open == nil {
			open = make(map[string]batch)
		}
		end := i + 1
		for end < len(s.Claims) && !s.Claims[end].First && !s.Claims[end].Operator && s.Claims[end].Proc == c.Proc {
			end++
		}
		open[c.Proc] = batch{i, end}
		if !ok || h.cutShort(c.Proc, b.to, i) {
			continue
		}
		for j := b.from; j < b.to; j++ {
			r := &s.Claims[j]
			if h.handedBack(j) || h.takenOver(j, b.to, i) || reported[r.Op] {
				continue
			}
			if reported == nil {
				reported = make(map[sluice.OperationID]bool)
			}
			reported[r.Op] = true
			add(r.Op, "op %s: %s claimed it at %s (token %d) and claimed again at %s without handing it back: no release, park or final write of its own under that token, no fence or store failure of its own since, and no other claim of the row; a lease left idle holds the withdrawal until it lapses (Lease %s) and skips the park's backoff and bounds",
				r.Op, r.Proc, stamp(r.At), r.Token, stamp(c.At), s.Lease)
		}
	}
}

// cutShort reports whether a fence or a store failure of proc's came
// between the claims from and to (positions in Claims).
func (h handBacks) cutShort(proc string, from, to int) bool {
	for i := range h.s.Fenced {
		if f := &h.s.Fenced[i]; f.Proc == proc && f.Claims >= from && f.Claims <= to {
			return true
		}
	}
	for i := range h.s.StoreFailures {
		if f := &h.s.StoreFailures[i]; f.Proc == proc && f.Claims >= from && f.Claims <= to {
			return true
		}
	}
	return false
}

// handedBack reports whether claim j's process released, parked or
// finished its row under its token.
func (h handBacks) handedBack(j int) bool {
	c := &h.s.Claims[j]
	k := h.slot[j]
	rels := h.releases(k)
	for _, i := range rels.pos {
		if r := &rels.all[i]; r.Token == c.Token && r.Proc == c.Proc {
			return true
		}
	}
	ws := h.writes(k)
	for _, i := range ws.pos {
		if w := &ws.all[i]; w.Token == c.Token && w.Proc == c.Proc && w.Terminal {
			return true
		}
	}
	return false
}

// takenOver reports whether another claim took claim j's row between the
// claims from and to (positions in Claims).
func (h handBacks) takenOver(j, from, to int) bool {
	for _, i := range h.claimsOf(h.slot[j]) {
		if int(i) >= from && int(i) < to {
			return true
		}
	}
	return false
}

// opWrites is an operation's writes (positions in all): leaseAt reads
// those under the claim's token.
type opWrites struct {
	all []WriteRecord
	pos []int32
}

// opReleases is an operation's releases (positions in all): leaseAt reads
// those under the claim's token.
type opReleases struct {
	all []ReleaseRecord
	pos []int32
}

// leaseAt says whether the lease taken by claim c is live at t: renewed to
// Lease past the claim and past each write under it made before t, unless a
// release or a terminal write before t ended it. A lease ends at its
// LeaseUntil instant: a claim at exactly that time is allowed.
func leaseAt(c *ClaimRecord, writes opWrites, rels opReleases, leaseLen time.Duration, t time.Time) (time.Time, bool) {
	until := c.At.Add(leaseLen)
	ended := false
	for _, i := range writes.pos {
		w := &writes.all[i]
		if w.Token != c.Token || w.At.After(t) {
			continue
		}
		if w.Terminal {
			ended = true
		}
		if u := w.At.Add(leaseLen); u.After(until) {
			until = u
		}
	}
	for _, i := range rels.pos {
		if r := &rels.all[i]; r.Token == c.Token && !r.At.After(t) {
			ended = true
		}
	}
	return until, !ended && until.After(t)
}
