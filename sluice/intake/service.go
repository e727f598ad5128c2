package intake

import (
	"context"
	"errors"
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
// The store's Insert also holds the amount from the customer's balance in
// the same atomic step; when the balance (or the account) falls short it
// creates nothing and returns sluice.ErrInsufficientFunds, which Submit
// passes on: the id stays unused, so the same submission may be sent again
// once the customer is funded. An existing id never reaches that check (its
// row is returned, and judged by its hash as above), so a replay is never
// refused for funds that the original's own hold took.
//
// Errors: a *ValidationError (errors.Is ErrInvalid) before the store is
// touched; sluice.ErrInsufficientFunds; sluice.ErrPayloadMismatch; store
// failures, wrapped.
func (s *Service) Submit(ctx context.Context, sub Submission) (Result, error) {
	res, _, err := s.submit(ctx, sub)
	return res, err
}

// submit is Submit, also returning the base58 form of the recipient of
// res.Operation when the submission spelled it ("" otherwise): the
// submission's own to_address, which Normalize has proven canonical, so
// that the answer need not encode the address again.
func (s *Service) submit(ctx context.Context, sub Submission) (res Result, to string, err error) {
	op, err := Normalize(sub)
	if err != nil {
		return Result{}, "", err
	}
	row, created, err := s.Store.Insert(ctx, op)
	if err != nil {
		return Result{}, "", fmt.Errorf("intake: %w", err)
	}
	if row.Request.To == op.Request.To {
		to = sub.ToAddress
	}
	if created {
		return Result{Operation: row, Created: true}, to, nil
	}
	if row.RequestHash != op.RequestHash {
		// The original's payload is not returned: it belongs to whoever
		// created it, not necessarily to this caller.
		return Result{}, "", fmt.Errorf("intake: operation %s: %w", op.ID, sluice.ErrPayloadMismatch)
	}
	return Result{Operation: row, Created: false}, to, nil
}

// Lookup reads an operation and its event log, as one instant of it: the
// history shown ends with the event that left the row as it is shown. A
// malformed id is a *ValidationError; an unknown one is sluice.ErrNotFound
// (wrapped); ErrBusy when no read matched.
//
// The row and the log are two reads, not one snapshot (the Store has no
// snapshot read). A transition committed between them would show a history
// past the state: a client acting on the pair would act on a moment that
// never existed. So Lookup reads the row first, then the log, and cuts the
// log after the row's own event: the one that entered the row's state with
// the row's txid, the newest such. A worker's transitions enter each pair
// once (a txid is built once and passes each state at most once; the states
// before the first build occur once); only an operator's retry, which
// enters the state it leaves (Resolve with To == From), repeats one, and it
// changes no field an answer shows (state, txid, builds, reason), so a row
// read before a retry and the log cut after it are the operation as it was
// after the retry. The log, read second, always holds the pair. Should
// it be missing (a store that broke its contract), Lookup reads both again,
// lookupReadsMax times in all, before giving up.
func (s *Service) Lookup(ctx context.Context, id string) (sluice.Operation, []sluice.Event, error) {
	op, events, opID, err := s.lookup(ctx, id)
	if _, busy := err.(noMatch); busy {
		return sluice.Operation{}, nil, fmt.Errorf("intake: operation %s: no log read matched its row in %d reads: %w", opID, lookupReadsMax, ErrBusy)
	}
	if err != nil && opID != "" { // the store's
		return sluice.Operation{}, nil, fmt.Errorf("intake: %w", err)
	}
	return op, events, err
}

// lookup is Lookup with its errors as they come: ParseOperationID's
// refusal (with opID ""), the store's error, or noMatch. The handler needs
// only their kind, and a client's read of an operation that does not exist
// yet (a common one: clients read while they post) would otherwise pay for
// a wrapped error it never sees.
func (s *Service) lookup(ctx context.Context, id string) (op sluice.Operation, events []sluice.Event, opID sluice.OperationID, err error) {
	opID, err = ParseOperationID(id)
	if err != nil {
		return sluice.Operation{}, nil, "", err
	}
	for range lookupReadsMax {
		row, err := s.Store.Get(ctx, opID)
		if err != nil {
			return sluice.Operation{}, nil, opID, err
		}
		events, err := s.Store.Events(ctx, opID)
		if err != nil {
			return sluice.Operation{}, nil, opID, err
		}
		for k := len(events) - 1; k >= 0; k-- {
			if events[k].To == row.State && events[k].Txid == row.Envelope.Txid {
				return row, events[:k+1], opID, nil
			}
		}
	}
	return sluice.Operation{}, nil, opID, noMatch{}
}

// noMatch is lookup's ErrBusy: no log read matched the row. It is ErrBusy
// to errors.Is, and of a type no store can return, so that Lookup can tell
// it from a store's error without relying on what a store wraps.
type noMatch struct{}

func (noMatch) Error() string        { return ErrBusy.Error() }
func (noMatch) Is(target error) bool { return target == ErrBusy }

// lookupReadsMax bounds Lookup's re-reads of a row whose log lacks its
// event, which only a store breaking its contract (or a replica lagging
// behind the primary) produces.
const lookupReadsMax = 3

// ErrBusy is returned when the operation's row and log never agreed; retry
// shortly.
var ErrBusy = errors.New("operation's row and log disagree; retry")
