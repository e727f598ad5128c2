package model

import (
	"fmt"
	"time"

	"sluicesim/sluice"
)

// CheckLiveness checks that after the heal point every accepted operation
// reached a terminal state within the liveness budget.
//
// An operation is accepted if it has a row or a client was told it was
// created. Its deadline is LivenessBudget after Healed, or after its creation
// if it was created later. It violates liveness if it is not terminal at End
// (whether End is past its deadline, or the run stopped short of it and so
// gave up early), or if it became terminal only after its deadline. A zero
// LivenessBudget sets no deadline: terminal by End is all that is asked. A run
// whose step budget ran out (BudgetExhausted) is a violation in itself. A run
// that stopped because a process failed (Failed) is the failure's to report:
// only operations already past their deadline are charged.
func CheckLiveness(s *Snapshot) []Violation {
	s = withMemo(s)
	var vs []Violation
	if s.BudgetExhausted {
		vs = append(vs, Violation{Invariant: Liveness, Message: fmt.Sprintf(
			"the simulator's step budget ran out before the run settled (end %s, %s)",
			stamp(s.End), sinceHeal(s, s.End))})
	}

	// When each operation first entered a terminal state, by its own log.
	// The automation's work ends there: an operator who later settles a
	// review (paid, or cancelled) acts on a terminal operation, on a
	// person's time, not the automation's.
	ix := s.index()
	seen := make([]bool, len(ix.ids)) // by slot
	for i := range s.Operations {
		op := &s.Operations[i]
		k := ix.slot[op.ID]
		if seen[k] {
			continue // a duplicate row is intake-uniqueness's to report
		}
		seen[k] = true
		var terminalAt *time.Time
		if first := ix.firstFinal[k]; first >= 0 {
			terminalAt = &s.Events[first].At
		}
		if v, bad := livenessOf(s, op, terminalAt); bad {
			vs = append(vs, v)
		}
	}
	// Every id the row loop saw has a row; seenElse holds the others.
	var seenElse map[sluice.OperationID]bool
	for i := range s.Intake {
		r, id := &s.Intake[i], ix.intakeKey[i]
		if r.Outcome != Created || ix.row(s, id) != nil || seenElse[id] {
			continue
		}
		if seenElse == nil {
			seenElse = make(map[sluice.OperationID]bool)
		}
		seenElse[id] = true
		vs = append(vs, Violation{Invariant: Liveness, Operation: id, Message: fmt.Sprintf(
			"op %s: client %s was told it was created, but no row exists at end (%s): it can never finish",
			id, r.Client, sinceHeal(s, s.End))})
	}
	return finish(vs)
}

// livenessOf judges one operation; terminalAt is when its log first
// entered a terminal state (nil: never).
func livenessOf(s *Snapshot, op *sluice.Operation, terminalAt *time.Time) (Violation, bool) {
	v := Violation{Invariant: Liveness, Operation: op.ID}
	budget := s.LivenessBudget > 0
	start := op.CreatedAt
	if s.Healed.After(start) {
		start = s.Healed
	}
	deadline := start.Add(s.LivenessBudget)

	if !Terminal(op.State) {
		if s.Failed && (!budget || s.End.Before(deadline)) {
			// A process failed and the run stopped there: the failure is
			// reported, and an operation it cut off before its deadline
			// has done nothing wrong yet.
			return Violation{}, false
		}
		switch {
		case !budget:
			v.Message = fmt.Sprintf("op %s is still %s at end (builds %d, %s; no liveness budget set)",
				op.ID, op.State, op.Builds, sinceHeal(s, s.End))
		case s.End.Before(deadline):
			v.Message = fmt.Sprintf("op %s is still %s (builds %d) when the run ended, %s, before its deadline %s (budget %s): the run gave up early",
				op.ID, op.State, op.Builds, sinceHeal(s, s.End), stamp(deadline), s.LivenessBudget)
		default:
			v.Message = fmt.Sprintf("op %s is still %s at end (builds %d, %s), past its deadline %s (budget %s)",
				op.ID, op.State, op.Builds, sinceHeal(s, s.End), stamp(deadline), s.LivenessBudget)
		}
		return v, true
	}
	if !budget {
		return Violation{}, false
	}
	var at time.Time
	if terminalAt != nil {
		at = *terminalAt
	} else {
		// The log never says so (audit-log reports that); the row's last
		// write is when it became terminal, since a terminal row is never
		// written again.
		at = op.UpdatedAt
	}
	if at.After(deadline) {
		v.Message = fmt.Sprintf("op %s became %s at %s (builds %d, %s), past its deadline %s (budget %s)",
			op.ID, op.State, stamp(at), op.Builds, sinceHeal(s, at), stamp(deadline), s.LivenessBudget)
		return v, true
	}
	return Violation{}, false
}

// sinceHeal says how long after the heal point t is.
func sinceHeal(s *Snapshot, t time.Time) string {
	if s.Healed.IsZero() {
		return "no heal point set"
	}
	return fmt.Sprintf("%s after heal", t.Sub(s.Healed))
}
