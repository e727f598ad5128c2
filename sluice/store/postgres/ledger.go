package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"sluicesim/sluice"
)

// openHold is a hold checkHold found held and locked: what closeHold
// needs to close it.
type openHold struct {
	id       sluice.OperationID
	customer string
	amount   string // NUMERIC text, passed back as it came
}

// checkHold decides, inside the transaction that will close it, whether
// entering to with action a is allowed for id's hold: a close exactly when
// entering a closing state (sluice.HoldFor is not HoldKeep), and only of a
// hold still held. It returns the hold to close, locked, or nil.
func checkHold(ctx context.Context, tx pgx.Tx, id sluice.OperationID, to sluice.State, a sluice.HoldAction) (*openHold, error) {
	closing := sluice.HoldFor(to) != sluice.HoldKeep
	switch {
	case closing && a == sluice.HoldKeep:
		return nil, fmt.Errorf("entering %s must settle or release the hold: %w", to, sluice.ErrHoldAction)
	case !closing && a != sluice.HoldKeep:
		return nil, fmt.Errorf("entering %s may not %s the hold: %w", to, a, sluice.ErrHoldAction)
	case a != sluice.HoldSettle && a != sluice.HoldRelease && a != sluice.HoldKeep:
		return nil, fmt.Errorf("%s: %w", a, sluice.ErrHoldAction)
	case !closing:
		return nil, nil
	}
	h := &openHold{id: id}
	var (
		state     string
		closedSeq *int64
	)
	err := tx.QueryRow(ctx, `SELECT customer, amount::text, state::text, closed_seq FROM holds WHERE operation_id = $1 FOR UPDATE`,
		string(id)).Scan(&h.customer, &h.amount, &state, &closedSeq)
	if errors.Is(err, pgx.ErrNoRows) {
		// Only a row from before the ledger whose money had moved has none,
		// and such a row is terminal: no edge closes it again.
		return nil, fmt.Errorf("operation %s has no hold: %w", id, sluice.ErrHoldClosed)
	}
	if err != nil {
		return nil, err
	}
	if state != sluice.HoldHeld.String() {
		seq := int64(0)
		if closedSeq != nil {
			seq = *closedSeq
		}
		return nil, fmt.Errorf("hold of %s is already %s (event %d); %s refused: %w", id, state, seq, a, sluice.ErrHoldClosed)
	}
	return h, nil
}

// closeHold applies a checked close in the same transaction, after the
// event seq that closes it: the hold and the account move together. The
// holds trigger checks the event says the same and the row is in a closing
// state; the accounts CHECK that the account still balances.
func closeHold(ctx context.Context, tx pgx.Tx, h *openHold, a sluice.HoldAction, seq int64) error {
	if h == nil {
		return nil
	}
	state := sluice.HoldReleased
	if a == sluice.HoldSettle {
		state = sluice.HoldSettled
	}
	if _, err := tx.Exec(ctx, `UPDATE holds SET state = $2::hold_state, closed_seq = $3 WHERE operation_id = $1`,
		string(h.id), state.String(), seq); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `
		UPDATE accounts SET held = held - $2::numeric,
			paid = paid + CASE WHEN $3::boolean THEN $2::numeric ELSE 0 END,
			balance = balance + CASE WHEN $3::boolean THEN 0 ELSE $2::numeric END
		WHERE customer = $1`,
		h.customer, h.amount, a == sluice.HoldSettle)
	return err
}

