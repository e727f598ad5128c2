package storetest

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
)

var ledgerCases = []testCase{
	{"Ledger/EveryStepKeepsTheAccountBalanced", testLedgerEveryStep},
	{"Ledger/InsufficientFundsCreatesNothing", testInsufficientFunds},
	{"Ledger/ReleasedMoneyIsHeldAgain", testReleasedMoneyIsHeldAgain},
	{"Credit/IdempotentByRef", testCreditIdempotent},
	{"Credit/RefusesInvalidAndChangesNothing", testCreditInvalid},
	{"Hold/ActionMustFitTheEdge", testHoldActionMatrix},
	{"Hold/SecondCloseRefused", testHoldSecondClose},
	{"CAS/FirstSentAtStoredOnce", testFirstSentAt},
	{"Events/RoundTripHoldDecisionEvidence", testEventsRoundTrip},
}

// opFor is operation n for customer c and amount a.
func opFor(n int, c sluice.CustomerID, a money.Amount) sluice.NewOperation {
	op := newOp(n)
	op.Request.Customer, op.Request.Amount = c, a
	return op
}

// wantLedger compares c's account and op's hold with what the test
// expects.
func (e *env) wantLedger(what string, c sluice.CustomerID, acct sluice.Account, op sluice.OperationID, hold sluice.Hold) {
	e.t.Helper()
	for _, d := range diffAccount(e.account(c), acct) {
		e.t.Errorf("%s: %s", what, d)
	}
	for _, d := range diffHold(e.hold(op), hold) {
		e.t.Errorf("%s: %s", what, d)
	}
}

// lastSeq is the Seq of op's newest event.
func (e *env) lastSeq(op sluice.OperationID) int64 {
	e.t.Helper()
	evs := e.events(op)
	return evs[len(evs)-1].Seq
}

// Goal: the ledger's arithmetic holds after every atomic step of every life
// an operation can have: intake moves the amount from balance to held and
// creates the hold; every step that does not close keeps it; confirmed
// settles it (held -> paid), failed and rejected release it (held ->
// balance), review keeps it; a credit in the middle moves only balance and
// deposited. The closing step records its event in ClosedSeq. Method: one
// customer, one operation per terminal state, each walked edge by edge with
// the account and the hold checked after each write.
func testLedgerEveryStep(e *env) {
	const c sluice.CustomerID = "ledger-customer"
	const deposit = 10_000_000
	want := sluice.Account{Customer: c, Balance: deposit, Deposited: deposit}
	for _, d := range diffAccount(e.credit("ledger:1", c, deposit), want) {
		e.t.Errorf("first credit returned %s", d)
	}
	for i, final := range []sluice.State{sluice.Confirmed, sluice.Failed, sluice.Rejected, sluice.Review} {
		n := i + 1
		amount := money.Amount(1_000_000 + n)
		e.insertOp(opFor(n, c, amount))
		want.Balance -= amount
		want.Held += amount
		hold := sluice.Hold{Operation: id(n), Customer: c, Amount: amount, State: sluice.HoldHeld}
		e.wantLedger(fmt.Sprintf("op %d after Insert", n), c, want, id(n), hold)

		op := e.claimID("w1", id(n))
		for k, to := range pathTo[final] {
			if k == 1 {
				// A deposit while the hold is open touches neither.
				e.credit(fmt.Sprintf("ledger:mid:%d", n), c, 7)
				want.Balance += 7
				want.Deposited += 7
				e.wantLedger(fmt.Sprintf("op %d after a credit", n), c, want, id(n), hold)
			}
			op = e.step(op, "w1", to)
			switch sluice.HoldFor(to) {
			case sluice.HoldSettle:
				want.Held -= amount
				want.Paid += amount
				hold.State, hold.ClosedSeq = sluice.HoldSettled, e.lastSeq(id(n))
			case sluice.HoldRelease:
				want.Held -= amount
				want.Balance += amount
				hold.State, hold.ClosedSeq = sluice.HoldReleased, e.lastSeq(id(n))
			}
			e.wantLedger(fmt.Sprintf("op %d after ->%s", n, to), c, want, id(n), hold)
		}
		evs := e.events(id(n))
		if last := evs[len(evs)-1]; last.Hold != sluice.HoldFor(final) {
			e.t.Errorf("op %d: the event entering %s has hold action %q, want %q", n, final, last.Hold, sluice.HoldFor(final))
		}
	}
	// The other customer's account never moved.
	fixture := sluice.Account{Customer: customer, Balance: fixtureFunds, Deposited: fixtureFunds}
	for _, d := range diffAccount(e.account(customer), fixture) {
		e.t.Errorf("the fixture customer's account: %s", d)
	}
}

