package sluice

import (
	"context"
	"errors"
	"time"
)

// Worker claims operations and drives each through its handlers. It is
// deliberately boring: all the judgement lives in the Pipeline, and all
// concurrency control in the Store's claim, lease and fencing token.
//
// A Worker is sequential. The real service runs several worker processes (or
// goroutines, each with its own Worker) against one database; the simulator
// runs several as coroutines.
type Worker struct {
	ID       WorkerID
	Pipeline *Pipeline
	Rand     Rand
	// Observer, if set, hears every step (logs, metrics).
	Observer Observer
}

// Observer hears what a worker does, for logs and metrics. It is called
// synchronously on the worker's own goroutine after each step, so it must
// not block and must not call back into the worker or its store.
type Observer interface {
	Observe(Observation)
}

// Observation is one handler step as the worker saw it.
type Observation struct {
	Worker WorkerID
	Before Operation // the row the step started from
	After  Operation // the row after it (Before when nothing was written)
	Why    string    // what the step saw or did
	Wait   time.Duration
	// Park is the operational reason when the step parked the operation
	// (or, past the park bounds, sent it to review).
	Park     string
	Decision *Decision // the stuck policy's, when asked
	// Err is the step's error: ErrFenced (wrapped) for a zombie write, or
	// a store failure.
	Err error
}

// TickReport says what one Tick did.
type TickReport struct {
	Claimed int // operations claimed
	Steps   int // handler steps taken
	// Fenced is set when a write matched nothing. The worker stopped dead at
	// that write and touched nothing else of its batch: a fenced worker is a
	// zombie whose claims may all have been taken over.
	Fenced bool
}

// Tick claims one batch and works it. A store failure other than fencing is
// returned; the caller should back off and tick again. Illegal transitions
// and txid collisions are bugs and come back as errors too, never silently.
func (w *Worker) Tick(ctx context.Context) (TickReport, error) {
	var rep TickReport
	cfg := w.Pipeline.Config
	ops, err := w.Pipeline.Store.Claim(ctx, w.ID, cfg.ClaimBatch)
	if err != nil {
		return rep, err
	}
	rep.Claimed = len(ops)
	for _, op := range ops {
		steps, err := w.drive(ctx, op)
		rep.Steps += steps
		if errors.Is(err, ErrFenced) {
			rep.Fenced = true
			return rep, nil
		}
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// drive takes op through as many handler steps as it can now, bounded by
// StepsPerClaimMax. When a handler asks to wait, the lease is released with a
// jittered delay so that the next look happens later instead of the node
// being polled in a loop.
func (w *Worker) drive(ctx context.Context, op Operation) (int, error) {
	cfg := w.Pipeline.Config
	for steps := 0; steps < cfg.StepsPerClaimMax; steps++ {
		if op.State.Terminal() {
			// Entering a terminal state cleared the lease in the same write.
			return steps, nil
		}
		before := op
		out, err := w.Pipeline.Step(ctx, w.ID, op)
		if err == nil && out.Park != "" {
			// Parked (the lease is given up) or sent to review.
			parked, perr := w.Pipeline.Park(ctx, w.ID, out.Op, out.Park, w.jitter)
			parked.Decision = out.Decision
			out, err = parked, perr
		}
		w.observe(before, out, err)
		if err != nil || out.Park != "" {
			return steps + 1, err
		}
		op = out.Op
		if out.Wait > 0 {
			return steps + 1, w.release(ctx, op, out.Wait)
		}
	}
	if op.State.Terminal() {
		return cfg.StepsPerClaimMax, nil
	}
	// Step budget spent on a row that keeps moving: hand it back at once so
	// the batch's other operations and other workers get their turn.
	return cfg.StepsPerClaimMax, w.release(ctx, op, 0)
}

func (w *Worker) observe(before Operation, out Outcome, err error) {
	if w.Observer == nil {
		return
	}
	after := out.Op
	if after.ID == "" {
		after = before
	}
	w.Observer.Observe(Observation{Worker: w.ID, Before: before, After: after, Why: out.Why,
		Wait: out.Wait, Park: out.Park, Decision: out.Decision, Err: err})
}

func (w *Worker) release(ctx context.Context, op Operation, wait time.Duration) error {
	return w.Pipeline.Store.Release(ctx, op.ID, op.Token, w.jitter(wait))
}

// jitter adds up to half of d at random, so retries of many operations spread
// out rather than arriving together.
func (w *Worker) jitter(d time.Duration) time.Duration {
	if d <= 0 || w.Rand == nil {
		return d
	}
	return d + time.Duration(w.Rand.Int64N(int64(d)/2+1))
}
