package audit

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store/postgres"
)

// Goal: ReadLedger reads every table in one snapshot. While credits land
// (each a credit row and its account's deposits and balance, in one
// transaction of the store), every ledger read has the credits of the
// customer summing to the account's deposits. Read table by table at
// different moments (READ COMMITTED: blind bug 239), a credit committed
// between the credits' query and the accounts' shows deposits the credits
// do not explain, and the audit of a busy system reports funds violations
// that are not there. Method: the real PostgreSQL store, a goroutine
// crediting as fast as it can while the test reads the ledger; an honest
// read never disagrees, so the test cannot fail spuriously, and most reads
// of a reader that is not one snapshot meet a credit in between.
func TestReadLedgerIsOneSnapshot(t *testing.T) {
	pool := freshPool(t)
	ctx := t.Context()
	st := postgres.New(pool, postgres.Options{Lease: time.Minute})
	stop := make(chan struct{})
	done := make(chan error, 1)
	var credits atomic.Int64
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, _, err := st.Credit(ctx, sluice.Credit{Ref: fmt.Sprintf("race-%d", i), Customer: customer, Amount: 1_000_000}); err != nil {
				done <- err
				return
			}
			credits.Add(1)
		}
	}()
	finish := func() {
		t.Helper()
		close(stop)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// Read until a few hundred credits have landed meanwhile (at least
	// 100 reads), or 30 s: too few credits during the reads and they
	// could not have met any, which would prove nothing.
	const creditsMin, readsMin = 300, 100
	deadline := time.Now().Add(30 * time.Second)
	i := 0
	for ; i < readsMin || credits.Load() < creditsMin; i++ {
		if time.Now().After(deadline) {
			finish()
			t.Fatalf("only %d credits landed during %d reads in 30 s", credits.Load(), i)
		}
		l, err := ReadLedger(ctx, pool)
		if err != nil {
			finish()
			t.Fatal(err)
		}
		var sum, deposited money.Amount
		for _, c := range l.Credits {
			if c.Customer == customer {
				sum += c.Amount
			}
		}
		for _, a := range l.Accounts {
			if a.Customer == customer {
				deposited = a.Deposited
			}
		}
		if sum != deposited {
			finish()
			t.Fatalf("read %d: the credits sum to %s, the account's deposits are %s: the ledger was not read in one snapshot", i+1, sum, deposited)
		}
	}
	finish()
	t.Logf("%d reads, %d credits landed meanwhile", i, credits.Load())
}
