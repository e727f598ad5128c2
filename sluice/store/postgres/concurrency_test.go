package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
)

func opID(n int) sluice.OperationID {
	return sluice.OperationID(fmt.Sprintf("00000000-0000-4000-8000-%012d", n))
}

func newOp(n int) sluice.NewOperation {
	sum := sha256.Sum256([]byte(opID(n)))
	return sluice.NewOperation{
		ID:          opID(n),
		Request:     sluice.Request{Customer: payer, To: tron.AddressFromBytes20([20]byte{0xbb, 1}), Amount: 1_000_001, Asset: sluice.Asset},
		RequestHash: hex.EncodeToString(sum[:]),
	}
}

func mustInsert(t *testing.T, s *Store, n int) {
	t.Helper()
	if _, created, err := s.Insert(context.Background(), newOp(n)); err != nil || !created {
		t.Fatalf("Insert(%d) = created %v, err %v", n, created, err)
	}
}

// Goal: concurrent claimers on separate connections never share a row.
// Method: 12 goroutines claim small batches until nothing is left, with
// time frozen so no lease lapses; every row must be claimed exactly once.
func TestClaimSkipLockedExclusive(t *testing.T) {
	const rows, workers = 120, 12
	s := newStore(t, &storetest.Clock{}, time.Minute)
	for n := 1; n <= rows; n++ {
		mustInsert(t, s, n)
	}
	var (
		mu     sync.Mutex
		owners = map[sluice.OperationID][]sluice.WorkerID{}
		wg     sync.WaitGroup
	)
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			worker := sluice.WorkerID(fmt.Sprintf("w%d", w))
			for range rows { // bounded: each round claims at least one row or stops
				ops, err := s.Claim(context.Background(), worker, 3)
				if err != nil {
					errs <- err
					return
				}
				if len(ops) == 0 {
					return
				}
				mu.Lock()
				for _, op := range ops {
					owners[op.ID] = append(owners[op.ID], worker)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Claim: %v", err)
	}
	for n := 1; n <= rows; n++ {
		if got := owners[opID(n)]; len(got) != 1 {
			t.Errorf("%s claimed by %v, want exactly one worker", opID(n), got)
		}
	}
	if ops, err := s.Claim(context.Background(), "late", rows); err != nil || len(ops) != 0 {
		t.Errorf("Claim after all are leased = %d rows, err %v; want none", len(ops), err)
	}
}

// Goal: a claim never waits on a row another transaction holds; it takes
// the next one. Method: lock the oldest row from a raw transaction and claim
// under a short deadline.
func TestClaimDoesNotBlockOnLockedRows(t *testing.T) {
	s := newStore(t, &storetest.Clock{}, time.Minute)
	mustInsert(t, s, 1)
	mustInsert(t, s, 2)
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM operations WHERE id = $1 FOR UPDATE`, string(opID(1))); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	ops, err := s.Claim(cctx, "w1", 10)
	if err != nil {
		t.Fatalf("Claim while row 1 is locked: %v (blocked?)", err)
	}
	if len(ops) != 1 || ops[0].ID != opID(2) {
		t.Errorf("Claim while row 1 is locked = %v, want only %s", ops, opID(2))
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if ops, err := s.Claim(ctx, "w2", 10); err != nil || len(ops) != 1 || ops[0].ID != opID(1) {
		t.Errorf("Claim after the lock is gone = %v, %v; want %s", ops, err, opID(1))
	}
}

// Goal: 32 identical submissions racing on separate connections make one
// row, one creation event, and exactly one "created".
func TestInsertRaceMakesOneRow(t *testing.T) {
	const racers = 32
	s := newStore(t, &storetest.Clock{}, time.Minute)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created int
		errs    []error
	)
	start := make(chan struct{})
	for range racers {
		wg.Go(func() {
			<-start
			op, c, err := s.Insert(context.Background(), newOp(1))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			if op.ID != opID(1) || op.State != sluice.Requested {
				errs = append(errs, fmt.Errorf("Insert returned %s in %s", op.ID, op.State))
			}
			if c {
				created++
			}
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		t.Errorf("Insert: %v", err)
	}
	if created != 1 {
		t.Errorf("%d of %d racing inserts said created, want exactly 1", created, racers)
	}
	var rows, events int
	if err := s.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM operations), (SELECT count(*) FROM events)`).Scan(&rows, &events); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || events != 1 {
		t.Errorf("after the race: %d rows, %d events; want 1 and 1", rows, events)
	}
}

