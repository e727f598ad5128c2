package sluice

import "time"

// Clock is a source of time. sluice never reads the real clock itself: the
// real service passes a wall clock, the simulator a virtual one.
//
// A worker's Clock is only ever used for the raw_data timestamp, which no
// safety decision rests on; it may be skewed or jump. Leases are judged by
// the store's clock, and proof of death by solid chain time.
type Clock interface {
	Now() time.Time
}

// Rand is the random source for jitter: satisfied by *math/rand/v2.Rand with
// a seeded source. Never a global random function.
type Rand interface {
	Int64N(n int64) int64
}
