package sluice

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
)

// OperationID is the client-minted id of a withdrawal: a canonical lowercase
// UUID. It is the primary key, which is what makes intake idempotent.
type OperationID string

// WorkerID names a worker process (one incarnation).
type WorkerID string

// FencingToken is incremented by every claim of an operation. Every write a
// worker makes is a compare-and-swap on (id, token, state), so a worker whose
// lease expired (a zombie) writes nothing.
type FencingToken uint64

// Asset is the only asset sluice pays out.
const Asset = "USDT-TRC20"

// Request is what the client asked for. It never changes after intake.
type Request struct {
	// Customer is whose balance pays: intake holds Amount of it.
	Customer CustomerID
	To       tron.Address
	Amount   money.Amount
	Asset    string
}

// Envelope is the current transaction of an operation: its raw_data, the
// txid derived from it, and the signature once there is one.
//
// Invariant: Txid == Raw.Txid() whenever Txid is set.
type Envelope struct {
	Txid      tron.Txid
	Raw       tron.RawData
	Signature []byte // empty until the signing -> signed write
}

// Operation is one withdrawal row.
type Operation struct {
	ID          OperationID
	Request     Request
	RequestHash string // hex sha256 of the normalized request; see intake
	State       State

	// Token is the fencing token of the latest claim (0: never claimed).
	// Invariant: Token > 0 whenever ClaimedBy is set.
	Token      FencingToken
	ClaimedBy  WorkerID  // "" when no lease is held
	LeaseUntil time.Time // zero when no lease is held; judged by the store's clock
	NotBefore  time.Time // the operation is not claimable before this (store clock)

	Envelope Envelope // zero until validated -> signing
	Builds   int      // envelopes built so far (1 after the first build)
	Reason   string   // why the operation failed or was rejected

	// FirstSentAt is when the first envelope's write-ahead to broadcasting
	// committed, on the store's clock (Change.FirstSend): the stuck policy
	// measures waiting from it to the solid block's time of its evidence,
	// which is never later than now, so the wait it reads is never longer
	// than the real one. A chain time read before the write-ahead is not
	// used: a slow answer or a lagging node makes it minutes old.
	FirstSentAt time.Time
	// Parks counts, over the operation's life, the times a worker parked it
	// for an operational reason (a refusal for bandwidth or energy, a failed
	// receipt, an unreachable signer). ParkReason and ParkedSince
	// describe the current spell: set by a park, cleared by the next
	// transition, so a non-empty ParkReason means "parked now".
	Parks       int
	ParkReason  string
	ParkedSince time.Time // store clock

	CreatedAt time.Time
	UpdatedAt time.Time
}

// Claimable reports whether a claim at now may take the row: non-terminal,
// NotBefore reached, and no live lease (a lease is live while LeaseUntil is
// after now). It is the WHERE clause of every store's claim, stated once
// here because the simulator also reasons with it (which writes change
// what a claim could see).
func (o Operation) Claimable(now time.Time) bool {
	if o.State.Terminal() || o.NotBefore.After(now) {
		return false
	}
	return o.ClaimedBy == "" || !o.LeaseUntil.After(now)
}

// CheckClaim refuses a claim's arguments before any store work: a limit
// that is not positive, or an empty worker, which would hold a lease that
// looks like no lease at all (ClaimedBy == ""), so the next claimer would
// take the row at once. Every store calls it.
func CheckClaim(worker WorkerID, limit int) error {
	if limit <= 0 {
		return fmt.Errorf("claim by %s: limit %d must be positive", worker, limit)
	}
	if worker == "" {
		return errors.New("claim: empty worker id")
	}
	return nil
}

// CheckChange refuses a Change carrying a value no store can keep, before
// any store work, as CheckClaim and CheckNewOperation refuse theirs: Builds
// outside [0, math.MaxInt32] (PostgreSQL's integer column, >= 0), a
// decision whose action is none of the Actions (its enum) or whose Rebuilds
// is out of an integer column's range. Every store calls it, so that the
// in-memory store refuses what the schema refuses, and a core writing such
// a value fails in simulation as it would against PostgreSQL. It is a bad
// argument, not a story about the row, so it comes before fencing.
func CheckChange(c Change) error {
	if c.Builds < 0 || c.Builds > math.MaxInt32 {
		return fmt.Errorf("cas %s: builds %d outside [0, %d]: %w", c.ID, c.Builds, math.MaxInt32, ErrInvalidChange)
	}
	return checkDecision("cas", c.ID, c.Decision)
}