// Park gives up the lease held under p.Token for an operational reason, in
// one statement: the fencing predicate (id, token, not terminal) matches the
// row or nothing. The spell starts with the first park after a transition
// (ParkedSince is kept while set); the count grows by one.
func (s *Store) Park(ctx context.Context, p sluice.Park) (sluice.Operation, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Operation{}, fmt.Errorf("park %s: %w", p.ID, err)
	}
	if err := sluice.CheckDelay("park", p.ID, p.After); err != nil {
		return sluice.Operation{}, err
	}
	if !isUUID(p.ID) {
		return sluice.Operation{}, fmt.Errorf("park: operation %q: %w", p.ID, sluice.ErrNotFound)
	}
	op, err := scanOperation(s.pool.QueryRow(ctx, `
		WITH n AS (SELECT `+nowSQL+` AS now)
		UPDATE operations o SET parks = o.parks + 1, park_reason = $4,
			parked_since_ns = COALESCE(o.parked_since_ns, n.now),
			claimed_by = NULL, lease_until_ns = NULL, not_before_ns = n.now + $5, updated_at_ns = n.now
		FROM n
		WHERE o.id = $2 AND o.token = $3 AND o.state NOT IN `+terminalSQL+`
		RETURNING `+opColumns,
		s.nowArg(), string(p.ID), int64(p.Token), p.Reason, max(p.After, 0).Nanoseconds()))
	if errors.Is(err, pgx.ErrNoRows) {
		var (
			state string
			token int64
		)
		err := s.pool.QueryRow(ctx, `SELECT state::text, token FROM operations WHERE id = $1`, string(p.ID)).Scan(&state, &token)
		if errors.Is(err, pgx.ErrNoRows) {
			return sluice.Operation{}, fmt.Errorf("park: operation %q: %w", p.ID, sluice.ErrNotFound)
		}
		if err != nil {
			return sluice.Operation{}, fmt.Errorf("park %s: %w", p.ID, err)
		}
		return sluice.Operation{}, fmt.Errorf("park %s token=%d: row is %s token=%d: %w", p.ID, p.Token, state, token, sluice.ErrFenced)
	}
	if err != nil {
		return sluice.Operation{}, fmt.Errorf("park %s: %w", p.ID, err)
	}
	return op, nil
}

// Resolve applies an operator's action in one transaction, whatever lease
// is on the row: it locks the row (waiting for a CAS in flight), checks it
// is still in r.From (ErrFenced), that an operator may take the edge
// (ErrIllegalTransition), that a paying txid is the row's own, and the
// hold action, in memory's order; then bumps the token, so the holder is
// fenced, and writes the row, the event and the hold's close together.
func (s *Store) Resolve(ctx context.Context, r sluice.Resolution) (sluice.Operation, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Operation{}, fmt.Errorf("resolve %s: %w", r.ID, err)
	}
	if err := sluice.CheckResolution(r); err != nil {
		return sluice.Operation{}, err
	}
	if !isUUID(r.ID) {
		return sluice.Operation{}, fmt.Errorf("resolve: operation %q: %w", r.ID, sluice.ErrNotFound)
	}
	var out sluice.Operation
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var (
			now     int64
			state   string
			rowTxid []byte
		)
		err := tx.QueryRow(ctx, `SELECT `+nowSQL+`, state::text, txid FROM operations WHERE id = $2 FOR UPDATE`,
			s.nowArg(), string(r.ID)).Scan(&now, &state, &rowTxid)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("resolve: operation %q: %w", r.ID, sluice.ErrNotFound)
		}
		if err != nil {
			return err
		}
		cur, err := sluice.ParseState(state)
		if err != nil {
			return err
		}
		if cur != r.From {
			return fmt.Errorf("resolve %s %s->%s: row is %s: %w", r.ID, r.From, r.To, cur, sluice.ErrFenced)
		}
		if r.To == r.From && r.From.Terminal() || r.To != r.From && !sluice.OperatorCanTransition(r.From, r.To) {
			return fmt.Errorf("resolve %s %s->%s: %w", r.ID, r.From, r.To, sluice.ErrIllegalTransition)
		}
		txid, err := toTxid(rowTxid)
		if err != nil {
			return err
		}
		if !r.Txid.IsZero() && r.Txid != txid {
			// Only the current txid can have paid: every retired one was
			// proven dead before it was retired.
			return fmt.Errorf("resolve %s: txid %s is not the operation's txid %s: %w", r.ID, r.Txid, txid, sluice.ErrIllegalTransition)
		}
		hold, err := checkHold(ctx, tx, r.ID, r.To, r.Hold)
		if err != nil {
			return fmt.Errorf("resolve %s %s->%s: %w", r.ID, r.From, r.To, err)
		}
		reason := ""
		if r.To == sluice.Failed {
			reason = "cancelled by operator " + r.Operator + ": " + r.Why
		}
		got, err := scanOperation(tx.QueryRow(ctx, `
			UPDATE operations o SET token = o.token + 1, state = $3::op_state,
				claimed_by = NULL, lease_until_ns = NULL, park_reason = '', parked_since_ns = NULL,
				not_before_ns = $1::bigint, updated_at_ns = $1::bigint,
				reason = CASE WHEN $4::text = '' THEN o.reason ELSE $4::text END
			WHERE o.id = $2
			RETURNING `+opColumns,
			now, string(r.ID), r.To.String(), reason))
		if err != nil {
			return err
		}
		seq, err := insertEvent(ctx, tx, event{
			id: r.ID, from: r.From, to: r.To, token: int64(got.Token), worker: sluice.OperatorPrefix + r.Operator, now: now,
			txid: txid, evidence: r.Evidence, hold: r.Hold, decision: r.Decision, note: r.Why,
		})
		if err != nil {
			return err
		}
		if err := closeHold(ctx, tx, hold, r.Hold, seq); err != nil {
			return err
		}
		out = got
		return nil
	})
	if err != nil {
		return sluice.Operation{}, resolveError(r, err)
	}
	return out, nil
}

