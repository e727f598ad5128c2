// Package sluice is an idempotent USDT-TRC20 withdrawal processor: a
// withdrawal is never created, signed or broadcast twice, not when two
// workers race for one operation, not when a process dies mid-broadcast, and
// not when the node accepts a transaction and then times out.
//
// # States
//
// requested -> validated -> signing -> signed -> broadcasting -> broadcast ->
// confirmed, with failed, rejected and review as the other terminal states,
// a rebuild edge (broadcasting|broadcast -> signing, only with proof of
// death) and a stale-envelope edge (signed -> signing, only before the first
// send). The table in states.go is the single source of truth; terminal rows
// are bricks.
//
// # Confirmation and review
//
// Only a solid block with a SUCCESS receipt and exactly one USDT Transfer
// log, from the hot wallet to the recipient for exactly the amount, confirms.
// A SUCCESS whose logs say anything else (no USDT log, another amount or
// recipient, a fee taken on the way, two logs) means tokens may have moved,
// but not as asked: confirming would tell the customer they were paid,
// failing would let them withdraw again. The operation goes to review, a
// terminal state for the automation with its reason in the event log, for an
// operator to settle. A receipt other than SUCCESS fails it: the contract
// reverted and nothing moved.
//
// # Claim, lease, fence
//
// A worker claims operations (Store.Claim). A claim sets a lease, which
// expires by itself so that a dead worker's operations come back, and
// increments the fencing token. Every later write is a compare-and-swap on
// (id, token, state) (Store.CAS), so a worker whose lease lapsed while it
// slept (a zombie) writes nothing: the moment a CAS returns ErrFenced the
// worker stops touching the operation. Every CAS renews the lease and writes
// its event in the same atomic step.
//
// # The write-ahead rule
//
// The txid (sha256 of raw_data, signature excluded) is stored before the
// envelope is signed, and the state broadcasting is committed BEFORE the
// network call. Recovery therefore always holds a txid and asks the chain
// about it; it never guesses from memory.
//
// # Proof of death
//
// Rebuilding (a new envelope, a new txid) is the one dangerous move, so it
// needs proof that the old txid can never land: a solid block whose time is
// at least expiration + SafetyMargin, fetched before a lookup that finds the
// txid unknown. Wall clocks and the node's error codes are never proof. Each
// rebuild files its Evidence in the event log.
//
// # Driving it
//
// The core is sequential and owns no time, randomness or goroutines: Store,
// tron.Node, tron.Signer, Clock and Rand are injected. A caller loops:
//
//	for {
//		rep, err := worker.Tick(ctx) // claim a batch, step each operation
//		// back off on err; sleep a little when rep.Claimed == 0
//	}
//
// Each handler (Pipeline.Step) doubles as its state's recovery procedure: a
// reclaimed operation is indistinguishable from a fresh one on purpose.
package sluice
