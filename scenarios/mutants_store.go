package scenarios

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// --- store-side mutants ---

// casRewrite edits each Change against the row as it really is (read
// without a yield point, as the broken SQL would see it) before the CAS.
type casRewrite struct {
	sluice.Store
	a    *actor
	edit func(row sluice.Operation, c *sluice.Change)
}

func (m casRewrite) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	row, err := m.a.w.store.Get(ctx, c.ID)
	m.a.readRow(c.ID)
	if err == nil {
		m.edit(row, &c)
	}
	return m.Store.CAS(ctx, c)
}

// leaseBreaker drops every live lease on claimable rows before claiming, so
// the claim takes rows that another worker holds. The step reads every
// row's lease and writes each row it releases (making it claimable).
type leaseBreaker struct {
	sluice.Store
	a *actor
}

func (m leaseBreaker) Claim(ctx context.Context, worker sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	now := m.a.w.s.Now()
	m.a.readRows()
	for _, row := range m.a.w.store.Snapshot().Operations {
		if !row.State.Terminal() && row.ClaimedBy != "" && row.LeaseUntil.After(now) && !row.NotBefore.After(now) {
			before := m.a.claimable(row.ID)
			m.a.w.store.Release(ctx, row.ID, row.Token, 0)
			m.a.wroteRow(row.ID, before)
		}
	}
	return m.Store.Claim(ctx, worker, limit)
}

// shortWait releases every row after a quarter of the wait the worker
// asked for (a Release that reads its delay in the wrong unit, say). A
// release with no wait at all would be caught by liveness too: the rows
// would be polled at one virtual instant until the step budget ran out.
type shortWait struct{ sluice.Store }

func (m shortWait) Release(ctx context.Context, id sluice.OperationID, token sluice.FencingToken, after time.Duration) error {
	return m.Store.Release(ctx, id, token, after/4)
}

// oneAtATime claims one row a call whatever the limit (a LIMIT bound to
// the wrong parameter, say): a worker that gets a short batch takes it
// that nothing else is due and idles, while due rows wait.
type oneAtATime struct{ Store }

func (m oneAtATime) Claim(ctx context.Context, worker sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	return m.Store.Claim(ctx, worker, min(limit, 1))
}

// EventCount keeps the store's own count (the world's logLen looks with it
// around every read, outside any step): without it, the world would read
// whole logs instead, as if a step had.
func (m oneAtATime) EventCount(id sluice.OperationID) (int, bool) {
	if c, ok := m.Store.(eventCounter); ok {
		return c.EventCount(id)
	}
	evs, err := m.Store.Events(context.Background(), id)
	return len(evs), err == nil
}

// sendFirst sends the envelope before the write-ahead CAS: a crash between
// the two leaves bytes on the wire and a row that says signed.
type sendFirst struct {
	sluice.Store
	a *actor
}

func (m sendFirst) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	if c.To == sluice.Broadcasting {
		row, err := m.a.w.store.Get(ctx, c.ID)
		m.a.readRow(c.ID)
		if err == nil && row.Token == c.Token && row.State == c.From {
			m.a.node.Broadcast(ctx, tron.Transaction{Raw: row.Envelope.Raw, Signature: row.Envelope.Signature})
		}
	}
	return m.Store.CAS(ctx, c)
}

// carryOn turns a failed write into a pretended success: when the CAS
// fails with an error that "after" picks out, the worker goes on with its
// stale view, its state advanced as if the write had landed.
//   - after a fence (carry-on-after-fence): a zombie carries on;
//   - after a store error (store-error-is-success): when the failure came
//     before the effect, the worker sends an envelope whose write-ahead was
//     never recorded, and recovery, finding the row still signed, may
//     rebuild it: two live txids.
type carryOn struct {
	sluice.Store
	a     *actor
	after error
}

func (m carryOn) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	op, err := m.Store.CAS(ctx, c)
	if !errors.Is(err, m.after) {
		return op, err
	}
	row, gerr := m.a.w.store.Get(ctx, c.ID)
	m.a.readRow(c.ID)
	if gerr != nil {
		return op, err
	}
	row.State, row.Token = c.To, c.Token
	if c.Envelope != nil {
		row.Envelope = *c.Envelope
	}
	return row, nil
}

// rawHash keys the payload comparison on the raw request body's hash.
type rawHash struct{ sluice.Store }

type rawBodyKey struct{}

func (m rawHash) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	raw, _ := ctx.Value(rawBodyKey{}).(string)
	normalized := op.RequestHash
	op.RequestHash = raw
	row, created, err := m.Store.Insert(ctx, op)
	if err == nil && !created && row.RequestHash == raw {
		row.RequestHash = normalized // same bytes: the service sees a match
	}
	return row, created, err
}

func bodyDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// noCompare makes every existing row look like the caller's payload.
type noCompare struct{ sluice.Store }

func (m noCompare) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	row, created, err := m.Store.Insert(ctx, op)
	if err == nil && !created {
		row.RequestHash = op.RequestHash
	}
	return row, created, err
}

// checkThenInsert is the classic intake race: a lookup, then an insert, as
// two separate store calls. Between them another request for the same id can
// insert first; the loser never learns, and tells its client "created".
type checkThenInsert struct{ sluice.Store }

func (c checkThenInsert) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	row, err := c.Store.Get(ctx, op.ID)
	if err == nil {
		return row, false, nil
	}
	if !errors.Is(err, sluice.ErrNotFound) {
		return row, false, err
	}
	row, _, err = c.Store.Insert(ctx, op)
	return row, err == nil, err
}
