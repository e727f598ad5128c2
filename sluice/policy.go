package sluice

import (
	"fmt"
	"strconv"
	"time"
)

// StuckPolicy decides what to do with a sent withdrawal that has not
// confirmed (seed 004, mapped to TRON). TRON has no nonce: a "bump" cannot
// replace a transaction, it is a second, independent transfer. So the policy
// may act only once the old txid is proven dead (Evidence.Proves); before
// that the one safe answer is to wait, however long it has been.
//
// Waited runs from the operation's first write-ahead (FirstSentAt, the
// store's clock) to the time of the solid block the evidence cites (chain
// time, never later than now): a worker's wall clock may be off by a year,
// and one worker writes FirstSentAt while another judges it. It runs from
// the first send, not
// from the latest rebuild: a clock reset by every rebuild would make a
// rebuilt withdrawal immortal.
type StuckPolicy struct {
	// RebuildAfter: with proof of death, rebuild only once the withdrawal
	// has waited this long since its first send.
	RebuildAfter time.Duration
	// CancelAfter: with proof of death, a withdrawal that has waited this
	// long is cancelled (failed, hold released) instead of rebuilt.
	CancelAfter time.Duration
	// Rebuilds is how many replacement envelopes an operation may build
	// after its first; with proof and none left, it is cancelled.
	Rebuilds int
}

// RebuildsMax bounds StuckPolicy.Rebuilds: every rebuild is a new txid the
// chain must be asked about forever.
const RebuildsMax = 100

// Validate refuses an incoherent policy with a clear error. An inverted pair
// (cancel before rebuild) would silently make the rebuild path unreachable,
// and a policy of no rebuilds is spelled with CancelAfter, not by hollowing
// out the middle action.
func (p StuckPolicy) Validate() error {
	switch {
	case p.RebuildAfter <= 0:
		return fmt.Errorf("stuck policy: RebuildAfter %s must be positive", p.RebuildAfter)
	case p.CancelAfter <= 0:
		return fmt.Errorf("stuck policy: CancelAfter %s must be positive", p.CancelAfter)
	case p.CancelAfter <= p.RebuildAfter:
		return fmt.Errorf("stuck policy: CancelAfter %s must come after RebuildAfter %s", p.CancelAfter, p.RebuildAfter)
	case p.Rebuilds < 1:
		return fmt.Errorf("stuck policy: Rebuilds %d must be at least 1", p.Rebuilds)
	case p.Rebuilds > RebuildsMax:
		return fmt.Errorf("stuck policy: Rebuilds %d is above %d", p.Rebuilds, RebuildsMax)
	}
	return nil
}

// Action is what a Decision says to do.
type Action uint8

const (
	// Wait: the txid may still land, or patience has not run out.
	Wait Action = iota
	// Rebuild: the txid is dead; build a new envelope (a new txid).
	Rebuild
	// Cancel: the txid is dead and the budget is spent; fail the operation
	// and release the hold: nothing moved, the customer has the money back.
	Cancel
	// Escalate: the txid is dead and the budget is spent, but the operation
	// was parked for operational trouble of ours on the way, or its txid
	// was never heard accepted: failing it would turn our trouble into the
	// customer's failure, so it goes to review for an operator.
	Escalate
)

var actionNames = [...]string{Wait: "wait", Rebuild: "rebuild", Cancel: "cancel", Escalate: "review"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// MarshalText writes the action's name.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads an action's name.
func (a *Action) UnmarshalText(b []byte) error {
	for i, n := range actionNames {
		if n == string(b) {
			*a = Action(i)
			return nil
		}
	}
	return fmt.Errorf("unknown action %q", b)
}

// Decision is the policy's answer for one operation at one moment: a value,
// recorded in the event log with the transition it causes.
type Decision struct {
	Action Action
	// Reason is prose carrying the numbers that produced the decision.
	Reason string
	// Waited is the time since the first send.
	Waited time.Duration
	// Rebuilds is how many rebuilds the operation had when decided.
	Rebuilds int
}

func (d Decision) String() string {
	return fmt.Sprintf("%s after %s, %d rebuilds: %s", d.Action, d.Waited, d.Rebuilds, d.Reason)
}

// Decide is the policy as a pure function of the operation, the evidence
// gathered about its current txid, and now (chain time: the pipeline passes
// the solid block time the evidence cites). Without
// proof of death it always waits.
func (p StuckPolicy) Decide(op Operation, ev Evidence, now time.Time) Decision {
	d := Decision{Rebuilds: max(op.Builds-1, 0)}
	if !op.FirstSentAt.IsZero() {
		d.Waited = max(now.Sub(op.FirstSentAt), 0)
	}
	if !ev.Proves() {
		var a [192]byte
		d.Action, d.Reason = Wait, string(ev.appendTo(append(a[:0], "no proof of death yet: "...)))
		return d
	}
	spent := ""
	switch {
	case d.Waited >= p.CancelAfter:
		spent = "waited " + d.Waited.String() + ", at or past CancelAfter " + p.CancelAfter.String()
	case d.Rebuilds >= p.Rebuilds:
		spent = "rebuilt " + strconv.Itoa(d.Rebuilds) + " times, the policy allows " + strconv.Itoa(p.Rebuilds)
	}
	switch {
	case spent != "" && op.Parks > 0:
		d.Action, d.Reason = Escalate, spent+"; parked "+strconv.Itoa(op.Parks)+" times for operational trouble"
		if op.ParkReason != "" {
			// Empty once a transition has ended the last park spell.
			d.Reason += " (last: " + op.ParkReason + ")"
		}
	case spent != "" && op.State == Broadcasting:
		// No node was ever heard taking this txid (an acceptance moves the
		// row to broadcast): our sends never got through, which is our
		// trouble (a shortage whose park was lost with a crashed or fenced
		// worker, a network of ours), not the chain's. A person looks.
		d.Action, d.Reason = Escalate, spent+"; no node was ever heard accepting the txid"
	case spent != "":
		d.Action, d.Reason = Cancel, spent+"; txid proven dead"
	case d.Waited < p.RebuildAfter:
		d.Action, d.Reason = Wait, "txid proven dead, but waited "+d.Waited.String()+" of RebuildAfter "+p.RebuildAfter.String()
	default:
		d.Action, d.Reason = Rebuild, "txid proven dead after "+d.Waited.String()+" (RebuildAfter "+p.RebuildAfter.String()+
			"), rebuild "+strconv.Itoa(d.Rebuilds+1)+" of "+strconv.Itoa(p.Rebuilds)
	}
	return d
}
