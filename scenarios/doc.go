// Package scenarios builds the worlds the simulator runs: the real sluice
// core (intake, workers, the store) wired to the mock TRON node inside the
// sim kernel, with clients, faults and the checks.
//
// One run (Run, world.go) is a pure function of the world (a Config) and the
// choice tape:
//
//	Config + seed ─► run ─────────────────────────────────────────► Result
//	                 │ processes: clients (clients.go) ─► servers (servers.go)
//	                 │            workers, restarters (workers.go)
//	                 │            chain, relay (chain.go), reader, conductor
//	                 │
//	                 │ safety phase: t < HealAt
//	                 │   every store, node, signer and clock call yields before
//	                 │   and after (wrap.go); at each point the tape decides
//	                 │   crashes, pauses, jumps, stalls, slow answers, lies
//	                 │ liveness phase: HealAt ≤ t < HealAt + LivenessBudget
//	                 │   no faults; the conductor stops the run once every
//	                 │   client is done and no row is open, or when the
//	                 │   budget is spent
//	                 │
//	                 └─► snapshot (what the store holds, what the chain did,
//	                     who claimed and wrote what, what clients were told)
//	                     ─► model.Judge: every invariant, linearizability,
//	                     outcomes ─► Result (violations, tally, stats, trace)
//
// Faults are declared once, in the fault table (faults.go): each row names
// the choice kinds its injection site asks, the tally kinds that count it,
// how to turn it off and whether exhaustive search explores it. Calm,
// ForExhaustive, the shrink edits, the tally and the fault-free test are
// derived from it. Adding a fault is one row there plus its injection site;
// TestEveryChoiceKindIsClassified fails until the row exists.
//
// Traces record facts (model.Fact): typed fields with a one-line text
// derived from them, which reports read instead of parsing text.
//
// Mutants (mutants*.go) are broken variants of the core, injected through
// the interfaces the world already wraps, never by branches in sluice.
// Replay, Shrink and Exhaust re-run worlds from traces, smaller configs and
// enumerated tapes.
package scenarios
