// Command sluice runs the withdrawal service.
//
//	sluice serve [-addr 127.0.0.1:8080] [-workers 4] [-store memory|postgres]
//	             [-api=false] [-node-addr 127.0.0.1:PORT | -node-url http://127.0.0.1:PORT]
//
// serve starts the intake HTTP API and N workers (goroutines, each its own
// sluice.Worker with its own id) against one store: the in-memory store by
// default, or PostgreSQL at DATABASE_URL with -store postgres (migrations are
// applied at startup). With PostgreSQL, several serve processes may share
// the database; the store's claims, leases and fencing tokens keep them from
// ever working one operation at once.
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
// This is the real-time adapter around the deterministic core: the wall
// clock, goroutines, signals and sleeps live here and never inside sluice/.
// SIGINT or SIGTERM stops accepting requests, lets in-flight requests finish
// (bounded), stops the workers between ticks and exits.
package main