// resolveError maps what the database refused onto the contract's
// sentinels, as casError does for CAS.
func resolveError(r sluice.Resolution, err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case codeIllegal:
			return fmt.Errorf("resolve %s %s->%s: %s: %w", r.ID, r.From, r.To, pg.Message, sluice.ErrIllegalTransition)
		case codeHoldClosed:
			return fmt.Errorf("resolve %s %s->%s: %s: %w", r.ID, r.From, r.To, pg.Message, sluice.ErrHoldClosed)
		case codeHoldAction:
			return fmt.Errorf("resolve %s %s->%s: %s: %w", r.ID, r.From, r.To, pg.Message, sluice.ErrHoldAction)
		}
	}
	for _, s := range []error{sluice.ErrFenced, sluice.ErrNotFound, sluice.ErrIllegalTransition, sluice.ErrHoldAction, sluice.ErrHoldClosed} {
		if errors.Is(err, s) {
			return err
		}
	}
	return fmt.Errorf("resolve %s %s->%s: %w", r.ID, r.From, r.To, err)
}

// List reads rows by filter, ordered by id. An id is a uuid column, whose
// order is the order of its canonical text (fixed-width lowercase hex with
// hyphens in fixed places), so ORDER BY id is the text order store.Memory
// sorts by; an After that is not a canonical id is compared as text, byte
// by byte (COLLATE "C"), as Go compares strings.
func (s *Store) List(ctx context.Context, f sluice.ListFilter) ([]sluice.Operation, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	if err := sluice.CheckListFilter(f); err != nil {
		return nil, err
	}
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if len(f.States) > 0 {
		names := make([]string, len(f.States))
		for i, st := range f.States {
			names[i] = st.String()
		}
		where = append(where, `o.state = ANY(`+arg(names)+`::op_state[])`)
	}
	if f.Parked {
		// sluice.Operation.Parked.
		where = append(where, `o.park_reason <> '' AND o.state NOT IN `+terminalSQL)
	}
	switch {
	case f.After == "":
	case isUUID(f.After):
		where = append(where, `o.id > `+arg(string(f.After))+`::uuid`)
	default:
		where = append(where, `o.id::text COLLATE "C" > `+arg(string(f.After))+`::text COLLATE "C"`)
	}
	q := `SELECT ` + opColumns + ` FROM operations o`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY o.id LIMIT ` + arg(f.Limit)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	ops, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (sluice.Operation, error) { return scanOperation(row) })
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	return ops, nil
}

// Census counts rows by state and the parked ones, in one statement (one
// snapshot).
func (s *Store) Census(ctx context.Context) (sluice.Census, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Census{}, fmt.Errorf("census: %w", err)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT state::text, count(*), count(*) FILTER (WHERE park_reason <> '' AND state NOT IN `+terminalSQL+`)
		FROM operations GROUP BY state`)
	if err != nil {
		return sluice.Census{}, fmt.Errorf("census: %w", err)
	}
	defer rows.Close()
	var c sluice.Census
	for rows.Next() {
		var (
			state    string
			n, parks int64
		)
		if err := rows.Scan(&state, &n, &parks); err != nil {
			return sluice.Census{}, fmt.Errorf("census: %w", err)
		}
		st, err := sluice.ParseState(state)
		if err != nil {
			return sluice.Census{}, fmt.Errorf("census: %w", err)
		}
		c.States[st] = int(n)
		c.Parked += int(parks)
	}
	if err := rows.Err(); err != nil {
		return sluice.Census{}, fmt.Errorf("census: %w", err)
	}
	return c, nil
}

