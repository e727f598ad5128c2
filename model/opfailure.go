package model

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// CheckNoOperationalFailure checks that no operation reaches failed for an
// operational reason: a shortage of ours (bandwidth, energy, a fee limit,
// the hot wallet's own USDT, an unreachable node) must park the operation
// and, past its bounds, send it to review for an operator, never fail the
// customer's withdrawal.
//
// A failed operation passes only as one of:
//
//   - an operator's cancel (its failing event was written by an operator:
//     a person decided; audit-log checks the proof behind it);
//   - a first send refused for the bytes themselves (SIGERROR,
//     TOO_BIG_TRANSACTION_ERROR on the wire for its last txid: progress
//     judges whether that is the core's own bug);
//   - the stuck policy's cancel of a withdrawal whose last transaction the
//     chain did not take for reasons of the chain's own, by the model's
//     sight of the world: its last txid was not refused on the wire for
//     bandwidth, energy or the contract's state without ever being
//     accepted, is not on chain with a failed receipt, was accepted by
//     some node at least once (never heard accepted, our sends never got
//     through: review), and the world never saw the core park the
//     operation (the core's own rule: parked once, never cancelled, only
//     reviewed).
//
// Anything else (a refusal or a failed receipt turned into a failure, a
// cancel after the operation was parked) is an operational failure. An
// earlier txid's trouble does not count: it was answered by a rebuild, and
// a worker that crashed between that rebuild and its park left the core no
// record of it; what ended the withdrawal is the last txid's death.
func CheckNoOperationalFailure(s *Snapshot) []Violation {
	var vs []Violation
	s = withMemo(s)
	j := newJudge(s)
	ix := j.ix
	seen := make([]bool, len(ix.ids)) // by slot
	// Every operational refusal on the wire by txid, in wire order: read
	// on first use.
	var refused map[tron.Txid][]string
	for i := range s.Operations {
		op := &s.Operations[i]
		k := ix.slot[op.ID]
		if op.State != sluice.Failed || seen[k] {
			continue
		}
		seen[k] = true
		e := ix.lastEvent(s, op.ID)
		if strings.HasPrefix(string(e.Worker), sluice.OperatorPrefix) {
			continue
		}
		txids := j.own.byOp[k]
		if n := len(txids); n > 0 {
			if w, ok := ix.firstWire(s, txids[n-1]); ok && (w.Answer == string(tron.CodeSigError) || w.Answer == string(tron.CodeTooBigTransactionError)) {
				continue
			}
		}
		// The death that ended it is its last txid's: a shortage behind
		// that death makes the failure ours. An earlier txid's trouble was
		// answered by its rebuild; what ended the withdrawal came later.
		var trouble []string
		if n := len(txids); n > 0 {
			t := txids[n-1]
			if !ix.accepted(t) {
				if refused == nil {
					refused = make(map[tron.Txid][]string)
					for _, w := range s.Wire {
						if slices.Contains(operationalRefusals, w.Answer) {
							refused[w.Txid] = append(refused[w.Txid], w.Answer)
						}
					}
				}
				for _, code := range refused[t] {
					trouble = append(trouble, fmt.Sprintf("its last txid %s was refused %s and never accepted", t.Short(), code))
				}
			}
			for _, in := range j.onChain[t] {
				if in.Receipt != tron.ReceiptSuccess {
					trouble = append(trouble, fmt.Sprintf("its last txid %s is on chain with receipt %s", t.Short(), in.Receipt))
				}
			}
		}
		if n := ix.parked[k]; n > 0 {
			trouble = append(trouble, fmt.Sprintf("parked %d times", n))
		}
		if n := len(txids); n > 0 && len(trouble) == 0 && e.Decision != nil && e.Decision.Action == sluice.Cancel && !ix.accepted(txids[n-1]) {
			// No node ever took the last txid (not by its answer on the
			// wire, not in its pool): our sends never got through (a
			// network of ours, a shortage whose park died with its
			// worker). The chain did not refuse the customer's payment;
			// we never delivered it. That is a person's to look at, not
			// the customer's failure (README, "The customer's money").
			trouble = append(trouble, fmt.Sprintf("no node ever accepted its last txid %s", txids[n-1].Short()))
		}
		switch {
		case len(trouble) > 0:
			vs = append(vs, Violation{Invariant: NoOperationalFailure, Operation: op.ID, Message: fmt.Sprintf(
				"op %s failed (%q) after operational trouble the customer did not cause: %s", op.ID, op.Reason, strings.Join(dedupe(trouble), "; "))})
		case e.Decision == nil || e.Decision.Action != sluice.Cancel:
			vs = append(vs, Violation{Invariant: NoOperationalFailure, Operation: op.ID, Message: fmt.Sprintf(
				"op %s failed (%q) by neither an operator, a refusal of its bytes, nor the stuck policy's cancel", op.ID, op.Reason)})
		}
	}
	vs = append(vs, checkParks(s, j)...)
	vs = append(vs, checkParkBackoff(s, j.ix)...)
	vs = append(vs, checkParkReviews(s, j)...)
	return finish(vs)
}

