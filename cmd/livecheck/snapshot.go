package main

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/cmd/internal/audit"
	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
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

// rowCounts counts the rows stored and the confirmed ones.
func rowCounts(ctx context.Context, pool *pgxpool.Pool) (rows, confirmed int, err error) {
	err = pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state::text = $1) FROM operations`, sluice.Confirmed.String()).Scan(&rows, &confirmed)
	return rows, confirmed, err
}

// snapshot is the audit's snapshot of the database, its ledger and the
// chain (audit.Snapshot) with what only the live check knows: the clients'
// posts and reads, the heal point, the end and the liveness budget, and the
// credits the API process made at its start (-fund).
//
// Those credits, and the depositor's (lates, placed as depositor says), are
// the deposits funds judges the accounts by: the live check's own record
// of what it put in, as the simulator's world keeps its
// own, rather than the store's credits table, so that a credit the store
// made up or lost shows. They go in only with the ledger (nil: not read):
// deposits without accounts and holds would read as a ledger that lost
// every account.
func snapshot(ops []sluice.Operation, events []sluice.Event, ledger *audit.Ledger, truth nodehttp.Truth, h *history, credits []sluice.Credit, lates []model.LateDeposit, healed, end time.Time, budget time.Duration) *model.Snapshot {
	s := audit.Snapshot(ops, events, truth, ledger)
	s.Intake, s.Reads = h.intake, h.reads
	s.Healed, s.End, s.LivenessBudget = healed, end, budget
	if ledger != nil {
		s.Deposits, s.LateDeposits = credits, lates
	}
	return s
}

// refusedTxids counts the transactions the node refused with the injected
// fault f: SERVER_BUSY (the node process's -mock-drop-every) or
// BANDWITH_ERROR (its -mock-short-every); no other fault is injected live.
func refusedTxids(wire []mocknode.WireAttempt, f mocknode.Fault) int {
	seen := map[tron.Txid]bool{}
	for _, a := range wire {
		if a.Fault == f && a.Fired {
			seen[a.Txid] = true
		}
	}
	return len(seen)
}

// provenDead counts the events filed with a proof of death.
func provenDead(events []sluice.Event) int {
	n := 0
	for _, e := range events {
		if e.Evidence != nil {
			n++
		}
	}
	return n
}
