// Command demo tells the ninety-second story: a duplicate POST, a worker
// killed right after its write-ahead, and a node that accepts a transaction
// and then times out, all resolving into exactly one payment, taken once
// from the paying customer's balance (held at intake, settled on
// confirmation).
//
// It runs the real intake handler, pipeline, worker, in-memory store and mock
// node under a manual clock, so the story is the same on every run.
package main
