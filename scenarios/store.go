package scenarios

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/postgres"
	"sluicesim/sluice/tron"
)

// Store is what a world needs of its store: the contract the core runs on,
// and the views the world reads as a watcher from outside (directly, never
// through a yield point): the whole store for the checkers, how many
// operations are still open, the newest event, a txid's owner.
type Store interface {
	sluice.Store
	Snapshot() store.Snapshot
	Open() int
	LastSeq() int64
	TxidOwner(tron.Txid) (sluice.OperationID, bool)
}

// StoreFactory makes a fresh, empty store for one run, on the run's clock
// (the simulation's), and a function that disposes of it after the run.
type StoreFactory func(clock sluice.Clock, lease time.Duration) (Store, func(), error)

// MemoryStores is the default: a store.Memory per run.
func MemoryStores(clock sluice.Clock, lease time.Duration) (Store, func(), error) {
	return store.NewMemory(clock, lease), func() {}, nil
}

// PostgresStores runs each world against the real PostgreSQL store at url:
// a fresh schema per run, migrated, reached through one connection (the
// scheduler is single-threaded: one call at a time), its clock the world's
// virtual clock through the store's injection, dropped after the run.
func PostgresStores(url string) (StoreFactory, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("-store postgres: DATABASE_URL: %w", err)
	}
	return func(clock sluice.Clock, lease time.Duration) (Store, func(), error) {
		ctx := context.Background()
		// A random schema name, because parallel seeds and concurrent test
		// processes share the database; the name never reaches a trace, so
		// the run stays a pure function of (world, tape).
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, nil, err
		}
		schema := "sluicesim_run_" + hex.EncodeToString(b[:])
		admin, err := pgx.ConnectConfig(ctx, cfg.ConnConfig.Copy())
		if err != nil {
			return nil, nil, fmt.Errorf("postgres: connect: %w", err)
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
			return nil, nil, fmt.Errorf("postgres: create schema: %w", err)
		}
		drop := func() {
			if c, err := pgx.ConnectConfig(context.Background(), cfg.ConnConfig.Copy()); err == nil {
				c.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
				c.Close(context.Background())
			}
		}
		pc := cfg.Copy()
		pc.ConnConfig.RuntimeParams["search_path"] = schema
		pc.MaxConns, pc.MinConns = 1, 1
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			drop()
			return nil, nil, fmt.Errorf("postgres: pool: %w", err)
		}
		if err := postgres.Migrate(ctx, pool); err != nil {
			pool.Close()
			drop()
			return nil, nil, fmt.Errorf("postgres: migrate: %w", err)
		}
		s := &pgStore{Store: postgres.New(pool, postgres.Options{Lease: lease, Clock: clock}), pool: pool}
		return s, func() { pool.Close(); drop() }, nil
	}, nil
}

// pgStore adds the world's watcher views to the PostgreSQL store. A query
// that fails here is the database gone: the run cannot be judged, so it
// panics, and the simulator turns the panic into a failure of the run.
type pgStore struct {
	*postgres.Store
	pool *pgxpool.Pool
}

func (s *pgStore) must(err error, what string) {
	if err != nil {
		panic(fmt.Sprintf("postgres store, %s: %v", what, err))
	}
}

// Snapshot reads every row (insertion order) and every event (Seq order)
// with the store's own readers.
func (s *pgStore) Snapshot() store.Snapshot {
	ctx := context.Background()
	rows, err := s.pool.Query(ctx, `SELECT id::text FROM operations ORDER BY seq`)
	s.must(err, "snapshot")
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	s.must(err, "snapshot")
	var snap store.Snapshot
	for _, id := range ids {
		op, err := s.Get(ctx, sluice.OperationID(id))
		s.must(err, "snapshot")
		evs, err := s.Events(ctx, sluice.OperationID(id))
		s.must(err, "snapshot")
		snap.Operations = append(snap.Operations, op)
		snap.Events = append(snap.Events, evs...)
	}
	slices.SortFunc(snap.Events, func(a, b sluice.Event) int { return int(a.Seq - b.Seq) })
	// The ledger, with the store's own readers: every hold (operation
	// order), every account (customer order) and every credit (ref order,
	// the store keeps no other).
	for _, op := range snap.Operations {
		h, err := s.Hold(ctx, op.ID)
		if errors.Is(err, sluice.ErrNotFound) {
			continue // the model reports a row without a hold
		}
		s.must(err, "snapshot hold")
		snap.Holds = append(snap.Holds, h)
	}
	rows, err = s.pool.Query(ctx, `SELECT customer::text FROM accounts ORDER BY customer`)
	s.must(err, "snapshot accounts")
	customers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	s.must(err, "snapshot accounts")
	for _, c := range customers {
		a, err := s.Account(ctx, sluice.CustomerID(c))
		s.must(err, "snapshot account")
		snap.Accounts = append(snap.Accounts, a)
	}
	rows, err = s.pool.Query(ctx, `SELECT ref, customer::text, amount::text FROM credits ORDER BY ref`)
	s.must(err, "snapshot credits")
	for rows.Next() {
		var ref, c, amount string
		s.must(rows.Scan(&ref, &c, &amount), "snapshot credit")
		n, err := strconv.ParseUint(amount, 10, 64)
		s.must(err, "snapshot credit amount")
		snap.Credits = append(snap.Credits, sluice.Credit{Ref: ref, Customer: sluice.CustomerID(c), Amount: money.Amount(n)})
	}
	s.must(rows.Err(), "snapshot credits")
	return snap
}

func (s *pgStore) Open() int {
	var n int
	s.must(s.pool.QueryRow(context.Background(),
		`SELECT count(*) FROM operations WHERE NOT (state::text = ANY($1))`, terminalStates).Scan(&n), "open")
	return n
}

// terminalStates are sluice's, named as the schema's enum names them: read
// from the Go table, so this query cannot drift from it.
var terminalStates = func() []string {
	var out []string
	for _, st := range sluice.States {
		if st.Terminal() {
			out = append(out, st.String())
		}
	}
	return out
}()

func (s *pgStore) LastSeq() int64 {
	var n int64
	s.must(s.pool.QueryRow(context.Background(), `SELECT coalesce(max(seq), 0) FROM events`).Scan(&n), "last seq")
	return n
}

func (s *pgStore) TxidOwner(t tron.Txid) (sluice.OperationID, bool) {
	var id string
	err := s.pool.QueryRow(context.Background(), `SELECT operation_id::text FROM txid_owners WHERE txid = $1`, t[:]).Scan(&id)
	if err == pgx.ErrNoRows {
		return "", false
	}
	s.must(err, "txid owner")
	return sluice.OperationID(id), true
}
