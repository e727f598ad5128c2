// Command livecheck is the live check of sluice on a real database: the
// invariants the simulator proves, checked against real processes, real
// concurrency and real crashes.
//
//	DATABASE_URL=postgres://... livecheck [-withdrawals 1000] [-kills 12] [-restart-postgres 2] ...
//
// It builds cmd/sluice (or takes -sluice BIN), creates a fresh schema in the
// database at DATABASE_URL, and starts on loopback:
//
//   - one "node" process: sluice serve with the intake API, one worker, the
//     mock TRON node served over HTTP (-node-addr) with its ground truth, and
//     the operator API with /metrics (-operator-addr, a token generated for
//     the run in its environment), which credits the clients' customers at
//     its start (-fund CUSTOMER=AMOUNT, each with twice what the run could
//     take from it). It is never killed: its worker's confirmations fill the
//     latency histogram /metrics serves (a process counts only its own);
//   - K worker processes: sluice serve -api=false against the same database
//     and, through -node-url, the same mock chain.
//
// C concurrent HTTP clients post the withdrawals: duplicates (the same id and
// payload, some concurrent, some with the amount written differently, "1.5"
// and "1.50", some with the id in upper case), conflicts (the same id with
// another amount or another customer, concurrent or later), invalid posts,
// valid posts for a customer nobody funded (which must be refused 402, and
// no funded customer's ever is), retries after failed answers, and reads.
// Every fifth withdrawal is for Live-Late, whom a depositor credits through
// the operator API while the clients post (deposits.go says how each
// deposit is placed for funds, and what its answers must be). A person on
// call acts through the operator API meanwhile, on the database's clock:
// cancels withdrawals not yet built, retries parked operations, cancels
// those in review; its answers are held to the event log and the actions
// counter at the end (oncall.go). Every request's call and return points come from one
// counter in this process, so they order the history as real time does.
// Meanwhile a killer sends SIGKILL to a random worker process every few
// seconds and restarts it.
//
// With -restart-postgres N, PostgreSQL itself is restarted N times while the
// clients post (by default with ".ci/postgres.sh restart", a fast shutdown
// of the cluster that script started, named by SLUICE_PG_DIR): every session
// is terminated, open transactions roll back, and a commit in flight may be
// answered to nobody. With -crash-postgres M it is also crashed M times,
// taking turns with the restarts: right after a commit lands, one server
// process is SIGKILLed (as the kernel's OOM killer does), and the server
// ends every session, resets its shared memory, the WAL buffers with it,
// and recovers from the WAL written. With synchronous commits nothing
// acknowledged may be lost; a store that answers a commit before its WAL is
// written loses it. A watcher reads the newest events until each outage
// begins, and every event it saw must be there after it (the durability
// probe; a loss fails the run). A loss shows in the model too: a
// write-ahead lost after its bytes were sent is written again when the
// operation is driven anew, stamped after the send the node recorded
// (audit-log), and a state a client was shown may come back older
// (linearizability). Crashes need the cluster of .ci/postgres.sh
// (SLUICE_PG_DIR), on this machine. The processes must live through each
// outage on their pools'
// reconnects (one that exits fails the run). An answer of 5xx to a request
// that overlapped a restart (from the restart to the first query answered
// after it, plus two seconds in which a pool may still hand out a dead
// connection) is excused, and a read so answered is one the model excuses
// as a store failure; a post's retries must still end in an answer, and a
// request left with no answer at all is never excused. The summary says how
// long each restart kept the database away, what the clients were answered
// meanwhile, and how many worker ticks failed and were retried.
//
// During the run /metrics is scraped with the token every two seconds, and
// the first scrape whose latency histogram counts a few confirmations is
// kept (else the last one, at the end of the settling; a scrape that
// overlapped a PostgreSQL restart is not kept, its gauges missing by
// design). The six metrics of seed 003 must be there with plausible values:
// a queue depth for every non-terminal state, adding up to no more than the
// rows stored; the histogram non-empty, counting no more confirmations than
// the database holds, with a p95 read from its buckets (as
// histogram_quantile reads it) between 1 s and 30 min; the stuck ratio in
// [0, 1]; the review size and the ledger-chain mismatch counter counts; no
// deposit lag, which sluice documents as omitted. /metrics must answer 401
// without the token and 403 with a wrong one. The summary prints the
// scrape's numbers.
//
// Once every operation is terminal (bounded by -settle), the workers are
// stopped, and a model.Snapshot is built by package cmd/internal/audit from
// the database (rows, event log, accounts and holds; the deposits are the
// live check's own record of its -fund credits) and the node's ground
// truth (wire, acceptances, inclusions, blocks, solid head), with the
// clients' history added. model.CheckAll runs every invariant of model.Invariants, the
// client history's linearizability (porcupine) among them; one-writer has
// nothing to judge here (no process can watch the claims). Then the audit
// of `sluice audit` (audit.Run) judges the same database and chain as an
// operator's audit would, without the clients' records: the live
// invariants, and reconciliation of every solid block through the node's
// lookups. livecheck prints the counts, the violations per invariant and
// the audit's report (funds judged on the database's ledger among them),
// and exits 1 on any violation (the audit's included), an implausible or
// missing scrape, or when a count is below its -min-* acceptance bound, 2
// if the run could not be set up. Every child process is killed on the way out, on failure
// too; the schema is dropped unless -keep-schema.
//
// The live check also plays a second system on the hot wallet (a leaked
// key): right after the node comes up it sends two transactions from the
// hot wallet outside sluice, one paying a stranger 7.777777 USDT and one
// asking more than the wallet holds, which reverts on chain. The model is
// given the chain without them (it holds sluice to the clients); the audit
// must report both under reconciliation and txid-ownership, and the
// payment under conservation, per txid and in the total, or the run fails.
// Without them an audit that looked at no block would pass every run. Any
// finding of the audit they do not explain fails the run as before
// (stray.go).
//
// With -drop-every K the node refuses (SERVER_BUSY) every send of each K-th
// new transaction, which expires unsent: its withdrawal is rebuilt only on
// a proof of death made over HTTP (the node process's own workers reach the
// mock through the node client too). The run fails if no event filed such
// a proof. A death takes the expiration and margin (90 s): give
// -liveness-budget and -settle room.
//
// With -short-every K the node refuses the first three sends of each K-th
// new transaction for bandwidth (BANDWITH_ERROR, not taken), as when the
// hot wallet runs out for a while: the worker parks the withdrawal with
// backoff, the operator's queue shows it parked, and the person on call
// retries it from there (the queue's path, which a run without parks never
// takes). The run fails unless such a transaction was refused and one
// retry of a parked row landed. make livecheck runs with -short-every 25.
//
// Every process's log is read at the end for the run's operator token, in
// full or a quarter of it at either end: one found fails the run, since
// whoever reads the logs could then credit, cancel and resolve.
//
// Everything listens on 127.0.0.1; nothing leaves the machine.
package main
