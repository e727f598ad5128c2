package model

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"sluicesim/sluice"
)

func TestCheckFundsClean(t *testing.T) { wantClean(t, CheckFunds) }

// Goal: the clean run's ledger is the one the model must accept, and it is
// not empty: every close the checker replays is there (settled on a
// worker's and an operator's confirmation, released on a policy's cancel,
// an operator's cancel and a rejection), and the store's accounts are
// what the deposits and the rows' states make them. Method: the clean
// run's holds and payer's account, compared with numbers written out.
func TestCleanLedger(t *testing.T) {
	b := clean(t)
	want := map[sluice.OperationID]sluice.HoldState{
		opID(opHappy): sluice.HoldSettled, opID(opRebuilt): sluice.HoldSettled, opID(opPolicyCancel): sluice.HoldReleased,
		opID(opReverted): sluice.HoldSettled, opID(opRejected): sluice.HoldReleased, opID(opStale): sluice.HoldSettled,
		opID(opCrashed): sluice.HoldSettled, opID(opReviewPaid): sluice.HoldSettled, opID(opOpCancel): sluice.HoldReleased,
	}
	if len(b.s.Holds) != len(want) {
		t.Errorf("clean run has %d holds, want %d", len(b.s.Holds), len(want))
	}
	for _, h := range b.s.Holds {
		if h.State != want[h.Operation] {
			t.Errorf("op %s's hold is %s, want %s", h.Operation, h.State, want[h.Operation])
		}
	}
	// Paid: 1.5 + 2 + 4 + 6 + 7 + 10; released: 3, 5 and 11.
	const paid = 30_500_000
	wantAcct := sluice.Account{Customer: payer, Balance: 100_000_000 - paid, Paid: paid, Deposited: 100_000_000}
	if got := *b.account(payer); got != wantAcct {
		t.Errorf("payer's account = %+v, want %+v", got, wantAcct)
	}
}

