package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
)

// Goal: the ledger's enums and the customer id domain cannot drift from
// their Go counterparts: hold_state is sluice.HoldState's names in order,
// hold_action the closing sluice.HoldActions' (HoldKeep is NULL),
// decision_action sluice.Action's, and the customer_id domain accepts
// exactly what sluice.CustomerID.Valid accepts.
func TestLedgerTypesMatchGo(t *testing.T) {
	enum := func(name string) []string {
		var out []string
		for _, m := range mustMigrations(t) {
			if e := regexp.MustCompile(`(?s)CREATE TYPE ` + name + ` AS ENUM \((.*?)\);`).FindStringSubmatch(m.sql); e != nil {
				for _, v := range regexp.MustCompile(`'([a-z]+)'`).FindAllStringSubmatch(e[1], -1) {
					out = append(out, v[1])
				}
			}
			if strings.Contains(m.sql, "ALTER TYPE "+name) {
				t.Errorf("%s alters %s: this test reads only its CREATE TYPE", m.name, name)
			}
		}
		return out
	}
	var holdStates, holdActions, actions []string
	for h := sluice.HoldHeld; !strings.HasPrefix(h.String(), "hold-state("); h++ {
		holdStates = append(holdStates, h.String())
	}
	for _, a := range []sluice.HoldAction{sluice.HoldSettle, sluice.HoldRelease} {
		holdActions = append(holdActions, a.String())
	}
	for a := sluice.Action(0); !strings.HasPrefix(a.String(), "action("); a++ {
		actions = append(actions, a.String())
	}
	for _, tc := range []struct {
		name string
		want []string
	}{{"hold_state", holdStates}, {"hold_action", holdActions}, {"decision_action", actions}} {
		if got := enum(tc.name); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("enum %s = %v, want %v", tc.name, got, tc.want)
		}
	}

	pool := freshPool(t)
	ctx := context.Background()
	for _, c := range []string{"", "a", "A.b_c:d-1", strings.Repeat("c", sluice.CustomerMax), strings.Repeat("c", sluice.CustomerMax+1),
		"a b", "a/b", "é", "a\n", "a'", "legacy:pre-0005"} {
		var ok bool
		err := pool.QueryRow(ctx, `SELECT $1::text::customer_id IS NOT NULL`, c).Scan(&ok)
		valid := sluice.CustomerID(c).Valid() == ""
		switch {
		case valid && err != nil:
			t.Errorf("customer_id refuses %q, which sluice.CustomerID.Valid accepts: %v", c, err)
		case !valid && sqlState(err) != "23514":
			t.Errorf("customer_id of %q: err = %v, want SQLSTATE 23514: sluice.CustomerID.Valid refuses it (%s)", c, err, sluice.CustomerID(c).Valid())
		}
	}
}

// constraint is the constraint a database error names, "" for anything
// else.
func constraint(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.ConstraintName
	}
	return ""
}

