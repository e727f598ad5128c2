package intake

import (
	"context"
	"fmt"

	"sluicesim/sluice"
)

// Service is intake over a Store. It holds no state of its own, so any
// number of goroutines may share one; every decision rests on the store's
// atomic Insert.
type Service struct {
	Store sluice.Store
}

// Result is the outcome of an accepted submission.
type Result struct {
	// Operation is the row as it is now: on a replay it may have moved on
	// from requested, and the client is told where it stands.
	Operation sluice.Operation
	// Created is true for the one call that inserted the row, false for a
	// replay of the same payload.
	Created bool
}

// Submit validates a submission and inserts it idempotently.
//
// Concurrent identical submissions collapse into one row because the store's
// Insert creates at most one row per id and tells exactly one caller it did.
// A submission whose id exists is then judged by its request hash: equal is
// an honest retry (the current row, Created false); different is a client
// reusing an id for another withdrawal, refused with ErrPayloadMismatch and
// the original left untouched. Returning the stored row without this check
// would tell the second client its withdrawal was accepted when a different
// one is being paid.
//
// Errors: a *ValidationError (errors.Is ErrInvalid) before the store is
// touched; sluice.ErrPayloadMismatch; store failures, wrapped.
func (s *Service) Submit(ctx context.Context, sub Submission) (Result, error) {
	op, err := Normalize(sub)
	if err != nil {
		return Result{}, err
	}
	row, created, err := s.Store.Insert(ctx, op)
	if err != nil {
		return Result{}, fmt.Errorf("intake: %w", err)
	}
	if created {
		return Result{Operation: row, Created: true}, nil
	}
	if row.RequestHash != op.RequestHash {
		// The original's payload is not returned: it belongs to whoever
		// created it, not necessarily to this caller.
		return Result{}, fmt.Errorf("intake: operation %s: %w", op.ID, sluice.ErrPayloadMismatch)
	}
	return Result{Operation: row, Created: false}, nil
}

// Lookup reads an operation and its event log. A malformed id is a
// *ValidationError; an unknown one is sluice.ErrNotFound (wrapped).
//
// The row and the log are two reads, not one snapshot (the Store has no
// snapshot read), and the log is read second: it may hold a transition
// committed after the row was read, never lack one the row shows.
func (s *Service) Lookup(ctx context.Context, id string) (sluice.Operation, []sluice.Event, error) {
	opID, err := ParseOperationID(id)
	if err != nil {
		return sluice.Operation{}, nil, err
	}
	row, err := s.Store.Get(ctx, opID)
	if err != nil {
		return sluice.Operation{}, nil, fmt.Errorf("intake: %w", err)
	}
	events, err := s.Store.Events(ctx, opID)
	if err != nil {
		return sluice.Operation{}, nil, fmt.Errorf("intake: %w", err)
	}
	return row, events, nil
}