// Goal: every way the store can get a customer's money wrong is reported:
// a hold closed twice or the wrong way, or left open on a finished
// operation; a hold with other numbers than its client asked for; an
// overdraft; money nobody deposited; an account other than the books; a
// ledger the world saw broken during the run. Method: break one thing in
// a clean run.
func TestCheckFundsCatches(t *testing.T) {
	for _, c := range []corruption{
		{
			// A buggy store applies the policy's cancel twice: the customer
			// is refunded twice. (Failed again is no transition either.)
			name: "a hold released twice", op: opID(opPolicyCancel), mention: "releases the hold a second time (already released at event #",
			break_: func(b *builder) {
				d := b.event(opID(opPolicyCancel), sluice.Broadcast, sluice.Failed).Decision
				b.op(opPolicyCancel).claim().step(sluice.Failed, func(e *sluice.Event) { e.Decision = d })
			},
			also: []string{AuditLog},
		},
		{
			name: "a hold settled without a confirmation", op: opID(opPolicyCancel), mention: "settles the hold (the customer pays) without a confirmation",
			break_: func(b *builder) {
				b.event(opID(opPolicyCancel), sluice.Broadcast, sluice.Failed).Hold = sluice.HoldSettle
			},
		},
		{
			name: "a hold released on a confirmation", op: opID(opHappy), mention: "releases the hold (the customer is refunded) on a confirmation",
			break_: func(b *builder) { b.event(opID(opHappy), sluice.Broadcast, sluice.Confirmed).Hold = sluice.HoldRelease },
		},
		{
			name: "a hold closed by an operator's retry", op: opID(opReverted), mention: "releases the hold without entering confirmed, failed or rejected",
			break_: func(b *builder) {
				b.lastEvent(opID(opReverted), sluice.Signing, sluice.Signing).Hold = sluice.HoldRelease
			},
		},
		{
			// The event forgot to close it; the store's hold and account
			// say it was released.
			name: "a failure that leaves the hold open", op: opID(opPolicyCancel), mention: "enters failed but leaves the hold open",
			break_: func(b *builder) {
				b.event(opID(opPolicyCancel), sluice.Broadcast, sluice.Failed).Hold = sluice.HoldKeep
			},
		},
		{
			// The store's own books: the hold is still held, and the
			// account still counts it held.
			name: "a hold left open on a failed op", op: opID(opOpCancel), mention: "is failed but its hold is held (want released)",
			break_: func(b *builder) {
				h := b.holdOf(opID(opOpCancel))
				h.State, h.ClosedSeq = sluice.HoldHeld, 0
				a := b.account(payer)
				a.Balance -= h.Amount
				a.Held += h.Amount
			},
		},
		{
			name: "a hold left open on a confirmed op", op: opID(opReviewPaid), mention: "is confirmed but its hold is held (want settled)",
			break_: func(b *builder) { b.holdOf(opID(opReviewPaid)).State = sluice.HoldHeld },
		},
		{
			name: "a hold for another amount", op: opID(opHappy), mention: "'s hold is 1500001 units of customer cust-a, but its client asked for 1500000 units of customer cust-a",
			break_: func(b *builder) { b.holdOf(opID(opHappy)).Amount++ },
		},
		{
			name: "a hold on another customer's balance", op: opID(opHappy), mention: "'s hold is 1500000 units of customer cust-poor, but its client asked for 1500000 units of customer cust-a",
			break_: func(b *builder) { b.holdOf(opID(opHappy)).Customer = pauper },
		},
		{
			name: "an operation without a hold", op: opID(opStale), mention: "has no hold",
			break_: func(b *builder) {
				b.s.Holds = slices.DeleteFunc(b.s.Holds, func(h sluice.Hold) bool { return h.Operation == opID(opStale) })
			},
		},
		{
			name: "a hold with no operation", op: opID(9), mention: "names operation " + string(opID(9)) + ", which has no row",
			break_: func(b *builder) {
				b.s.Holds = append(b.s.Holds, sluice.Hold{Operation: opID(9), Customer: payer, Amount: 9, State: sluice.HoldReleased})
			},
		},
		{
			// The store let pauper (400000 units deposited) withdraw
			// 1 USDT, and it was paid: an overdraft when the hold was
			// taken, and at the end more paid than was ever deposited.
			name: "an overdraft at creation", op: opID(9), mention: "whose balance was only 400000: an overdraft",
			break_: func(b *builder) { b.createFor(9, pauper, alice, 1_000_000, "c9").claim().build().broadcastAndConfirm() },
		},
		{
			name: "an overdraft seen at the end", op: "", mention: "customer cust-poor: the operations the store accepted hold or paid 600000 units more than was deposited (400000)",
			break_: func(b *builder) { b.createFor(9, pauper, alice, 1_000_000, "c9").claim().build().broadcastAndConfirm() },
		},
		{
			// A credit the world never made: the store's deposits exceed
			// the world's.
			name: "an extra credit nobody deposited", op: "", mention: "the store says 101000000 units were deposited, the world deposited 100000000",
			break_: func(b *builder) {
				a := b.account(payer)
				a.Deposited += 1_000_000
				a.Balance += 1_000_000
			},
		},
		{
			name: "an account for a customer the world never deposited for", op: "", mention: "customer cust-ghost has an account with 1000000 deposited, but the world deposited nothing for it",
			break_: func(b *builder) {
				b.s.Accounts = append(b.s.Accounts, sluice.Account{Customer: "cust-ghost", Balance: 1_000_000, Deposited: 1_000_000})
			},
		},
		{
			// A credit to a customer the world never deposited for, the
			// account's deposits left at zero.
			name: "a balance for a customer the world never deposited for", op: "", mention: "customer cust-ghost has an account of balance 1000000, held 0, paid 0, deposited 0",
			break_: func(b *builder) {
				b.s.Accounts = append(b.s.Accounts, sluice.Account{Customer: "cust-ghost", Balance: 1_000_000})
			},
		},
		{
			// Balanced (balance + held + paid = deposited), but a unit
			// paid that the rows' states say is the customer's.
			name: "a store account other than the books", op: "", mention: "customer cust-a: the store's account is balance 69499999, held 0, paid 30500001; by the operations' states it must be balance 69500000, held 0, paid 30500000",
			break_: func(b *builder) {
				a := b.account(payer)
				a.Balance--
				a.Paid++
			},
		},
		{
			name: "a customer's account missing", op: "", mention: "customer cust-poor: the store says 0 units were deposited, the world deposited 400000",
			break_: func(b *builder) {
				b.s.Accounts = slices.DeleteFunc(b.s.Accounts, func(a sluice.Account) bool { return a.Customer == pauper })
			},
		},
		{
			name: "a ledger break the world saw", op: "", mention: "the store's ledger did not add up after event #12",
			break_: func(b *builder) {
				b.s.LedgerBreaks = append(b.s.LedgerBreaks, "after event #12: customer cust-a balance 1 + held 2 + paid 3 != deposited 7")
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, Funds, CheckFunds, c) })
	}
}

