package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// Memory is the in-memory sluice.Store. It is safe for concurrent use: the
// HTTP front end and real worker goroutines share one, and a single mutex
// makes every method one atomic step, as a transaction would.
type Memory struct {
	clock sluice.Clock
	lease time.Duration

	mu sync.Mutex
	// rows is in insertion order, which is also "oldest first" for Claim;
	// index only looks rows up, so map order never reaches a result. meta
	// is parallel to rows.
	rows  []*sluice.Operation
	meta  []rowMeta
	index map[sluice.OperationID]int
	// open is Claim's index: every non-terminal row, in insertion order,
	// with the fields its claimability depends on (see gate).
	open []gate
	// horizon lets Claim skip the scan of open while no row can be claimed.
	horizon horizon
	// events is the whole log in Seq order; each event links to its
	// operation's previous one, and meta to the newest.
	events eventLog
	// owners is never cleared: a retired txid still belongs to its
	// operation, or a rebuild of another operation could reuse it and two
	// withdrawals would share one on-chain fate.
	owners map[tron.Txid]sluice.OperationID

	// The ledger: accounts in first-credit order, credits by ref; holds are
	// in meta, one per row (an operation's hold lives as long as its row).
	accounts []*sluice.Account
	acctIdx  map[sluice.CustomerID]int
	credits  map[string]sluice.Credit
	creditLs []sluice.Credit

	// Where rows and holds are allocated.
	rowSlab  slab[sluice.Operation]
	holdSlab slab[sluice.Hold]
}

var _ sluice.Store = (*Memory)(nil)

// NewMemory returns an empty store that judges leases and stamps rows by
// clock (the database's now()) and grants leases of the given duration on
// every claim and every successful CAS.
func NewMemory(clock sluice.Clock, lease time.Duration) *Memory {
	if clock == nil {
		panic("store.NewMemory: nil clock")
	}
	if lease <= 0 {
		panic(fmt.Sprintf("store.NewMemory: lease %s must be positive", lease))
	}
	// Room for a typical run's rows from the start: the slices and maps
	// below would otherwise grow (and copy) half a dozen times each.
	const rowsHint = 64
	return &Memory{
		clock:   clock,
		lease:   lease,
		rows:    make([]*sluice.Operation, 0, rowsHint),
		meta:    make([]rowMeta, 0, rowsHint),
		open:    make([]gate, 0, rowsHint),
		horizon: horizon{kind: horizonNever},
		index:   make(map[sluice.OperationID]int, rowsHint),
		owners:  make(map[tron.Txid]sluice.OperationID, rowsHint),
		acctIdx: make(map[sluice.CustomerID]int),
		credits: make(map[string]sluice.Credit),
	}
}