// Goal: the fencing predicate itself, run as raw SQL, refuses a stale
// token: the very statement CAS uses updates zero rows for a zombie and one
// row for the holder.
func TestStaleTokenUpdatesZeroRows(t *testing.T) {
	clock := &storetest.Clock{}
	s := newStore(t, clock, time.Minute)
	mustInsert(t, s, 1)
	ctx := context.Background()
	first, err := s.Claim(ctx, "w1", 1)
	if err != nil || len(first) != 1 {
		t.Fatalf("Claim: %v %v", first, err)
	}
	clock.Advance(time.Minute)
	second, err := s.Claim(ctx, "w2", 1)
	if err != nil || len(second) != 1 {
		t.Fatalf("second Claim: %v %v", second, err)
	}
	update := func(token sluice.FencingToken) int64 {
		t.Helper()
		var n int64
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, casUpdateSQL, int64(0), string(opID(1)), int64(token), "requested", "validated",
				false, nil, nil, nil, 0, "", int64(time.Minute), nil)
			n = tag.RowsAffected()
			if err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Fatalf("raw CAS update with token %d: %v", token, err)
		}
		return n
	}
	if n := update(first[0].Token); n != 0 {
		t.Errorf("raw CAS update with the stale token %d: %d rows, want 0", first[0].Token, n)
	}
	if n := update(second[0].Token); n != 1 {
		t.Errorf("raw CAS update with the current token %d: %d rows, want 1", second[0].Token, n)
	}
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM operations WHERE id = $1 AND token = $2 AND state = 'requested'`,
		string(opID(1)), int64(first[0].Token)).Scan(&n); err != nil || n != 0 {
		t.Errorf("rows matching the stale token = %d (err %v), want 0", n, err)
	}
}

// Goal: a CAS and its event commit together or not at all. Method: make
// the event insert fail (a test-only trigger refuses note "boom") and check
// that the row did not move; then a normal CAS moves both.
func TestCASAndEventCommitTogether(t *testing.T) {
	s := newStore(t, &storetest.Clock{}, time.Minute)
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, `
		CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.note = 'boom' THEN RAISE EXCEPTION 'event insert fails on purpose'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER boom BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION boom();`); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, s, 1)
	ops, err := s.Claim(ctx, "w1", 1)
	if err != nil || len(ops) != 1 {
		t.Fatalf("Claim: %v %v", ops, err)
	}
	c := sluice.Change{ID: opID(1), Token: ops[0].Token, Worker: "w1", From: sluice.Requested, To: sluice.Validated, Note: "boom"}
	if _, err := s.CAS(ctx, c); err == nil {
		t.Fatal("CAS whose event insert fails: err = nil, want an error")
	}
	op, err := s.Get(ctx, opID(1))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(ctx, opID(1))
	if err != nil {
		t.Fatal(err)
	}
	if op.State != sluice.Requested || !op.UpdatedAt.Equal(ops[0].UpdatedAt) || len(evs) != 1 {
		t.Errorf("after a CAS whose event failed: state %s, %d events; want requested and 1 (nothing committed)", op.State, len(evs))
	}
	c.Note = "fine"
	if _, err := s.CAS(ctx, c); err != nil {
		t.Fatalf("CAS: %v", err)
	}
	if evs, _ := s.Events(ctx, opID(1)); len(evs) != 2 || evs[1].To != sluice.Validated {
		t.Errorf("after a CAS: events %v, want the creation and requested->validated", evs)
	}
}

// Goal: of two workers racing the same CAS with the same token, exactly one
// wins and the other is fenced.
func TestConcurrentCASOneWins(t *testing.T) {
	s := newStore(t, &storetest.Clock{}, time.Minute)
	ctx := context.Background()
	const rounds = 20
	for n := 1; n <= rounds; n++ {
		mustInsert(t, s, n)
	}
	ops, err := s.Claim(ctx, "w1", rounds)
	if err != nil || len(ops) != rounds {
		t.Fatalf("Claim: %d rows, %v", len(ops), err)
	}
	for _, op := range ops {
		var wg sync.WaitGroup
		results := make([]error, 8)
		for i := range results {
			wg.Go(func() {
				_, results[i] = s.CAS(ctx, sluice.Change{ID: op.ID, Token: op.Token, Worker: "w1", From: sluice.Requested, To: sluice.Validated})
			})
		}
		wg.Wait()
		won := 0
		for _, err := range results {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, sluice.ErrFenced):
				t.Errorf("racing CAS on %s: %v, want nil or ErrFenced", op.ID, err)
			}
		}
		if won != 1 {
			t.Errorf("racing CAS on %s: %d winners, want 1", op.ID, won)
		}
	}
}

// Goal: Migrate is idempotent and safe to run from many processes at once.
func TestMigrateIdempotentAndConcurrent(t *testing.T) {
	pool := freshPool(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = Migrate(ctx, pool) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Errorf("Migrate again: %v", err)
		}
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(ms) {
		t.Errorf("schema_migrations has %d rows, want %d (one per migration)", n, len(ms))
	}
}

// Goal: a txid belongs to one operation forever even against raw SQL: giving
// another row a txid that operation 1 has retired is refused by the
// database's ownership key.
func TestRawSQLCannotReuseRetiredTxid(t *testing.T) {
	pool := freshPool(t)
	ctx := context.Background()
	a, b := "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"
	for _, id := range []string{a, b} {
		if _, err := pool.Exec(ctx, rawInsertSQL, id, "1"); err != nil {
			t.Fatal(err)
		}
	}
	// a takes txid X (raw_data 'x'), then retires it for Y (raw_data 'y').
	for _, raw := range []string{"x", "y"} {
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `UPDATE operations SET txid = sha256($2::bytea), raw_data = $2::bytea WHERE id = $1`, a, []byte(raw)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO txid_owners VALUES (sha256($2::bytea), $1)`, a, []byte(raw))
			return err
		}); err != nil {
			t.Fatalf("a takes txid of %q: %v", raw, err)
		}
	}
	_, err := pool.Exec(ctx, `UPDATE operations SET txid = sha256('x'::bytea), raw_data = 'x'::bytea WHERE id = $1`, b)
	if got := sqlState(err); got != "23503" {
		t.Errorf("raw UPDATE giving b the txid a retired: SQLSTATE %q (err %v), want 23503 (foreign key)", got, err)
	}
	_, err = pool.Exec(ctx, `UPDATE txid_owners SET operation_id = $1`, b)
	if got := sqlState(err); got != codeForbidden {
		t.Errorf("raw UPDATE of txid_owners: SQLSTATE %q (err %v), want %s", got, err, codeForbidden)
	}
}

