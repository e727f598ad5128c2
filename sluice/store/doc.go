// Package store holds sluice's in-memory Store, Memory, and (in storetest)
// the conformance suite every Store must pass.
//
// Memory is not a simplified stand-in: it reproduces, step for step, the
// semantics the PostgreSQL schema gets from the database, so that the
// pipeline, the simulator and the model checker cannot tell the two apart
// and a schedule found against Memory is a schedule PostgreSQL would allow:
//
//   - Claim is "SELECT ... FOR UPDATE SKIP LOCKED" over claimable rows
//     followed by "token = token + 1, lease_until = now() + lease": it never
//     waits on a row someone else holds, and every claim mints a new
//     fencing token.
//   - CAS is "UPDATE ... WHERE id = $1 AND token = $2 AND state = $3": a
//     zombie's write matches no row (ErrFenced) whatever it believes about
//     its lease. The transition trigger then refuses edges outside the
//     state machine (ErrIllegalTransition), and the event row is inserted in
//     the same transaction, so the audit log never disagrees with the row.
//   - A txid belongs to one operation forever, as the partial unique index
//     on txid guarantees in PostgreSQL: a rebuild retires a txid but never
//     frees it, so no other operation can ever take it (ErrTxidTaken).
//   - Every method is one transaction: it reads the store's clock (the
//     database's now()) once and either applies everything or nothing.
//
// Memory is deterministic: it reads time only from the Clock it is given,
// starts no goroutines and never lets map order reach a result.
package store