// checkDecision refuses a decision (nil is none) that no store can keep:
// an action outside the decision enum, Rebuilds outside an int32. A
// Change and a Resolution both carry one.
func checkDecision(what string, id OperationID, d *Decision) error {
	switch {
	case d == nil:
	case int(d.Action) >= len(actionNames):
		return fmt.Errorf("%s %s: decision %s is no action: %w", what, id, d.Action, ErrInvalidChange)
	case d.Rebuilds < math.MinInt32 || d.Rebuilds > math.MaxInt32:
		return fmt.Errorf("%s %s: decision rebuilds %d outside an int32: %w", what, id, d.Rebuilds, ErrInvalidChange)
	}
	return nil
}

// DelayMax bounds a Park's or Release's delay. No worker means a longer
// one, and a store keeps NotBefore in nanoseconds since 1970, which an
// int64 holds only until 2262.
const DelayMax = 100 * 365 * 24 * time.Hour

// CheckDelay refuses a Park's or Release's delay (what names the call)
// beyond DelayMax, before any store work.
func CheckDelay(what string, id OperationID, after time.Duration) error {
	if after > DelayMax {
		return fmt.Errorf("%s %s: delay %s longer than %s: %w", what, id, after, DelayMax, ErrInvalidChange)
	}
	return nil
}

// Evidence is the proof of death filed with every rebuild: the solid block
// whose time is past the old envelope's expiration plus the safety margin,
// and the lookup made after it that found the txid unknown. Anyone can check
// it against the chain after the fact.
type Evidence struct {
	Txid        tron.Txid
	Expiration  time.Time
	Margin      time.Duration
	SolidNumber int64
	SolidTime   time.Time
	Lookup      tron.Status // Unknown, or the rebuild was not allowed
	// LookupSolid is the solid block number of the node that answered the
	// lookup (tron.TxInfo.NodeSolid): its Unknown covers blocks up to it
	// only, so it must reach SolidNumber for the evidence to prove death.
	LookupSolid int64
	// Receipt and BlockNumber, when the lookup found the txid Included: a
	// receipt other than SUCCESS in a block at or below SolidNumber is the
	// other proof of death. The transaction is on chain for good, it moved
	// nothing, and a txid is never included twice.
	Receipt     string
	BlockNumber int64
	// SeenSolid, with Lookup Included: the node that answered the lookup
	// calls the including block solid (tron.TxInfo.Solid). Without it a
	// failed receipt proves nothing, however low its block: behind a
	// balancer, a node left on an orphaned fork shows the orphaned block's
	// receipt at a height another node's solid block covers, while on the
	// canonical chain the transaction went back to the pools and may still
	// pay. Only the node that showed the receipt can say its block is final.
	SeenSolid bool
}

// String is a one-line summary for logs and traces.
func (e Evidence) String() string {
	var a [160]byte
	return string(e.appendTo(a[:0]))
}

// Proves reports whether the evidence establishes death: the solid time has
// reached expiration + margin, and a node that had itself seen every block
// up to that solid block did not know the txid. The last condition matters
// when the two reads reach different nodes (a load balancer, a failover):
// a node behind the one that gave the solid block answers "unknown" for a
// transaction already included below it.
//
// A txid found Included proves death only by a failure receipt in a block
// that is solid both on the node that showed it and at or below the cited
// solid block: it is on chain for good, moved nothing, and cannot be
// included again.
func (e Evidence) Proves() bool {
	if e.Lookup == tron.Included {
		return e.Receipt != "" && e.Receipt != tron.ReceiptSuccess && e.SeenSolid &&
			e.BlockNumber > 0 && e.BlockNumber <= e.SolidNumber
	}
	return e.Lookup == tron.Unknown && e.LookupSolid >= e.SolidNumber &&
		!e.SolidTime.Before(e.Expiration.Add(e.Margin))
}

// Event is one row of the append-only event log. Every transition writes one
// in the same atomic step as the row, so the log cannot disagree with the
// state it audits.
type Event struct {
	Seq         int64 // store-wide order, from 1
	OperationID OperationID
	From, To    State // From is None for the creation event
	Token       FencingToken
	Worker      WorkerID
	At          time.Time // store clock
	Txid        tron.Txid // the operation's txid after the transition (zero if none)
	RetiredTxid tron.Txid // on a rebuild: the txid given up
	Evidence    *Evidence // on a rebuild from broadcasting or broadcast: the proof
	Hold        HoldAction
	Decision    *Decision // the stuck policy's decision behind a rebuild, cancel or review
	Note        string
}

