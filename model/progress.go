package model

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// CheckProgress checks that the processor does its job, not only that it
// does no harm: a run in which nothing is paid keeps every safety invariant.
//
// In a fault-free run (FaultFree) every valid withdrawal a client sent has
// a row and none fails or is rejected (liveness already demands that each
// becomes terminal, so here terminal means confirmed). Under faults, every
// operation that failed or was rejected has a justification that the model
// verifies against ground truth, never against the reason the core wrote:
//
//   - rejected: the client's own payload is not a withdrawal the model would
//     pay (invalid by the reference reading, or to the hot wallet itself);
//   - failed, refused: the first send of its last txid was refused by the
//     node for a reason that is not the envelope's fault (BANDWITH_ERROR,
//     CONTRACT_VALIDATE_ERROR, CONTRACT_EXE_ERROR: the wire records what the
//     node said), and that txid was never accepted or included;
//     SIGERROR or TOO_BIG_TRANSACTION_ERROR are the core's own bad bytes
//     and justify nothing;
//   - failed, reverted: one of its txids is on chain with a receipt other
//     than SUCCESS (a SUCCESS never justifies a failure: tokens may have
//     moved, and the customer would withdraw again);
//   - failed, build budget spent: it built BuildsMax envelopes (distinct
//     txids in its history) and its last txid is dead by the model's own
//     reckoning: never sent at all (not on the wire, never accepted or
//     included), or a block at or below the final solid head is at least
//     its raw_data expiration plus the configured margin, and the txid is
//     nowhere on chain;
//   - review: one of its txids is on chain with SUCCESS in a solid block, and
//     what the node reported of it (the model reads the logs itself) is not
//     exactly one USDT Transfer log from the hot wallet to the intended
//     recipient for the intended amount.
func CheckProgress(s *Snapshot) []Violation {
	s = withMemo(s)
	var vs []Violation
	add := func(id sluice.OperationID, format string, args ...any) {
		vs = append(vs, Violation{Invariant: Progress, Operation: id, Message: fmt.Sprintf(format, args...)})
	}
	j := newJudge(s)
	ix := j.ix
	meant := intents(s)

	if s.FaultFree {
		for _, id := range validIDs(s) {
			if ix.row(s, id) == nil {
				add(id, "op %s: a client sent a valid withdrawal, but in a fault-free run no row exists", id)
			}
		}
	}
	seen := make([]bool, len(ix.ids)) // by slot
	for i := range s.Operations {
		op := &s.Operations[i]
		k := ix.slot[op.ID]
		if seen[k] || (op.State != sluice.Failed && op.State != sluice.Rejected && op.State != sluice.Review) {
			continue
		}
		seen[k] = true
		reason, ok := j.justify(op, meant)
		switch {
		case s.FaultFree && op.State == sluice.Rejected && ok:
			// Its client asked to pay the hot wallet itself: no fault is
			// needed for that to be refused.
		case s.FaultFree:
			add(op.ID, "op %s is %s (%q) in a fault-free run: every valid withdrawal must confirm", op.ID, op.State, op.Reason)
		case !ok:
			add(op.ID, "op %s is %s (%q) without a justification the chain or the client's payload bears out (%s)",
				op.ID, op.State, op.Reason, reason)
		}
	}
	return finish(vs)
}

