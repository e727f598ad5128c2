package model

import (
	"fmt"
	"slices"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
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
// It also judges the sends after a shortage of ours (pacedAfterShortage):
// a process that sends again at once after its own send was refused for
// bandwidth, energy or the contract's state, after its signing failed, or
// after it rebuilt a transaction that failed on chain, hammers the node
// through a shortage that lasts and spends the fee and the rebuild budget
// on it.
//
// One violation an operation and kind (the first pair too close, with how
// many more there were), so that a loop of twelve lookups reads as one
// finding.
func CheckPacedPolling(s *Snapshot) []Violation {
	vs := append(pacedLookups(s), pacedAfterShortage(s)...)
	return finish(append(vs, lookedAfterUntaken(s)...))
}

// acceptedAnswers are the send answers by which the node took the
// transaction (TRON's codes, read here, not by the core's tron.Read).
var acceptedAnswers = []string{string(tron.CodeSuccess), string(tron.CodeDupTransactionError)}

// lookedAfterUntaken judges the first look after a send the node did not
// take (busy, no connection, a refusal, a timeout, any error): such a send
// asks for a wait before the chain is asked about the txid, since nothing
// can have changed at once, so a process that looks its txid up sooner
// than PollFloor after its own send, with no write or park of its own and
// no other claim of the row in between (movedBetween, as for two looks),
// is polling in a loop: a worker that ignores the wait its step asked for.
// An accepted send moves the row (broadcast), and the look that follows at
// once is the next step's.
func lookedAfterUntaken(s *Snapshot) []Violation {
	if s.PollFloor <= 0 || len(s.Sends) == 0 || len(s.Lookups) == 0 {
		return nil
	}
	var vs []Violation
	var seen map[sluice.OperationID]bool // one finding an operation
	d := 0                               // the first send not before the window of the lookup at hand
	for i := range s.Lookups {
		l := &s.Lookups[i]
		for d < len(s.Sends) && l.At.Sub(s.Sends[d].At) >= s.PollFloor {
			d++
		}
		// The process's latest send of the txid before the lookup, within
		// the floor (a send had counted the lookups before it).
		var last *SendRecord
		for k := d; k < len(s.Sends) && s.Sends[k].Lookups <= i; k++ {
			if q := &s.Sends[k]; q.Txid == l.Txid && q.Proc == l.Proc {
				last = q
			}
		}
		if last == nil || slices.Contains(acceptedAnswers, last.Answer) || seen[l.Op] {
			continue
		}
		p := LookupRecord{Op: last.Op, Txid: last.Txid, Proc: last.Proc, At: last.At,
			Claims: last.Claims, Writes: last.Writes, Releases: last.Releases, Parks: last.Parks}
		if movedBetween(s, &p, l) {
			continue
		}
		if seen == nil {
			seen = map[sluice.OperationID]bool{}
		}
		seen[l.Op] = true
		vs = append(vs, Violation{Invariant: PacedPolling, Operation: l.Op, Message: fmt.Sprintf(
			"op %s: %s sent txid %s at %s, which the node did not take (%s), and looked it up %s later, with no write or park of its own in between and no other claim of the row: a send not taken asks for a wait (the shortest is %s) before the chain is asked again",
			l.Op, l.Proc, l.Txid.Short(), stamp(last.At), last.Answer, l.At.Sub(last.At).Round(time.Millisecond), s.PollFloor)})
	}
	return vs
}

// pacedLookups judges the lookups (see CheckPacedPolling).
func pacedLookups(s *Snapshot) []Violation {
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
	return vs
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

// shortage is a shortage of ours one process saw on one operation: its
// send refused for bandwidth, energy or the contract's state, its signing
// failed, or a transaction of the operation failed on chain and the process
// rebuilt it. The process's next send of the operation must wait for the
// shortage to end: a park, whose first wait is the floor pacedAfterShortage
// holds it to.
type shortage struct {
	op   sluice.OperationID
	proc string
	at   time.Time
	// claims and sends: how many claims and sends the world had seen at
	// it, which order it exactly against them (times cannot: a step's
	// calls share one virtual instant).
	claims, sends int
	// What it was, for the message (made only for a violation): kind, and
	// the position of its record in Sends, SignerFailures or Writes.
	kind shortageKind
	rec  int
}

type shortageKind uint8

const (
	shortRefused shortageKind = iota // Sends[rec] was refused
	shortSigning                     // SignerFailures[rec]
	shortRebuilt                     // Writes[rec] rebuilt after a failed receipt
)

// what says what shortage sh was, from its record.
func (sh *shortage) what(s *Snapshot) string {
	switch sh.kind {
	case shortRefused:
		d := &s.Sends[sh.rec]
		return fmt.Sprintf("its send of txid %s was refused %s at %s", d.Txid.Short(), d.Answer, stamp(d.At))
	case shortSigning:
		f := &s.SignerFailures[sh.rec]
		return fmt.Sprintf("its signing of txid %s failed at %s", f.Txid.Short(), stamp(f.At))
	}
	w := &s.Writes[sh.rec]
	retired, in, _ := rebuiltAfterFailure(s, w)
	return fmt.Sprintf("it rebuilt the transaction at %s after txid %s failed on chain (%s in #%d)", stamp(w.At), retired.Short(), in.Receipt, in.BlockNumber)
}

// rebuiltAfterFailure reports whether write w stored a new envelope in
// place of a txid the chain holds with a failed receipt, and which txid
// and inclusion.
func rebuiltAfterFailure(s *Snapshot, w *WriteRecord) (tron.Txid, mocknode.Inclusion, bool) {
	if !w.Built {
		return tron.Txid{}, mocknode.Inclusion{}, false
	}
	e := writeEvent(s, w)
	if e == nil || e.RetiredTxid == (tron.Txid{}) {
		return tron.Txid{}, mocknode.Inclusion{}, false
	}
	for _, in := range s.index().onChain[e.RetiredTxid] {
		if in.Receipt != tron.ReceiptSuccess {
			return e.RetiredTxid, in, true
		}
	}
	return tron.Txid{}, mocknode.Inclusion{}, false
}

// pacedAfterShortage judges the sends after a shortage of ours, by the
// world's records of the workers' sends and the answers they got, its
// signer, the chain and the workers' writes (never the core's reasons or
// its parks): after a shortage, the process's next send of the operation
// comes no sooner than the park's first wait (ParkRetry, capped by
// ParkBackoffMax) unless, in between, another process or the operator
// claimed the row, or the process claimed it again without having given it
// up (its lease lapsed, or its park was fenced: the lease paces that). A
// write in between excuses nothing: a rebuild is itself a write, and so
// are the signing and the write-ahead that come before its send.
func pacedAfterShortage(s *Snapshot) []Violation {
	floor := min(s.ParkRetry, s.ParkBackoffMax)
	if floor <= 0 || s.Claims == nil || len(s.Sends) == 0 {
		return nil
	}
	var short []shortage
	for i := range s.Sends {
		if d := &s.Sends[i]; slices.Contains(operationalRefusals, d.Answer) {
			short = append(short, shortage{op: d.Op, proc: d.Proc, at: d.At, claims: d.Claims, sends: i + 1, kind: shortRefused, rec: i})
		}
	}
	for i := range s.SignerFailures {
		f := &s.SignerFailures[i]
		short = append(short, shortage{op: f.Op, proc: f.Proc, at: f.At, claims: f.Claims, sends: f.Sends, kind: shortSigning, rec: i})
	}
	for i := range s.Writes {
		if w := &s.Writes[i]; w.Built {
			if _, _, ok := rebuiltAfterFailure(s, w); ok {
				short = append(short, shortage{op: w.Op, proc: w.Proc, at: w.At, claims: w.Claims, sends: w.Sends, kind: shortRebuilt, rec: i})
			}
		}
	}
	type finding struct {
		sh   int // position in short
		send int // position in Sends
		more int
	}
	var found []finding
	var byOp map[sluice.OperationID]int // an operation's finding, by its index in found
	for i := range short {
		sh := &short[i]
		if sh.op == "" {
			continue
		}
		k := sendAfter(s, sh, floor)
		if k < 0 || excused(s, sh, &s.Sends[k]) {
			continue
		}
		if f, ok := byOp[sh.op]; ok {
			found[f].more++
			continue
		}
		if byOp == nil {
			byOp = map[sluice.OperationID]int{}
		}
		byOp[sh.op] = len(found)
		found = append(found, finding{sh: i, send: k})
	}
	var vs []Violation
	for _, f := range found {
		sh, d := &short[f.sh], &s.Sends[f.send]
		more := ""
		if f.more > 0 {
			more = fmt.Sprintf(" (and %d more sends as soon after a shortage)", f.more)
		}
		vs = append(vs, Violation{Invariant: PacedPolling, Operation: sh.op, Message: fmt.Sprintf(
			"op %s: %s sent txid %s at %s, %s after a shortage of ours (%s), with no other claim of the row in between%s: a shortage (energy, bandwidth, the hot wallet's balance) lasts, and the park that waits it out waits at least %s; sending again at once only spends fee and rebuild budget while it lasts",
			sh.op, sh.proc, d.Txid.Short(), stamp(d.At), d.At.Sub(sh.at).Round(time.Millisecond), sh.what(s), more, floor)})
	}
	return vs
}

// sendAfter is the position in Sends of sh's process's next send of sh's
// operation, when it came sooner than floor after sh; -1 otherwise. The
// sends are in call order, so on virtual time: only those within floor
// are read.
func sendAfter(s *Snapshot, sh *shortage, floor time.Duration) int {
	for k := sh.sends; k < len(s.Sends) && s.Sends[k].At.Sub(sh.at) < floor; k++ {
		if d := &s.Sends[k]; d.Proc == sh.proc && d.Op == sh.op {
			return k
		}
	}
	return -1
}

// excused reports whether, between shortage sh and its process's send d,
// another process or the operator claimed the row, or the process claimed
// it again without having released or parked it under a token it held
// since sh (its lease lapsed, or its park was fenced).
func excused(s *Snapshot, sh *shortage, d *SendRecord) bool {
	claims := s.Claims[:min(d.Claims, len(s.Claims))]
	held := sluice.FencingToken(0) // the token the process held at sh
	for i := min(sh.claims, len(claims)) - 1; i >= 0; i-- {
		if c := &claims[i]; c.Op == sh.op && c.Proc == sh.proc {
			held = c.Token
			break
		}
	}
	again := sluice.FencingToken(0) // the process's first claim of the row since sh
	for i := min(sh.claims, len(claims)); i < len(claims); i++ {
		c := &claims[i]
		if c.Op != sh.op {
			continue
		}
		if c.Proc != sh.proc || c.Operator {
			return true
		}
		if again == 0 {
			again = c.Token
		}
	}
	// Its own claim again: excused unless it gave the row up in between,
	// which only a release (a park's is one too) under a token from held
	// to that claim's can be.
	if again == 0 {
		return false
	}
	for i := range s.Releases {
		if r := &s.Releases[i]; r.Op == sh.op && r.Proc == sh.proc && r.Token >= held && r.Token < again {
			return false
		}
	}
	return true
}