// Insert creates the operation in state requested with its creation event,
// or returns the existing row unchanged. An argument sluice.CheckNewOperation
// refuses is refused before the id is looked up, even for an existing id. It
// does not compare payloads: that is intake's job (ErrPayloadMismatch), which
// needs the stored row to do it.
func (m *Memory) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Operation{}, false, fmt.Errorf("insert %s: %w", op.ID, err)
	}
	if err := sluice.CheckNewOperation(op); err != nil {
		return sluice.Operation{}, false, fmt.Errorf("insert: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if i, ok := m.index[op.ID]; ok {
		return copyOperation(*m.rows[i]), false, nil
	}
	r := op.Request
	acct := m.account(r.Customer)
	if acct == nil || acct.Balance < r.Amount {
		have := "no account"
		if acct != nil {
			have = fmt.Sprintf("balance %d", acct.Balance)
		}
		return sluice.Operation{}, false, fmt.Errorf("insert %s: customer %s has %s, the withdrawal needs %d: %w",
			op.ID, r.Customer, have, r.Amount, sluice.ErrInsufficientFunds)
	}
	acct.Balance -= r.Amount
	acct.Held += r.Amount
	h := m.holdSlab.alloc()
	*h = sluice.Hold{Operation: op.ID, Customer: r.Customer, Amount: r.Amount, State: sluice.HoldHeld}
	now := m.clock.Now()
	row := m.rowSlab.alloc()
	*row = sluice.Operation{
		ID:          op.ID,
		Request:     op.Request,
		RequestHash: op.RequestHash,
		State:       sluice.Requested,
		NotBefore:   now,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
	i := len(m.rows)
	m.index[op.ID] = i
	m.rows = append(m.rows, row)
	m.meta = append(m.meta, rowMeta{lastEvent: -1, hold: h})
	m.regate(i)
	m.appendEvent(i, sluice.Event{
		OperationID: op.ID,
		From:        sluice.None,
		To:          sluice.Requested,
		At:          now,
		Note:        "created",
	})
	return copyOperation(*row), true, nil
}

// Get reads one operation.
func (m *Memory) Get(ctx context.Context, id sluice.OperationID) (sluice.Operation, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Operation{}, fmt.Errorf("get %s: %w", id, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, row, ok := m.row(id)
	if !ok {
		return sluice.Operation{}, notFound("get", id)
	}
	return copyOperation(*row), nil
}

// Claim leases up to limit claimable operations to worker, oldest first.
// Rows under a live lease are skipped, never waited for, as SKIP LOCKED
// would; a claim is not a transition, so it writes no event.
func (m *Memory) Claim(ctx context.Context, worker sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("claim by %s: %w", worker, err)
	}
	if err := sluice.CheckClaim(worker, limit); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	if m.horizon.idleAt(now) {
		return nil, nil
	}
	// open holds exactly the non-terminal rows in insertion order, so this
	// picks the same rows, in the same order, as a scan of every row with
	// row.Claimable(now) would, without touching a row it does not take.
	// It picks first and takes after, to allocate the answer to size, and
	// sees every gate, to leave the horizon exact.
	var buf [16]int
	picked := buf[:0]
	h := horizon{kind: horizonNever}
	for k := range m.open {
		g := &m.open[k]
		if len(picked) < limit && g.claimable(now) {
			picked = append(picked, k)
		} else {
			h.lower(g)
		}
	}
	if len(picked) == 0 {
		m.horizon = h
		return nil, nil
	}
	out := make([]sluice.Operation, len(picked))
	for j, k := range picked {
		g := &m.open[k]
		row := m.rows[g.row]
		row.Token++
		row.ClaimedBy = worker
		row.LeaseUntil = now.Add(m.lease)
		g.claimed, g.leaseUntil = true, row.LeaseUntil
		g.settle()
		h.lower(g)
		out[j] = *row
	}
	m.horizon = h
	copyOperations(out)
	return out, nil
}

// CAS applies c if the row is still (ID, Token, From). The checks run in the
// contract's order, fencing first, so a zombie always learns that it is
// fenced rather than some other story about a row it no longer owns.
func (m *Memory) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Operation{}, fmt.Errorf("cas %s: %w", c.ID, err)
	}
	if err := sluice.CheckChange(c); err != nil {
		return sluice.Operation{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i, row, ok := m.row(c.ID)
	if !ok {
		return sluice.Operation{}, notFound("cas", c.ID)
	}
	if row.Token != c.Token || row.State != c.From {
		return sluice.Operation{}, &casFencedError{id: c.ID, from: c.From, to: c.To, token: c.Token, rowState: row.State, rowToken: row.Token}
	}
	if !sluice.CanTransition(c.From, c.To) {
		return sluice.Operation{}, fmt.Errorf("cas %s %s->%s: %w", c.ID, c.From, c.To, sluice.ErrIllegalTransition)
	}
	hold, err := m.checkHold(c.ID, c.To, c.Hold)
	if err != nil {
		return sluice.Operation{}, fmt.Errorf("cas %s %s->%s: %w", c.ID, c.From, c.To, err)
	}
	if c.Envelope != nil {
		if derived := envelopeTxid(&row.Envelope, c.Envelope); c.Envelope.Txid != derived {
			// Storing it would make recovery ask the chain about a txid the
			// stored bytes can never produce.
			return sluice.Operation{}, fmt.Errorf("cas %s: envelope txid %s is not its raw_data's txid %s",
				c.ID, c.Envelope.Txid, derived)
		}
		if owner, ok := m.owners[c.Envelope.Txid]; ok && owner != c.ID {
			return sluice.Operation{}, fmt.Errorf("cas %s: txid %s owned by %s: %w",
				c.ID, c.Envelope.Txid, owner, sluice.ErrTxidTaken)
		}
	}

	// Every check passed; nothing below can fail, which is what makes the
	// step all-or-nothing.
	now := m.clock.Now()
	row.State = c.To
	// out is the caller's copy of the row's new envelope. With a new
	// envelope, the row's copy and the caller's come from one allocation
	// (each capped, so neither can reach the other); otherwise the caller's
	// is copied from the row below.
	var out sluice.Envelope
	if c.Envelope != nil {
		row.Envelope, out = copyEnvelopeTwice(*c.Envelope)
		m.owners[c.Envelope.Txid] = c.ID
	}
	if c.Builds != 0 {
		row.Builds = c.Builds
	}
	if c.Reason != "" {
		row.Reason = c.Reason
	}
	if row.FirstSentAt.IsZero() && c.FirstSend {
		row.FirstSentAt = now
	}
	// A transition ends the current park spell (the count stays).
	row.ParkReason, row.ParkedSince = "", time.Time{}
	row.UpdatedAt = now
	// A row released under this token is still writable with it (the token
	// alone decides), but such a write renews no lease: it must not invent
	// one that nobody holds.
	switch {
	case c.To.Terminal():
		row.ClaimedBy = ""
		row.LeaseUntil = time.Time{}
	case row.ClaimedBy != "":
		row.LeaseUntil = now.Add(m.lease)
	}
	m.regate(i)
	m.appendEvent(i, copyEvent(sluice.Event{
		OperationID: c.ID,
		From:        c.From,
		To:          c.To,
		Token:       c.Token,
		Worker:      c.Worker,
		At:          now,
		Txid:        row.Envelope.Txid,
		RetiredTxid: c.RetiredTxid,
		Evidence:    c.Evidence,
		Hold:        c.Hold,
		Decision:    c.Decision,
		Note:        c.Note,
	}))
	m.closeHold(hold, c.Hold)
	if c.Envelope == nil {
		return copyOperation(*row), nil
	}
	op := *row
	op.Envelope = out
	return op, nil
}

// checkHold decides, with mu held, whether entering to with action a is
// allowed for id's hold: a close exactly when entering confirmed, failed or
// rejected, and only of a hold still held. It returns the hold to close.
func (m *Memory) checkHold(id sluice.OperationID, to sluice.State, a sluice.HoldAction) (*sluice.Hold, error) {
	closing := to == sluice.Confirmed || to == sluice.Failed || to == sluice.Rejected
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
	h := m.holdOf(id)
	if h == nil {
		return nil, fmt.Errorf("operation %s has no hold: %w", id, sluice.ErrHoldClosed)
	}
	if h.State != sluice.HoldHeld {
		return nil, fmt.Errorf("hold of %s is already %s (event %d); %s refused: %w", id, h.State, h.ClosedSeq, a, sluice.ErrHoldClosed)
	}
	return h, nil
}

// closeHold applies a checked close, with mu held, after the event that
// closes it was appended.
func (m *Memory) closeHold(h *sluice.Hold, a sluice.HoldAction) {
	if h == nil {
		return
	}
	acct := m.account(h.Customer)
	acct.Held -= h.Amount
	if a == sluice.HoldSettle {
		h.State = sluice.HoldSettled
		acct.Paid += h.Amount
	} else {
		h.State = sluice.HoldReleased
		acct.Balance += h.Amount
	}
	h.ClosedSeq = int64(m.events.len())
}

// holdOf must be called with mu held; nil when id has no row (every row
// has a hold from its insert on).
func (m *Memory) holdOf(id sluice.OperationID) *sluice.Hold {
	i, ok := m.index[id]
	if !ok {
		return nil
	}
	return m.meta[i].hold
}

// account must be called with mu held; nil when the customer has none.
func (m *Memory) account(c sluice.CustomerID) *sluice.Account {
	i, ok := m.acctIdx[c]
	if !ok {
		return nil
	}
	return m.accounts[i]
}

// Release gives up the lease held under token. A stale release is a no-op,
// not an error: the caller has nothing left to undo, and reporting a failure
// would only invite it to retry something that must not happen.
func (m *Memory) Release(ctx context.Context, id sluice.OperationID, token sluice.FencingToken, after time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("release %s: %w", id, err)
	}
	if err := sluice.CheckDelay("release", id, after); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := m.index[id]
	if !ok {
		return nil
	}
	row := m.rows[i]
	// Entering a terminal state already clears the lease; testing Terminal
	// too keeps bricks untouchable even if that ever changed.
	if row.State.Terminal() || row.ClaimedBy == "" || row.Token != token {
		return nil
	}
	if after < 0 {
		after = 0
	}
	row.ClaimedBy = ""
	row.LeaseUntil = time.Time{}
	row.NotBefore = m.clock.Now().Add(after)
	m.regate(i)
	return nil
}