// Goal: intake takes only money that is there. An insert for a customer
// with no account, or whose balance is short by one base unit, is refused
// with ErrInsufficientFunds and creates nothing: no row, no event, no hold,
// no account, the balance unchanged. Exactly the balance is enough; a replay
// of an existing id needs no funds (it is a read); a refused id stays free
// for a later insert.
func testInsufficientFunds(e *env) {
	const poor sluice.CustomerID = "poor-customer"
	const amount = 1_000_000
	refused := func(what string, op sluice.NewOperation) {
		e.t.Helper()
		row, created, err := e.s.Insert(e.ctx, op)
		if !errors.Is(err, sluice.ErrInsufficientFunds) || created {
			e.t.Errorf("%s: Insert = %s created %v, err %v; want ErrInsufficientFunds", what, row.ID, created, err)
		}
		if errors.Is(err, sluice.ErrInvalidOperation) {
			e.t.Errorf("%s: err = %v also matches ErrInvalidOperation: the insert was valid", what, err)
		}
		if _, err := e.s.Get(e.ctx, op.ID); !errors.Is(err, sluice.ErrNotFound) {
			e.t.Errorf("%s: Get after the refusal: err = %v, want ErrNotFound", what, err)
		}
		if _, err := e.s.Events(e.ctx, op.ID); !errors.Is(err, sluice.ErrNotFound) {
			e.t.Errorf("%s: Events after the refusal: err = %v, want ErrNotFound", what, err)
		}
		if _, err := e.s.Hold(e.ctx, op.ID); !errors.Is(err, sluice.ErrNotFound) {
			e.t.Errorf("%s: Hold after the refusal: err = %v, want ErrNotFound", what, err)
		}
	}

	refused("no account", opFor(1, poor, amount))
	if _, err := e.s.Account(e.ctx, poor); !errors.Is(err, sluice.ErrNotFound) {
		e.t.Errorf("Account after a refused insert without one: err = %v, want ErrNotFound (nothing created)", err)
	}

	want := e.credit("poor:1", poor, amount-1)
	refused("short by one", opFor(1, poor, amount))
	for _, d := range diffAccount(e.account(poor), want) {
		e.t.Errorf("after the refusal for funds: %s", d)
	}

	e.credit("poor:2", poor, 1)
	e.clock.Advance(time.Second)
	e.insertOp(opFor(1, poor, amount))
	want = sluice.Account{Customer: poor, Held: amount, Deposited: amount}
	e.wantLedger("after an insert of exactly the balance", poor, want, id(1),
		sluice.Hold{Operation: id(1), Customer: poor, Amount: amount, State: sluice.HoldHeld})

	before := e.record(id(1))
	row, created, err := e.s.Insert(e.ctx, opFor(1, poor, amount))
	if err != nil || created || row.ID != id(1) {
		e.t.Errorf("replay with a balance of 0: Insert = %s created %v, %v; want the existing row", row.ID, created, err)
	}
	e.unchanged("the replay with a balance of 0", id(1), before)

	refused("a balance of 0", opFor(2, poor, 1))
	if ops := e.claim("w1", 100); len(ops) != 1 || ops[0].ID != id(1) {
		e.t.Fatalf("Claim(w1, 100) = %v, want only %s: a refused insert left a row", ids(ops), id(1))
	}
	// A rejection gives the money back, and the refused id may now be used.
	e.step(e.get(id(1)), "w1", sluice.Rejected)
	e.insertOp(opFor(2, poor, amount))
	want = sluice.Account{Customer: poor, Held: amount, Deposited: amount}
	e.wantLedger("after inserting the once-refused id", poor, want, id(2),
		sluice.Hold{Operation: id(2), Customer: poor, Amount: amount, State: sluice.HoldHeld})
}

