package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
)

// Options configure a Store.
type Options struct {
	// Lease is granted on every claim and renewed by every successful CAS.
	Lease time.Duration
	// Clock, if set, is the store's clock: every statement takes "now" from
	// it as a parameter. Tests use it to drive time by hand. Leave it nil in
	// production, where the database's now() judges leases, so that workers
	// whose own clocks disagree still agree on whose lease is over.
	Clock sluice.Clock
}

// Store is the PostgreSQL sluice.Store. It is safe for concurrent use; many
// Stores (in many processes) may share one database.
type Store struct {
	pool  *pgxpool.Pool
	lease time.Duration
	clock sluice.Clock // nil: the database's now()
}

var _ sluice.Store = (*Store)(nil)

// New returns a Store over pool, whose schema Migrate has brought up to date.
func New(pool *pgxpool.Pool, opt Options) *Store {
	if pool == nil {
		panic("postgres.New: nil pool")
	}
	if opt.Lease <= 0 {
		panic(fmt.Sprintf("postgres.New: lease %s must be positive", opt.Lease))
	}
	return &Store{pool: pool, lease: opt.Lease, clock: opt.Clock}
}

// SQLSTATEs raised by the schema's triggers (see the migration).
const (
	codeIllegal    = "SL001" // illegal transition, or a write to a terminal row
	codeForbidden  = "SL002" // any other write the schema refuses
	codeHoldClosed = "SL003" // a close of a closed hold (sluice.ErrHoldClosed)
	codeHoldAction = "SL004" // an event whose hold action does not fit its state (sluice.ErrHoldAction)
)

// nowSQL is the store's clock in SQL: the injected instant if there is one,
// else the database's. $1 of every statement that reads time.
const nowSQL = `COALESCE($1::bigint, sluice_now_ns())`

// nowArg is the $1 of nowSQL.
func (s *Store) nowArg() any {
	if s.clock == nil {
		return nil
	}
	return s.clock.Now().UnixNano()
}

// terminalSQL lists the terminal states; it matches sluice.State.Terminal and
// the predicate of the operations_live index, which the planner uses only if
// the query's condition is written the same way.
const terminalSQL = `('confirmed', 'failed', 'rejected', 'review')`

// opColumns are read by scanOperation, in this order.
const opColumns = `o.id::text, o.customer, o.to_address, o.amount::text, o.asset, o.request_hash, o.state::text,
	o.token, o.claimed_by, o.lease_until_ns, o.not_before_ns,
	o.txid, o.raw_data, o.signature, o.builds, o.reason,
	o.first_sent_at_ns, o.parks, o.park_reason, o.parked_since_ns,
	o.created_at_ns, o.updated_at_ns, o.seq`

