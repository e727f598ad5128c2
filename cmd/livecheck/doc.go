// Command livecheck is the live check of sluice on a real database: the
// invariants the simulator proves, checked against real processes, real
// concurrency and real crashes.
//
//	DATABASE_URL=postgres://... livecheck [-withdrawals 1000] [-kills 12] ...
//
// It builds cmd/sluice (or takes -sluice BIN), creates a fresh schema in the
// database at DATABASE_URL, and starts on loopback:
//
//   - one "node" process: sluice serve with the intake API, no workers, and
//     the mock TRON node served over HTTP (-node-addr) with its ground truth;
//   - K worker processes: sluice serve -api=false against the same database
//     and, through -node-url, the same mock chain.
//
// C concurrent HTTP clients post the withdrawals: duplicates (the same id and
// payload, some concurrent, some with the amount written differently, "1.5"
// and "1.50", some with the id in upper case), conflicts (the same id with
// another amount, concurrent or later), invalid posts, retries after failed
// answers, and reads. Every request's call and return points come from one
// counter in this process, so they order the history as real time does.
// Meanwhile a killer sends SIGKILL to a random worker process every few
// seconds and restarts it.
//
// Once every operation is terminal (bounded by -settle), the workers are
// stopped, and a model.Snapshot is built from the database (rows and event
// log) and the node's ground truth (wire, acceptances, inclusions, blocks,
// solid head). model.CheckAll runs every invariant of model.Invariants, the
// client history's linearizability (porcupine) among them; one-writer has
// nothing to judge here (no process can watch the claims). livecheck prints
// the counts and the violations per invariant and exits 1 on any violation
// or when a count is below its -min-* acceptance bound, 2 if the run could
// not be set up. Every child process is killed on the way out, on failure
// too; the schema is dropped unless -keep-schema.
//
// Everything listens on 127.0.0.1; nothing leaves the machine.
package main