// Goal: every release gives the money back to intake, whichever way the
// hold was closed: a rejection, a failure the worker writes (as the stuck
// policy's cancel and a first send refused for its bytes do), an
// operator's cancel before any build and one of a review. A customer with
// exactly one withdrawal's worth has it held, released, and held again by
// a new withdrawal of the whole amount, which the balance must cover.
// Method: one customer per way, each walked with the account checked.
func testReleasedMoneyIsHeldAgain(e *env) {
	const amount = 2_500_000
	closers := []struct {
		name  string
		close func(op sluice.Operation)
	}{
		{"CAS requested->rejected", func(op sluice.Operation) { e.step(op, "w1", sluice.Rejected) }},
		{"CAS broadcast->failed", func(op sluice.Operation) {
			for _, to := range pathTo[sluice.Broadcast] {
				op = e.step(op, "w1", to)
			}
			e.step(op, "w1", sluice.Failed)
		}},
		{"Resolve requested->failed", func(op sluice.Operation) { e.resolve(resolution(op, sluice.Failed)) }},
		{"Resolve review->failed", func(op sluice.Operation) {
			for _, to := range pathTo[sluice.Broadcast] {
				op = e.step(op, "w1", to)
			}
			e.resolve(resolution(e.step(op, "w1", sluice.Review), sluice.Failed))
		}},
	}
	n := 0
	for i, cl := range closers {
		c := sluice.CustomerID(fmt.Sprintf("refunded-%d", i))
		e.credit(fmt.Sprintf("refunded:%d", i), c, amount)
		n++
		e.insertOp(opFor(n, c, amount))
		cl.close(e.claimID("w1", id(n)))
		want := sluice.Account{Customer: c, Balance: amount, Deposited: amount}
		for _, d := range diffAccount(e.account(c), want) {
			e.t.Errorf("after %s: %s", cl.name, d)
		}
		n++
		row, created, err := e.s.Insert(e.ctx, opFor(n, c, amount))
		if err != nil || !created {
			e.t.Errorf("after %s, a withdrawal of the whole released amount: Insert = %s created %v, %v; want a new row", cl.name, row.ID, created, err)
			continue
		}
		want.Balance, want.Held = 0, amount
		e.wantLedger(fmt.Sprintf("after %s, the amount held again", cl.name), c, want, id(n),
			sluice.Hold{Operation: id(n), Customer: c, Amount: amount, State: sluice.HoldHeld})
		// Out of the way of the next claim.
		e.step(e.claimID("w1", id(n)), "w1", sluice.Rejected)
	}
}

// Goal: a credit is applied once per ref. The first creates the account;
// the same credit again changes nothing and says so; the same ref with
// another amount or customer is ErrPayloadMismatch and changes nothing
// (creating no account either); a credit moves balance and deposited only,
// whatever is held.
func testCreditIdempotent(e *env) {
	const c, other sluice.CustomerID = "depositor", "someone-else"
	if _, err := e.s.Account(e.ctx, c); !errors.Is(err, sluice.ErrNotFound) {
		e.t.Fatalf("Account before any credit: err = %v, want ErrNotFound", err)
	}
	credit := func(ref string, cust sluice.CustomerID, a money.Amount) (sluice.Account, bool, error) {
		return e.s.Credit(e.ctx, sluice.Credit{Ref: ref, Customer: cust, Amount: a})
	}
	want := sluice.Account{Customer: c, Balance: 100, Deposited: 100}
	got, credited, err := credit("dep:1", c, 100)
	if err != nil || !credited {
		e.t.Fatalf("first Credit = credited %v, %v", credited, err)
	}
	for _, d := range diffAccount(got, want) {
		e.t.Errorf("first Credit returned %s", d)
	}
	got, credited, err = credit("dep:1", c, 100)
	if err != nil || credited {
		e.t.Errorf("the same Credit again = credited %v, %v; want false, nil", credited, err)
	}
	for _, d := range diffAccount(got, want) {
		e.t.Errorf("the same Credit again returned %s", d)
	}
	for _, tc := range []struct {
		what string
		cust sluice.CustomerID
		a    money.Amount
	}{{"another amount", c, 101}, {"another customer", other, 100}, {"both", other, 1}} {
		_, credited, err := credit("dep:1", tc.cust, tc.a)
		if !errors.Is(err, sluice.ErrPayloadMismatch) || credited {
			e.t.Errorf("the same ref with %s: credited %v, err %v; want ErrPayloadMismatch", tc.what, credited, err)
		}
		for _, d := range diffAccount(e.account(c), want) {
			e.t.Errorf("after the same ref with %s: %s", tc.what, d)
		}
	}
	if _, err := e.s.Account(e.ctx, other); !errors.Is(err, sluice.ErrNotFound) {
		e.t.Errorf("Account of the customer a refused credit named: err = %v, want ErrNotFound", err)
	}

	e.credit("dep:2", c, 150)
	want.Balance, want.Deposited = 250, 250
	e.insertOp(opFor(1, c, 200))
	want.Balance, want.Held = 50, 200
	got = e.credit("dep:3", c, 5)
	want.Balance, want.Deposited = 55, 255
	for _, d := range diffAccount(got, want) {
		e.t.Errorf("a credit while 200 is held returned %s", d)
	}
	// A replay answers with the account as it is now.
	got, credited, err = credit("dep:1", c, 100)
	if err != nil || credited {
		e.t.Errorf("replay of the first credit = credited %v, %v", credited, err)
	}
	for _, d := range diffAccount(got, want) {
		e.t.Errorf("replay of the first credit returned %s", d)
	}
	for _, d := range diffAccount(e.account(c), want) {
		e.t.Errorf("Account at the end: %s", d)
	}
}