// Insert creates the operation in state requested with its creation event
// and its hold, or returns the existing row unchanged. An argument
// sluice.CheckNewOperation refuses is refused before any SQL runs, even for
// an existing id. ON CONFLICT DO NOTHING makes concurrent inserts of one id
// collapse into one row and exactly one "created".
//
// One transaction: the row first, so that an existing id is a replay (a
// read, which needs no funds) whatever the customer's balance; then the
// customer's account, locked FOR UPDATE so that concurrent inserts for one
// customer take turns at the balance, checked, and moved from balance to
// held; then the event and the hold. A short balance or no account rolls
// it all back: ErrInsufficientFunds, nothing created. Every transaction
// that touches both locks the operation before the account (CAS and Resolve
// too), so they cannot deadlock on each other.
func (s *Store) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Operation{}, false, fmt.Errorf("insert %s: %w", op.ID, err)
	}
	// Before the database sees it: an id that is not a canonical lowercase
	// UUID would be a uuid syntax error, or come back under another spelling.
	if err := sluice.CheckNewOperation(op); err != nil {
		return sluice.Operation{}, false, fmt.Errorf("insert: %w", err)
	}
	var (
		out     sluice.Operation
		created bool
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		amount := strconv.FormatUint(uint64(op.Request.Amount), 10)
		row := tx.QueryRow(ctx, `
			WITH n AS (SELECT `+nowSQL+` AS now)
			INSERT INTO operations AS o (id, customer, to_address, amount, asset, request_hash, state,
				not_before_ns, created_at_ns, updated_at_ns)
			SELECT $2::uuid, $7, $3, $4::numeric, $5, $6, 'requested', n.now, n.now, n.now FROM n
			ON CONFLICT (id) DO NOTHING
			RETURNING `+opColumns,
			s.nowArg(), string(op.ID), op.Request.To[:], amount,
			op.Request.Asset, op.RequestHash, string(op.Request.Customer))
		got, err := scanOperation(row)
		if errors.Is(err, pgx.ErrNoRows) {
			// The id exists (perhaps committed a moment ago by a concurrent
			// insert this statement waited for): return it as it is.
			got, err = scanOperation(tx.QueryRow(ctx, `SELECT `+opColumns+` FROM operations o WHERE o.id = $1`, string(op.ID)))
			if err != nil {
				return err
			}
			out = got
			return nil
		}
		if err != nil {
			return err
		}
		var (
			enough  bool
			balance string
		)
		err = tx.QueryRow(ctx, `SELECT balance >= $2::numeric, balance::text FROM accounts WHERE customer = $1 FOR UPDATE`,
			string(op.Request.Customer), amount).Scan(&enough, &balance)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("customer %s has no account, the withdrawal needs %s: %w", op.Request.Customer, amount, sluice.ErrInsufficientFunds)
		case err != nil:
			return err
		case !enough:
			return fmt.Errorf("customer %s has balance %s, the withdrawal needs %s: %w", op.Request.Customer, balance, amount, sluice.ErrInsufficientFunds)
		}
		if _, err := tx.Exec(ctx, `UPDATE accounts SET balance = balance - $2::numeric, held = held + $2::numeric WHERE customer = $1`,
			string(op.Request.Customer), amount); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO events (operation_id, from_state, to_state, token, worker, at_ns, note)
			VALUES ($1, NULL, 'requested', 0, '', $2, 'created')`,
			string(op.ID), got.CreatedAt.UnixNano()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO holds (operation_id, customer, amount) VALUES ($1, $2, $3::numeric)`,
			string(op.ID), string(op.Request.Customer), amount); err != nil {
			return err
		}
		out, created = got, true
		return nil
	})
	if err != nil {
		return sluice.Operation{}, false, fmt.Errorf("insert %s: %w", op.ID, err)
	}
	return out, created, nil
}

// Get reads one operation.
func (s *Store) Get(ctx context.Context, id sluice.OperationID) (sluice.Operation, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Operation{}, fmt.Errorf("get %s: %w", id, err)
	}
	if !isUUID(id) {
		return sluice.Operation{}, fmt.Errorf("get: operation %q: %w", id, sluice.ErrNotFound)
	}
	op, err := scanOperation(s.pool.QueryRow(ctx, `SELECT `+opColumns+` FROM operations o WHERE o.id = $1`, string(id)))
	if errors.Is(err, pgx.ErrNoRows) {
		return sluice.Operation{}, fmt.Errorf("get: operation %q: %w", id, sluice.ErrNotFound)
	}
	if err != nil {
		return sluice.Operation{}, fmt.Errorf("get %s: %w", id, err)
	}
	return op, nil
}