// Change is a fenced compare-and-swap: it applies only if the row is still
// (ID, Token, From). It writes the new state, the mutable fields given, and
// the event, renews the lease, and clears the lease on a terminal state.
type Change struct {
	ID     OperationID
	Token  FencingToken
	Worker WorkerID
	From   State
	To     State

	Envelope *Envelope // nil: unchanged. Set: replaces the envelope.
	Builds   int       // 0: unchanged; otherwise the new build count
	Reason   string    // "" : unchanged

	RetiredTxid tron.Txid
	Evidence    *Evidence
	// Hold closes the operation's hold in the same atomic step: required
	// (settle or release) when entering confirmed, failed or rejected,
	// refused anywhere else (ErrHoldAction), refused on a closed hold
	// (ErrHoldClosed).
	Hold     HoldAction
	Decision *Decision
	// FirstSend marks a write-ahead to broadcasting: the store stamps
	// FirstSentAt with its own clock while the row's is zero.
	FirstSend bool
	Note      string
}

// Park parks an operation for an operational reason: the lease held under
// Token is given up, the row is not claimable for After, Parks counts one
// more, and ParkReason says why (see Operation.Parks).
type Park struct {
	ID     OperationID
	Token  FencingToken
	Worker WorkerID
	After  time.Duration
	Reason string
}

// Resolution is an operator's action on one operation, applied by
// Store.Resolve. It takes the row whatever lease is on it (the token is
// bumped, so the worker holding it is fenced), provided the row is still in
// From. To is one of:
//   - From itself, non-terminal: retry now (NotBefore cleared, the park
//     spell ended);
//   - Failed: cancel, hold released (the caller has checked proof of death);
//   - Confirmed, from review: resolved as paid by Txid, which must be the
//     operation's current txid (every retired one was proven dead), hold
//     settled (the caller has checked the chain); ErrIllegalTransition
//     otherwise.
//
// The event records the operator and why.
type Resolution struct {
	ID       OperationID
	From, To State
	Operator string // who; the event's Worker is "operator:" + Operator
	Why      string
	Hold     HoldAction
	// Txid, if set, must be the row's current txid (ErrIllegalTransition
	// otherwise): resolved as paid, the txid that paid; on a cancel, the
	// txid whose death was proven, so that a rebuild since is refused.
	Txid     tron.Txid
	Evidence *Evidence // cancel: the proof
	Decision *Decision
}

// OperatorPrefix opens the Worker of every event an operator wrote.
const OperatorPrefix = "operator:"

// ListFilter selects rows for List: in any of States (all states when
// empty), only parked ones if Parked, ids after After, at most Limit.
type ListFilter struct {
	States []State
	Parked bool
	After  OperationID
	Limit  int
}

// ListMax bounds ListFilter.Limit.
const ListMax = 1000

// Census counts rows: by state, and how many are parked now.
type Census struct {
	States [StateCount]int
	Parked int
}

// NewOperation is what intake inserts.
type NewOperation struct {
	ID          OperationID
	Request     Request
	RequestHash string
}