// Goal: a credit sluice.CheckCredit refuses is refused by every store with
// ErrInvalidOperation (and no operating condition), before its ref is
// looked up, and changes nothing: no account is created, none moves, and
// the ref stays free. The limits themselves pass.
func testCreditInvalid(e *env) {
	const fresh sluice.CustomerID = "fresh-customer"
	fixture := e.account(customer)
	for _, tc := range []struct {
		name string
		c    sluice.Credit
	}{
		{"empty ref", sluice.Credit{Ref: "", Customer: fresh, Amount: 1}},
		{"ref too long", sluice.Credit{Ref: strings.Repeat("r", 129), Customer: fresh, Amount: 1}},
		// A ref PostgreSQL's text cannot hold (a NUL, bytes that are not
		// UTF-8) must not be one store's credit and another's "unknown
		// error, it may have landed"; a control character is no part of
		// any deposit's id either.
		{"ref with a NUL byte", sluice.Credit{Ref: "tx\x00:0", Customer: fresh, Amount: 1}},
		{"ref not UTF-8", sluice.Credit{Ref: "tx\xff:0", Customer: fresh, Amount: 1}},
		{"ref with a newline", sluice.Credit{Ref: "tx:0\nforged", Customer: fresh, Amount: 1}},
		{"ref with a C1 control", sluice.Credit{Ref: "tx:0\u0085", Customer: fresh, Amount: 1}},
		{"empty customer", sluice.Credit{Ref: "bad:1", Customer: "", Amount: 1}},
		{"customer too long", sluice.Credit{Ref: "bad:2", Customer: sluice.CustomerID(strings.Repeat("c", sluice.CustomerMax+1)), Amount: 1}},
		{"customer with a space", sluice.Credit{Ref: "bad:3", Customer: "a b", Amount: 1}},
		{"zero amount", sluice.Credit{Ref: "bad:4", Customer: fresh, Amount: 0}},
		{"above the maximum", sluice.Credit{Ref: "bad:5", Customer: fresh, Amount: money.MaxAmount + 1}},
		// Checked before the ref is looked up: not a payload mismatch.
		{"existing ref, zero amount", sluice.Credit{Ref: fixtureRef, Customer: customer, Amount: 0}},
	} {
		acct, credited, err := e.s.Credit(e.ctx, tc.c)
		if !errors.Is(err, sluice.ErrInvalidOperation) || credited {
			e.t.Errorf("Credit (%s) = %+v credited %v, err %v; want ErrInvalidOperation", tc.name, acct, credited, err)
		}
		if isSentinel(err) {
			e.t.Errorf("Credit (%s): err = %v matches an operating condition; want only ErrInvalidOperation", tc.name, err)
		}
		if _, err := e.s.Account(e.ctx, tc.c.Customer); tc.c.Customer != customer && !errors.Is(err, sluice.ErrNotFound) {
			e.t.Errorf("Account(%.40q) after the refused credit (%s): err = %v, want ErrNotFound", tc.c.Customer, tc.name, err)
		}
		for _, d := range diffAccount(e.account(customer), fixture) {
			e.t.Errorf("after the refused credit (%s): %s", tc.name, d)
		}
	}
	// The refused refs are free, and the limits pass: 128 bytes, and text
	// beyond ASCII (a two-byte character, 64 of them in 128 bytes).
	e.credit("bad:4", fresh, 1)
	e.credit(strings.Repeat("r", 128), fresh, money.MaxAmount)
	e.credit(strings.Repeat("é", 64), fresh, 1)
	want := sluice.Account{Customer: fresh, Balance: money.MaxAmount + 2, Deposited: money.MaxAmount + 2}
	for _, d := range diffAccount(e.account(fresh), want) {
		e.t.Errorf("after the credits at the limits: %s", d)
	}
	e.credit("long-customer", sluice.CustomerID(strings.Repeat("c", sluice.CustomerMax)), 1)
}

