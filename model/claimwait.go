package model

import (
	"fmt"
	"math"
	"slices"
	"time"

	"sluicesim/sluice"
)

// claimWaits is, for each claim the world recorded (by its position in
// Claims), when the row had last been let come free before it, by the
// world's records: the end of the wait set by the latest park, or release
// that landed on a held lease, before the claim (zero: none recorded). It
// is the row's NotBefore as the claiming worker read it, to which the core
// measures a spell of parks (NotBefore - ParkedSince): a release within a
// spell (a busy node, a worker letting go at a graceful stop) moves it
// past the last park's end. A release naming a lease that is gone (a later
// claim took the row, its holder already let it go, the row is terminal)
// changes nothing in the store, and nothing here: the store's reading of
// the token is not taken on trust, the world's order of claims, releases
// and writes decides. An operator's resolution frees the row at once.
// Three checkers ask for it (one-writer and both park bounds): Judge's copy
// keeps the first answer in its memo, which no caller writes to.
func claimWaits(s *Snapshot) []time.Time {
	if s.memo != nil && s.memo.waits != nil {
		return s.memo.waits
	}
	ends := replayClaimWaits(s)
	if s.memo != nil {
		s.memo.waits = ends
	}
	return ends
}

func replayClaimWaits(s *Snapshot) []time.Time {
	type lease struct {
		token          sluice.FencingToken
		held, terminal bool
		free           time.Time
	}
	rows := make(map[sluice.OperationID]lease, len(s.Claims)/2+1)
	ends := make([]time.Time, len(s.Claims))
	c, w := 0, 0
	claimsTo := func(n int) {
		for ; c < n && c < len(s.Claims); c++ {
			cl := &s.Claims[c]
			r := rows[cl.Op]
			ends[c] = r.free
			r.token, r.held = cl.Token, !cl.Operator
			if cl.Operator {
				r.free = cl.At
			}
			rows[cl.Op] = r
		}
	}
	for i := range s.Releases {
		rel := &s.Releases[i]
		claimsTo(rel.Claims)
		for ; w < len(s.Writes) && s.Writes[w].Seq <= rel.Seq; w++ {
			if wr := &s.Writes[w]; wr.Terminal {
				r := rows[wr.Op]
				r.terminal, r.held = true, false
				rows[wr.Op] = r
			}
		}
		r := rows[rel.Op]
		// A park lands under its token alone (the store's rule: it asks no
		// lease); a release only on the lease it names, still held.
		if !rel.Park && (r.terminal || !r.held || r.token != rel.Token) {
			continue
		}
		r.free, r.held = rel.At.Add(max(rel.After, 0)), false
		rows[rel.Op] = r
	}
	claimsTo(len(s.Claims))
	return ends
}

// claimOf is the position in Claims of the worker's claim of op that gave
// token, looking only before position before; -1 when the world recorded
// none (tokens rise with each claim of a row, so there is one at most).
func claimOf(s *Snapshot, op sluice.OperationID, token sluice.FencingToken, before int) int {
	for j := min(before, len(s.Claims)) - 1; j >= 0; j-- {
		if c := &s.Claims[j]; c.Op == op && c.Token == token && !c.Operator {
			return j
		}
	}
	return -1
}

