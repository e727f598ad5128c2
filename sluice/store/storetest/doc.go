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
package storetest