// badHold is a HoldAction no store may accept anywhere.
const badHold = sluice.HoldAction(9)

// Goal: a transition carries exactly the hold action its target needs:
// entering confirmed, failed or rejected must settle or release (either:
// which one is the caller's judgement), entering anything else must keep.
// A misfit is ErrHoldAction and changes nothing (row, log, hold, account);
// a fit moves the account as the action says and records it on the event.
// Method: every edge of the transition table, from a fresh row, generated
// from the table.
func testHoldActionMatrix(e *env) {
	n := 0
	for _, t := range sluice.Transitions() {
		closing := sluice.HoldFor(t.To) != sluice.HoldKeep
		wrong := []sluice.HoldAction{sluice.HoldSettle, sluice.HoldRelease, badHold}
		right := []sluice.HoldAction{sluice.HoldKeep}
		if closing {
			wrong = []sluice.HoldAction{sluice.HoldKeep, badHold}
			right = []sluice.HoldAction{sluice.HoldSettle, sluice.HoldRelease}
		}
		for ri, ok := range right {
			n++
			op := e.drive(n, "w1", t.From)
			before := e.record(op.ID)
			if ri == 0 {
				for _, a := range wrong {
					c := e.change(op, "w1", t.To)
					c.Hold = a
					if _, err := e.s.CAS(e.ctx, c); !errors.Is(err, sluice.ErrHoldAction) {
						e.t.Errorf("CAS %s->%s with hold action %q: err = %v, want ErrHoldAction", t.From, t.To, a, err)
					}
					e.unchanged(fmt.Sprintf("CAS %s->%s with hold action %q", t.From, t.To, a), op.ID, before)
				}
			}
			c := e.change(op, "w1", t.To)
			c.Hold = ok
			if _, err := e.s.CAS(e.ctx, c); err != nil {
				e.t.Errorf("CAS %s->%s with hold action %q: %v", t.From, t.To, ok, err)
				continue
			}
			wantAcct, wantHold := before.account, before.hold
			amount := before.hold.Amount
			switch ok {
			case sluice.HoldSettle:
				wantAcct.Held -= amount
				wantAcct.Paid += amount
				wantHold.State, wantHold.ClosedSeq = sluice.HoldSettled, e.lastSeq(op.ID)
			case sluice.HoldRelease:
				wantAcct.Held -= amount
				wantAcct.Balance += amount
				wantHold.State, wantHold.ClosedSeq = sluice.HoldReleased, e.lastSeq(op.ID)
			}
			e.wantLedger(fmt.Sprintf("CAS %s->%s with hold action %q", t.From, t.To, ok), customer, wantAcct, op.ID, wantHold)
			evs := e.events(op.ID)
			if got := evs[len(evs)-1].Hold; got != ok {
				e.t.Errorf("CAS %s->%s: event hold action %q, want %q", t.From, t.To, got, ok)
			}
		}
	}
}