// dueRows holds every claim call that took fewer rows than its limit to
// having taken every row that was due, by the world's records: a row
// created (its creation event in the store's log before the call), not
// terminal (no write into a terminal state before it, by the world's
// record of the writes), free (the wait its last park or release asked
// for, or an operator's resolution, passed) and not leased (no holder, or
// the holder's lease, Lease past its claim and each of its writes, lapsed).
// The store takes due rows oldest first up to the limit, so a call short of
// it that passes one over leaves a withdrawal idle, its money held, for as
// long as the slip lasts: a lapsed lease never taken over, a wait that
// outlives what was asked, an operator's retry that does not free the row.
// Claims, releases and writes are replayed in the order they landed: a
// write before a claim or release whose Seq is at least its own, a claim
// before a release or call that had counted it.
func dueRows(s *Snapshot, add func(id sluice.OperationID, format string, args ...any)) {
	if len(s.ClaimCalls) == 0 || s.Lease <= 0 {
		return
	}
	ix := s.index()
	type row struct {
		exists, terminal, held bool
		token                  sluice.FencingToken
		free, leaseEnd         time.Time
	}
	rows := make([]row, len(ix.ids))
	// open holds the slots of rows created and not yet terminal, in slot
	// order: a short call looks only at them (most rows of a long run are
	// done by the time most calls come).
	open := make([]int32, 0, 16)
	// A row is due from dueAt on (Unix ns): the end of its wait and, while
	// held, of its holder's lease. earliest is at most the dueAt of every
	// open row not yet reported: lowered whenever a row changes, made exact
	// again by each scan, so that a call before it has nothing to find and
	// is passed without a scan (most calls, in a run's long quiet spells).
	dueAt := func(r *row) int64 {
		if r.held {
			return max(r.free.UnixNano(), r.leaseEnd.UnixNano())
		}
		return r.free.UnixNano()
	}
	earliest := int64(math.MaxInt64)
	slot := func(id sluice.OperationID) (*row, bool) {
		k, ok := ix.slot[id]
		if !ok {
			return nil, false
		}
		return &rows[k], true
	}
	touch := func(r *row) { earliest = min(earliest, dueAt(r)) }
	ev, cl, rl, wr := 0, 0, 0, 0
	write := func() {
		w := &s.Writes[wr]
		wr++
		r, ok := slot(w.Op)
		switch {
		case !ok:
		case w.Terminal:
			r.terminal, r.held = true, false
		case r.held && w.Token == r.token:
			r.leaseEnd = w.At.Add(s.Lease) // a write under the lease renews it
			touch(r)
		}
	}
	claim := func() {
		c := &s.Claims[cl]
		cl++
		r, ok := slot(c.Op)
		if !ok {
			return
		}
		r.token = c.Token
		if c.Operator {
			// A resolution takes the row from any holder and frees it.
			r.held, r.free = false, c.At
		} else {
			r.held, r.leaseEnd = true, c.At.Add(s.Lease)
		}
		touch(r)
	}
	release := func() {
		rel := &s.Releases[rl]
		rl++
		r, ok := slot(rel.Op)
		if !ok || !rel.Park && (r.terminal || !r.held || r.token != rel.Token) {
			return // a stale release changes nothing
		}
		r.held, r.free = false, rel.At.Add(max(rel.After, 0))
		touch(r)
	}
	// upTo replays what landed before a record that had counted claims
	// claims and releases releases, with the store's log at seq.
	upTo := func(claims, releases int, seq int64) {
		for ; ev < len(s.Events) && s.Events[ev].Seq <= seq; ev++ {
			if e := &s.Events[ev]; e.From == sluice.None {
				k := ix.evSlot[ev]
				r := &rows[k]
				if !r.exists {
					// Slots are numbered by first event, so this is
					// nearly always an append.
					at, _ := slices.BinarySearch(open, k)
					open = slices.Insert(open, at, k)
				}
				r.exists, r.free = true, e.At
				touch(r)
			}
		}
		for {
			nextW := wr < len(s.Writes) && s.Writes[wr].Seq <= seq
			nextC := cl < claims && cl < len(s.Claims)
			nextR := rl < releases && rl < len(s.Releases)
			switch {
			case nextW && (!nextC || s.Writes[wr].Seq <= s.Claims[cl].Seq) && (!nextR || s.Writes[wr].Seq <= s.Releases[rl].Seq):
				write()
			case nextC && (!nextR || cl < s.Releases[rl].Claims):
				claim()
			case nextR:
				// Every write and claim before it is applied: one blocked
				// behind a claim that comes after the release is itself
				// after the release.
				release()
			default:
				return
			}
		}
	}
	var reported []bool
	for i := range s.ClaimCalls {
		call := &s.ClaimCalls[i]
		upTo(call.Claims, call.Releases, call.Seq)
		at := call.At.UnixNano()
		if call.Took >= call.Limit || at < earliest {
			continue
		}
		n, next := 0, int64(math.MaxInt64)
		for _, k := range open {
			r := &rows[k]
			if r.terminal {
				continue // for good: dropped from open
			}
			open[n] = k
			n++
			if reported != nil && reported[k] {
				continue // its first is enough; out of earliest
			}
			due := dueAt(r)
			if due > at {
				next = min(next, due)
				continue
			}
			id := ix.ids[k]
			taken := false
			for j := call.Claims; j < call.Claims+call.Took && j < len(s.Claims); j++ {
				taken = taken || s.Claims[j].Op == id
			}
			if taken {
				continue // its claim, replayed before the next call, touches it
			}
			if reported == nil {
				reported = make([]bool, len(rows))
			}
			reported[k] = true // its first, and the first is enough
			why := fmt.Sprintf("free since %s, no holder", stamp(r.free))
			if r.held {
				why = fmt.Sprintf("free since %s, its holder's lease (token %d) lapsed at %s", stamp(r.free), r.token, stamp(r.leaseEnd))
			}
			add(id, "op %s was due at %s (%s), yet a claim by %s then took %d of the %d rows it asked for and passed it over: a withdrawal idle, its money held, while workers find nothing to do",
				id, stamp(call.At), why, call.Proc, call.Took, call.Limit)
		}
		open, earliest = open[:n], next
	}
}
