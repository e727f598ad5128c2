package main

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/cmd/internal/audit"
	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/tron/nodehttp"
)

// openOps counts the operations that are not terminal, and all of them.
func openOps(ctx context.Context, pool *pgxpool.Pool) (open, total int, err error) {
	err = pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state NOT IN ('confirmed', 'failed', 'rejected', 'review')), count(*) FROM operations`).Scan(&open, &total)
	return open, total, err
}

// snapshot is the audit's snapshot of the database and the chain
// (audit.Snapshot) with what only the live check knows: the clients' posts
// and reads, the heal point, the end and the liveness budget.
func snapshot(ops []sluice.Operation, events []sluice.Event, truth nodehttp.Truth, h *history, healed, end time.Time, budget time.Duration) *model.Snapshot {
	s := audit.Snapshot(ops, events, truth)
	s.Intake, s.Reads = h.intake, h.reads
	s.Healed, s.End, s.LivenessBudget = healed, end, budget
	return s
}
