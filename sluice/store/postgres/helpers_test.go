package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store/storetest"
)

// freshPool returns a pool whose connections live in a new, migrated schema
// of their own, dropped when the test ends: every test starts from an empty
// database without needing a database per test.
func freshPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := emptyPool(t)
	if err := Migrate(context.Background(), pool); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return pool
}

// emptyPool is freshPool before any migration: a new, empty schema.
func emptyPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	url := storetest.DatabaseURL(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "sluice_test_" + hex.EncodeToString(b[:])

	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("parse DATABASE_URL: %v", err)
	}
	admin, err := pgxpool.NewWithConfig(ctx, cfg.Copy())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		admin.Close()
		t.Fatalf("create schema: %v", err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 40
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		admin.Close()
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		pool.Close()
		if _, err := admin.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		admin.Close()
	})
	return pool
}

// payer pays for the operations this package's own tests insert (newOp);
// newStore credits it with funds for all of them.
const (
	payer      sluice.CustomerID = "pg-test-payer"
	payerFunds money.Amount      = 1_000_000_000_000
)

// newStore is a migrated store on the suite's manual clock, empty but for
// payer's account.
func newStore(t *testing.T, clock sluice.Clock, lease time.Duration) *Store {
	t.Helper()
	s := New(freshPool(t), Options{Lease: lease, Clock: clock})
	fund(t, s)
	return s
}

// fund credits payer with payerFunds.
func fund(t *testing.T, s *Store) {
	t.Helper()
	if _, _, err := s.Credit(context.Background(), sluice.Credit{Ref: "pg-test:fund", Customer: payer, Amount: payerFunds}); err != nil {
		t.Fatalf("fund: %v", err)
	}
}

// TestConformance runs the Store contract, the same one store.Memory passes,
// each subtest on a new, empty schema.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock sluice.Clock, lease time.Duration) sluice.Store {
		return New(freshPool(t), Options{Lease: lease, Clock: clock})
	})
}