// Store is the durable state sluice runs on. Every method is atomic. The
// in-memory store and the PostgreSQL store implement the same contract, which
// the storetest conformance suite checks.
type Store interface {
	// Insert creates the operation in state requested with its creation
	// event and its hold (the amount moved from the customer's balance to
	// held), or, if the id exists, changes nothing. It returns the row as it
	// now is and whether this call created it. ErrInsufficientFunds, and
	// nothing created, when the customer's balance (or account) does not
	// cover the amount.
	Insert(ctx context.Context, op NewOperation) (Operation, bool, error)
	// Get reads one operation; ErrNotFound if there is none.
	Get(ctx context.Context, id OperationID) (Operation, error)
	// Claim leases up to limit claimable operations to worker: non-terminal,
	// NotBefore reached, and no live lease. Each claim increments the
	// fencing token and sets the lease. Oldest first; never blocks on rows
	// another claim holds.
	Claim(ctx context.Context, worker WorkerID, limit int) ([]Operation, error)
	// CAS applies a Change. ErrFenced if the row is not (ID, Token, From):
	// the token alone decides, so a worker whose lease lapsed unnoticed but
	// was not replaced may still write; once another claim bumps the token it
	// cannot. ErrIllegalTransition if From -> To is not an edge or the row is
	// terminal; ErrTxidTaken if the new envelope's txid belongs to another
	// operation. Checks run in that order: fencing first, after the
	// change's own values (ErrInvalidChange, CheckChange).
	CAS(ctx context.Context, c Change) (Operation, error)
	// Release gives up the lease held under token and makes the operation
	// claimable again once after has passed on the store's clock. With a
	// stale token it changes nothing and returns nil; a delay beyond
	// DelayMax is ErrInvalidChange.
	Release(ctx context.Context, id OperationID, token FencingToken, after time.Duration) error
	// Events returns the operation's event log in order.
	Events(ctx context.Context, id OperationID) ([]Event, error)

	// Park gives up the lease held under p.Token for an operational reason
	// (see Park). ErrFenced if the row is not under that token or is
	// terminal; ErrInvalidChange for a delay beyond DelayMax.
	Park(ctx context.Context, p Park) (Operation, error)
	// Resolve applies an operator's action (see Resolution). ErrFenced if
	// the row is not in r.From; ErrIllegalTransition if an operator may not
	// take that edge; ErrHoldAction or ErrHoldClosed as for CAS.
	Resolve(ctx context.Context, r Resolution) (Operation, error)
	// List reads rows by filter, ordered by id.
	List(ctx context.Context, f ListFilter) ([]Operation, error)
	// Census counts rows by state, and the parked ones.
	Census(ctx context.Context) (Census, error)

	// Credit adds a deposit to a customer's account (created on first
	// credit), once per Ref: it returns the account after and whether this
	// call credited. The same Ref with other numbers is ErrPayloadMismatch.
	Credit(ctx context.Context, c Credit) (Account, bool, error)
	// Account reads a customer's ledger; ErrNotFound if it has none.
	Account(ctx context.Context, c CustomerID) (Account, error)
	// Hold reads an operation's hold; ErrNotFound if there is none.
	Hold(ctx context.Context, id OperationID) (Hold, error)
}

// Operating conditions, matched with errors.Is.
var (
	// ErrFenced: the compare-and-swap matched no row. The caller's claim is
	// gone (lease lapsed, someone else claimed, state moved on). Stop.
	ErrFenced = errors.New("fenced: write matched no row")
	// ErrIllegalTransition: the transition table forbids the change, or the
	// row is terminal.
	ErrIllegalTransition = errors.New("illegal transition")
	// ErrTxidTaken: the txid already belongs to another operation.
	ErrTxidTaken = errors.New("txid belongs to another operation")
	// ErrNotFound: no such operation.
	ErrNotFound = errors.New("operation not found")
	// ErrPayloadMismatch: the operation id is in use with another payload.
	ErrPayloadMismatch = errors.New("operation id reused with a different payload")
	// ErrInvalidChange: a Change, Park or Release carries a value no store
	// can keep (CheckChange, CheckDelay); nothing was written.
	ErrInvalidChange = errors.New("invalid change")
)

// Parked reports whether the row is parked now: non-terminal with a park
// spell that no transition has ended.
func (o Operation) Parked() bool { return !o.State.Terminal() && o.ParkReason != "" }

// Match reports whether the row passes the filter (After and Limit aside).
func (f ListFilter) Match(o *Operation) bool {
	if f.After != "" && o.ID <= f.After {
		return false
	}
	if f.Parked && !o.Parked() {
		return false
	}
	return len(f.States) == 0 || slices.Contains(f.States, o.State)
}

// CheckListFilter refuses a filter every store would refuse.
func CheckListFilter(f ListFilter) error {
	if f.Limit < 1 || f.Limit > ListMax {
		return fmt.Errorf("list: limit %d must be in [1, %d]", f.Limit, ListMax)
	}
	for _, s := range f.States {
		if s == None || int(s) >= StateCount {
			return fmt.Errorf("list: %s is not a state", s)
		}
	}
	return nil
}

// CheckResolution refuses an operator's action before any store work: it
// must name the operator and say why, and carry the hold action and proof
// its target needs.
func CheckResolution(r Resolution) error {
	switch {
	case r.Operator == "" || len(r.Operator) > 64:
		return fmt.Errorf("resolve %s: operator name %s must be 1 to 64 bytes", r.ID, shown(r.Operator))
	case r.Why == "":
		return fmt.Errorf("resolve %s: an operator action needs a reason", r.ID)
	case r.To == Failed && r.Hold != HoldRelease:
		return fmt.Errorf("resolve %s: a cancel must release the hold: %w", r.ID, ErrHoldAction)
	case r.To == Confirmed && (r.Hold != HoldSettle || r.Txid.IsZero()):
		return fmt.Errorf("resolve %s: resolving as paid must settle the hold and name the paying txid: %w", r.ID, ErrHoldAction)
	}
	return checkDecision("resolve", r.ID, r.Decision)
}