// Goal: the ledger's rules hold against raw SQL, whatever the Go code does:
// a closed hold is never closed again or reopened (SQLSTATE SL003, which
// the store maps to sluice.ErrHoldClosed); a hold's operation, customer and
// amount never change, it is born held for its request's numbers, closed
// only by its operation's closing event while the row is in a closing
// state, and never deleted; an account balances (balance + held + paid =
// deposited, the CHECK) with no part negative, and never gives back what
// was deposited or paid; credits are append-only. Method: a store makes a
// released hold, a settled one and an open one; raw statements try to
// break each rule.
func TestRawSQLLedgerGuards(t *testing.T) {
	ctx := context.Background()
	clock := &storetest.Clock{}
	s := newStore(t, clock, time.Minute)
	released := drivePG(t, s, clock, 1, sluice.Rejected)
	settled := drivePG(t, s, clock, 2, sluice.Confirmed)
	open := drivePG(t, s, clock, 3, sluice.Broadcast)
	if _, _, err := s.Credit(ctx, sluice.Credit{Ref: "other", Customer: "raw-customer", Amount: 10}); err != nil {
		t.Fatal(err)
	}
	const raw = "00000000-0000-4000-8000-0000000000aa"
	if _, err := s.pool.Exec(ctx, rawInsertSQL, raw, "5"); err != nil {
		t.Fatal(err)
	}
	seqOf := func(id sluice.OperationID, i int) string {
		evs, err := s.Events(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if i < 0 {
			i += len(evs)
		}
		return strconv.FormatInt(evs[i].Seq, 10)
	}
	accountBefore, err := s.Account(ctx, payer)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, sql  string
		code, cons string
	}{
		{"released hold settled", `UPDATE holds SET state = 'settled' WHERE operation_id = '` + string(released.ID) + `'`, codeHoldClosed, ""},
		{"settled hold released", `UPDATE holds SET state = 'released' WHERE operation_id = '` + string(settled.ID) + `'`, codeHoldClosed, ""},
		{"settled hold reopened", `UPDATE holds SET state = 'held', closed_seq = NULL WHERE operation_id = '` + string(settled.ID) + `'`, codeHoldClosed, ""},
		{"closing event swapped", `UPDATE holds SET closed_seq = ` + seqOf(settled.ID, 0) + ` WHERE operation_id = '` + string(settled.ID) + `'`, codeHoldClosed, ""},
		{"open hold amount changed", `UPDATE holds SET amount = amount + 1 WHERE operation_id = '` + string(open.ID) + `'`, codeForbidden, ""},
		{"closed hold amount changed", `UPDATE holds SET amount = amount - 1 WHERE operation_id = '` + string(released.ID) + `'`, codeForbidden, ""},
		{"hold customer changed", `UPDATE holds SET customer = 'raw-customer' WHERE operation_id = '` + string(open.ID) + `'`, codeForbidden, ""},
		{"open hold settled while in flight", `UPDATE holds SET state = 'settled', closed_seq = ` + seqOf(open.ID, -1) + ` WHERE operation_id = '` + string(open.ID) + `'`, codeForbidden, ""},
		{"hold closed without an event", `UPDATE holds SET state = 'released' WHERE operation_id = '` + string(open.ID) + `'`, codeForbidden, ""},
		{"hold deleted", `DELETE FROM holds WHERE operation_id = '` + string(released.ID) + `'`, codeForbidden, ""},
		{"holds truncated", `TRUNCATE holds`, codeForbidden, ""},
		{"hold born settled", `INSERT INTO holds (operation_id, customer, amount, state, closed_seq) VALUES ('` + raw + `', 'raw-customer', 5, 'settled', ` + seqOf(settled.ID, -1) + `)`, codeForbidden, ""},
		{"hold for another amount", `INSERT INTO holds (operation_id, customer, amount) VALUES ('` + raw + `', 'raw-customer', 4)`, codeForbidden, ""},
		{"hold for another customer", `INSERT INTO holds (operation_id, customer, amount) VALUES ('` + raw + `', '` + string(payer) + `', 5)`, codeForbidden, ""},
		{"a second hold", `INSERT INTO holds (operation_id, customer, amount) VALUES ('` + string(open.ID) + `', '` + string(payer) + `', 1000001)`, "23505", "holds_pkey"},
		{"account unbalanced", `UPDATE accounts SET balance = balance + 1 WHERE customer = '` + string(payer) + `'`, "23514", "accounts_balanced"},
		{"account held unbalanced", `UPDATE accounts SET held = held - 1 WHERE customer = '` + string(payer) + `'`, "23514", "accounts_balanced"},
		{"account negative", `UPDATE accounts SET balance = -1, held = held + balance + 1 WHERE customer = '` + string(payer) + `'`, "23514", "accounts_balance_check"},
		{"paid taken back", `UPDATE accounts SET paid = paid - 1, balance = balance + 1 WHERE customer = '` + string(payer) + `'`, codeForbidden, ""},
		{"deposit taken back", `UPDATE accounts SET deposited = deposited - 1, balance = balance - 1 WHERE customer = '` + string(payer) + `'`, codeForbidden, ""},
		{"account deleted", `DELETE FROM accounts WHERE customer = 'raw-customer'`, codeForbidden, ""},
		{"credit changed", `UPDATE credits SET amount = amount + 1`, codeForbidden, ""},
		{"credit deleted", `DELETE FROM credits`, codeForbidden, ""},
		{"credits truncated", `TRUNCATE credits`, codeForbidden, ""},
		{"credit of nothing", `INSERT INTO credits (ref, customer, amount, created_at_ns) VALUES ('zero', 'raw-customer', 0, 0)`, "23514", "credits_amount_check"},
		{"customer changed", `UPDATE operations SET customer = 'raw-customer' WHERE id = '` + string(open.ID) + `'`, codeForbidden, ""},
	} {
		_, err := s.pool.Exec(ctx, tc.sql)
		if got := sqlState(err); got != tc.code || tc.cons != "" && constraint(err) != tc.cons {
			t.Errorf("%s: SQLSTATE %q constraint %q (err %v), want %q %q", tc.name, got, constraint(err), err, tc.code, tc.cons)
		}
	}
	// Nothing moved.
	if got, err := s.Account(ctx, payer); err != nil || got != accountBefore {
		t.Errorf("account after the refused statements: %+v (%v), want %+v", got, err, accountBefore)
	}
	for _, tc := range []struct {
		op    sluice.Operation
		state sluice.HoldState
	}{{released, sluice.HoldReleased}, {settled, sluice.HoldSettled}, {open, sluice.HoldHeld}} {
		if h, err := s.Hold(ctx, tc.op.ID); err != nil || h.State != tc.state || h.Amount != tc.op.Request.Amount || h.Customer != payer {
			t.Errorf("hold of %s after the refused statements: %+v (%v), want %s", tc.op.ID, h, err, tc.state)
		}
	}
	// The raw row's hold, born right, goes in.
	if _, err := s.pool.Exec(ctx, `INSERT INTO holds (operation_id, customer, amount) VALUES ('`+raw+`', 'raw-customer', 5)`); err != nil {
		t.Errorf("a hold born held for its request's numbers: %v", err)
	}
}

