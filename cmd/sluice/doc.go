// Command sluice runs the withdrawal service.
//
//	sluice -h                   the commands, one line each
//	sluice <command> -h         one command: its flags (serve: the APIs too)
//	sluice serve [-addr 127.0.0.1:8080] [-workers 4] [-store memory|postgres]
//	             [-api=false] [-node-addr 127.0.0.1:PORT | -node-url http://127.0.0.1:PORT]
//	             [-operator-addr HOST:PORT] [-fund CUSTOMER=AMOUNT ...]
//	             [-log-format text|json] [-log-level debug|info|warn|error]
//
// The commands are the table in main.go (name, one-line doc, run func);
// adding one is one entry there. Exit codes: 0 done, 1 failed, 2 bad usage
// (no command, an unknown one, a stray argument, a bad flag).
//
// serve starts the intake HTTP API and N workers (goroutines, each its own
// sluice.Worker with its own id) against one store: the in-memory store by
// default, or PostgreSQL at DATABASE_URL with -store postgres (migrations are
// applied at startup). With PostgreSQL, several serve processes may share
// the database; the store's claims, leases and fencing tokens keep them from
// ever working one operation at once. serve -h documents the intake API and
// the mock node's API with example requests, and what a withdrawal's life
// looks like in time; README's "Running sluice for real" says the same.
// Every answer of both is JSON, what net/http answers on its own included
// (intake.JSONAnswers).
//
// With -operator-addr, serve also runs the operator API (package
// sluice/operator: the queue of review and parked operations, retry,
// cancel with proof of death, resolve as paid, credits, accounts) and
// /metrics (package sluice/metrics) on a listener of their own, every
// request behind the bearer token in $SLUICE_OPERATOR_TOKEN; it refuses to
// start without a valid one. Every worker reports its steps to the metrics
// and the logs (sluice.Observer), every node call is counted, and -fund
// credits customers at startup, once per fund:CUSTOMER:AMOUNT.
//
// The TRON node is a MOCK (package mocknode) inside the process, producing
// blocks in real time every 3 s. No real chain is contacted and no real funds
// move; the service says so on startup.
//
// Several processes can share one mock chain: the process that holds the
// mock serves it over HTTP with -node-addr (loopback only; package
// nodehttp, which also serves the mock's ground truth for the live check),
// and processes started with -node-url use it instead of a mock of their
// own. -api=false runs workers only. The live check (cmd/livecheck) runs one
// process with the API and the node and several worker-only processes that
// it kills with SIGKILL.
//
// Logs are log/slog records on stderr, text or JSON: each withdrawal
// created and each transition a worker lands, with the operation id,
// through store wrappers here (workerLog, intakeLog), and each decision,
// park, review and operator action through observers (stepLog, actionLog),
// so the core logs nothing and stays deterministic. The live check reads the text lines by
// their messages (see lineHandler).
//
// This is the real-time adapter around the deterministic core: the wall
// clock, goroutines, signals, sleeps and logs live here and never inside
// sluice/. SIGINT or SIGTERM stops accepting requests, lets in-flight
// requests finish (bounded), stops the workers between ticks and exits.
package main