// checkParkBackoff holds each park's wait to the policy (README, "The
// customer's money"): within a spell of parks (no transition between them)
// the first waits ParkRetry and each later one as long as the spell had
// lasted when the row came free again (the waits double), capped by
// ParkBackoffMax; jitter only adds, at most as much again. A wait below
// that hammers a node or a signer that is already short; one above twice
// the cap leaves a withdrawal idle long after the trouble ended. The spell
// is measured on the world's records (its first park's instant, to when
// the row came free for the claim that parks: the last park's wait, or a
// release's since, spellEnd), not on the row's parked_since, which is the
// store's to keep.
//
// The same walk holds the park bounds from the other side (checkParkReviews
// holds a review to "only past them"): a park that is the operation's
// ParkLimit+1th in its life, or that comes when its spell has lasted
// ParkFor (from the spell's first park to when the row came free for the
// claim), should have been a review, wherever the row's state has an
// edge to review (the model's own table; ix nil: not judged). Parked on,
// the withdrawal stays with the automation, its money held, past the point
// where the README hands it to a person.
func checkParkBackoff(s *Snapshot, ix *index) []Violation {
	if len(s.Parks) == 0 {
		return nil
	}
	// Without the backoff's parameters only the bounds are judged.
	backoff := s.ParkRetry > 0 && s.ParkBackoffMax > 0
	// Parks and writes are both in the order they landed: walk them
	// together, keeping each operation's newest write Seq so far.
	type spell struct {
		first, prev int // indices in s.Parks (a map's large values are allocated one by one)
	}
	// Sized once: no more operations than parks (growing them was most of
	// this check's allocations).
	spells := make(map[sluice.OperationID]spell, len(s.Parks))
	lastWrite := make(map[sluice.OperationID]int64, len(s.Parks))
	lives := make(map[sluice.OperationID]int, len(s.Parks)) // parks so far, by operation
	next := 0
	var vs []Violation
	var waits []time.Time // claimWaits, once a spell has a second park
	for i := range s.Parks {
		p := &s.Parks[i]
		for ; next < len(s.Writes) && s.Writes[next].Seq <= p.Seq; next++ {
			if _, parked := spells[s.Writes[next].Op]; parked {
				lastWrite[s.Writes[next].Op] = s.Writes[next].Seq
			}
		}
		sp, ok := spells[p.Op]
		least := s.ParkRetry
		lasted := time.Duration(-1) // the spell so far; none: a new spell
		if !ok || lastWrite[p.Op] > s.Parks[sp.prev].Seq {
			sp = spell{first: i} // a transition since the last park: a new spell
		} else {
			if waits == nil {
				waits = claimWaits(s)
			}
			lasted = spellEnd(s, waits, sp.prev, p.Op, p.Token, p.Claims).Sub(s.Parks[sp.first].At)
			least = max(least, lasted)
		}
		lives[p.Op]++
		if v, ok := parkedPastBounds(s, ix, p, lives[p.Op], lasted); ok {
			vs = append(vs, v)
		}
		sp.prev = i
		spells[p.Op] = sp
		least = min(least, s.ParkBackoffMax)
		switch {
		case !backoff:
		case p.After < least:
			vs = append(vs, Violation{Invariant: NoOperationalFailure, Operation: p.Op, Message: fmt.Sprintf(
				"op %s parked by %s at %s for %s, but its spell of parks wants at least %s (it began %s, the first waits %s, each later one as long as the spell has lasted, capped at %s)",
				p.Op, p.Proc, p.At.Format(time.RFC3339Nano), p.After, least, s.Parks[sp.first].At.Format(time.RFC3339Nano), s.ParkRetry, s.ParkBackoffMax)})
		case p.After > 2*s.ParkBackoffMax:
			vs = append(vs, Violation{Invariant: NoOperationalFailure, Operation: p.Op, Message: fmt.Sprintf(
				"op %s parked by %s at %s for %s, more than twice ParkBackoffMax %s: the backoff is capped (jitter adds at most as much again)",
				p.Op, p.Proc, p.At.Format(time.RFC3339Nano), p.After, s.ParkBackoffMax)})
		}
	}
	return vs
}

