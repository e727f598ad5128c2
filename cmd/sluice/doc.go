// Command sluice runs the withdrawal service.
//
//	sluice serve [-addr 127.0.0.1:8080] [-workers 4] [-store memory|postgres]
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
// This is the real-time adapter around the deterministic core: the wall
// clock, goroutines, signals and sleeps live here and never inside sluice/.
// SIGINT or SIGTERM stops accepting requests, lets in-flight requests finish
// (bounded), stops the workers between ticks and exits.
package main
