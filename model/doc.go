// Package model holds the invariants a sluice run must keep, as pure
// functions over the run's final Snapshot.
//
// The oracle is independent of the code it checks. The checkers never ask
// sluice what was right: they judge the run against what the world knows
// from outside the code under test — what each client meant (the payload it
// sent, read by this package's own reference code in reference.go: its own
// UUID, base58check and decimal readings, compared with production's by a
// property test), what the chain really did (the mock node's wire,
// acceptances, inclusions and blocks), who really claimed and wrote what
// (the world's ghost records), and the configuration as the world set it.
// The store's rows and event log are what is being judged. Only sluice's
// types are borrowed: the state machine is this package's own (spec.go,
// compared edge by edge with the core's table by a test), and a proof of
// death is re-derived, not read from Evidence.Proves.
//
// The invariants are one table, Invariants (name, one-line doc, checker),
// that the summary, the JSON, the reports and the README range over. Check
// runs them all in table order. Every checker is deterministic: violations
// are sorted by (Invariant, Operation, Message) and no map order reaches a
// message, so the same snapshot always gives the same bytes. Judge reads
// the snapshot once into an index (fast_index.go: the event log and the
// rows by operation, what the world saw of each txid, each payload read
// once) that all the checkers share. Beyond violations, CountOutcomes says
// how a run's withdrawals ended and why, so that a green run that paid
// nobody is visible as such.
package model
