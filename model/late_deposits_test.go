package model

import (
	"strings"
	"testing"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
)

// late is a customer funded only while the run goes on, its id with
// capitals as the worlds' is.
const late sluice.CustomerID = "Late-Cust"

// lateDeposit is the world crediting c while the processes run: the store's
// account gains it at once, and the world places it after the newest event
// and at the next step of the logical clock.
func (b *builder) lateDeposit(c sluice.CustomerID, amount money.Amount, ref string) {
	b.step++
	b.s.LateDeposits = append(b.s.LateDeposits, LateDeposit{
		Credit:   sluice.Credit{Ref: ref, Customer: c, Amount: amount},
		AfterSeq: int64(len(b.s.Events)), Tick: b.step,
	})
	a := b.account(c)
	a.Balance += amount
	a.Deposited += amount
}

// reading is the world reading c's account now, as checkLedger does.
func (b *builder) reading(c sluice.CustomerID) LedgerReading {
	return LedgerReading{Seq: int64(len(b.s.Events)), LateDeposits: len(b.s.LateDeposits), Account: *b.account(c)}
}

// ledgerChecks are the checks that read deposits.
func ledgerChecks(s *Snapshot) []Violation {
	return append(CheckFunds(s), CheckIntakeUniqueness(s)...)
}

// Goal: money deposited while the run goes on is held to where it took
// effect. A withdrawal held after a late deposit that alone covers it is
// clean, and so is every reading of the account after the deposit; the
// same withdrawal held before the deposit is an overdraft; a reading that
// shows the deposit before it was made, a deposit that reached another
// customer (a customer id folded to lower case), or one credited twice is
// reported. Method: a clean run, a customer with nothing deposited before
// it, one thing broken per case.
func TestCheckFundsLateDeposits(t *testing.T) {
	const amount = 1_500_000
	for _, c := range []struct {
		name    string
		build   func(b *builder)
		mention string // "": clean
	}{
		{
			name: "held after the deposit that covers it",
			build: func(b *builder) {
				b.lateDeposit(late, 2_000_000, "late-1")
				b.s.LedgerReadings = append(b.s.LedgerReadings, b.reading(late))
				b.createFor(40, late, alice, amount, "c40")
				b.s.LedgerReadings = append(b.s.LedgerReadings, b.reading(late))
			},
		},
		{
			name: "held before the deposit",
			build: func(b *builder) {
				b.createFor(40, late, alice, amount, "c40")
				b.lateDeposit(late, 2_000_000, "late-1")
			},
			mention: "holds 1500000 units of customer Late-Cust, whose balance was only 0: an overdraft",
		},
		{
			name: "a reading that shows the deposit before it was made",
			build: func(b *builder) {
				b.lateDeposit(late, 2_000_000, "late-1")
				r := b.reading(late)
				r.LateDeposits = 0
				b.s.LedgerReadings = append(b.s.LedgerReadings, r)
			},
			mention: "customer Late-Cust: just after event #",
		},
		{
			name: "a deposit credited to the customer's id in lower case",
			build: func(b *builder) {
				b.lateDeposit(late, 2_000_000, "late-1")
				a := b.account(late)
				a.Balance, a.Deposited = 0, 0
				*b.account("late-cust") = sluice.Account{Customer: "late-cust", Balance: 2_000_000, Deposited: 2_000_000}
			},
			mention: "customer late-cust has an account with 2000000 deposited, but the world deposited nothing for it",
		},
		{
			name: "a deposit credited twice",
			build: func(b *builder) {
				b.lateDeposit(late, 2_000_000, "late-1")
				a := b.account(late)
				a.Balance += 2_000_000
				a.Deposited += 2_000_000
			},
			mention: "customer Late-Cust: the store says 4000000 units were deposited, the world deposited 2000000",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			c.build(b)
			got := describe(ledgerChecks(&b.s))
			switch {
			case c.mention == "" && got != "":
				t.Errorf("want clean, got:\n%s", got)
			case c.mention != "" && !strings.Contains(got, c.mention):
				t.Errorf("want %q reported, got:\n%s", c.mention, got)
			}
		})
	}
}

// Goal: a refusal for want of funds is judged against the deposits made
// before the call only: refused after a late deposit that covers the
// amount is wrong, whether or not the world bounded the call in the log;
// refused by a call that began before the deposit landed is not (the
// store's check may have come first). And over a bounded call the books
// count the deposit with what a release gave back.
func TestUnfundedAfterALateDeposit(t *testing.T) {
	refuse := func(b *builder, bounded bool) {
		b.record("c41", payFor(string(opID(41)), late, alice, 1_000_000), Unfunded, 0)
		r := &b.s.Intake[len(b.s.Intake)-1]
		if bounded {
			r.Bounded, r.SeqAtCall, r.SeqAtReturn = true, int64(len(b.s.Events)), int64(len(b.s.Events))
		}
	}
	// Money a release gave back: the customer's rows took 1.5 of the 2
	// deposited, so only the books over the call (the bounded reading,
	// with the deposit in them) can say the 1 asked was there.
	b := clean(t)
	b.lateDeposit(late, 2_000_000, "late-1")
	b.createFor(40, late, hotWallet, 1_500_000, "c40").claim().step(sluice.Rejected, nil)
	b.row(opID(40)).Reason = "recipient is the hot wallet"
	refuse(b, true)
	if got := describe(CheckIntakeUniqueness(&b.s)); !strings.Contains(got, "by the model's books the customer's balance was at least 2000000 units") {
		t.Errorf("refused after a release gave the late deposit back: want it reported, got:\n%s", got)
	}
	for _, bounded := range []bool{false, true} {
		b := clean(t)
		b.lateDeposit(late, 2_000_000, "late-1")
		refuse(b, bounded)
		if got := describe(CheckIntakeUniqueness(&b.s)); !strings.Contains(got, "was refused 1000000 units for customer Late-Cust as unfunded") {
			t.Errorf("bounded %v: refused after a deposit that covers it: want it reported, got:\n%s", bounded, got)
		}

		b = clean(t)
		refuse(b, bounded)
		// The deposit lands while the call is under way.
		b.s.LateDeposits = append(b.s.LateDeposits, LateDeposit{
			Credit:   sluice.Credit{Ref: "late-1", Customer: late, Amount: 2_000_000},
			AfterSeq: int64(len(b.s.Events)), Tick: b.s.Intake[len(b.s.Intake)-1].Call + 1,
		})
		*b.account(late) = sluice.Account{Customer: late, Balance: 2_000_000, Deposited: 2_000_000}
		if got := describe(ledgerChecks(&b.s)); got != "" {
			t.Errorf("bounded %v: refused while the deposit was landing: want clean, got:\n%s", bounded, got)
		}
	}
}