// Goal: concurrent withdrawals of one customer never take more than the
// balance: the account row's lock makes them take turns at it. Method: a
// balance for exactly 5 withdrawals, 16 distinct ones racing on separate
// connections; exactly 5 are created, the rest refused with
// ErrInsufficientFunds and leave nothing, and the account balances with 5
// amounts held.
func TestConcurrentInsertsNeverOverdraw(t *testing.T) {
	const racers, fit = 16, 5
	const amount money.Amount = 1_000_001
	const c sluice.CustomerID = "racing-customer"
	ctx := context.Background()
	s := newStore(t, &storetest.Clock{}, time.Minute)
	if _, _, err := s.Credit(ctx, sluice.Credit{Ref: "race", Customer: c, Amount: fit * amount}); err != nil {
		t.Fatal(err)
	}
	var (
		wg               sync.WaitGroup
		mu               sync.Mutex
		created, refused int
	)
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			op := newOp(100 + i)
			op.Request.Customer = c
			<-start
			_, ok, err := s.Insert(ctx, op)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && ok:
				created++
			case errors.Is(err, sluice.ErrInsufficientFunds):
				refused++
			default:
				t.Errorf("Insert(%s) = created %v, %v", op.ID, ok, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if created != fit || refused != racers-fit {
		t.Errorf("%d created and %d refused for funds, want %d and %d", created, refused, fit, racers-fit)
	}
	want := sluice.Account{Customer: c, Held: fit * amount, Deposited: fit * amount}
	if got, err := s.Account(ctx, c); err != nil || got != want {
		t.Errorf("account after the race: %+v (%v), want %+v", got, err, want)
	}
	var rows, holds, events int
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM operations WHERE customer = $1),
		(SELECT count(*) FROM holds WHERE customer = $1 AND state = 'held'),
		(SELECT count(*) FROM events e JOIN operations o ON o.id = e.operation_id WHERE o.customer = $1)`, string(c)).Scan(&rows, &holds, &events); err != nil {
		t.Fatal(err)
	}
	if rows != fit || holds != fit || events != fit {
		t.Errorf("after the race: %d rows, %d holds, %d events; want %d of each", rows, holds, events, fit)
	}
}

// Goal: deposits arriving while withdrawals are held from the same account
// are neither lost nor double-counted, and no hold takes money that was not
// yet there: 16 credits of one amount race 16 withdrawals of that amount on
// an account that starts empty. Whatever the order, every credit lands,
// every withdrawal is either held (all its money there when it was taken)
// or refused for funds with nothing stored, and the account ends with
// deposited the sum of the credits, held the sum of the holds, and the
// rest as balance. A credit written as read-then-write (balance = read +
// amount) loses a hold's or another credit's change here.
func TestCreditsRaceHolds(t *testing.T) {
	const racers = 16
	const amount money.Amount = 2_000_003
	const c sluice.CustomerID = "Late-Racer"
	ctx := context.Background()
	s := newStore(t, &storetest.Clock{}, time.Minute)
	for round := range 3 {
		var (
			wg               sync.WaitGroup
			mu               sync.Mutex
			created, refused int
		)
		start := make(chan struct{})
		for i := range racers {
			wg.Go(func() {
				<-start
				_, ok, err := s.Credit(ctx, sluice.Credit{Ref: fmt.Sprintf("late-%d-%d", round, i), Customer: c, Amount: amount})
				if err != nil || !ok {
					t.Errorf("Credit %d: credited %v, %v", i, ok, err)
				}
			})
			wg.Go(func() {
				op := newOp(1000 + round*racers + i)
				op.Request.Customer, op.Request.Amount = c, amount
				<-start
				_, ok, err := s.Insert(ctx, op)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && ok:
					created++
				case errors.Is(err, sluice.ErrInsufficientFunds):
					refused++
				default:
					t.Errorf("Insert(%s) = created %v, %v", op.ID, ok, err)
				}
			})
		}
		close(start)
		wg.Wait()
		got, err := s.Account(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		var held money.Amount
		if err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(amount), 0) FROM holds WHERE customer = $1 AND state = 'held'`, string(c)).Scan(&held); err != nil {
			t.Fatal(err)
		}
		deposited := money.Amount(round+1) * racers * amount
		if got.Deposited != deposited || got.Held != held || got.Balance+got.Held != deposited || got.Paid != 0 {
			t.Errorf("round %d (%d held, %d refused): account %+v, holds %d; want deposited %d, held the holds' sum, the rest balance",
				round, created, refused, got, held, deposited)
		}
		if created+refused != racers {
			t.Errorf("round %d: %d created and %d refused of %d", round, created, refused, racers)
		}
	}
}

