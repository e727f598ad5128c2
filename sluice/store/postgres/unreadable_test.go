package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/sluice"
	"sluicesim/sluice/store/storetest"
)

// Goal: a store call that meets a row it cannot read fails, and gives its
// connection back to the pool, whatever made the row unreadable: an amount
// past uint64 written by hand, or a state that a newer version added
// during a rolling upgrade (the old binary keeps running beside the new
// one, and its metrics scrape the census all the while). A call that kept
// its connection would, after as many calls as the pool has connections,
// leave every store call (intake, workers, operators) waiting for one.
// (Independent bug 116 returned from Claim, and 120 from Census, without
// closing the rows.) Method: one row made unreadable with the triggers
// off; then, for each call that reads it, more calls than the pool's
// connections, each of which must fail at once (the lease run out between
// claims, so that each takes the row again); and a plain read must still
// get a connection after them.
func TestReadsOfAnUnreadableRowFreeTheirConnections(t *testing.T) {
	corruptions := []struct {
		name string
		ddl  string // run first, on its own (a new enum value is usable once committed)
		dml  string // with the triggers off; $1 is the row's id
	}{
		{"an amount past uint64", "", `UPDATE operations SET amount = 1e30 WHERE id = $1`},
		{"a state a newer version added", `ALTER TYPE op_state ADD VALUE 'held_for_kyc'`, `UPDATE operations SET state = 'held_for_kyc' WHERE id = $1`},
	}
	readers := []struct {
		name string
		call func(ctx context.Context, s *Store) error
		// meets reports whether the call reads the part of the row the
		// corruption broke (a census reads states, not amounts).
		meets func(corruption int) bool
	}{
		{"claim", func(ctx context.Context, s *Store) error {
			_, err := s.Claim(ctx, "w1", 10)
			return err
		}, func(int) bool { return true }},
		{"list", func(ctx context.Context, s *Store) error {
			_, err := s.List(ctx, sluice.ListFilter{Limit: 10})
			return err
		}, func(int) bool { return true }},
		{"get", func(ctx context.Context, s *Store) error {
			_, err := s.Get(ctx, opID(1))
			return err
		}, func(int) bool { return true }},
		{"census", func(ctx context.Context, s *Store) error {
			_, err := s.Census(ctx)
			return err
		}, func(c int) bool { return c == 1 }},
	}
	for ci, c := range corruptions {
		for _, r := range readers {
			t.Run(c.name+"/"+r.name, func(t *testing.T) {
				s, clock, lease := unreadableRowStore(t, c.ddl, c.dml)
				ctx := context.Background()
				conns := int(s.pool.Config().MaxConns)
				for i := 0; i < conns+5; i++ {
					cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					err := r.call(cctx, s)
					cancel()
					switch {
					case errors.Is(err, context.DeadlineExceeded):
						t.Fatalf("%s %d of %d (a pool of %d connections) waited 5 s for a connection: the earlier calls that met the unreadable row kept theirs", r.name, i+1, conns+5, conns)
					case err == nil && r.meets(ci):
						t.Fatalf("%s %d: no error, for a row with %s", r.name, i+1, c.name)
					case err != nil && !r.meets(ci):
						t.Fatalf("%s %d: %v, though it does not read what %s broke", r.name, i+1, err, c.name)
					}
					clock.Advance(2 * lease) // a lease a failed claim took runs out
				}
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				if _, err := s.Account(cctx, payer); err != nil {
					t.Fatalf("a read after the calls: %v", err)
				}
			})
		}
	}
}

// unreadableRowStore is a store on a pool of its own, of four connections,
// holding one row (opID(1)) made unreadable by ddl and dml. The pool is not
// closed after a failed test: Close waits for every connection to come
// back, and a kept one never does. Its sessions are ended instead, so that
// the schema can be dropped.
func unreadableRowStore(t *testing.T, ddl, dml string) (*Store, *storetest.Clock, time.Duration) {
	t.Helper()
	ctx := context.Background()
	clock := &storetest.Clock{}
	lease := time.Minute
	base := freshPool(t)
	app := fmt.Sprintf("sluice-unreadable-row-%p", t)
	cfg := base.Config().Copy()
	cfg.MaxConns = 4
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			pool.Close()
			return
		}
		if _, err := base.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app); err != nil {
			t.Errorf("end the kept sessions: %v", err)
		}
	})
	s := New(pool, Options{Lease: lease, Clock: clock})
	fund(t, s)
	mustInsert(t, s, 1)
	if ddl != "" {
		if _, err := s.pool.Exec(ctx, ddl); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The immutability and transition triggers refuse such writes: off for
	// this one hand-made write, as a careless repair script would have it.
	if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, dml, string(opID(1))); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return s, clock, lease
}
