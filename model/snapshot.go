package model

import (
	"fmt"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// Snapshot is everything the checkers look at after a run. Pure data: the
// checkers only read it.
type Snapshot struct {
	Operations  []sluice.Operation     // store rows, insertion order
	Events      []sluice.Event         // the store's event log, Seq order
	Wire        []mocknode.WireAttempt // every broadcast attempt
	Accepted    []mocknode.Acceptance  // every txid the node ever accepted
	Inclusions  []mocknode.Inclusion   // chain order
	Blocks      []tron.Block           // the whole chain, by number
	SolidNumber int64                  // solid head at the end
	HotWallet   tron.Address
	Intake      []IntakeRecord // every client post and its answer
	Reads       []ReadRecord   // every client GET and its answer

	// Liveness: Healed is when faults stopped; End is when the run ended;
	// LivenessBudget is how long after Healed every accepted operation had
	// to become terminal (an operation created after Healed gets the budget
	// from its creation). BudgetExhausted is set when the simulator's step
	// budget ran out before the run settled.
	//
	// Healed, End and the store's clock (Event.At, Operation.CreatedAt) must
	// be the same timeline: simulation time.
	Healed, End     time.Time
	LivenessBudget  time.Duration
	BudgetExhausted bool
}

// IntakeRecord is one client request and what it was told.
type IntakeRecord struct {
	Client string // the client process name
	// ID is the operation id as sent (may be malformed). Records are matched
	// to rows by its lowercase form: intake canonicalizes a UUID's case and
	// nothing else.
	ID string
	// RequestHash is the hash of the normalized payload sent; "" if the
	// payload was invalid.
	RequestHash string
	Outcome     Outcome      // Created, Replayed, Conflict, Invalid, Failed (store error / crashed)
	Returned    string       // for Created/Replayed: the RequestHash of the row returned
	State       sluice.State // for Created/Replayed: the state returned
	// Call and Return are the step indexes of the call and of its return
	// (for linearizability).
	Call, Return int64
}

// Outcome is what intake told a client.
type Outcome int

// The outcomes. The zero value is no outcome, so a record nobody filled in
// is noticed rather than read as Created.
const (
	// Created: this request inserted the row.
	Created Outcome = iota + 1
	// Replayed: the id existed with the same payload; the row was returned.
	Replayed
	// Conflict: the id existed with another payload; refused.
	Conflict
	// Invalid: refused at the door; nothing was stored.
	Invalid
	// Failed: a store error, or the client or intake crashed: the answer is
	// unknown, and the insert may or may not have committed.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case Created:
		return "created"
	case Replayed:
		return "replayed"
	case Conflict:
		return "conflict"
	case Invalid:
		return "invalid"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Violation is one broken invariant.
type Violation struct {
	Invariant string             // one of the names in Invariants
	Operation sluice.OperationID // "" when not about one operation
	Message   string             // names the operation and the evidence; one line, deterministic
}

// String is "invariant: message".
func (v Violation) String() string { return v.Invariant + ": " + v.Message }

// The invariants' stable names, used in reports, exit codes and JSON.
const (
	Liveness         = "liveness"
	TxidOwnership    = "txid-ownership"
	AtMostOnce       = "at-most-once"
	Conservation     = "conservation"
	IntakeUniqueness = "intake-uniqueness"
	AuditLog         = "audit-log"
)

// Invariants lists the names: the six that Check runs, in its order, then
// linearizable-intake, which CheckLinearizable decides.
var Invariants = []string{Liveness, TxidOwnership, AtMostOnce, Conservation, IntakeUniqueness, AuditLog, LinearizableIntake}

// Check runs every checker in the order of Invariants and returns their
// violations in that order (each checker's own sorted by Operation, then
// Message). Nil means the run kept every invariant.
func Check(s *Snapshot) []Violation {
	var out []Violation
	for _, check := range []func(*Snapshot) []Violation{
		CheckLiveness, CheckTxidOwnership, CheckAtMostOnce,
		CheckConservation, CheckIntakeUniqueness, CheckAuditLog,
	} {
		out = append(out, check(s)...)
	}
	return out
}
