package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store/storetest"
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
	applyUpTo(t, pool, 2)
	const id = "00000000-0000-4000-8000-000000000001"
	if _, err := pool.Exec(ctx, legacyInsertSQL, id, "1"); err != nil {
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

// legacyInsertSQL is rawInsertSQL before version 5: no customer.
const legacyInsertSQL = `INSERT INTO operations (id, to_address, amount, asset, request_hash, state, not_before_ns, created_at_ns, updated_at_ns)
	VALUES ($1, decode(repeat('41', 21), 'hex'), $2::numeric, 'USDT-TRC20', 'h', 'requested', 0, 0, 0)`

// applyUpTo applies the migrations up to version v as the Migrate of that
// release did: each in its own transaction, with its record.
func applyUpTo(t *testing.T, pool *pgxpool.Pool, v int) {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, m := range mustMigrations(t) {
		if m.version > v {
			break
		}
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
			return err
		})
		if err != nil {
			t.Fatalf("version %d: %s: %v", v, m.name, err)
		}
	}
}

// Goal: a database that runs version 4 (before the ledger) with
// withdrawals in flight upgrades in place, and every row can still end.
// The choice for rows from before the ledger (see 0005): they all belong to
// the customer legacy:pre-0005; a row whose money already moved
// (confirmed, failed, rejected) gets no hold (Store.Hold: ErrNotFound); every
// other row (in flight or in review) gets a held hold of its amount, and
// the legacy account is credited with exactly their sum (one credit), so
// it balances with nothing to withdraw. A row already sent takes its first
// send time from its first write-ahead event, also when it was rebuilt and
// has several. Method: five rows written by raw SQL on version 4, each with
// its log (broadcast, requested, confirmed, review, and broadcast again
// after a rebuild), then Migrate; then the store finishes them: the
// broadcast rows confirm (settled), the requested one is rejected (released), the review
// is cancelled by an operator (released), and the confirmed one stays a
// brick. The legacy account balances after every step.
func TestMigrateUpgradesVersion4WithOperationsInFlight(t *testing.T) {
	pool := emptyPool(t)
	ctx := context.Background()
	applyUpTo(t, pool, 4)
	if _, err := pool.Exec(ctx, `SELECT 1 FROM accounts`); err == nil {
		t.Fatal("on version 4 the accounts table exists already: this test no longer upgrades anything")
	}
	// Row 5 was rebuilt before the upgrade: two write-aheads, and its
	// first send is the first of them, not the last (the stuck policy
	// measures waiting from it).
	rebuilt := append(slices.Clone(pathTo[sluice.Broadcast]), sluice.Signing, sluice.Signed, sluice.Broadcasting, sluice.Broadcast)
	rows := []struct {
		n      int
		amount money.Amount
		state  sluice.State
		path   []sluice.State // nil: pathTo[state]
	}{{1, 1_000_001, sluice.Broadcast, nil}, {2, 2_000_000, sluice.Requested, nil}, {3, 3_000_000, sluice.Confirmed, nil}, {4, 4_000_000, sluice.Review, nil},
		{5, 5_000_000, sluice.Broadcast, rebuilt}}
	const sentAt = 1_700_000_000_123_456_789
	for _, r := range rows {
		id := string(opID(r.n))
		if _, err := pool.Exec(ctx, legacyInsertSQL, id, strconv.FormatUint(uint64(r.amount), 10)); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO events (operation_id, to_state, token, worker, at_ns, note) VALUES ($1, 'requested', 0, '', 0, 'created')`, id); err != nil {
			t.Fatal(err)
		}
		prev := sluice.Requested
		path := r.path
		if path == nil {
			path = pathTo[r.state]
		}
		for i, st := range path {
			if _, err := pool.Exec(ctx, `UPDATE operations SET state = $2::op_state, token = 1 WHERE id = $1`, id, st.String()); err != nil {
				t.Fatalf("on version 4, %s step to %s: %v", id, st, err)
			}
			if _, err := pool.Exec(ctx, `INSERT INTO events (operation_id, from_state, to_state, token, worker, at_ns, note)
				VALUES ($1, $2::op_state, $3::op_state, 1, 'w1', $4, 'v4')`, id, prev.String(), st.String(), int64(sentAt+i)); err != nil {
				t.Fatalf("on version 4, %s event %s->%s: %v", id, prev, st, err)
			}
			prev = st
		}
	}

	if err := Migrate(ctx, pool); err != nil {
		t.Fatalf("Migrate from version 4: %v", err)
	}
	clock := &storetest.Clock{}
	s := New(pool, Options{Lease: time.Minute, Clock: clock})
	const legacy sluice.CustomerID = "legacy:pre-0005"
	want := sluice.Account{Customer: legacy, Held: 1_000_001 + 2_000_000 + 4_000_000 + 5_000_000, Deposited: 1_000_001 + 2_000_000 + 4_000_000 + 5_000_000}
	checkAccount := func(when string) {
		t.Helper()
		got, err := s.Account(ctx, legacy)
		if err != nil || got != want || !got.Balanced() {
			t.Errorf("%s: legacy account %+v (%v), want %+v", when, got, err, want)
		}
	}
	checkAccount("after the upgrade")
	if _, credited, err := s.Credit(ctx, sluice.Credit{Ref: "migration-0005:legacy", Customer: legacy, Amount: want.Deposited}); err != nil || credited {
		t.Errorf("the reconstruction's credit, replayed: credited %v, %v; want a replay (it is recorded)", credited, err)
	}
	for _, r := range rows {
		op, err := s.Get(ctx, opID(r.n))
		if err != nil {
			t.Fatal(err)
		}
		if op.Request.Customer != legacy || op.State != r.state || op.Request.Amount != r.amount {
			t.Errorf("op %d after the upgrade: customer %q state %s amount %d; want %s, %s, %d", r.n, op.Request.Customer, op.State, op.Request.Amount, legacy, r.state, r.amount)
		}
		h, err := s.Hold(ctx, op.ID)
		if r.state == sluice.Confirmed {
			if !errors.Is(err, sluice.ErrNotFound) {
				t.Errorf("op %d (confirmed before the ledger): Hold = %+v, %v; want ErrNotFound", r.n, h, err)
			}
			continue
		}
		if wantHold := (sluice.Hold{Operation: op.ID, Customer: legacy, Amount: r.amount, State: sluice.HoldHeld}); err != nil || h != wantHold {
			t.Errorf("op %d: Hold = %+v, %v; want %+v", r.n, h, err, wantHold)
		}
	}
	if op, _ := s.Get(ctx, opID(1)); !op.FirstSentAt.Equal(time.Unix(0, sentAt+3)) {
		t.Errorf("the broadcast row's FirstSentAt = %s, want its first write-ahead's time %s", op.FirstSentAt, time.Unix(0, sentAt+3).UTC())
	}
	if op, _ := s.Get(ctx, opID(5)); !op.FirstSentAt.Equal(time.Unix(0, sentAt+3)) {
		t.Errorf("the rebuilt row's FirstSentAt = %s, want its first write-ahead's time %s, not its last's", op.FirstSentAt, time.Unix(0, sentAt+3).UTC())
	}
	if op, _ := s.Get(ctx, opID(2)); !op.FirstSentAt.IsZero() {
		t.Errorf("the requested row's FirstSentAt = %s, want zero (never sent)", op.FirstSentAt)
	}

	// The store finishes them.
	claimed, err := s.Claim(ctx, "w2", 10)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("Claim after the upgrade = %d rows, %v; want the three in flight", len(claimed), err)
	}
	for _, op := range claimed {
		to, a := sluice.Confirmed, sluice.HoldSettle
		if op.State == sluice.Requested {
			to, a = sluice.Rejected, sluice.HoldRelease
		}
		if _, err := s.CAS(ctx, sluice.Change{ID: op.ID, Token: op.Token, Worker: "w2", From: op.State, To: to, Hold: a, Reason: "after the upgrade"}); err != nil {
			t.Fatalf("CAS %s->%s after the upgrade: %v", op.State, to, err)
		}
		want.Held -= op.Request.Amount
		if a == sluice.HoldSettle {
			want.Paid += op.Request.Amount
		} else {
			want.Balance += op.Request.Amount
		}
		checkAccount(fmt.Sprintf("after %s->%s", op.State, to))
	}
	if _, err := s.Resolve(ctx, sluice.Resolution{ID: opID(4), From: sluice.Review, To: sluice.Failed, Operator: "alice",
		Why: "proven dead before the upgrade", Hold: sluice.HoldRelease}); err != nil {
		t.Fatalf("cancel of the review after the upgrade: %v", err)
	}
	want.Held -= 4_000_000
	want.Balance += 4_000_000
	checkAccount("after the review's cancel")
	if _, err := s.Resolve(ctx, sluice.Resolution{ID: opID(3), From: sluice.Confirmed, To: sluice.Failed, Operator: "alice",
		Why: "no", Hold: sluice.HoldRelease}); !errors.Is(err, sluice.ErrIllegalTransition) {
		t.Errorf("a cancel of the row confirmed before the upgrade: %v, want ErrIllegalTransition", err)
	}
	checkAccount("at the end")
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