// claimSQL leases up to $3 claimable rows to $2, oldest first. SKIP LOCKED
// is what keeps concurrent claimers from ever waiting on, or sharing, a row:
// a row another claim has locked is simply not a candidate. If a candidate
// changed after this statement's snapshot, PostgreSQL re-checks the WHERE
// clause on the new version before locking it, so an expired lease renewed
// meanwhile is not taken.
const claimSQL = `
	WITH n AS (SELECT ` + nowSQL + ` AS now),
	picked AS (
		SELECT o.id FROM operations o, n
		WHERE o.state NOT IN ` + terminalSQL + `
			AND o.not_before_ns <= n.now
			AND (o.claimed_by IS NULL OR o.lease_until_ns <= n.now)
		ORDER BY o.seq
		LIMIT $3
		FOR UPDATE OF o SKIP LOCKED
	)
	UPDATE operations o
	SET token = o.token + 1, claimed_by = $2, lease_until_ns = n.now + $4
	FROM picked, n
	WHERE o.id = picked.id
	RETURNING ` + opColumns

// Claim leases up to limit claimable operations to worker, oldest first. A
// claim is not a transition, so it writes no event.
func (s *Store) Claim(ctx context.Context, worker sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("claim by %s: %w", worker, err)
	}
	if err := sluice.CheckClaim(worker, limit); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, claimSQL, s.nowArg(), string(worker), limit, s.lease.Nanoseconds())
	if err != nil {
		return nil, fmt.Errorf("claim by %s: %w", worker, err)
	}
	type seqOp struct {
		seq int64
		op  sluice.Operation
	}
	var got []seqOp
	for rows.Next() {
		var seq int64
		op, err := scanOperationSeq(rows, &seq)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim by %s: %w", worker, err)
		}
		got = append(got, seqOp{seq, op})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim by %s: %w", worker, err)
	}
	// UPDATE ... RETURNING has no order of its own; oldest first is the
	// contract.
	sort.Slice(got, func(i, j int) bool { return got[i].seq < got[j].seq })
	out := make([]sluice.Operation, len(got))
	for i, g := range got {
		out[i] = g.op
	}
	return out, nil
}

// fenceSQL is the fencing predicate: the one condition that keeps a zombie
// (a worker whose claim was taken over) from writing. Every CAS statement
// carries it; $2 is the id, $3 the token, $4 the expected state.
const fenceSQL = `id = $2 AND token = $3 AND state = $4::op_state`

// casLockSQL locks the row if, and only if, the caller still holds it, and
// reads the store's clock once for the whole step.
const casLockSQL = `SELECT ` + nowSQL + ` FROM operations WHERE ` + fenceSQL + ` FOR UPDATE`

// casUpdateSQL writes the transition. A row released under the token is
// still writable with it (the token alone decides), but such a write renews
// no lease: it must not invent one that nobody holds. A terminal state
// clears the lease in the same write. A first send stamps FirstSentAt
// with the store's clock only while unset; every transition ends the park spell (the count stays).
const casUpdateSQL = `
	UPDATE operations o SET
		state = $5::op_state,
		txid = CASE WHEN $6::boolean THEN $7::bytea ELSE o.txid END,
		raw_data = CASE WHEN $6::boolean THEN $8::bytea ELSE o.raw_data END,
		signature = CASE WHEN $6::boolean THEN $9::bytea ELSE o.signature END,
		builds = CASE WHEN $10::integer = 0 THEN o.builds ELSE $10::integer END,
		reason = CASE WHEN $11::text = '' THEN o.reason ELSE $11::text END,
		first_sent_at_ns = CASE WHEN $13::boolean THEN COALESCE(o.first_sent_at_ns, $1::bigint) ELSE o.first_sent_at_ns END,
		park_reason = '', parked_since_ns = NULL,
		updated_at_ns = $1::bigint,
		claimed_by = CASE WHEN $5::op_state IN ` + terminalSQL + ` THEN NULL ELSE o.claimed_by END,
		lease_until_ns = CASE
			WHEN $5::op_state IN ` + terminalSQL + ` OR o.claimed_by IS NULL THEN NULL
			ELSE $1::bigint + $12::bigint END
	WHERE ` + fenceSQL + `
	RETURNING ` + opColumns

