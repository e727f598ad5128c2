// Package sim is a deterministic discrete-event kernel: virtual time,
// processes as coroutines, and one choice interface through which every
// nondeterministic decision passes. It knows nothing about withdrawals.
//
// # Seeds and the choice tape
//
// A run is a pure function of (world, choice tape). Every decision — which
// runnable process steps next, whether a fault fires at this yield point,
// how long a pause lasts — is a call to Sim.Choose or Sim.Chance, and its
// (kind, number of alternatives, pick) is appended to the tape. A Strategy
// supplies the picks: Random draws them from a PCG stream seeded by the
// seed; Replay reads them back from a recorded tape and reports a
// *Divergence at the first question the run asks differently. Data that is
// not a scheduling decision (amounts, ids) should come from a separate
// stream fixed by the seed, so that other strategies do not branch on it.
//
// # Processes and yield points
//
// Spawn runs a function as a coroutine (iter.Pull); exactly one process runs
// at a time, and it gives up control only at Proc.Yield and Proc.Sleep. The
// code under test never yields by itself: the world wraps its dependencies
// so that every call has a yield point before and after it.
//
// Virtual time moves only when no process is runnable at the current
// instant: the clock jumps to the next timer.
//
// # Faults
//
// Proc.Crash kills a process at a yield point as kill -9 would: it unwinds,
// and every world call made while it unwinds fails at once (wrappers call
// Proc.ExitIfDead first). A pause is a Sleep chosen by the world; the process
// wakes as a zombie if its leases expired meanwhile. A panic in simulated
// code becomes a *PanicError failure, never a crashed explorer. A run that
// does not settle within Options.StepsMax fails with ErrBudget, which worlds
// report as liveness. Worlds run a safety phase with faults, then heal and
// run a liveness phase.
//
// # Traces
//
// With Options.Tracing, one-line events are recorded alongside the tape and a
// Trace can be written as JSON Lines; ReadTrace refuses truncated, corrupted
// or foreign files with a clear error. Exploration runs without tracing and
// re-runs a failing seed with it, which determinism makes exact.
package sim