// Goal: concurrent credits are applied once per ref and never lost:
// 16 racers with one ref credit once; 16 with their own refs, for a
// customer that has no account yet, all credit, and the account they
// create together holds every one.
func TestConcurrentCredits(t *testing.T) {
	const racers = 16
	ctx := context.Background()
	s := newStore(t, &storetest.Clock{}, time.Minute)
	race := func(c sluice.CustomerID, ref func(int) string) (credited int) {
		var (
			wg sync.WaitGroup
			mu sync.Mutex
		)
		start := make(chan struct{})
		for i := range racers {
			wg.Go(func() {
				<-start
				_, ok, err := s.Credit(ctx, sluice.Credit{Ref: ref(i), Customer: c, Amount: 7})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("Credit(%s): %v", ref(i), err)
				}
				if ok {
					credited++
				}
			})
		}
		close(start)
		wg.Wait()
		return credited
	}
	if n := race("one-ref", func(int) string { return "same" }); n != 1 {
		t.Errorf("%d of %d racing credits of one ref credited, want 1", n, racers)
	}
	if a, err := s.Account(ctx, "one-ref"); err != nil || a.Deposited != 7 || a.Balance != 7 {
		t.Errorf("account after racing one ref: %+v (%v), want 7 deposited once", a, err)
	}
	if n := race("many-refs", func(i int) string { return fmt.Sprintf("ref-%d", i) }); n != racers {
		t.Errorf("%d of %d racing credits with their own refs credited, want all", n, racers)
	}
	if a, err := s.Account(ctx, "many-refs"); err != nil || a.Deposited != 7*racers || !a.Balanced() {
		t.Errorf("account after racing many refs: %+v (%v), want %d deposited", a, err, 7*racers)
	}
}

