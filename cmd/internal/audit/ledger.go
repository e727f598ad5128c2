package audit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/money"
)

// legacyCustomer owns the rows from before the ledger: migration 0005 of the
// PostgreSQL store names it, and gives a hold only to those of its rows
// whose money had not yet moved (TestLegacyCustomerIsTheMigrations compares
// the two spellings).
const legacyCustomer sluice.CustomerID = "legacy:pre-0005"

// Ledger is the customers' money as the database keeps it (every credit,
// account and hold), read in one transaction with what funds judges it by:
// every row's state and request and the event log's transitions, as of the
// same moment.
//
// One moment is what makes funds judgeable on a live system. A transition
// commits its row, its event, its hold's close and its account's numbers
// together, so one snapshot of all of them agrees by construction; the rows
// read one by one (ReadStore) and the chain read after them cannot, which
// is why the chain's invariants leave what is in flight to the next audit.
// Funds needs no such deferral: an operation not yet terminal in the
// snapshot must hold its amount, and nothing that will settle or release it
// later is in the snapshot to be judged.
type Ledger struct {
	Credits  []sluice.Credit  // every deposit, in the order made
	Accounts []sluice.Account // by customer
	Holds    []sluice.Hold    // in the order of their operations
	// Operations are the rows (insertion order) with what funds reads of
	// them: id, state, customer and amount. Events is the log (Seq order)
	// with its transitions, hold actions, writers and times.
	Operations []sluice.Operation
	Events     []sluice.Event
}

// ReadLedger reads the ledger and the rows' states and log in one
// REPEATABLE READ transaction (read only): one snapshot of the database.
// It reads the tables with plain SQL: the store's readers each take a
// connection of their own, which would read each at another moment.
func ReadLedger(ctx context.Context, pool *pgxpool.Pool) (*Ledger, error) {
	l := &Ledger{}
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if l.Credits, err = collect(ctx, tx, `SELECT ref, customer, amount::text FROM credits ORDER BY created_at_ns, ref`, scanCredit); err != nil {
			return fmt.Errorf("credits: %w", err)
		}
		if l.Accounts, err = collect(ctx, tx, `SELECT customer, balance::text, held::text, paid::text, deposited::text FROM accounts ORDER BY customer`, scanAccount); err != nil {
			return fmt.Errorf("accounts: %w", err)
		}
		if l.Holds, err = collect(ctx, tx, `
			SELECT h.operation_id::text, h.customer, h.amount::text, h.state::text, h.closed_seq
			FROM holds h LEFT JOIN operations o ON o.id = h.operation_id ORDER BY o.seq, h.operation_id`, scanHold); err != nil {
			return fmt.Errorf("holds: %w", err)
		}
		if l.Operations, err = collect(ctx, tx, `SELECT id::text, state::text, customer, amount::text FROM operations ORDER BY seq`, scanRow); err != nil {
			return fmt.Errorf("operations: %w", err)
		}
		if l.Events, err = collect(ctx, tx, `
			SELECT seq, operation_id::text, from_state::text, to_state::text, hold_action::text, worker, token, at_ns
			FROM events ORDER BY seq`, scanTransition); err != nil {
			return fmt.Errorf("events: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the ledger: %w", err)
	}
	return l, nil
}

func collect[T any](ctx context.Context, tx pgx.Tx, sql string, scan func(pgx.CollectableRow) (T, error)) ([]T, error) {
	rows, err := tx.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scan)
}

// amount reads a NUMERIC(38,0) as base units, as the store does.
func amount(s string) (money.Amount, error) {
	a, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("amount %s does not fit in base units: %w", s, err)
	}
	return money.Amount(a), nil
}

// amounts reads each of ss into its destination, in order.
func amounts(ss []string, dst ...*money.Amount) error {
	for i, s := range ss {
		a, err := amount(s)
		if err != nil {
			return err
		}
		*dst[i] = a
	}
	return nil
}

func scanCredit(row pgx.CollectableRow) (sluice.Credit, error) {
	var c sluice.Credit
	var customer, amt string
	if err := row.Scan(&c.Ref, &customer, &amt); err != nil {
		return c, err
	}
	c.Customer = sluice.CustomerID(customer)
	err := amounts([]string{amt}, &c.Amount)
	return c, err
}

func scanAccount(row pgx.CollectableRow) (sluice.Account, error) {
	var a sluice.Account
	var customer, balance, held, paid, deposited string
	if err := row.Scan(&customer, &balance, &held, &paid, &deposited); err != nil {
		return a, err
	}
	a.Customer = sluice.CustomerID(customer)
	if err := amounts([]string{balance, held, paid, deposited}, &a.Balance, &a.Held, &a.Paid, &a.Deposited); err != nil {
		return a, fmt.Errorf("account %s: %w", customer, err)
	}
	return a, nil
}

func scanHold(row pgx.CollectableRow) (sluice.Hold, error) {
	var h sluice.Hold
	var id, customer, amt, state string
	var closed *int64
	if err := row.Scan(&id, &customer, &amt, &state, &closed); err != nil {
		return h, err
	}
	h.Operation, h.Customer = sluice.OperationID(id), sluice.CustomerID(customer)
	if err := amounts([]string{amt}, &h.Amount); err != nil {
		return h, fmt.Errorf("hold of %s: %w", id, err)
	}
	var err error
	if h.State, err = sluice.ParseHoldState(state); err != nil {
		return h, fmt.Errorf("hold of %s: %w", id, err)
	}
	if closed != nil {
		h.ClosedSeq = *closed
	}
	return h, nil
}

