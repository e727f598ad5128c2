// Package storetest is the conformance suite for sluice.Store. Every Store
// (the in-memory one, the PostgreSQL one) runs the same Run, so that the
// pipeline and the simulator cannot tell them apart: the simulator's verdicts
// about Memory hold for PostgreSQL only as far as this suite says they behave
// alike.
//
// The suite speaks to the store only through the sluice.Store interface. It
// compares times with time.Equal and byte slices by content (nil and empty
// alike), so a store that round-trips values through a database passes as
// long as it keeps their meaning. It requires event sequence numbers to be
// strictly increasing, not contiguous, since a database sequence may skip.
//
// Every subtest starts by crediting one fixture customer, who pays for the
// operations the suite's fixtures insert; the ledger's own tests use
// customers of their own. A refused call must change nothing: not the row,
// its log, its hold, nor its customer's account, each of which is compared
// before and after. Nothing a caller holds reaches into a store, Evidence
// and Decision pointers included.
package storetest