// spellEnd is when a spell of parks, whose latest park is s.Parks[last],
// had let the row come free for the claim of op that gave token (looked
// for before position before in Claims): the latest park's end, or later
// when a release since then moved it (claimWaits). It is what the core
// measures the spell to when it parks or reviews under that claim.
func spellEnd(s *Snapshot, waits []time.Time, last int, op sluice.OperationID, token sluice.FencingToken, before int) time.Time {
	p := &s.Parks[last]
	end := p.At.Add(p.After)
	if ci := claimOf(s, op, token, before); ci >= 0 && waits[ci].After(end) {
		end = waits[ci]
	}
	return end
}

// parkedPastBounds reports park p, the operation's life-th, made when its
// spell had lasted lasted (negative: p began a new spell), if the park
// bounds had sent it to review instead.
func parkedPastBounds(s *Snapshot, ix *index, p *ReleaseRecord, life int, lasted time.Duration) (Violation, bool) {
	if ix == nil || s.ParkLimit <= 0 || s.ParkFor <= 0 || p.At.IsZero() {
		// p.At zero: not the world's record of a park (a live audit counts
		// them from the rows), nothing to place it by.
		return Violation{}, false
	}
	var over string
	switch {
	case life > s.parkLimitBy(p.Proc):
		over = fmt.Sprintf("its park number %d in its life, past ParkLimit %d", life, s.parkLimitBy(p.Proc))
	case lasted >= s.ParkFor:
		over = fmt.Sprintf("its spell of parks had lasted %s, at or past ParkFor %s", lasted, s.ParkFor)
	default:
		return Violation{}, false
	}
	k, ok := ix.slot[p.Op]
	if !ok {
		return Violation{}, false
	}
	// The row's state when the park landed: its last event at or before
	// the park's Seq (a park changes no state).
	state, known := sluice.State(0), false
	for _, pos := range ix.eventsOf(k) {
		if s.Events[pos].Seq > p.Seq {
			break
		}
		state, known = s.Events[pos].To, true
	}
	if !known || !Legal(state, sluice.Review) {
		return Violation{}, false
	}
	return Violation{Invariant: NoOperationalFailure, Operation: p.Op, Message: fmt.Sprintf(
		"op %s parked by %s at %s in %s, %s: past the park bounds it goes to review, and parked on it stays with the automation, its money held",
		p.Op, p.Proc, p.At.Format(time.RFC3339Nano), state, over)}, true
}

