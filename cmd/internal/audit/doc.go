// Package audit judges a live sluice system with the simulator's own
// invariants: it reads a PostgreSQL database and a node into a
// model.Snapshot, runs the checkers of package model that make sense
// without the clients' records, and reconciles the last solid blocks
// against the operations. `sluice audit` and cmd/livecheck both use it.
//
// # What it reads
//
// The database: every row and its event log, each decoded by the store's
// own readers (postgres.Store.Get and Events). On a live system the workers
// write while the audit reads, so each operation is read as row, log, row
// again until the two reads of the row agree: every event is written in the
// transaction that changes its row, so an unchanged row means the log read
// between is the log of that row. The ledger (ReadLedger): every credit,
// account and hold, with every row's state and request and the log's
// transitions, in one REPEATABLE READ transaction, so all of it is of one
// moment. The chain: the node's ground truth
// (nodehttp.Client.Truth: broadcasts, acceptances, inclusions with what
// each moved, block headers, solid head, hot wallet), read after the
// database so that every transaction on it was written ahead before the
// read, and the node's ordinary lookup for reconciliation.
//
// # What it judges, and what it cannot
//
// It runs audit-log (every log replays to its row through legal edges,
// tokens never go back, every rebuild's evidence holds against the chain),
// txid-ownership (every txid the node saw belongs to exactly one
// operation), at-most-once (at most one inclusion per operation, a
// confirmed one has exactly one successful transfer, every other terminal
// state none), conservation (what left the hot wallet equals what the
// confirmed rows say they pay, per operation and in total), funds (every
// customer's balance + held + paid = deposited, at every event of the log
// and at the read, the credits table standing for the deposits; every hold
// closed at most once, settled exactly on confirmation and released exactly
// on failure or rejection, held otherwise) and no-operational-failure (no
// operation failed after a refusal for bandwidth, energy or the contract's
// state on the wire, a failed receipt on chain, or a park its row counts).
// The model judges conservation and funds against the clients' intent when
// it has it; the audit has none, so the rows stand in for it: a row that
// disagrees with what its client asked is caught by the live check and the
// simulator, not here.
//
// The other invariants need what only a run's observer has, and the audit
// says so in its output rather than pass them vacuously: liveness a heal
// point and a budget, progress the node's answer to each send and the
// client's payload for a rejection, intake-uniqueness and
// linearizable-intake the clients' requests and answers, one-writer every
// claim and write as an outside observer saw them. A test fails when model
// gains an invariant this package has not classified.
//
// Funds is judged on the ledger's snapshot alone, not on the rows read one
// by one: a transition commits its row, event, hold close and account
// numbers together, so one snapshot agrees with itself, and an operation
// not yet terminal in it must simply hold its amount; nothing that will
// settle or release it later is in the snapshot to be flagged. The rows
// from before the ledger that migration 0005 left without a hold (the
// legacy customer's, money already moved) are left out and counted.
//
// An operation in flight may already have its transaction on chain: the
// workers have not yet seen it solid. The audit leaves the fate of such a
// txid to the next audit (the row's current txid of an operation that is
// not terminal, and a txid on chain that no operation owned at the read but
// one does now, written after it) and reports how many it left; everything
// else on chain is judged.
//
// # Reconciliation
//
// The seed's reconciliation: the last N solid blocks are rescanned for
// transactions no operation owns (no event names them and no row holds
// them, nor does txid_owners by the time the chain was read). Each is looked
// up through the node's ordinary API, and one that the hot wallet signed or
// whose Transfer logs move the hot wallet's tokens is reported: a payment
// sluice does not know about (a leaked key, a second system on the same
// wallet, a row lost from the database).
//
// # Against a real node
//
// The mock served by `sluice serve -node-addr` shows its ground truth at
// /mock/truth; a real TRON node does not, and the audit refuses a node that
// does not serve it. Against a real node it would need, for each block of
// the window, its header and transactions (/walletsolidity/getblockbynum:
// the owner of each transaction stands in for the inclusions' owner), and
// for each transaction of the hot wallet its receipt and logs
// (/walletsolidity/gettransactioninfobyid, which this package already uses
// for reconciliation); the hot wallet's address as configuration; and, for
// audit-log's evidence, the headers of the blocks evidence cites
// (getblockbynum again). It would have no broadcast record and no
// acceptances: txid-ownership would judge included txids only, and the
// money moved would be read from the logs a node reports rather than from
// the mock's ledger (Inclusion.Moved), so a node that lies about logs would
// go unnoticed; no-operational-failure would know of a send's refusal only
// through the rows' park counts, not the node's answers. Scanning from the oldest operation's first block forward,
// rather than the whole chain, bounds the work.
package audit