// CAS applies c if the row is still (ID, Token, From), as one transaction:
// the row, its event and the txid's ownership commit together or not at
// all. The checks run in the contract's order, fencing first, so a zombie
// always learns that it is fenced rather than some other story about a row
// it no longer owns.
func (s *Store) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Operation{}, fmt.Errorf("cas %s: %w", c.ID, err)
	}
	if err := sluice.CheckChange(c); err != nil {
		return sluice.Operation{}, err
	}
	if !isUUID(c.ID) {
		return sluice.Operation{}, fmt.Errorf("cas: operation %q: %w", c.ID, sluice.ErrNotFound)
	}
	var out sluice.Operation
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		token := int64(c.Token)
		if !isRowState(c.From) {
			// No row is ever in None (or an unknown state): the predicate
			// cannot match, and the enum would refuse the name.
			return s.whyFenced(ctx, tx, c)
		}
		var now int64
		err := tx.QueryRow(ctx, casLockSQL, s.nowArg(), string(c.ID), token, c.From.String()).Scan(&now)
		if errors.Is(err, pgx.ErrNoRows) {
			return s.whyFenced(ctx, tx, c)
		}
		if err != nil {
			return err
		}
		// The trigger enforces the table too (against raw SQL), but it
		// allows the operator's edges as well, since it cannot tell who
		// writes: this check is what keeps a worker off them. Checking here
		// first also keeps the contract's order: transition, hold, txid.
		if !sluice.CanTransition(c.From, c.To) {
			return fmt.Errorf("cas %s %s->%s: %w", c.ID, c.From, c.To, sluice.ErrIllegalTransition)
		}
		hold, err := checkHold(ctx, tx, c.ID, c.To, c.Hold)
		if err != nil {
			return fmt.Errorf("cas %s %s->%s: %w", c.ID, c.From, c.To, err)
		}
		var txid, raw, sig []byte
		if c.Envelope != nil {
			if derived := c.Envelope.Raw.Txid(); c.Envelope.Txid != derived {
				// Storing it would make recovery ask the chain about a txid
				// the stored bytes can never produce (the schema refuses it
				// too: txid_is_hash).
				return fmt.Errorf("cas %s: envelope txid %s is not its raw_data's txid %s",
					c.ID, c.Envelope.Txid, derived)
			}
			txid, raw = c.Envelope.Txid[:], c.Envelope.Raw.Marshal()
			if len(c.Envelope.Signature) > 0 {
				sig = c.Envelope.Signature
			}
		}
		got, err := scanOperation(tx.QueryRow(ctx, casUpdateSQL,
			now, string(c.ID), token, c.From.String(), c.To.String(),
			c.Envelope != nil, txid, raw, sig, c.Builds, c.Reason, s.lease.Nanoseconds(), c.FirstSend))
		if errors.Is(err, pgx.ErrNoRows) {
			// The row is locked under the predicate; only a broken
			// predicate gets here.
			return fmt.Errorf("cas %s %s->%s token=%d: update matched no row: %w", c.ID, c.From, c.To, c.Token, sluice.ErrFenced)
		}
		if err != nil {
			return err
		}
		seq, err := insertEvent(ctx, tx, event{
			id: c.ID, from: c.From, to: c.To, token: int64(c.Token), worker: string(c.Worker), now: now,
			txid: got.Envelope.Txid, retired: c.RetiredTxid, evidence: c.Evidence, hold: c.Hold, decision: c.Decision, note: c.Note,
		})
		if err != nil {
			return err
		}
		if err := closeHold(ctx, tx, hold, c.Hold, seq); err != nil {
			return err
		}
		if c.Envelope != nil {
			// Claim the txid for good. If another operation owns it (now or
			// once), DO NOTHING leaves that ownership alone and the foreign
			// key from operations refuses this row: checked now, not at
			// commit, so the caller gets ErrTxidTaken rather than a commit
			// failure.
			if _, err := tx.Exec(ctx, `INSERT INTO txid_owners (txid, operation_id) VALUES ($1, $2) ON CONFLICT (txid) DO NOTHING`,
				txid, string(c.ID)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SET CONSTRAINTS operations_txid_owner IMMEDIATE`); err != nil {
				return err
			}
		}
		out = got
		return nil
	})
	if err != nil {
		return sluice.Operation{}, casError(c, err)
	}
	return out, nil
}

// isRowState reports whether a row can be in s: the op_state enum's values.
func isRowState(s sluice.State) bool {
	for _, r := range sluice.States {
		if s == r {
			return true
		}
	}
	return false
}

// whyFenced tells ErrNotFound from ErrFenced after the fencing predicate
// matched nothing.
func (s *Store) whyFenced(ctx context.Context, tx pgx.Tx, c sluice.Change) error {
	var (
		state string
		token int64
	)
	err := tx.QueryRow(ctx, `SELECT state::text, token FROM operations WHERE id = $1`, string(c.ID)).Scan(&state, &token)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("cas: operation %q: %w", c.ID, sluice.ErrNotFound)
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("cas %s %s->%s token=%d: row is %s token=%d: %w",
		c.ID, c.From, c.To, c.Token, state, token, sluice.ErrFenced)
}

// casError maps what the database refused onto the contract's sentinels.
func casError(c sluice.Change, err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch {
		case pg.Code == codeIllegal:
			return fmt.Errorf("cas %s %s->%s: %s: %w", c.ID, c.From, c.To, pg.Message, sluice.ErrIllegalTransition)
		case pg.Code == codeHoldClosed:
			return fmt.Errorf("cas %s %s->%s: %s: %w", c.ID, c.From, c.To, pg.Message, sluice.ErrHoldClosed)
		case pg.Code == codeHoldAction:
			return fmt.Errorf("cas %s %s->%s: %s: %w", c.ID, c.From, c.To, pg.Message, sluice.ErrHoldAction)
		case pg.Code == "23505" && pg.ConstraintName == "operations_txid",
			pg.Code == "23503" && pg.ConstraintName == "operations_txid_owner":
			return fmt.Errorf("cas %s: txid owned by another operation (%s): %w", c.ID, pg.ConstraintName, sluice.ErrTxidTaken)
		}
	}
	if errors.Is(err, sluice.ErrFenced) || errors.Is(err, sluice.ErrNotFound) ||
		errors.Is(err, sluice.ErrIllegalTransition) || errors.Is(err, sluice.ErrTxidTaken) ||
		errors.Is(err, sluice.ErrHoldAction) || errors.Is(err, sluice.ErrHoldClosed) {
		return err
	}
	return fmt.Errorf("cas %s %s->%s: %w", c.ID, c.From, c.To, err)
}

// event is one row of the log as CAS and Resolve write it.
type event struct {
	id            sluice.OperationID
	from, to      sluice.State
	token         int64
	worker        string
	now           int64
	txid, retired tron.Txid
	evidence      *sluice.Evidence
	hold          sluice.HoldAction
	decision      *sluice.Decision
	note          string
}

// insertEvent appends e and returns its seq.
func insertEvent(ctx context.Context, tx pgx.Tx, e event) (int64, error) {
	var (
		evTxid                       []byte
		evExp, evMargin, evSolidTime *int64
		evSolidNumber, evLookupSolid *int64
		evLookup                     *int32
		evReceipt                    *string
		evBlock                      *int64
		evSeenSolid                  *bool
		hold, decAction, decReason   *string
		decWaited                    *int64
		decRebuilds                  *int32
	)
	if ev := e.evidence; ev != nil {
		evTxid = append([]byte(nil), ev.Txid[:]...)
		evExp, evSolidTime = nsOrNil(ev.Expiration), nsOrNil(ev.SolidTime)
		margin, number, lookup, lookupSolid := int64(ev.Margin), ev.SolidNumber, int32(ev.Lookup), ev.LookupSolid
		evMargin, evSolidNumber, evLookup, evLookupSolid = &margin, &number, &lookup, &lookupSolid
		receipt, block, seen := ev.Receipt, ev.BlockNumber, ev.SeenSolid
		evReceipt, evBlock, evSeenSolid = &receipt, &block, &seen
	}
	if e.hold != sluice.HoldKeep {
		// Checked before (checkHold): only settle and release get here.
		h := e.hold.String()
		hold = &h
	}
	if d := e.decision; d != nil {
		action, reason, waited, rebuilds := d.Action.String(), d.Reason, int64(d.Waited), int32(d.Rebuilds)
		decAction, decReason, decWaited, decRebuilds = &action, &reason, &waited, &rebuilds
	}
	var seq int64
	err := tx.QueryRow(ctx, `
		INSERT INTO events (operation_id, from_state, to_state, token, worker, at_ns, txid, retired_txid, note,
			has_evidence, ev_txid, ev_expiration_ns, ev_margin_ns, ev_solid_number, ev_solid_time_ns, ev_lookup, ev_lookup_solid,
			ev_receipt, ev_block_number, ev_seen_solid, hold_action,
			has_decision, dec_action, dec_reason, dec_waited_ns, dec_rebuilds)
		VALUES ($1, $2::op_state, $3::op_state, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
			$18, $19, $20, $21::hold_action, $22, $23::decision_action, $24, $25, $26)
		RETURNING seq`,
		string(e.id), e.from.String(), e.to.String(), e.token, e.worker, e.now,
		txidOrNil(e.txid), txidOrNil(e.retired), e.note,
		e.evidence != nil, evTxid, evExp, evMargin, evSolidNumber, evSolidTime, evLookup, evLookupSolid,
		evReceipt, evBlock, evSeenSolid, hold,
		e.decision != nil, decAction, decReason, decWaited, decRebuilds).Scan(&seq)
	return seq, err
}

// Release gives up the lease held under token. A stale release is a no-op,
// not an error: the caller has nothing left to undo, and reporting a failure
// would only invite it to retry something that must not happen.
func (s *Store) Release(ctx context.Context, id sluice.OperationID, token sluice.FencingToken, after time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("release %s: %w", id, err)
	}
	if err := sluice.CheckDelay("release", id, after); err != nil {
		return err
	}
	if !isUUID(id) {
		return nil
	}
	if after < 0 {
		after = 0
	}
	// Terminal rows are excluded here as well as by the trigger, so that a
	// stale release of a brick is a quiet no-op, not a trigger error.
	_, err := s.pool.Exec(ctx, `
		UPDATE operations SET claimed_by = NULL, lease_until_ns = NULL,
			not_before_ns = `+nowSQL+` + $4
		WHERE id = $2 AND token = $3 AND claimed_by IS NOT NULL AND state NOT IN `+terminalSQL,
		s.nowArg(), string(id), int64(token), after.Nanoseconds())
	if err != nil {
		return fmt.Errorf("release %s: %w", id, err)
	}
	return nil
}

// Events returns the operation's event log in Seq order. Every operation has
// its creation event, committed with the row, so no events means no
// operation.
func (s *Store) Events(ctx context.Context, id sluice.OperationID) ([]sluice.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("events %s: %w", id, err)
	}
	if !isUUID(id) {
		return nil, fmt.Errorf("events: operation %q: %w", id, sluice.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT seq, operation_id::text, from_state::text, to_state::text, token, worker, at_ns, txid, retired_txid, note,
			has_evidence, ev_txid, ev_expiration_ns, ev_margin_ns, ev_solid_number, ev_solid_time_ns, ev_lookup, ev_lookup_solid,
			ev_receipt, ev_block_number, ev_seen_solid, hold_action::text,
			has_decision, dec_action::text, dec_reason, dec_waited_ns, dec_rebuilds
		FROM events WHERE operation_id = $1 ORDER BY seq`, string(id))
	if err != nil {
		return nil, fmt.Errorf("events %s: %w", id, err)
	}
	evs, err := pgx.CollectRows(rows, scanEvent)
	if err != nil {
		return nil, fmt.Errorf("events %s: %w", id, err)
	}
	if len(evs) == 0 {
		return nil, fmt.Errorf("events: operation %q: %w", id, sluice.ErrNotFound)
	}
	return evs, nil
}