// Goal: a hold is closed at most once. Every second close the interface can
// express, after every way a hold can be closed, is refused and changes
// nothing (row, log, hold, account). None of them reaches the store's own
// ErrHoldClosed check: an earlier layer refuses each. The transition check
// (ErrIllegalTransition) refuses any CAS out of the closed row, which is
// terminal, and any Resolve from it (no operator edge leaves confirmed,
// failed or rejected); the fence (ErrFenced) refuses a CAS from the state
// before the close and a Resolve from review once the row has left it.
// ErrHoldClosed is the store's last line behind these; PostgreSQL's holds
// trigger is tested against raw SQL in that package.
func testHoldSecondClose(e *env) {
	type closer struct {
		name  string
		close func(n int) sluice.Operation // returns the row before the close
	}
	viaCAS := func(from, to sluice.State) func(int) sluice.Operation {
		return func(n int) sluice.Operation {
			op := e.drive(n, "w1", from)
			e.step(op, "w1", to)
			return op
		}
	}
	viaResolve := func(from, to sluice.State) func(int) sluice.Operation {
		return func(n int) sluice.Operation {
			var op sluice.Operation
			if from == sluice.Review {
				op = e.paidReview(n, "w1")
			} else {
				op = e.drive(n, "w1", from)
			}
			e.resolve(resolution(op, to))
			return op
		}
	}
	closers := []closer{
		{"CAS broadcast->confirmed", viaCAS(sluice.Broadcast, sluice.Confirmed)},
		{"CAS broadcast->failed", viaCAS(sluice.Broadcast, sluice.Failed)},
		{"CAS requested->rejected", viaCAS(sluice.Requested, sluice.Rejected)},
		{"Resolve review->failed", viaResolve(sluice.Review, sluice.Failed)},
		{"Resolve review->confirmed", viaResolve(sluice.Review, sluice.Confirmed)},
		{"Resolve requested->failed", viaResolve(sluice.Requested, sluice.Failed)},
	}
	for i, cl := range closers {
		prev := cl.close(i + 1)
		cur := e.get(prev.ID)
		before := e.record(cur.ID)
		if before.hold.State == sluice.HoldHeld {
			e.t.Fatalf("%s: the hold is still held", cl.name)
		}
		try := func(what string, err error, want error) {
			e.t.Helper()
			if !errors.Is(err, want) {
				e.t.Errorf("after %s, %s: err = %v, want %v", cl.name, what, err, want)
			}
			e.unchanged(fmt.Sprintf("%s after %s", what, cl.name), cur.ID, before)
		}
		for _, to := range []sluice.State{sluice.Confirmed, sluice.Failed, sluice.Rejected} {
			for _, a := range []sluice.HoldAction{sluice.HoldSettle, sluice.HoldRelease} {
				// The row as it is now, under its current token.
				c := e.change(cur, "w1", to)
				c.Hold = a
				_, err := e.s.CAS(e.ctx, c)
				try(fmt.Sprintf("CAS %s->%s (%s) under the current token", cur.State, to, a), err, sluice.ErrIllegalTransition)
				// The write the closer made, made again.
				c = e.change(prev, "w1", to)
				c.Hold = a
				_, err = e.s.CAS(e.ctx, c)
				try(fmt.Sprintf("CAS %s->%s (%s) as before the close", prev.State, to, a), err, sluice.ErrFenced)
			}
		}
		for _, to := range []sluice.State{sluice.Confirmed, sluice.Failed} {
			// No operator edge leaves the row's state (to == cur.State is
			// a retry, which a terminal row refuses too).
			_, err := e.s.Resolve(e.ctx, resolution(cur, to))
			try(fmt.Sprintf("Resolve %s->%s", cur.State, to), err, sluice.ErrIllegalTransition)
			r := resolution(cur, to)
			r.From = sluice.Review
			_, err = e.s.Resolve(e.ctx, r)
			try(fmt.Sprintf("Resolve review->%s", to), err, sluice.ErrFenced)
		}
	}
}