// Goal: a snapshot without a ledger (hand-built, or from before holds) is
// not judged by funds. Method: the clean run without deposits, accounts
// and holds, whose rows would otherwise each lack a hold.
func TestCheckFundsWithoutALedger(t *testing.T) {
	b := clean(t)
	b.s.Deposits, b.s.Accounts, b.s.Holds = nil, nil, nil
	if got := CheckFunds(&b.s); len(got) != 0 {
		t.Errorf("no ledger: want nothing judged, got:\n%s", describe(got))
	}
	b.s.Accounts = []sluice.Account{}
	if got := CheckFunds(&b.s); len(got) != 0 {
		t.Errorf("an empty ledger: want nothing judged, got:\n%s", describe(got))
	}
	// A reader that saw the ledger missing says so (the audit: rows and no
	// ledger at all), and then every row's missing hold is judged.
	b.s.LedgerBreaks = []string{"at the read: rows but no ledger"}
	got := CheckFunds(&b.s)
	if len(got) < 2 || !strings.Contains(describe(got), "rows but no ledger") || !strings.Contains(describe(got), "has no hold") {
		t.Errorf("no ledger, with a break: want the break and every missing hold, got:\n%s", describe(got))
	}
}

// Goal: the replay gives a released hold's money back to the balance, so
// it can be held again: pauper's whole deposit is held, released by a
// rejection, and held again by a withdrawal that pays, with no overdraft.
// Counted as settled instead, the second hold would overdraw.
func TestCheckFundsReleasedMoneyIsHeldAgain(t *testing.T) {
	b := clean(t)
	b.createFor(12, pauper, hotWallet, pauperDeposit, "c12").claim().step(sluice.Rejected, nil)
	b.row(opID(12)).Reason = "recipient is the hot wallet"
	b.createFor(13, pauper, alice, pauperDeposit, "c13").claim().build().broadcastAndConfirm()
	if got := Check(&b.s); len(got) != 0 {
		t.Errorf("pauper's deposit held, released, held again and paid: want clean, got:\n%s", describe(got))
	}
	if a := *b.account(pauper); a.Balance != 0 || a.Paid != pauperDeposit {
		t.Errorf("setup: pauper's account is %+v, want all of it paid", a)
	}
}

// Goal: every account the world read after a write is held to the model's
// own books at that point of the log, not only the end: the end account
// read just after the last event passes; the same account read as of the
// first event (a store that had already moved money the log had not) is
// reported, and so is one a unit off in held with the right total (it adds
// up, which the ledger breaks alone cannot see).
func TestCheckFundsLedgerReadings(t *testing.T) {
	b := clean(t)
	last := b.s.Events[len(b.s.Events)-1].Seq
	end := *b.account(payer)
	b.s.LedgerReadings = []LedgerReading{{Seq: last, Account: end}}
	if got := CheckFunds(&b.s); len(got) != 0 {
		t.Fatalf("the end account read after the last event: want clean, got:\n%s", describe(got))
	}
	early := b.s.Events[0].Seq
	b.s.LedgerReadings = []LedgerReading{{Seq: early, Account: end}}
	if got := describe(CheckFunds(&b.s)); !strings.Contains(got, fmt.Sprintf("customer %s: just after event #%d the store's account was", payer, early)) {
		t.Errorf("the end account read as of event #%d: want it reported, got:\n%s", early, got)
	}
	off := end
	off.Held++
	off.Balance--
	b.s.LedgerReadings = []LedgerReading{{Seq: last, Account: off}}
	if got := describe(CheckFunds(&b.s)); !strings.Contains(got, fmt.Sprintf("held %d, paid %d, deposited %d; by the model's books at that event it must be balance %d, held %d", off.Held, off.Paid, off.Deposited, end.Balance, end.Held)) {
		t.Errorf("an account a unit off in held that adds up: want it reported, got:\n%s", got)
	}
}