func scanRow(row pgx.CollectableRow) (sluice.Operation, error) {
	var op sluice.Operation
	var id, state, customer, amt string
	if err := row.Scan(&id, &state, &customer, &amt); err != nil {
		return op, err
	}
	op.ID, op.Request.Customer = sluice.OperationID(id), sluice.CustomerID(customer)
	var err error
	if op.State, err = sluice.ParseState(state); err != nil {
		return op, fmt.Errorf("operation %s: %w", id, err)
	}
	if err := amounts([]string{amt}, &op.Request.Amount); err != nil {
		return op, fmt.Errorf("operation %s: %w", id, err)
	}
	return op, nil
}

func scanTransition(row pgx.CollectableRow) (sluice.Event, error) {
	var e sluice.Event
	var id, to, worker string
	var from, hold *string
	var token, at int64
	if err := row.Scan(&e.Seq, &id, &from, &to, &hold, &worker, &token, &at); err != nil {
		return e, err
	}
	e.OperationID, e.Worker, e.Token, e.At = sluice.OperationID(id), sluice.WorkerID(worker), sluice.FencingToken(token), time.Unix(0, at).UTC()
	var err error
	if from != nil {
		if e.From, err = sluice.ParseState(*from); err != nil {
			return e, fmt.Errorf("event #%d: %w", e.Seq, err)
		}
	}
	if e.To, err = sluice.ParseState(to); err != nil {
		return e, fmt.Errorf("event #%d: %w", e.Seq, err)
	}
	if hold != nil {
		if e.Hold, err = sluice.ParseHoldAction(*hold); err != nil {
			return e, fmt.Errorf("event #%d: %w", e.Seq, err)
		}
	}
	return e, nil
}

// Snapshot is what funds judges: the rows, the log and the ledger of one
// moment, the credits table standing for the deposits (a live system has
// no other record of what the customers put in: a credit row nobody made
// goes unnoticed, a credit counted twice into an account does not), and
// every account that does not add up at the read as a ledger break.
//
// The legacy customer's rows that migration 0005 left without a hold (their
// money moved before the ledger existed: confirmed, failed or rejected by
// then) are left out, with their events: there is nothing of theirs to
// judge, and their creations would read as holds never closed. Legacy rows
// with a hold are judged like any other.
func (l *Ledger) Snapshot() *model.Snapshot {
	held := make(map[sluice.OperationID]bool, len(l.Holds))
	for _, h := range l.Holds {
		held[h.Operation] = true
	}
	out := make(map[sluice.OperationID]bool)
	s := &model.Snapshot{Deposits: l.Credits, Accounts: l.Accounts, Holds: l.Holds}
	for _, op := range l.Operations {
		if legacyUnheld(op, held) {
			out[op.ID] = true
			continue
		}
		s.Operations = append(s.Operations, op)
	}
	for _, e := range l.Events {
		if !out[e.OperationID] {
			s.Events = append(s.Events, e)
		}
	}
	if len(s.Deposits) == 0 && len(s.Accounts) == 0 && len(s.Holds) == 0 && len(s.Operations) > 0 {
		// funds judges nothing without a ledger (a snapshot from before
		// holds). The database has one: every row here asks for a hold,
		// and an empty ledger is not a balanced one.
		s.LedgerBreaks = append(s.LedgerBreaks, fmt.Sprintf("at the audit's read: the database holds %d operations but no credit, account or hold",
			len(s.Operations)))
	}
	for _, a := range l.Accounts {
		if !a.Balanced() {
			s.LedgerBreaks = append(s.LedgerBreaks, fmt.Sprintf("at the audit's read: account %s has balance %d + held %d + paid %d != deposited %d",
				a.Customer, a.Balance, a.Held, a.Paid, a.Deposited))
		}
	}
	return s
}

// legacyUnheld: a row of the legacy customer without a hold, whose money
// moved before the ledger (see Ledger.Snapshot). One in flight or in review
// without a hold is not left out: the migration gave every such row one.
func legacyUnheld(op sluice.Operation, held map[sluice.OperationID]bool) bool {
	return op.Request.Customer == legacyCustomer && !held[op.ID] && sluice.HoldFor(op.State) != sluice.HoldKeep
}

// Money is what the audit read of the ledger, for the report.
type Money struct {
	Accounts  int          `json:"accounts"`
	Credits   int          `json:"credits"`
	Deposited money.Amount `json:"deposited"` // the credits' sum, base units
	Held      int          `json:"holds_held"`
	Settled   int          `json:"holds_settled"`
	Released  int          `json:"holds_released"`
	// Legacy counts the rows from before the ledger that funds left out.
	Legacy int `json:"legacy_left_out"`
}

func (l *Ledger) summary() Money {
	m := Money{Accounts: len(l.Accounts), Credits: len(l.Credits)}
	for _, c := range l.Credits {
		m.Deposited += c.Amount
	}
	held := make(map[sluice.OperationID]bool, len(l.Holds))
	for _, h := range l.Holds {
		held[h.Operation] = true
		switch h.State {
		case sluice.HoldHeld:
			m.Held++
		case sluice.HoldSettled:
			m.Settled++
		case sluice.HoldReleased:
			m.Released++
		}
	}
	for _, op := range l.Operations {
		if legacyUnheld(op, held) {
			m.Legacy++
		}
	}
	return m
}
