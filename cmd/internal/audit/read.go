package audit

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/sluice"
	"sluicesim/sluice/store/postgres"
	"sluicesim/sluice/tron"
)

// readAttempts bounds the reads of one operation that keeps changing under
// them. A worker writes an operation a few times a minute; twenty changes
// within one read's few milliseconds is a store that never settles.
const readAttempts = 20

// ReadStore reads every row (insertion order) and the whole event log (Seq
// order). The ids come from plain SQL; each row and its events are decoded
// by the store's own readers (Get, Events), which keep the column encoding
// in one place.
//
// It is safe against a database in use: each operation's row and log are of
// one moment (see readOperation), and the number of events read is checked
// against counts taken before and after, so that no event escapes the read
// while new ones may arrive: every event committed before the first count
// belongs to a row the id list holds, and none read can be missing from the
// second.
func ReadStore(ctx context.Context, pool *pgxpool.Pool) ([]sluice.Operation, []sluice.Event, error) {
	var before, after int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&before); err != nil {
		return nil, nil, err
	}
	rows, err := pool.Query(ctx, `SELECT id::text FROM operations ORDER BY seq`)
	if err != nil {
		return nil, nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, nil, err
	}
	st := postgres.New(pool, postgres.Options{Lease: time.Second}) // reads only: the lease is never used
	ops := make([]sluice.Operation, 0, len(ids))
	var events []sluice.Event
	for _, id := range ids {
		op, evs, err := readOperation(ctx, st, sluice.OperationID(id))
		if err != nil {
			return nil, nil, err
		}
		ops = append(ops, op)
		events = append(events, evs...)
	}
	slices.SortFunc(events, func(a, b sluice.Event) int { return int(a.Seq - b.Seq) })
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&after); err != nil {
		return nil, nil, err
	}
	if len(events) < before || len(events) > after {
		return nil, nil, fmt.Errorf("the event log had %d rows before the read and %d after, but the operations' logs add up to %d", before, after, len(events))
	}
	return ops, events, nil
}

// readOperation reads one row and its log as of one moment: the row, its
// log, the row again, until the two reads of the row agree. Every event is
// written in the transaction that changes its row (its state, updated_at and
// lease), so a row unchanged across the read of its log means that no event
// was appended meanwhile: the log is the one that led to this row, and if it
// does not replay to it, the store is wrong, not the read.
func readOperation(ctx context.Context, st rowReader, id sluice.OperationID) (sluice.Operation, []sluice.Event, error) {
	op, err := st.Get(ctx, id)
	if err != nil {
		return sluice.Operation{}, nil, err
	}
	for range readAttempts {
		evs, err := st.Events(ctx, id)
		if err != nil {
			return sluice.Operation{}, nil, err
		}
		again, err := st.Get(ctx, id)
		if err != nil {
			return sluice.Operation{}, nil, err
		}
		if sameVersion(op, again) {
			return again, evs, nil
		}
		op = again
	}
	return sluice.Operation{}, nil, fmt.Errorf("operation %s changed under each of %d reads", id, readAttempts)
}

// rowReader is the part of the store readOperation uses.
type rowReader interface {
	Get(ctx context.Context, id sluice.OperationID) (sluice.Operation, error)
	Events(ctx context.Context, id sluice.OperationID) ([]sluice.Event, error)
}

// sameVersion reports whether two reads of a row saw the same version of it
// as far as its log is concerned. A claim changes the token and the lease
// without an event; that is a change too, read again.
func sameVersion(a, b sluice.Operation) bool {
	return a.State == b.State && a.Token == b.Token && a.Envelope.Txid == b.Envelope.Txid &&
		a.UpdatedAt.Equal(b.UpdatedAt) && a.LeaseUntil.Equal(b.LeaseUntil) && a.ClaimedBy == b.ClaimedBy
}

// lateOwners asks the database which of txids an operation owns now
// (txid_owners, written in the same transaction as the envelope). Asked
// after the chain was read, about txids no operation owned at the read: one
// owned now was written ahead after the read, by an operation then in
// flight.
func lateOwners(ctx context.Context, pool *pgxpool.Pool, txids []tron.Txid) (map[tron.Txid]bool, error) {
	out := make(map[tron.Txid]bool)
	if len(txids) == 0 {
		return out, nil
	}
	arg := make([][]byte, len(txids))
	for i, t := range txids {
		arg[i] = t[:]
	}
	rows, err := pool.Query(ctx, `SELECT txid FROM txid_owners WHERE txid = ANY($1::bytea[])`, arg)
	if err != nil {
		return nil, err
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, err
	}
	for _, b := range got {
		if len(b) != len(tron.Txid{}) {
			return nil, fmt.Errorf("txid_owners holds a txid of %d bytes", len(b))
		}
		out[tron.Txid(b)] = true
	}
	return out, nil
}
