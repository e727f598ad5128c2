package model

import (
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
func claimWaits(s *Snapshot) []time.Time {
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
