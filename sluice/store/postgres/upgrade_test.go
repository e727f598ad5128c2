package postgres

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"sluicesim/sluice"
)

// Goal: a database that runs version 2 (before the review state) with a
// withdrawal in flight upgrades in place: 0003 adds the state in its own
// transaction (PostgreSQL cannot use an enum value in the transaction that
// added it), 0004 the edge and the terminal lists; afterwards the in-flight
// row can go broadcast -> review, and a review row is a brick for raw SQL.
func TestMigrateUpgradesALiveDatabase(t *testing.T) {
	pool := emptyPool(t)
	ctx := context.Background()
	ms := mustMigrations(t)
	if len(ms) < 4 || ms[1].version != 2 {
		t.Fatalf("migrations %v: want at least 4, the second version 2", len(ms))
	}
	// Version 2, applied as the Migrate of that release did.
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		for _, m := range ms[:2] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("version 2: %v", err)
	}
	const id = "00000000-0000-4000-8000-000000000001"
	if _, err := pool.Exec(ctx, rawInsertSQL, id, "1"); err != nil {
		t.Fatal(err)
	}
	for _, s := range pathTo[sluice.Broadcast] {
		if _, err := pool.Exec(ctx, `UPDATE operations SET state = $2::op_state WHERE id = $1`, id, s.String()); err != nil {
			t.Fatalf("on version 2, step to %s: %v", s, err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE operations SET state = 'review' WHERE id = $1`, id); err == nil {
		t.Fatal("on version 2 the review state exists already: this test no longer upgrades anything")
	}

	if err := Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate from version 2: %v", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE operations SET state = 'review' WHERE id = $1`, id); err != nil {
		t.Fatalf("after the upgrade, broadcast -> review: %v", err)
	}
	if _, err := pool.Exec(ctx, `UPDATE operations SET reason = 'tamper' WHERE id = $1`, id); sqlState(err) != codeIllegal {
		t.Errorf("after the upgrade, a write to a review row: err = %v, want SQLSTATE %s", err, codeIllegal)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(ms) {
		t.Errorf("schema_migrations has %d rows (%v), want %d", n, err, len(ms))
	}
}

// Goal: several processes starting at once on an empty database apply every
// migration exactly once (the session advisory lock; each migration in its
// own transaction).
func TestMigrateConcurrentFromEmpty(t *testing.T) {
	pool := emptyPool(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = Migrate(ctx, pool) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Migrate %d: %v", i, err)
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != len(mustMigrations(t)) {
		t.Errorf("schema_migrations has %d rows (%v), want %d", n, err, len(mustMigrations(t)))
	}
}
