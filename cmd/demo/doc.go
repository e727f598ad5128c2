// Command demo tells the ninety-second story: a duplicate POST, a worker
// killed right after its write-ahead, and a node that accepts a transaction
// and then times out, all resolving into exactly one payment.
//
// It runs the real intake handler, pipeline, worker, in-memory store and mock
// node under a manual clock, so the story is the same on every run.
package main
