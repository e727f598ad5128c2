package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/store/postgres"
	"sluicesim/sluice/tron/nodehttp"
)

// openOps counts the operations that are not terminal, and all of them.
func openOps(ctx context.Context, pool *pgxpool.Pool) (open, total int, err error) {
	err = pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state NOT IN ('confirmed', 'failed', 'rejected')), count(*) FROM operations`).Scan(&open, &total)
	return open, total, err
}

// readStore reads every row (insertion order) and the whole event log (Seq
// order). The ids and counts come from plain SQL; each row and its events
// are decoded by the store's own readers (Get, Events), which keep the
// column encoding in one place. The event count is checked against SQL, so
// that no event escapes the snapshot.
func readStore(ctx context.Context, pool *pgxpool.Pool) ([]sluice.Operation, []sluice.Event, error) {
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
		op, err := st.Get(ctx, sluice.OperationID(id))
		if err != nil {
			return nil, nil, err
		}
		evs, err := st.Events(ctx, sluice.OperationID(id))
		if err != nil {
			return nil, nil, err
		}
		ops = append(ops, op)
		events = append(events, evs...)
	}
	slices.SortFunc(events, func(a, b sluice.Event) int { return int(a.Seq - b.Seq) })
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
		return nil, nil, err
	}
	if n != len(events) {
		return nil, nil, fmt.Errorf("the event log has %d rows but the operations' logs add up to %d", n, len(events))
	}
	return ops, events, nil
}

// snapshot assembles what the checkers look at.
//
// The live check cannot watch who claimed what (Claims stays nil, so
// one-writer has nothing to judge) nor every envelope stored; it hands the
// model each row's current envelope, the one a failure after a spent build
// budget retires, and the configuration `sluice serve` runs with.
func snapshot(ops []sluice.Operation, events []sluice.Event, truth nodehttp.Truth, h *history, healed, end time.Time, budget time.Duration) *model.Snapshot {
	cfg := sluice.DefaultConfig()
	var envelopes []sluice.Envelope
	for _, op := range ops {
		if !op.Envelope.Txid.IsZero() {
			envelopes = append(envelopes, op.Envelope)
		}
	}
	return &model.Snapshot{
		Envelopes:      envelopes,
		SafetyMargin:   cfg.SafetyMargin,
		BuildsMax:      cfg.BuildsMax,
		Operations:     ops,
		Events:         events,
		Wire:           truth.Wire,
		Accepted:       truth.Accepted,
		Inclusions:     truth.Inclusions,
		Blocks:         truth.Blocks,
		SolidNumber:    truth.Solid.Number,
		HotWallet:      truth.HotWallet,
		Intake:         h.intake,
		Reads:          h.reads,
		Healed:         healed,
		End:            end,
		LivenessBudget: budget,
	}
}