// checkParkReviews holds each review a worker wrote for an operation it
// had parked to the park bounds, by the world's records of the parks (never
// the row's counters or the core's reason): the operation had parked
// ParkLimit times in its life, so that this would be one more; or its
// current spell of parks (those since its last transition) had lasted
// ParkFor, from the first park of the spell to when the row came free for
// the claim that reviews (spellEnd: a release's wait counts). Short of both, the trouble may already have passed,
// and a person is handed a withdrawal that would have gone through. A
// review the stuck policy decided (it carries a decision), one for a
// transfer the chain reported otherwise than asked (from broadcast, a txid
// with a SUCCESS inclusion), and one for a stale envelope with the builds
// spent (from signed) have their own grounds, judged by progress.
func checkParkReviews(s *Snapshot, j *judge) []Violation {
	if len(s.Parks) == 0 || s.ParkLimit <= 0 || s.ParkFor <= 0 {
		return nil
	}
	ix := j.ix
	for i := range s.Parks {
		if s.Parks[i].At.IsZero() {
			// Not the world's record of a park (a live audit counts them
			// from the rows): no instant to place it by.
			return nil
		}
	}
	byOp := groupIndices(len(s.Parks), func(i int) sluice.OperationID { return s.Parks[i].Op }, cmp.Compare[sluice.OperationID])
	var vs []Violation
	var waits []time.Time // claimWaits, once a review follows a spell
	for _, slot := range ix.byID {
		evs := ix.eventsOf(slot)
		id := ix.ids[slot]
		parks := byOp.of(id)
		if len(parks) == 0 {
			continue
		}
		for k := 1; k < len(evs); k++ {
			e, prev := &s.Events[evs[k]], &s.Events[evs[k-1]]
			if e.To != sluice.Review || strings.HasPrefix(string(e.Worker), sluice.OperatorPrefix) {
				continue
			}
			// Only a review the park bounds sent: by the world's reading of
			// the worker's step, else (no record) by the event's shape.
			if why := reviewRead(s, e.Seq); why != "" {
				if why != ReviewParked {
					continue
				}
			} else if e.Decision != nil || e.From == sluice.Signed || (e.From == sluice.Broadcast && j.anySuccess(id)) {
				continue
			}
			before, spell := 0, -1 // parks before e; the first of its current spell
			for _, i := range parks {
				if s.Parks[i].Seq >= e.Seq {
					break
				}
				before++
				if spell < 0 && s.Parks[i].Seq >= prev.Seq {
					spell = i
				}
			}
			limit := s.parkLimitBy(string(e.Worker)) // the reviewing worker's release's
			if before == 0 || before+1 > limit {
				continue
			}
			lasted := time.Duration(0)
			if spell >= 0 {
				if waits == nil {
					waits = claimWaits(s)
				}
				lasted = spellEnd(s, waits, parks[before-1], id, e.Token, len(s.Claims)).Sub(s.Parks[spell].At)
			}
			if lasted >= s.ParkFor {
				continue
			}
			vs = append(vs, Violation{Invariant: NoOperationalFailure, Operation: id, Message: fmt.Sprintf(
				"%s sent to review after %d parks, its current spell of parks lasting %s: the bounds are %d parks in its life (ParkLimit %d) or a spell of ParkFor %s",
				lazyAt{id, e}, before, lasted, limit+1, limit, s.ParkFor)})
		}
	}
	return vs
}

// groups is the indices of a run's records sorted stably by a key: each
// key's records in one slice, in the order they were recorded. (A map of
// slices makes a slice a key: that was most of the judge's allocations.)
type groups[K any] struct {
	order []int
	key   func(int) K
	cmp   func(K, K) int
}

func groupIndices[K any](n int, key func(int) K, cmp func(K, K) int) groups[K] {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	// Ties by index: each key's records in the order they were recorded
	// (quicker than a stable sort).
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp(key(a), key(b)); c != 0 {
			return c
		}
		return a - b
	})
	return groups[K]{order, key, cmp}
}

func compareTxids(a, b tron.Txid) int { return bytes.Compare(a[:], b[:]) }

// of is the indices of k's records, in the order they were recorded.
func (g groups[K]) of(k K) []int {
	lo, _ := slices.BinarySearchFunc(g.order, k, func(i int, k K) int { return g.cmp(g.key(i), k) })
	hi := lo
	for hi < len(g.order) && g.cmp(g.key(g.order[hi]), k) == 0 {
		hi++
	}
	return g.order[lo:hi:hi]
}

// reviewRead is the world's reading of the write with event Seq seq
// (WriteRecord.Review), "" when the world recorded none. Writes are
// recorded in landing order, which is Seq order.
func reviewRead(s *Snapshot, seq int64) string {
	i, found := slices.BinarySearchFunc(s.Writes, seq, func(w WriteRecord, seq int64) int { return cmp.Compare(w.Seq, seq) })
	if !found {
		return ""
	}
	return s.Writes[i].Review
}