// Goal: FirstSentAt, the store's clock at the first write-ahead, is stamped
// by the first write that marks a first send and kept by every later
// write, rebuilds and their write-aheads included, and by an operator's
// retry. A write that does not mark one stamps nothing.
func testFirstSentAt(e *env) {
	// Operation 2 first, so that its live lease keeps the claims below on 1.
	other := e.drive(2, "w1", sluice.Signed)
	if other = e.cas(e.change(other, "w1", sluice.Broadcasting)); !other.FirstSentAt.IsZero() {
		e.t.Errorf("a write-ahead not marked as a first send stamped FirstSentAt %s", other.FirstSentAt)
	}
	op := e.drive(1, "w1", sluice.Signed)
	if !op.FirstSentAt.IsZero() {
		e.t.Errorf("FirstSentAt before any send = %s, want zero", op.FirstSentAt)
	}
	e.clock.Advance(time.Hour + 123*time.Nanosecond)
	first := e.clock.Now()
	c := e.change(op, "w1", sluice.Broadcasting)
	c.FirstSend = true
	op = e.cas(c)
	check := func(what string) {
		e.t.Helper()
		if got := e.get(op.ID).FirstSentAt; !got.Equal(first) {
			e.t.Errorf("FirstSentAt after %s = %s, want %s", what, got, first)
		}
	}
	if !op.FirstSentAt.Equal(first) {
		e.t.Errorf("CAS returned FirstSentAt %s, want %s", op.FirstSentAt, first)
	}
	check("the first write-ahead")
	for _, to := range []sluice.State{sluice.Signing, sluice.Signed, sluice.Broadcasting, sluice.Broadcast} {
		e.clock.Advance(time.Second)
		c := e.change(op, "w1", to)
		c.FirstSend = to == sluice.Broadcasting
		op = e.cas(c)
		if !op.FirstSentAt.Equal(first) {
			e.t.Errorf("CAS ->%s returned FirstSentAt %s, want the first %s kept", to, op.FirstSentAt, first)
		}
		check("->" + to.String())
	}
	e.resolve(sluice.Resolution{ID: op.ID, From: op.State, To: op.State, Operator: "alice", Why: "retry"})
	check("an operator's retry")

}

// Goal: an event keeps everything its write carried: the hold action, the
// stuck policy's decision (every field, a zero one included, which is not
// no decision), and the evidence's receipt, block number, lookup solid
// height and whether the node that showed the receipt called its block
// solid (a proof by a failure receipt carries no times: zero comes back
// zero). The operator's events keep the operator, the new token and the
// paying txid. Method: write them, read the log back whole.
func testEventsRoundTrip(e *env) {
	op := e.drive(1, "w1", sluice.Broadcast)
	e.clock.Advance(time.Second)
	wantEvs := e.events(op.ID)

	// broadcast -> signing: a rebuild proven by a failure receipt, with a
	// zero-valued decision (a decision, not none).
	c := e.change(op, "w1", sluice.Signing)
	c.Evidence = &sluice.Evidence{Txid: op.Envelope.Txid, SolidNumber: 4242, Lookup: tron.Included,
		LookupSolid: 4250, Receipt: "OUT_OF_ENERGY", BlockNumber: 4240, SeenSolid: true}
	c.Decision = &sluice.Decision{}
	op = e.cas(c)
	wantEvs = append(wantEvs, sluice.Event{OperationID: op.ID, From: sluice.Broadcast, To: sluice.Signing, Token: op.Token,
		Worker: "w1", At: e.clock.Now(), Txid: c.Envelope.Txid, RetiredTxid: c.RetiredTxid, Evidence: c.Evidence,
		Decision: c.Decision, Note: c.Note})

	// signing -> signed -> broadcasting -> broadcast -> review, the last
	// with a decision whose every field is set.
	for _, to := range []sluice.State{sluice.Signed, sluice.Broadcasting, sluice.Broadcast} {
		op = e.step(op, "w1", to)
		wantEvs = append(wantEvs, e.events(op.ID)[len(wantEvs)])
	}
	e.clock.Advance(time.Second)
	d := &sluice.Decision{Action: sluice.Escalate, Reason: "budget spent; \"parked\" 3 times\nlast: énergie",
		Waited: 26*time.Hour + 3*time.Minute + 4*time.Nanosecond, Rebuilds: 7}
	c = e.change(op, "w1", sluice.Review)
	c.Decision = d
	ev := *evidenceFor(op.Envelope)
	c.Evidence = &ev
	op = e.cas(c)
	wantEvs = append(wantEvs, sluice.Event{OperationID: op.ID, From: sluice.Broadcast, To: sluice.Review, Token: op.Token,
		Worker: "w1", At: e.clock.Now(), Txid: op.Envelope.Txid, Evidence: &ev, Decision: d, Note: c.Note})

	// An operator resolves it as paid by its txid.
	e.clock.Advance(time.Second)
	paying := op.Envelope.Txid
	r := sluice.Resolution{ID: op.ID, From: sluice.Review, To: sluice.Confirmed, Operator: "alice", Why: "paid by hand",
		Hold: sluice.HoldSettle, Txid: paying, Decision: &sluice.Decision{Action: sluice.Wait, Reason: "operator", Rebuilds: 1}}
	op = e.resolve(r)
	wantEvs = append(wantEvs, sluice.Event{OperationID: op.ID, From: sluice.Review, To: sluice.Confirmed, Token: op.Token,
		Worker: "operator:alice", At: e.clock.Now(), Txid: paying, Hold: sluice.HoldSettle, Decision: r.Decision, Note: r.Why})

	got := e.events(op.ID)
	for i := range min(len(got), len(wantEvs)) {
		if wantEvs[i].Seq == 0 {
			wantEvs[i].Seq = got[i].Seq // the store's to choose
		}
	}
	for _, d := range diffEvents(got, wantEvs) {
		e.t.Errorf("events %s", d)
	}
}