func scanEvent(row pgx.CollectableRow) (sluice.Event, error) {
	var (
		e                                      sluice.Event
		opID, to, worker, note                 string
		from                                   *string
		token, at                              int64
		txid, retired, evTxid                  []byte
		hasEv                                  bool
		evExp, evMargin, evNumber, evSolidTime *int64
		evLookup                               *int32
		evLookupSolid, evBlock                 *int64
		evSeenSolid                            *bool
		evReceipt, hold, decAction, decReason  *string
		hasDec                                 bool
		decWaited                              *int64
		decRebuilds                            *int32
	)
	if err := row.Scan(&e.Seq, &opID, &from, &to, &token, &worker, &at, &txid, &retired, &note,
		&hasEv, &evTxid, &evExp, &evMargin, &evNumber, &evSolidTime, &evLookup, &evLookupSolid,
		&evReceipt, &evBlock, &evSeenSolid, &hold, &hasDec, &decAction, &decReason, &decWaited, &decRebuilds); err != nil {
		return e, err
	}
	var err error
	e.OperationID, e.Token, e.Worker, e.At, e.Note = sluice.OperationID(opID), sluice.FencingToken(token), sluice.WorkerID(worker), fromNS(at), note
	if from != nil {
		if e.From, err = sluice.ParseState(*from); err != nil {
			return e, err
		}
	}
	if e.To, err = sluice.ParseState(to); err != nil {
		return e, err
	}
	if e.Txid, err = toTxid(txid); err != nil {
		return e, err
	}
	if e.RetiredTxid, err = toTxid(retired); err != nil {
		return e, err
	}
	if hasEv {
		ev := &sluice.Evidence{Margin: time.Duration(*evMargin), SolidNumber: *evNumber, Lookup: tron.Status(*evLookup)}
		if ev.Txid, err = toTxid(evTxid); err != nil {
			return e, err
		}
		if evExp != nil {
			ev.Expiration = fromNS(*evExp)
		}
		if evSolidTime != nil {
			ev.SolidTime = fromNS(*evSolidTime)
		}
		if evLookupSolid != nil {
			ev.LookupSolid = *evLookupSolid
		}
		// NULL on events written before these columns existed.
		if evReceipt != nil {
			ev.Receipt = *evReceipt
		}
		if evBlock != nil {
			ev.BlockNumber = *evBlock
		}
		// NULL before migration 0006: read as not seen solid, which a
		// proof by receipt then does not pass (Evidence.Proves). Nothing
		// acts on a stored proof again; the operator's view shows it.
		if evSeenSolid != nil {
			ev.SeenSolid = *evSeenSolid
		}
		e.Evidence = ev
	}
	if hold != nil {
		if e.Hold, err = sluice.ParseHoldAction(*hold); err != nil {
			return e, err
		}
	}
	if hasDec {
		// decision_whole: all four are set.
		d := &sluice.Decision{Reason: *decReason, Waited: time.Duration(*decWaited), Rebuilds: int(*decRebuilds)}
		if err := d.Action.UnmarshalText([]byte(*decAction)); err != nil {
			return e, err
		}
		e.Decision = d
	}
	return e, nil
}