// validIDs lists, sorted, the operation ids under which some client sent a
// payload the model reads as valid.
func validIDs(s *Snapshot) []sluice.OperationID {
	ix := s.index()
	ids := make([]sluice.OperationID, 0, len(s.Intake))
	for i := range ix.intakeSent {
		if rd := ix.sentOf(i); rd.bad == "" {
			ids = append(ids, rd.in.ID)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// judge holds the indexes justify reads.
type judge struct {
	s       *Snapshot
	ix      *index
	own     ownership
	onChain map[tron.Txid][]mocknode.Inclusion
}

func newJudge(s *Snapshot) *judge {
	if s.memo != nil && s.memo.judge != nil {
		return s.memo.judge
	}
	ix := s.index()
	j := &judge{s: s, ix: ix, own: readOwnership(s), onChain: ix.onChain}
	if s.memo != nil {
		s.memo.judge = j
	}
	return j
}

// operationalRefusals are the hard rejects that say nothing bad about the
// bytes sent: the hot wallet is short of bandwidth or energy, or the
// contract refused the call. A signature or size error is the core's bug.
var operationalRefusals = []string{
	string(tron.CodeBandwidthError), string(tron.CodeContractValidateError), string(tron.CodeContractExeError),
}

// justify classifies why op did not confirm. ok is false when nothing the
// model can verify explains it; reason then says what was looked for.
func (j *judge) justify(op *sluice.Operation, meant *intentsByID) (reason string, ok bool) {
	if op.State == sluice.Review {
		return j.justifyReview(op, meant)
	}
	if op.State == sluice.Rejected {
		in, known := meant.of(op.ID)
		switch {
		case !known:
			return "rejected: no client's payload is known", false
		case in.To == [21]byte(j.s.HotWallet):
			return "rejected: to the hot wallet", true
		}
		return "rejected: the client's payload is a valid withdrawal", false
	}
	txids := j.own.of(op.ID)
	final := j.lastEvent(op.ID)
	if strings.HasPrefix(string(final.Worker), sluice.OperatorPrefix) {
		if len(txids) == 0 || j.neverSent(txids[len(txids)-1]) {
			return "cancelled by an operator (nothing sent)", true
		}
		if last := txids[len(txids)-1]; !j.dead(last) && !j.failedOnChain(last) {
			_, why := j.provenDead(last)
			return "cancelled by an operator, but " + why, false
		}
		return "cancelled by an operator", true
	}
	for _, t := range txids {
		for _, in := range j.onChain[t] {
			if in.Receipt != tron.ReceiptSuccess {
				return "reverted on chain: " + in.Receipt, true
			}
		}
	}
	if len(txids) == 0 {
		return "failed before any envelope was built", false
	}
	last := txids[len(txids)-1]
	if d := final.Decision; d != nil && d.Action == sluice.Cancel && j.s.Stuck.CancelAfter > 0 {
		// CancelAfter must really have passed: from the first write-ahead
		// to the cancel, both on the store's clock as its log stamps them
		// (the core reads its wait against a solid block's time, never
		// later than the cancel itself).
		if first, ok := j.firstWriteAhead(op.ID); ok && final.At.Sub(first) >= j.s.Stuck.CancelAfter {
			if j.dead(last) {
				return "cancelled by the stuck policy past CancelAfter", true
			} else if len(txids) < j.s.buildsMaxBy(string(final.Worker)) {
				_, why := j.provenDead(last)
				return "cancelled by the stuck policy past CancelAfter, but " + why, false
			}
		}
	}
	if w, sent := j.ix.firstWire(j.s, last); sent && slices.Contains(operationalRefusals, w.Answer) &&
		!j.ix.accepted(last) && len(j.onChain[last]) == 0 {
		return "first send refused: " + w.Answer, true
	}
	if most := j.s.buildsMaxBy(string(final.Worker)); most > 0 && len(txids) >= most {
		if j.neverSent(last) {
			// Rebuilt stale before its first send, again and again: the
			// last envelope never left, so nothing can land.
			return "build budget spent (last envelope never sent)", true
		}
		if dead, why := j.provenDead(last); dead {
			return "build budget spent", true
		} else {
			return "build budget spent, but " + why, false
		}
	}
	return fmt.Sprintf("no refused first send, no failed receipt on chain, %d of %d builds", len(txids), j.s.buildsMaxBy(string(final.Worker))), false
}

// justifyReview: review rests on a solid SUCCESS inclusion whose reported
// logs are not exactly the payment asked.
//
// Review is also where operational trouble ends past its bounds: an
// operation the world saw parked, or one that built BuildsMax envelopes
// and whose last one went stale before its first send (never sent; any
// earlier one that was sent was proven dead when it was retired, which
// audit-log checks).
func (j *judge) justifyReview(op *sluice.Operation, meant *intentsByID) (reason string, ok bool) {
	want, known := meant.of(op.ID)
	if !known {
		want = rowIntent(op)
	}
	if j.ix.parks(op.ID) > 0 {
		return "parked for operational trouble, then past its bounds", true
	}
	most := j.s.buildsMaxBy(string(j.lastEvent(op.ID).Worker)) // the reviewing worker's release's
	if txids := j.own.of(op.ID); most > 0 && len(txids) >= most && j.neverSent(txids[len(txids)-1]) {
		// The pipeline sends a stale envelope with the rebuilds spent to
		// review whatever its predecessors did: asking that none of them
		// was ever sent would report a first envelope sent, dropped and
		// proven dead as a review without a cause.
		return "build budget spent (last envelope never sent)", true
	}
	for _, t := range j.own.of(op.ID) {
		for _, in := range j.onChain[t] {
			if in.Receipt != tron.ReceiptSuccess && in.BlockNumber <= j.s.SolidNumber {
				return "failed on chain with receipt " + in.Receipt + ", rebuilt until the budget was spent", true
			}
		}
	}
	if txids := j.own.of(op.ID); len(txids) > 0 {
		// The stuck policy's budget spent on a dead txid: cancelling would
		// be as true, but a core that asks a person when its own sends may
		// not have got through (no acceptance heard) errs on the safe side.
		last := txids[len(txids)-1]
		final := j.lastEvent(op.ID)
		spent := most > 0 && len(txids) >= most
		if first, ok := j.firstWriteAhead(op.ID); ok && j.s.Stuck.CancelAfter > 0 && final.At.Sub(first) >= j.s.Stuck.CancelAfter {
			spent = true
		}
		// Only the stuck path's escalation (its evidence a lookup that found
		// nothing); a failed receipt's has its own justification above.
		escalated := final.Decision != nil && final.Decision.Action == sluice.Escalate &&
			(final.Evidence == nil || final.Evidence.Lookup == tron.Unknown)
		if escalated && spent && j.dead(last) {
			return "stuck policy's budget spent on a dead txid", true
		}
	}
	for _, t := range j.own.of(op.ID) {
		for _, in := range j.onChain[t] {
			if in.Receipt != tron.ReceiptSuccess || in.BlockNumber > j.s.SolidNumber {
				continue
			}
			if why, exact := reportedExactly(in, [21]byte(j.s.HotWallet), want); !exact {
				return "node reported " + why, true
			}
			return fmt.Sprintf("txid %s's solid SUCCESS was reported as exactly the payment asked", t.Short()), false
		}
	}
	return "none of its txids has a SUCCESS receipt in a solid block", false
}

// lastEvent is op's last event (zero if it has none).
func (j *judge) lastEvent(id sluice.OperationID) *sluice.Event { return j.ix.lastEvent(j.s, id) }

// firstWriteAhead is when op first entered broadcasting (store clock).
func (j *judge) firstWriteAhead(id sluice.OperationID) (time.Time, bool) {
	return j.ix.firstWriteAhead(j.s, id)
}

// anySuccess reports whether one of id's txids is on chain with a SUCCESS
// receipt.
func (j *judge) anySuccess(id sluice.OperationID) bool {
	for _, t := range j.own.of(id) {
		for _, in := range j.onChain[t] {
			if in.Receipt == tron.ReceiptSuccess {
				return true
			}
		}
	}
	return false
}

// failedOnChain reports whether t is on chain with a failed receipt only.
func (j *judge) failedOnChain(t tron.Txid) bool {
	ins := j.onChain[t]
	for _, in := range ins {
		if in.Receipt == tron.ReceiptSuccess {
			return false
		}
	}
	return len(ins) > 0
}

// neverSent reports whether txid t never reached a node: no wire attempt,
// no acceptance, no inclusion. Only a worker's send puts a txid on the
// wire, and a relay only re-sends what was on it.
func (j *judge) neverSent(t tron.Txid) bool {
	return !j.ix.onWire(t) && !j.ix.accepted(t) && len(j.onChain[t]) == 0
}

// provenDead is the model's own proof of death for txid t: the final chain
// has a block at or below its solid head whose time is at least t's
// raw_data expiration plus the configured margin, and t is nowhere on chain.
func (j *judge) provenDead(t tron.Txid) (bool, string) {
	if j.dead(t) {
		return true, ""
	}
	raw, ok := j.ix.envelope(j.s, t)
	if !ok {
		return false, fmt.Sprintf("the world never saw txid %s's envelope stored", t.Short())
	}
	if len(j.onChain[t]) > 0 {
		return false, fmt.Sprintf("txid %s is on chain", t.Short())
	}
	deadline := time.UnixMilli(raw.Expiration).Add(j.s.SafetyMargin)
	return false, fmt.Sprintf("no solid block reaches txid %s's expiration plus margin (%s)", t.Short(), stamp(deadline))
}

// dead is provenDead's verdict alone, without the reason's text.
func (j *judge) dead(t tron.Txid) bool {
	raw, ok := j.ix.envelope(j.s, t)
	if !ok || len(j.onChain[t]) > 0 {
		return false
	}
	deadline := time.UnixMilli(raw.Expiration).Add(j.s.SafetyMargin)
	for _, b := range j.s.Blocks {
		if b.Number <= j.s.SolidNumber && !b.Time.Before(deadline) {
			return true
		}
	}
	return false
}

// Outcomes counts how a run's withdrawals ended, by ground truth: how many
// ids clients sent valid payloads for, how many were accepted (have a row),
// and how each row ended. FailedBy names each failure by its verified
// justification ("unjustified" when progress found none).
type Outcomes struct {
	Requested int `json:"requested"`
	Accepted  int `json:"accepted"`
	Confirmed int `json:"confirmed"`
	Failed    int `json:"failed"`
	Rejected  int `json:"rejected"`
	Review    int `json:"review"`
	Open      int `json:"open"`
	// Parked counts operations the world saw parked at least once for an
	// operational reason, whatever their end.
	Parked   int     `json:"parked"`
	FailedBy []Tally `json:"failed_by"`
	// ReviewBy names each review by its verified justification, as
	// FailedBy does for failures.
	ReviewBy []Tally `json:"review_by,omitempty"`
	// Burnt is the TRX, in sun, the chain's inclusions burnt for energy
	// (a world that prices energy; 0 elsewhere), and BurntOutOfEnergy the
	// part of it burnt by transactions that ran out of energy and moved
	// nothing.
	Burnt            int64 `json:"burnt_sun,omitempty"`
	BurntOutOfEnergy int64 `json:"burnt_out_of_energy_sun,omitempty"`
}

// Add sums o and p (FailedBy merged by reason).
func (o Outcomes) Add(p Outcomes) Outcomes {
	return Outcomes{
		Requested: o.Requested + p.Requested, Accepted: o.Accepted + p.Accepted,
		Confirmed: o.Confirmed + p.Confirmed, Failed: o.Failed + p.Failed,
		Rejected: o.Rejected + p.Rejected, Review: o.Review + p.Review, Open: o.Open + p.Open,
		Parked:   o.Parked + p.Parked,
		FailedBy: MergeTallies(o.FailedBy, p.FailedBy),
		ReviewBy: MergeTallies(o.ReviewBy, p.ReviewBy),
		Burnt:    o.Burnt + p.Burnt, BurntOutOfEnergy: o.BurntOutOfEnergy + p.BurntOutOfEnergy,
	}
}

// String is one line: "60 requested, 60 accepted: 58 confirmed, 2 failed
// (first send refused: BANDWITH_ERROR 2), 0 rejected, 0 open".
func (o Outcomes) String() string {
	s := fmt.Sprintf("%d requested, %d accepted: %d confirmed, %d failed", o.Requested, o.Accepted, o.Confirmed, o.Failed)
	if len(o.FailedBy) > 0 {
		s += " ("
		for i, t := range o.FailedBy {
			if i > 0 {
				s += ", "
			}
			s += fmt.Sprintf("%s %d", t.Kind, t.Count)
		}
		s += ")"
	}
	if o.Review > 0 {
		s += fmt.Sprintf(", %d in review", o.Review)
		s += tallies(o.ReviewBy)
	}
	if o.Parked > 0 {
		s += fmt.Sprintf(", %d parked on the way", o.Parked)
	}
	s += fmt.Sprintf(", %d rejected, %d open", o.Rejected, o.Open)
	if o.Burnt > 0 {
		s += fmt.Sprintf("; %s burnt for energy, %s of it by transactions that ran out of energy", trx(o.Burnt), trx(o.BurntOutOfEnergy))
	}
	return s
}

// CountOutcomes reads a snapshot's outcomes.
func CountOutcomes(s *Snapshot) Outcomes {
	s = withMemo(s)
	o := Outcomes{Requested: len(validIDs(s))}
	j := newJudge(s)
	ix := j.ix
	meant := intents(s)
	reasons := make(map[string]int)
	reviews := make(map[string]int)
	seen := make([]bool, len(ix.ids)) // by slot
	for i := range s.Operations {
		op := &s.Operations[i]
		k := ix.slot[op.ID]
		if seen[k] {
			continue
		}
		seen[k] = true
		o.Accepted++
		// Parked by the world's sight of landed parks, not the row's count.
		if ix.parked[k] > 0 {
			o.Parked++
		}
		switch op.State {
		case sluice.Confirmed:
			o.Confirmed++
		case sluice.Rejected:
			o.Rejected++
		case sluice.Review:
			o.Review++
			reason, ok := j.justify(op, meant)
			if !ok {
				reason = "unjustified"
			}
			if strings.HasPrefix(reason, "node reported a USDT Transfer log of ") {
				// The amounts and addresses are this run's: tally the kind.
				reason = "node reported a USDT Transfer log other than the payment asked"
			}
			reviews[reason]++
		case sluice.Failed:
			o.Failed++
			reason, ok := j.justify(op, meant)
			if !ok {
				reason = "unjustified"
			}
			reasons[reason]++
		default:
			o.Open++
		}
	}
	for _, r := range sortedKeys(reasons) {
		o.FailedBy = append(o.FailedBy, Tally{Kind: r, Count: reasons[r]})
	}
	for _, r := range sortedKeys(reviews) {
		o.ReviewBy = append(o.ReviewBy, Tally{Kind: r, Count: reviews[r]})
	}
	for _, in := range s.Inclusions {
		o.Burnt += in.Burnt
		if in.Receipt == tron.ReceiptOutOfEnergy {
			o.BurntOutOfEnergy += in.Burnt
		}
	}
	return o
}

// tallies is " (kind n, kind n)", or "" for none.
func tallies(ts []Tally) string {
	if len(ts) == 0 {
		return ""
	}
	s := " ("
	for i, t := range ts {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", t.Kind, t.Count)
	}
	return s + ")"
}
