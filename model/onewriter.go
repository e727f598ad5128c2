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
//   - Tokens of successive claims of an operation strictly increase.
//
// A snapshot without Claims (the world did not watch) is not checked.
func CheckOneWriter(s *Snapshot) []Violation {
	if s.Claims == nil {
		return nil
	}
	var vs []Violation
	add := func(id sluice.OperationID, format string, args ...any) {
		vs = append(vs, Violation{Invariant: OneWriter, Operation: id, Message: fmt.Sprintf(format, args...)})
	}
	type lease struct {
		op    sluice.OperationID
		token sluice.FencingToken
	}
	claimer := make(map[lease]ClaimRecord, len(s.Claims))
	for _, c := range s.Claims {
		k := lease{c.Op, c.Token}
		if prev, dup := claimer[k]; dup {
			add(c.Op, "op %s was claimed twice with token %d: by %s at %s and by %s at %s",
				c.Op, c.Token, prev.Proc, stamp(prev.At), c.Proc, stamp(c.At))
			continue
		}
		claimer[k] = c
	}
	// A slice indexes the writes by the event each appended (Seqs start at
	// 1 and are dense in practice; a database sequence may skip one). A
	// write naming a Seq no event has is dropped, and so counts for nothing.
	var seqMax int64
	for _, e := range s.Events {
		seqMax = max(seqMax, e.Seq)
	}
	writeBySeq := make([]*WriteRecord, seqMax+1)
	for i := range s.Writes {
		if w := &s.Writes[i]; w.Seq > 0 && w.Seq < int64(len(writeBySeq)) {
			writeBySeq[w.Seq] = w
		}
	}

	// Every event comes from its token's claimer.
	for _, e := range s.Events {
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
		c, ok := claimer[lease{e.OperationID, w.Token}]
		switch {
		case w.Op != e.OperationID:
			add(e.OperationID, "%s was written by %s's write to op %s", at(), w.Proc, w.Op)
		case !ok:
			add(e.OperationID, "%s was written by %s under token %d, which no claim granted", at(), w.Proc, w.Token)
		case c.Proc != w.Proc:
			add(e.OperationID, "%s was written by %s, but token %d was granted to %s at %s: one writer per token",
				at(), w.Proc, w.Token, c.Proc, stamp(c.At))
		}
	}

	// Leases, per operation in claim order.
	byOp := make(map[sluice.OperationID][]ClaimRecord, len(s.Operations))
	for _, c := range s.Claims {
		byOp[c.Op] = append(byOp[c.Op], c)
	}
	writesOf := make(map[lease][]WriteRecord, len(s.Claims))
	for _, w := range s.Writes {
		writesOf[lease{w.Op, w.Token}] = append(writesOf[lease{w.Op, w.Token}], w)
	}
	releaseOf := make(map[lease][]time.Time, len(s.Claims))
	for _, r := range s.Releases {
		releaseOf[lease{r.Op, r.Token}] = append(releaseOf[lease{r.Op, r.Token}], r.At)
	}
	for _, id := range sortedKeys(byOp) {
		claims := byOp[id]
		for i := 1; i < len(claims); i++ {
			prev, next := claims[i-1], claims[i]
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
			if until, live := leaseAt(prev, writesOf[lease{id, prev.Token}], releaseOf[lease{id, prev.Token}], s.Lease, next.At); live {
				add(id, "op %s was claimed by %s at %s (token %d) while %s's lease (token %d) ran until %s",
					id, next.Proc, stamp(next.At), next.Token, prev.Proc, prev.Token, stamp(until))
			}
		}
	}
	return finish(vs)
}

// leaseAt says whether the lease taken by claim c is live at t: renewed to
// Lease past the claim and past each write under it made before t, unless a
// release or a terminal write before t ended it. A lease ends at its
// LeaseUntil instant: a claim at exactly that time is allowed.
func leaseAt(c ClaimRecord, writes []WriteRecord, releases []time.Time, leaseLen time.Duration, t time.Time) (time.Time, bool) {
	until := c.At.Add(leaseLen)
	ended := false
	for _, w := range writes {
		if w.At.After(t) {
			continue
		}
		if w.Terminal {
			ended = true
		}
		if u := w.At.Add(leaseLen); u.After(until) {
			until = u
		}
	}
	for _, r := range releases {
		if !r.After(t) {
			ended = true
		}
	}
	return until, !ended && until.After(t)
}
