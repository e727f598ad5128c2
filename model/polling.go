package model

import (
	"fmt"
	"time"

	"sluicesim/sluice"
)

// CheckPacedPolling judges how often the workers asked the chain about a
// txid, by the world's record of their lookups, claims, writes, releases
// and parks (never by the core's own account of its waits).
//
// A step that looks a txid up and writes nothing (pending, included but
// not yet solid, not found and not yet provably dead, the node busy or
// unreachable) must hand the row back with a wait, so the next look comes
// later: a process that asks about the same txid again sooner than the
// shortest wait the core is configured with (PollFloor), with no write or
// park of its own on that operation in between and no other process's
// claim of it (movedBetween), is polling in a loop. On a paid provider
// (TronGrid's keys are rate-limited) such a loop gets the hot wallet's key
// throttled, and then no withdrawal moves. Only one process's own pace is
// judged: two processes looking at once is not a loop.
//
// One violation an operation (the first pair too close, with how many more
// there were), so that a loop of twelve lookups reads as one finding.
func CheckPacedPolling(s *Snapshot) []Violation {
	if s.PollFloor <= 0 || len(s.Lookups) < 2 {
		return nil
	}
	type finding struct {
		first, second int // positions in Lookups
		more          int
	}
	var found []finding
	var byOp map[sluice.OperationID]int // an operation's finding, by its index in found
	for i := range s.Lookups {
		l := &s.Lookups[i]
		// The process's previous lookup of the txid, if it was within the
		// floor: the records are in call order, so on virtual time, and
		// only the few lookups of the last PollFloor need reading (no
		// index of every lookup to build).
		j := -1
		for k := i - 1; k >= 0 && l.At.Sub(s.Lookups[k].At) < s.PollFloor; k-- {
			if q := &s.Lookups[k]; q.Txid == l.Txid && q.Proc == l.Proc {
				j = k
				break
			}
		}
		if j < 0 {
			continue
		}
		if movedBetween(s, &s.Lookups[j], l) {
			continue
		}
		if f, ok := byOp[l.Op]; ok {
			found[f].more++
			continue
		}
		if byOp == nil {
			byOp = map[sluice.OperationID]int{}
		}
		byOp[l.Op] = len(found)
		found = append(found, finding{first: j, second: i})
	}
	var vs []Violation
	for _, f := range found {
		p, l := &s.Lookups[f.first], &s.Lookups[f.second]
		more := ""
		if f.more > 0 {
			more = fmt.Sprintf(" (and %d more lookups of it as close)", f.more)
		}
		vs = append(vs, Violation{Invariant: PacedPolling, Operation: l.Op, Message: fmt.Sprintf(
			"op %s: %s looked txid %s up at %s and again %s later%s, with no write or park of its own in between and no other claim of the row: the shortest wait between two looks is %s, and a worker that polls the node in a loop gets a provider's key throttled",
			l.Op, l.Proc, l.Txid.Short(), stamp(p.At), l.At.Sub(p.At).Round(time.Millisecond), more, s.PollFloor)})
	}
	return finish(vs)
}

// movedBetween reports whether, between l's process's lookup p and its
// lookup l, something other than the process's own pace brought the second
// look:
//
//   - the process landed a write or a park on l's operation (the row moved
//     on, and its next step asks afresh);
//   - another took the row after the process's own claim under which it
//     looked p up: a worker's claim after a lease lapsed (p may have been
//     a zombie's look), or an operator's resolution (a retry makes the row
//     claimable at once);
//   - the process claimed the row again without having released it since
//     p: its own lease lapsed (its write failed, say), which the lease
//     paces, not a wait the step chose.
//
// What is left is a look again within one claim, or after a release of
// the process's own with too short a wait.
func movedBetween(s *Snapshot, p, l *LookupRecord) bool {
	claims := s.Claims[:min(l.Claims, len(s.Claims))]
	from := 0
	for i := min(p.Claims, len(claims)) - 1; i >= 0; i-- {
		if c := &claims[i]; c.Op == l.Op && c.Proc == l.Proc {
			from = i + 1
			break
		}
	}
	reclaimed := false
	for i := from; i < len(claims); i++ {
		c := &claims[i]
		if c.Op != l.Op {
			continue
		}
		if c.Proc != l.Proc { // a worker's or the operator's
			return true
		}
		reclaimed = true // from is past its claim under which it looked p up
	}
	if reclaimed && !released(s.Releases[min(p.Releases, len(s.Releases)):min(l.Releases, len(s.Releases))], l) {
		return true
	}
	for _, w := range s.Writes[min(p.Writes, len(s.Writes)):min(l.Writes, len(s.Writes))] {
		if w.Proc == l.Proc && w.Op == l.Op {
			return true
		}
	}
	for _, k := range s.Parks[min(p.Parks, len(s.Parks)):min(l.Parks, len(s.Parks))] {
		if k.Proc == l.Proc && k.Op == l.Op {
			return true
		}
	}
	return false
}

// released reports whether l's process released l's operation in rs.
func released(rs []ReleaseRecord, l *LookupRecord) bool {
	for i := range rs {
		if rs[i].Proc == l.Proc && rs[i].Op == l.Op {
			return true
		}
	}
	return false
}
