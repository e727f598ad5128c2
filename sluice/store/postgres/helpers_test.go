package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/sluice"
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

// newStore is a migrated, empty store on the suite's manual clock.
func newStore(t *testing.T, clock sluice.Clock, lease time.Duration) *Store {
	t.Helper()
	return New(freshPool(t), Options{Lease: lease, Clock: clock})
}

// TestConformance runs the Store contract, the same one store.Memory passes.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock sluice.Clock, lease time.Duration) sluice.Store {
		return newStore(t, clock, lease)
	})
}
