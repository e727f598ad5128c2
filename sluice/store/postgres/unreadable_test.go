package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/sluice/store/storetest"
)

// Goal: a claim that meets a row it cannot read (an amount past uint64
// written by hand, a state a newer version added during a rolling
// upgrade) fails, and gives its connection back to the pool. A claim that
// kept it would, after as many claims as the pool has connections, leave
// every store call (intake, workers, operators) waiting for one.
// (Independent bug 116 returned without closing the rows.) Method: one
// row's amount set past uint64 with the triggers off; then more claims
// than the pool's connections, the lease run out between them so that each
// claim takes the row again; each must fail at once, and a plain read must
// still get a connection after them.
func TestClaimOfAnUnreadableRowFreesItsConnection(t *testing.T) {
	ctx := context.Background()
	clock := &storetest.Clock{}
	lease := time.Minute
	// A pool of its own, of four connections, that a failed run does not
	// close: Close waits for every connection to come back, and a kept
	// one never does. Its sessions are ended instead, so that the schema
	// can be dropped.
	base := freshPool(t)
	cfg := base.Config().Copy()
	cfg.MaxConns = 4
	cfg.ConnConfig.RuntimeParams["application_name"] = "sluice-unreadable-row-test"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			pool.Close()
			return
		}
		if _, err := base.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'sluice-unreadable-row-test'`); err != nil {
			t.Errorf("end the kept sessions: %v", err)
		}
	})
	s := New(pool, Options{Lease: lease, Clock: clock})
	fund(t, s)
	mustInsert(t, s, 1)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The immutability trigger refuses a new amount: off for this one
	// hand-made write, as a careless repair script would have it.
	if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE operations SET amount = 1e30 WHERE id = $1`, string(opID(1))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	conns := int(s.pool.Config().MaxConns)
	for i := 0; i < conns+5; i++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ops, err := s.Claim(cctx, "w1", 10)
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			t.Fatalf("claim %d of %d (a pool of %d connections) waited 5 s for a connection: the earlier claims that met the unreadable row kept theirs", i+1, conns+5, conns)
		case err == nil:
			t.Fatalf("claim %d: %d operations and no error, for a row whose amount is past uint64", i+1, len(ops))
		}
		clock.Advance(2 * lease) // the row's lease, taken by the failed claim, runs out
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := s.Account(cctx, payer); err != nil {
		t.Fatalf("a read after the claims: %v", err)
	}
}