// Goal: the store maps the ledger triggers' refusals onto the contract's
// sentinels: SL003 (a close of a closed hold) is sluice.ErrHoldClosed and
// SL004 (an event whose hold action does not fit) sluice.ErrHoldAction,
// from CAS and from Resolve. The store's own checks, made under the row's
// lock, come first and answer the same, so no call through the store
// reaches these refusals (raw SQL does: TestRawSQLLedgerGuards); the
// mapping is what would keep a check the code lost telling the truth.
func TestLedgerRefusalsMapToSentinels(t *testing.T) {
	for _, tc := range []struct {
		code string
		want error
	}{{codeHoldClosed, sluice.ErrHoldClosed}, {codeHoldAction, sluice.ErrHoldAction}, {codeIllegal, sluice.ErrIllegalTransition}} {
		pg := &pgconn.PgError{Code: tc.code, Message: "refused"}
		if err := casError(sluice.Change{ID: opID(1)}, fmt.Errorf("wrapped: %w", pg)); !errors.Is(err, tc.want) {
			t.Errorf("casError(SQLSTATE %s) = %v, want %v", tc.code, err, tc.want)
		}
		if err := resolveError(sluice.Resolution{ID: opID(1)}, fmt.Errorf("wrapped: %w", pg)); !errors.Is(err, tc.want) {
			t.Errorf("resolveError(SQLSTATE %s) = %v, want %v", tc.code, err, tc.want)
		}
	}
}

// drivePG inserts operation n (paid by payer), claims it and walks it to
// state with a correct worker's writes, through the store.
func drivePG(t *testing.T, s *Store, clock *storetest.Clock, n int, state sluice.State) sluice.Operation {
	t.Helper()
	ctx := context.Background()
	mustInsert(t, s, n)
	ops, err := s.Claim(ctx, "w1", 1)
	if err != nil || len(ops) != 1 || ops[0].ID != opID(n) {
		t.Fatalf("Claim = %v, %v; want %s", ops, err, opID(n))
	}
	op := ops[0]
	path := map[sluice.State][]sluice.State{
		sluice.Validated: {sluice.Validated},
		sluice.Rejected:  {sluice.Rejected},
		sluice.Broadcast: {sluice.Validated, sluice.Signing, sluice.Signed, sluice.Broadcasting, sluice.Broadcast},
		sluice.Confirmed: {sluice.Validated, sluice.Signing, sluice.Signed, sluice.Broadcasting, sluice.Broadcast, sluice.Confirmed},
	}[state]
	if path == nil {
		t.Fatalf("drivePG: no path to %s", state)
	}
	for _, to := range path {
		c := sluice.Change{ID: op.ID, Token: op.Token, Worker: "w1", From: op.State, To: to, Hold: sluice.HoldFor(to), Note: to.String()}
		switch to {
		case sluice.Signing:
			env := envelopeOf(op, clock.Now())
			c.Envelope, c.Builds = &env, 1
		case sluice.Signed:
			env := op.Envelope
			env.Signature = []byte("sig")
			c.Envelope = &env
		case sluice.Rejected:
			c.Reason = "test"
		}
		if op, err = s.CAS(ctx, c); err != nil {
			t.Fatalf("drivePG %s->%s: %v", c.From, to, err)
		}
	}
	return op
}

// Goal: PostgreSQL refuses a credit past an Amount's range as every store
// does (storetest.CreditPastBaseUnits): NUMERIC(38,0) would take it, and
// the account could no longer be read. The account is filled by raw SQL,
// balance and deposited together (the guards allow a deposit to grow).
func TestCreditPastBaseUnits(t *testing.T) {
	s := newStore(t, &storetest.Clock{}, time.Minute)
	storetest.CreditPastBaseUnits(t, s, func(t *testing.T, _ sluice.Store, c sluice.CustomerID, d money.Amount) {
		ctx := t.Context()
		if _, _, err := s.Credit(ctx, sluice.Credit{Ref: "fill", Customer: c, Amount: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.pool.Exec(ctx, `UPDATE accounts SET balance = balance + $2::numeric, deposited = deposited + $2::numeric WHERE customer = $1`,
			string(c), strconv.FormatUint(uint64(d-1), 10)); err != nil {
			t.Fatal(err)
		}
	})
}

// Goal: events.ev_lookup keeps tron.Status as the number the store wrote
// (migration 0001: an integer column), so the numbers are the schema's,
// not Go's declaration order: 1 unknown, 2 pending, 3 included, as rows
// written by every earlier build hold them. A reordered const block (blind
// bug 279) would read every stored proof by failed receipt back as
// "pending", and old and new processes would read each other's rows
// crossed during a rolling deploy; a round trip through one build cannot
// see it, so the numbers are pinned here.
func TestEvidenceLookupNumbersAreTheSchemas(t *testing.T) {
	for _, c := range []struct {
		stored int32
		status tron.Status
		name   string
	}{{1, tron.Unknown, "unknown"}, {2, tron.Pending, "pending"}, {3, tron.Included, "included"}} {
		if got := tron.Status(c.stored); got != c.status || got.String() != c.name {
			t.Errorf("ev_lookup %d reads back as %s (%d); rows hold %d for %s", c.stored, got, int(got), c.stored, c.name)
		}
	}
}