func scanOperation(row pgx.Row) (sluice.Operation, error) {
	var seq int64
	return scanOperationSeq(row, &seq)
}

// scanOperationSeq reads opColumns; seq is the row's insertion order.
func scanOperationSeq(row pgx.Row, seq *int64) (sluice.Operation, error) {
	var (
		op                          sluice.Operation
		id, customer, amount, state string
		to, txid, raw, sig          []byte
		token, notBefore            int64
		createdAt, updatedAt        int64
		claimedBy                   *string
		leaseUntil                  *int64
		builds, parks               int32
		asset, requestHash, reasn   string
		firstSent, parkedSince      *int64
		parkReason                  string
	)
	if err := row.Scan(&id, &customer, &to, &amount, &asset, &requestHash, &state, &token, &claimedBy, &leaseUntil, &notBefore,
		&txid, &raw, &sig, &builds, &reasn, &firstSent, &parks, &parkReason, &parkedSince, &createdAt, &updatedAt, seq); err != nil {
		return op, err
	}
	op.ID = sluice.OperationID(id)
	op.Request.Customer = sluice.CustomerID(customer)
	if len(to) != len(op.Request.To) {
		return op, fmt.Errorf("operation %s: to_address has %d bytes", id, len(to))
	}
	copy(op.Request.To[:], to)
	a, err := parseAmount(amount)
	if err != nil {
		return op, fmt.Errorf("operation %s: %w", id, err)
	}
	op.Request.Amount = a
	op.Request.Asset, op.RequestHash, op.Reason = asset, requestHash, reasn
	if op.State, err = sluice.ParseState(state); err != nil {
		return op, err
	}
	op.Token = sluice.FencingToken(token)
	if claimedBy != nil {
		op.ClaimedBy = sluice.WorkerID(*claimedBy)
	}
	if leaseUntil != nil {
		op.LeaseUntil = fromNS(*leaseUntil)
	}
	op.NotBefore = fromNS(notBefore)
	if txid != nil {
		if op.Envelope.Txid, err = toTxid(txid); err != nil {
			return op, err
		}
		if op.Envelope.Raw, err = decodeRaw(raw); err != nil {
			return op, fmt.Errorf("operation %s: %w", id, err)
		}
		if len(sig) > 0 {
			op.Envelope.Signature = sig
		}
	}
	op.Builds = int(builds)
	if firstSent != nil {
		op.FirstSentAt = fromNS(*firstSent)
	}
	op.Parks, op.ParkReason = int(parks), parkReason
	if parkedSince != nil {
		op.ParkedSince = fromNS(*parkedSince)
	}
	op.CreatedAt, op.UpdatedAt = fromNS(createdAt), fromNS(updatedAt)
	return op, nil
}