// Park gives up the lease held under p.Token for an operational reason.
func (m *Memory) Park(ctx context.Context, p sluice.Park) (sluice.Operation, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Operation{}, fmt.Errorf("park %s: %w", p.ID, err)
	}
	if err := sluice.CheckDelay("park", p.ID, p.After); err != nil {
		return sluice.Operation{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i, row, ok := m.row(p.ID)
	if !ok {
		return sluice.Operation{}, notFound("park", p.ID)
	}
	if row.Token != p.Token || row.State.Terminal() {
		return sluice.Operation{}, fmt.Errorf("park %s token=%d: row is %s token=%d: %w",
			p.ID, p.Token, row.State, row.Token, sluice.ErrFenced)
	}
	now := m.clock.Now()
	row.Parks++
	row.ParkReason = p.Reason
	if row.ParkedSince.IsZero() {
		row.ParkedSince = now
	}
	row.ClaimedBy = ""
	row.LeaseUntil = time.Time{}
	row.NotBefore = now.Add(max(p.After, 0))
	row.UpdatedAt = now
	m.regate(i)
	return copyOperation(*row), nil
}

// Resolve applies an operator's action, whatever lease is on the row.
func (m *Memory) Resolve(ctx context.Context, r sluice.Resolution) (sluice.Operation, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Operation{}, fmt.Errorf("resolve %s: %w", r.ID, err)
	}
	if err := sluice.CheckResolution(r); err != nil {
		return sluice.Operation{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i, row, ok := m.row(r.ID)
	if !ok {
		return sluice.Operation{}, notFound("resolve", r.ID)
	}
	if row.State != r.From {
		return sluice.Operation{}, fmt.Errorf("resolve %s %s->%s: row is %s: %w", r.ID, r.From, r.To, row.State, sluice.ErrFenced)
	}
	if r.To == r.From && r.From.Terminal() || r.To != r.From && !sluice.OperatorCanTransition(r.From, r.To) {
		return sluice.Operation{}, fmt.Errorf("resolve %s %s->%s: %w", r.ID, r.From, r.To, sluice.ErrIllegalTransition)
	}
	if !r.Txid.IsZero() && r.Txid != row.Envelope.Txid {
		// Only the current txid can have paid: every retired one was
		// proven dead before it was retired.
		return sluice.Operation{}, fmt.Errorf("resolve %s: txid %s is not the operation's txid %s: %w",
			r.ID, r.Txid, row.Envelope.Txid, sluice.ErrIllegalTransition)
	}
	hold, err := m.checkHold(r.ID, r.To, r.Hold)
	if err != nil {
		return sluice.Operation{}, fmt.Errorf("resolve %s %s->%s: %w", r.ID, r.From, r.To, err)
	}
	now := m.clock.Now()
	row.Token++ // whoever holds the lease is fenced from here on
	row.State = r.To
	row.ClaimedBy, row.LeaseUntil = "", time.Time{}
	row.ParkReason, row.ParkedSince = "", time.Time{}
	row.NotBefore = now
	row.UpdatedAt = now
	if r.To == sluice.Failed {
		row.Reason = "cancelled by operator " + r.Operator + ": " + r.Why
	}
	m.regate(i)
	txid := row.Envelope.Txid
	m.appendEvent(i, copyEvent(sluice.Event{
		OperationID: r.ID,
		From:        r.From,
		To:          r.To,
		Token:       row.Token,
		Worker:      sluice.WorkerID(sluice.OperatorPrefix + r.Operator),
		At:          now,
		Txid:        txid,
		Evidence:    r.Evidence,
		Hold:        r.Hold,
		Decision:    r.Decision,
		Note:        r.Why,
	}))
	m.closeHold(hold, r.Hold)
	return copyOperation(*row), nil
}

// List reads rows by filter, ordered by id.
func (m *Memory) List(ctx context.Context, f sluice.ListFilter) ([]sluice.Operation, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	if err := sluice.CheckListFilter(f); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// Sort the matching rows' pointers and copy only the first Limit of
	// them: a row is several hundred bytes, and a page is usually a small
	// part of what matches.
	var hits []*sluice.Operation
	for _, row := range m.rows {
		if f.Match(row) {
			hits = append(hits, row)
		}
	}
	slices.SortFunc(hits, func(a, b *sluice.Operation) int { return strings.Compare(string(a.ID), string(b.ID)) })
	if len(hits) > f.Limit {
		hits = hits[:f.Limit]
	}
	if len(hits) == 0 {
		return nil, nil
	}
	out := make([]sluice.Operation, len(hits))
	for i, row := range hits {
		out[i] = *row
	}
	copyOperations(out)
	return out, nil
}

// Census counts rows by state and the parked ones.
func (m *Memory) Census(ctx context.Context) (sluice.Census, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Census{}, fmt.Errorf("census: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var c sluice.Census
	for _, row := range m.rows {
		c.States[row.State]++
		if row.Parked() {
			c.Parked++
		}
	}
	return c, nil
}

// Credit adds a deposit once per ref.
func (m *Memory) Credit(ctx context.Context, c sluice.Credit) (sluice.Account, bool, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Account{}, false, fmt.Errorf("credit %s: %w", c.Ref, err)
	}
	if err := sluice.CheckCredit(c); err != nil {
		return sluice.Account{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if prev, ok := m.credits[c.Ref]; ok {
		if prev != c {
			return sluice.Account{}, false, fmt.Errorf("credit %s: already %d to %s, now %d to %s: %w",
				c.Ref, prev.Amount, prev.Customer, c.Amount, c.Customer, sluice.ErrPayloadMismatch)
		}
		return *m.account(c.Customer), false, nil
	}
	acct := m.account(c.Customer)
	if acct == nil {
		m.acctIdx[c.Customer] = len(m.accounts)
		acct = &sluice.Account{Customer: c.Customer}
		m.accounts = append(m.accounts, acct)
	}
	if acct.Deposited+c.Amount < acct.Deposited {
		return sluice.Account{}, false, fmt.Errorf("credit %s: the account of %s would overflow: %w", c.Ref, c.Customer, sluice.ErrInvalidOperation)
	}
	acct.Balance += c.Amount
	acct.Deposited += c.Amount
	m.credits[c.Ref] = c
	m.creditLs = append(m.creditLs, c)
	return *acct, true, nil
}

// Account reads a customer's ledger.
func (m *Memory) Account(ctx context.Context, c sluice.CustomerID) (sluice.Account, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Account{}, fmt.Errorf("account %s: %w", c, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	acct := m.account(c)
	if acct == nil {
		return sluice.Account{}, fmt.Errorf("account %q: %w", c, sluice.ErrNotFound)
	}
	return *acct, nil
}

// Hold reads an operation's hold.
func (m *Memory) Hold(ctx context.Context, id sluice.OperationID) (sluice.Hold, error) {
	if err := ctx.Err(); err != nil {
		return sluice.Hold{}, fmt.Errorf("hold %s: %w", id, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.holdOf(id)
	if h == nil {
		return sluice.Hold{}, fmt.Errorf("hold of %q: %w", id, sluice.ErrNotFound)
	}
	return *h, nil
}

// Events returns the operation's event log in Seq order.
func (m *Memory) Events(ctx context.Context, id sluice.OperationID) ([]sluice.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("events %s: %w", id, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i, _, ok := m.row(id)
	if !ok {
		return nil, notFound("events", id)
	}
	// Walk the operation's chain from its newest event back, filling out
	// from the end, so it comes out in Seq order.
	meta := m.meta[i]
	out := make([]sluice.Event, meta.events)
	p := meta.lastEvent
	for k := len(out) - 1; k >= 0; k-- {
		e := m.events.at(p)
		out[k] = copyEvent(e.Event)
		p = e.prev
	}
	return out, nil
}

// Snapshot is the whole store at one instant, for checkers that watch from
// outside. It shares nothing with the store.
type Snapshot struct {
	Operations []sluice.Operation // insertion order
	Events     []sluice.Event     // Seq order
	Accounts   []sluice.Account   // first-credit order
	Credits    []sluice.Credit    // in the order credited
	Holds      []sluice.Hold      // operation insertion order
}

// Snapshot copies every row and every event in one atomic step, so the two
// lists agree with each other.
func (m *Memory) Snapshot() Snapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Snapshot{
		Operations: make([]sluice.Operation, len(m.rows)),
		Events:     make([]sluice.Event, 0, m.events.len()),
	}
	for i, row := range m.rows {
		s.Operations[i] = *row
	}
	copyOperations(s.Operations)
	for _, chunk := range m.events.chunks {
		for _, e := range chunk {
			s.Events = append(s.Events, copyEvent(e.Event))
		}
	}
	// Accounts and Holds stay nil when empty, as they always were.
	if len(m.accounts) > 0 {
		s.Accounts = make([]sluice.Account, 0, len(m.accounts))
	}
	for _, a := range m.accounts {
		s.Accounts = append(s.Accounts, *a)
	}
	s.Credits = slices.Clone(m.creditLs)
	if len(m.rows) > 0 {
		s.Holds = make([]sluice.Hold, 0, len(m.rows)) // one per row that has one
	}
	for _, meta := range m.meta {
		if meta.hold != nil {
			s.Holds = append(s.Holds, *meta.hold)
		}
	}
	return s
}

// Open counts the operations not yet in a terminal state: a cheap question
// for a simulator that polls for the moment everything has settled.
func (m *Memory) Open() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.open)
}

// TxidOwner reports which operation a txid belongs to, current or retired.
func (m *Memory) TxidOwner(txid tron.Txid) (sluice.OperationID, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.owners[txid]
	return id, ok
}

// row must be called with mu held; it returns the row's position too, and
// false for an id it does not hold (the caller answers notFound).
func (m *Memory) row(id sluice.OperationID) (int, *sluice.Operation, bool) {
	i, ok := m.index[id]
	if !ok {
		return 0, nil, false
	}
	return i, m.rows[i], true
}

// LastSeq is the Seq of the newest event (0 before any). A caller that
// watches the store from outside (the simulator's world) reads it right
// after a write to learn which event that write appended.
func (m *Memory) LastSeq() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(m.events.len())
}

// appendEvent must be called with mu held, for the row at position i (the
// event's operation); it assigns the next Seq.
func (m *Memory) appendEvent(i int, e sluice.Event) {
	p := m.events.len()
	e.Seq = int64(p) + 1
	meta := &m.meta[i]
	m.events.append(loggedEvent{Event: e, prev: meta.lastEvent})
	meta.lastEvent = p
	meta.events++
}

func copyEvent(e sluice.Event) sluice.Event {
	if e.Evidence != nil {
		ev := *e.Evidence
		e.Evidence = &ev
	}
	if e.Decision != nil {
		d := *e.Decision
		e.Decision = &d
	}
	return e
}
