// Package model holds the invariants a sluice run must keep, as pure
// functions over the run's final Snapshot.
//
// The checkers watch from outside. They never call sluice's own logic to
// decide whether sluice was right: each keeps its own reading of ground truth
// (the mock node's wire, acceptances, inclusions and blocks; the store's rows
// and event log; what every client was told) and its own ghost state (the
// owners of every txid, the highest fencing token seen per operation). Only
// sluice's types, the transition table (sluice.CanTransition, the spec
// itself) and Evidence.Proves (the definition of a proof of death) are
// borrowed.
//
// Each invariant has a stable name (Liveness, TxidOwnership, AtMostOnce,
// Conservation, IntakeUniqueness, AuditLog) used in reports, traces and exit
// codes, and one checker, CheckX(s) []Violation. Check runs all six. Every
// checker is deterministic: violations are sorted by (Invariant, Operation,
// Message) and no map order reaches a message, so the same snapshot always
// gives the same bytes.
package model