// parseAmount reads a NUMERIC(38,0) as base units. NUMERIC(38,0) holds more
// than sluice's uint64 amounts; a value written by raw SQL beyond that is
// refused, never truncated.
func parseAmount(s string) (money.Amount, error) {
	a, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("amount %s does not fit in base units: %w", s, err)
	}
	return money.Amount(a), nil
}

// fromNS is the inverse of time.Time.UnixNano for the store's columns.
func fromNS(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// nsOrNil stores the zero time as NULL: UnixNano of it is not representable.
func nsOrNil(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	ns := t.UnixNano()
	return &ns
}

func txidOrNil(t tron.Txid) []byte {
	if t.IsZero() {
		return nil
	}
	return append([]byte(nil), t[:]...)
}

func toTxid(b []byte) (tron.Txid, error) {
	var t tron.Txid
	if b == nil {
		return t, nil
	}
	if len(b) != len(t) {
		return t, fmt.Errorf("txid has %d bytes, want %d", len(b), len(t))
	}
	copy(t[:], b)
	return t, nil
}

// isUUID reports whether id is a canonical lowercase UUID, the only form
// intake mints and the form a uuid column reads back. Get, CAS, Release and
// Events use it so that any other string is simply not found, as in the
// in-memory store, rather than a uuid syntax error from the database. Insert
// does not: sluice.CheckNewOperation decides what it accepts (the same form,
// and not the nil UUID), for every store alike.
func isUUID(id sluice.OperationID) bool { return id.Canonical() }