// Filler puts customer c's account at balance = deposited = d with nothing
// held or paid, by whatever means its store has (credits through the
// interface would take some 18,000 of the largest for d near 2^64).
type Filler func(t *testing.T, s sluice.Store, c sluice.CustomerID, d money.Amount)

// CreditPastBaseUnits checks, for the store s, that a credit which would
// take an account's deposited total past what an Amount holds (2^64-1 base
// units) is refused with ErrInvalidOperation and changes nothing, leaving
// its ref free; one that reaches the limit exactly goes in. Every store
// must refuse it the same way: one that took it would hold an account no
// Amount can read back (store.Memory's would wrap round).
//
// The limit is on the deposited total, not on the balance: money held by a
// withdrawal has left the balance but not the deposits (independent bug
// 216 guarded the balance and took the credit, wrapping the total round).
//
// Goal: the stores agree at the edge of the account's arithmetic. Method:
// an account filled to 5 units under the limit, a withdrawal holding 1,000
// of them, then a credit of 6, one of 5 under the same ref, and one of 1
// more.
func CreditPastBaseUnits(t *testing.T, s sluice.Store, fill Filler) {
	t.Helper()
	ctx := t.Context()
	const c sluice.CustomerID = "nearly-everything"
	const held = 1000
	fill(t, s, c, math.MaxUint64-5)
	if _, created, err := s.Insert(ctx, opFor(1, c, held)); err != nil || !created {
		t.Fatalf("a withdrawal of %d units: created %v, %v", held, created, err)
	}
	before, err := s.Account(ctx, c)
	if err != nil || before != (sluice.Account{Customer: c, Balance: math.MaxUint64 - 5 - held, Held: held, Deposited: math.MaxUint64 - 5}) {
		t.Fatalf("after filling and holding: Account = %+v, %v", before, err)
	}
	refused := func(what string, cr sluice.Credit) {
		t.Helper()
		acct, credited, err := s.Credit(ctx, cr)
		if !errors.Is(err, sluice.ErrInvalidOperation) || credited || isSentinel(err) {
			t.Errorf("%s: Credit = %+v credited %v, err %v; want ErrInvalidOperation alone", what, acct, credited, err)
		}
	}
	refused("6 units 5 under the limit", sluice.Credit{Ref: "past", Customer: c, Amount: 6})
	if got, err := s.Account(ctx, c); err != nil || got != before {
		t.Errorf("after the refused credit: Account = %+v, %v; want %+v", got, err, before)
	}
	got, credited, err := s.Credit(ctx, sluice.Credit{Ref: "past", Customer: c, Amount: 5})
	want := sluice.Account{Customer: c, Balance: math.MaxUint64 - held, Held: held, Deposited: math.MaxUint64}
	if err != nil || !credited || got != want {
		t.Errorf("5 units under the refused credit's ref: Credit = %+v credited %v, %v; want %+v credited", got, credited, err, want)
	}
	refused("1 unit at the limit", sluice.Credit{Ref: "past:2", Customer: c, Amount: 1})
	if got, err := s.Account(ctx, c); err != nil || got != want {
		t.Errorf("at the end: Account = %+v, %v; want %+v", got, err, want)
	}
}
