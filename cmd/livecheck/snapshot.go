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
// The terminal states come from sluice.State.Terminal, the one source: a
// list written out here missed review once.
func openOps(ctx context.Context, pool *pgxpool.Pool) (open, total int, err error) {
	var terminal []string
	for _, s := range sluice.States {
		if s.Terminal() {
			terminal = append(terminal, s.String())
		}
	}
	err = pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state::text <> ALL($1)), count(*) FROM operations`, terminal).Scan(&open, &total)
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