// accountColumns are read by scanAccount, in this order.
const accountColumns = `customer, balance::text, held::text, paid::text, deposited::text`

func scanAccount(row pgx.Row) (sluice.Account, error) {
	var (
		a                              sluice.Account
		customer                       string
		balance, held, paid, deposited string
	)
	if err := row.Scan(&customer, &balance, &held, &paid, &deposited); err != nil {
		return a, err
	}
	a.Customer = sluice.CustomerID(customer)
	var err error
	if a.Balance, err = parseAmount(balance); err != nil {
		return a, fmt.Errorf("account %s: balance: %w", customer, err)
	}
	if a.Held, err = parseAmount(held); err != nil {
		return a, fmt.Errorf("account %s: held: %w", customer, err)
	}
	if a.Paid, err = parseAmount(paid); err != nil {
		return a, fmt.Errorf("account %s: paid: %w", customer, err)
	}
	if a.Deposited, err = parseAmount(deposited); err != nil {
		return a, fmt.Errorf("account %s: deposited: %w", customer, err)
	}
	return a, nil
}

// Credit adds a deposit once per ref, in one transaction: the account is
// created if new, the credit row claims the ref (ON CONFLICT DO NOTHING:
// concurrent credits of one ref collapse into one), and only the call whose
// row went in moves the account. A ref already used is compared with the
// stored credit: the same numbers are a replay (the account as it is now),
// others ErrPayloadMismatch, and the rollback undoes an account this call
// created for it.
func (s *Store) Credit(ctx context.Context, c sluice.Credit) (sluice.Account, bool, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Account{}, false, fmt.Errorf("credit %s: %w", c.Ref, err)
	}
	if err := sluice.CheckCredit(c); err != nil {
		return sluice.Account{}, false, err
	}
	var (
		out      sluice.Account
		credited bool
	)
	amount := strconv.FormatUint(uint64(c.Amount), 10)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO accounts (customer) VALUES ($1) ON CONFLICT (customer) DO NOTHING`, string(c.Customer)); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO credits (ref, customer, amount, created_at_ns) VALUES ($2, $3, $4::numeric, `+nowSQL+`)
			ON CONFLICT (ref) DO NOTHING`,
			s.nowArg(), c.Ref, string(c.Customer), amount)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			var prevCustomer, prevAmount string
			if err := tx.QueryRow(ctx, `SELECT customer, amount::text FROM credits WHERE ref = $1`, c.Ref).Scan(&prevCustomer, &prevAmount); err != nil {
				return err
			}
			if prevCustomer != string(c.Customer) || prevAmount != amount {
				return fmt.Errorf("credit %s: already %s to %s, now %s to %s: %w",
					c.Ref, prevAmount, prevCustomer, amount, c.Customer, sluice.ErrPayloadMismatch)
			}
			out, err = scanAccount(tx.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts WHERE customer = $1`, string(c.Customer)))
			return err
		}
		// NUMERIC(38,0) holds more than an Amount: a deposited total past
		// base units would commit and then fail every read of the account
		// (parseAmount). Refused as store.Memory refuses it, before the
		// write, and the rollback undoes the credit row.
		out, err = scanAccount(tx.QueryRow(ctx, `
			UPDATE accounts SET balance = balance + $2::numeric, deposited = deposited + $2::numeric
			WHERE customer = $1 AND deposited + $2::numeric <= $3::numeric RETURNING `+accountColumns,
			string(c.Customer), amount, strconv.FormatUint(math.MaxUint64, 10)))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("credit %s: the account of %s would overflow: %w", c.Ref, c.Customer, sluice.ErrInvalidOperation)
		}
		credited = err == nil
		return err
	})
	if err != nil {
		if errors.Is(err, sluice.ErrPayloadMismatch) || errors.Is(err, sluice.ErrInvalidOperation) {
			return sluice.Account{}, false, err
		}
		return sluice.Account{}, false, fmt.Errorf("credit %s: %w", c.Ref, err)
	}
	return out, credited, nil
}

// Account reads a customer's ledger. A string that is not a customer id has
// no account, as in store.Memory: it is not found rather than a domain
// error from the database.
func (s *Store) Account(ctx context.Context, c sluice.CustomerID) (sluice.Account, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Account{}, fmt.Errorf("account %s: %w", c, err)
	}
	if c.Valid() != "" {
		return sluice.Account{}, fmt.Errorf("account %q: %w", c, sluice.ErrNotFound)
	}
	a, err := scanAccount(s.pool.QueryRow(ctx, `SELECT `+accountColumns+` FROM accounts WHERE customer = $1`, string(c)))
	if errors.Is(err, pgx.ErrNoRows) {
		return sluice.Account{}, fmt.Errorf("account %q: %w", c, sluice.ErrNotFound)
	}
	if err != nil {
		return sluice.Account{}, fmt.Errorf("account %s: %w", c, err)
	}
	return a, nil
}

// Hold reads an operation's hold.
func (s *Store) Hold(ctx context.Context, id sluice.OperationID) (sluice.Hold, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Hold{}, fmt.Errorf("hold %s: %w", id, err)
	}
	if !isUUID(id) {
		return sluice.Hold{}, fmt.Errorf("hold of %q: %w", id, sluice.ErrNotFound)
	}
	var (
		h                      sluice.Hold
		opID, customer, amount string
		state                  string
		closedSeq              *int64
	)
	err := s.pool.QueryRow(ctx, `SELECT operation_id::text, customer, amount::text, state::text, closed_seq FROM holds WHERE operation_id = $1`,
		string(id)).Scan(&opID, &customer, &amount, &state, &closedSeq)
	if errors.Is(err, pgx.ErrNoRows) {
		return sluice.Hold{}, fmt.Errorf("hold of %q: %w", id, sluice.ErrNotFound)
	}
	if err != nil {
		return sluice.Hold{}, fmt.Errorf("hold %s: %w", id, err)
	}
	h.Operation, h.Customer = sluice.OperationID(opID), sluice.CustomerID(customer)
	if h.Amount, err = parseAmount(amount); err != nil {
		return sluice.Hold{}, fmt.Errorf("hold %s: %w", id, err)
	}
	if h.State, err = sluice.ParseHoldState(state); err != nil {
		return sluice.Hold{}, fmt.Errorf("hold %s: %w", id, err)
	}
	if closedSeq != nil {
		h.ClosedSeq = *closedSeq
	}
	return h, nil
}