// checkParks holds every park to the trouble that may cause one: a shortage
// of ours, seen by the parking process since it claimed the operation. That
// is a refusal of one of the operation's txids on the wire for bandwidth,
// energy or the contract's state, sent by that process; a signing the world
// failed for that process; or one of the operation's txids on chain with a
// failed receipt (OUT_OF_ENERGY, REVERT), which the chain shows anyone. A
// busy, unreachable or lying-about-nothing node only delays (TRON.md: re-send
// the same bytes later); parking on it backs a healthy withdrawal off for
// minutes and, past the park bounds, hands it to a person. Each park is
// judged from the world's records (the node's wire log, the world's signer,
// the chain), never from the reason the core gave. Without the world's
// claims (Claims nil) nothing is judged.
func checkParks(s *Snapshot, j *judge) []Violation {
	if len(s.Parks) == 0 || s.Claims == nil {
		return nil
	}
	// The operational refusals on the wire, by txid (few in any run).
	var refused map[tron.Txid][]int
	for i := range s.Wire {
		if slices.Contains(operationalRefusals, s.Wire[i].Answer) {
			if refused == nil {
				refused = make(map[tron.Txid][]int)
			}
			refused[s.Wire[i].Txid] = append(refused[s.Wire[i].Txid], i)
		}
	}
	// The spell of work a park ends began with the parking process's claim
	// under the park's token (only a claim, or an operator's resolution,
	// moves a token; times alone cannot order a claim and a park made at
	// one virtual instant).
	type claimKey struct {
		op    sluice.OperationID
		token sluice.FencingToken
	}
	claims := make(map[claimKey]int, len(s.Parks))
	for _, p := range s.Parks {
		claims[claimKey{p.Op, p.Token}] = -1
	}
	for i, c := range s.Claims {
		k := claimKey{c.Op, c.Token}
		if at, ok := claims[k]; ok && at < 0 {
			claims[k] = i
		}
	}
	// The world's failed signings, by txid: each park reads only its own
	// operation's (a chaos run has hundreds of parks and of failed
	// signings; every park reading every failure was most of the judge).
	// (Made on the first park the wire and the chain leave unexplained.)
	var failed groups[tron.Txid]
	var vs []Violation
	for _, p := range s.Parks {
		i := claims[claimKey{p.Op, p.Token}]
		if i < 0 || s.Claims[i].Proc != p.Proc {
			vs = append(vs, Violation{Invariant: NoOperationalFailure, Operation: p.Op, Message: fmt.Sprintf(
				"op %s parked by %s at %s under token %d, which no claim of %s took", p.Op, p.Proc, p.At.Format(time.RFC3339Nano), p.Token, p.Proc)})
			continue
		}
		start := s.Claims[i].At
		txids := j.own.of(p.Op)
		if parkJustified(s, j, p, txids, refused, &failed, start) {
			continue
		}
		vs = append(vs, Violation{Invariant: NoOperationalFailure, Operation: p.Op, Message: fmt.Sprintf(
			"op %s parked by %s at %s (token %d) with no shortage of ours since its claim at %s: no refusal of its txids (%s) for bandwidth, energy or the contract's state on the wire from %s, no signing failed, no failed receipt on chain; a busy or unreachable node only delays",
			p.Op, p.Proc, p.At.Format(time.RFC3339Nano), p.Token, start.Format(time.RFC3339Nano), shortTxids(txids), p.Proc)})
	}
	return vs
}

// parkJustified says whether a shortage of ours explains park p, whose
// spell of work began at start (see checkParks).
func parkJustified(s *Snapshot, j *judge, p ReleaseRecord, txids []tron.Txid, refused map[tron.Txid][]int, failed *groups[tron.Txid], start time.Time) bool {
	within := func(at time.Time) bool { return !at.Before(start) && !at.After(p.At) }
	for _, t := range txids {
		for _, i := range refused[t] {
			if w := &s.Wire[i]; w.Worker == p.Proc && within(w.At) {
				return true
			}
		}
		for _, in := range j.onChain[t] {
			if in.Receipt != tron.ReceiptSuccess && !in.BlockTime.After(p.At) {
				return true
			}
		}
	}
	if failed.order == nil {
		*failed = groupIndices(len(s.SignerFailures), func(i int) tron.Txid { return s.SignerFailures[i].Txid }, compareTxids)
	}
	for _, t := range txids {
		for _, i := range failed.of(t) {
			if f := &s.SignerFailures[i]; f.Proc == p.Proc && within(f.At) {
				return true
			}
		}
	}
	return false
}

// dedupe drops repeats, keeping the first of each.
func dedupe(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	out := ss[:0:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
