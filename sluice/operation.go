package sluice

import (
	"context"
	"errors"
	"fmt"
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
	To     tron.Address
	Amount money.Amount
	Asset  string
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
}

// String is a one-line summary for logs and traces.
func (e Evidence) String() string {
	return fmt.Sprintf("txid=%s expiration=%s margin=%s solid=#%d@%s lookup=%s (node solid #%d)",
		e.Txid.Short(), e.Expiration.UTC().Format(time.RFC3339Nano), e.Margin,
		e.SolidNumber, e.SolidTime.UTC().Format(time.RFC3339Nano), e.Lookup, e.LookupSolid)
}

// Proves reports whether the evidence establishes death: the solid time has
// reached expiration + margin, and a node that had itself seen every block
// up to that solid block did not know the txid. The last condition matters
// when the two reads reach different nodes (a load balancer, a failover):
// a node behind the one that gave the solid block answers "unknown" for a
// transaction already included below it.
func (e Evidence) Proves() bool {
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
	Note        string
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
	// event, or, if the id exists, changes nothing. It returns the row as it
	// now is and whether this call created it.
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
	// operation. Checks run in that order: fencing first.
	CAS(ctx context.Context, c Change) (Operation, error)
	// Release gives up the lease held under token and makes the operation
	// claimable again once after has passed on the store's clock. With a
	// stale token it changes nothing and returns nil.
	Release(ctx context.Context, id OperationID, token FencingToken, after time.Duration) error
	// Events returns the operation's event log in order.
	Events(ctx context.Context, id OperationID) ([]Event, error)
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
)