// Goal: an operator's cancel racing the holder's confirmation closes the
// hold once: exactly one of them wins, the other is fenced, and the
// account shows the winner's close only. Run over several rounds so that
// both orders happen.
func TestResolveRacesCAS(t *testing.T) {
	const rounds = 12
	ctx := context.Background()
	clock := &storetest.Clock{}
	s := newStore(t, clock, time.Minute)
	wins := map[string]int{}
	for n := 1; n <= rounds; n++ {
		op := drivePG(t, s, clock, n, sluice.Broadcast)
		before, err := s.Account(ctx, payer)
		if err != nil {
			t.Fatal(err)
		}
		var casErr, resolveErr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			_, casErr = s.CAS(ctx, sluice.Change{ID: op.ID, Token: op.Token, Worker: "w1", From: sluice.Broadcast, To: sluice.Confirmed,
				Hold: sluice.HoldSettle, Note: "confirmed"})
		})
		wg.Go(func() {
			<-start
			_, resolveErr = s.Resolve(ctx, sluice.Resolution{ID: op.ID, From: sluice.Broadcast, To: sluice.Failed, Operator: "alice",
				Why: "race", Hold: sluice.HoldRelease})
		})
		close(start)
		wg.Wait()
		want := before
		want.Held -= op.Request.Amount
		switch {
		case casErr == nil && errors.Is(resolveErr, sluice.ErrFenced):
			wins["worker"]++
			want.Paid += op.Request.Amount
		case resolveErr == nil && errors.Is(casErr, sluice.ErrFenced):
			wins["operator"]++
			want.Balance += op.Request.Amount
		default:
			t.Fatalf("round %d: CAS %v, Resolve %v; want exactly one to win and the other fenced", n, casErr, resolveErr)
		}
		if got, err := s.Account(ctx, payer); err != nil || got != want {
			t.Errorf("round %d: account %+v (%v), want %+v", n, got, err, want)
		}
		evs, err := s.Events(ctx, op.ID)
		if err != nil {
			t.Fatal(err)
		}
		closes := 0
		for _, e := range evs {
			if e.Hold != sluice.HoldKeep {
				closes++
			}
		}
		if closes != 1 {
			t.Errorf("round %d: %d closing events, want 1", n, closes)
		}
	}
	t.Logf("wins: %v", wins)
}

// Goal: a migration and its record in schema_migrations commit together. If
// the record cannot be written (the connection dies, the disk fills), the
// migration's own changes must roll back with it, so that the next start
// applies it again; a migration applied but not recorded fails every later
// start ("already exists") and the service never comes up. Method: for each
// version, a trigger makes its record's insert fail; Migrate must fail, and
// once the trigger is gone, Migrate must succeed and record every version.
func TestMigrationCommitsWithItsRecord(t *testing.T) {
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, m := range ms {
		t.Run(m.name, func(t *testing.T) {
			pool := emptyPool(t)
			if _, err := pool.Exec(ctx, `CREATE TABLE schema_migrations (
				version    integer PRIMARY KEY,
				name       text NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now());
			CREATE FUNCTION refuse_record() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN RAISE EXCEPTION 'record of version % refused (test)', NEW.version; END $$;
			CREATE TRIGGER refuse_record BEFORE INSERT ON schema_migrations
				FOR EACH ROW WHEN (NEW.version = `+strconv.Itoa(m.version)+`) EXECUTE FUNCTION refuse_record()`); err != nil {
				t.Fatal(err)
			}
			if err := Migrate(ctx, pool); err == nil {
				t.Fatalf("Migrate succeeded though the record of %s could not be written", m.name)
			}
			if _, err := pool.Exec(ctx, `DROP TRIGGER refuse_record ON schema_migrations`); err != nil {
				t.Fatal(err)
			}
			if err := Migrate(ctx, pool); err != nil {
				t.Fatalf("Migrate after a failed record of %s: %v (the migration was applied without its record)", m.name, err)
			}
			var n int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != len(ms) {
				t.Errorf("schema_migrations has %d rows, want %d", n, len(ms))
			}
		})
	}
}
