package scenarios

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/tron"
)

// --- mutants of the oracle's issue: self-consistent bugs ---

// badSignature signs, then spoils the signature, as a signer with the wrong
// key or a core that signs the wrong bytes would.
type badSignature struct{ tron.Signer }

func (m badSignature) Sign(ctx context.Context, raw tron.RawData) ([]byte, error) {
	sig, err := m.Signer.Sign(ctx, raw)
	if err == nil && len(sig) > 0 {
		sig = append([]byte(nil), sig...)
		sig[0] ^= 0xff
	}
	return sig, err
}

// scaled stores ten times the amount with the request hash of that amount,
// as intake would with a parser that reads "1.5" as 15 USDT: everything
// downstream (hash, replays, envelope, confirmation) agrees with itself.
type scaled struct{ sluice.Store }

func (m scaled) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	honest := op.RequestHash
	op.Request.Amount *= 10
	op.RequestHash = intake.RequestHash(op.ID, op.Request)
	row, created, err := m.Store.Insert(ctx, op)
	if err == nil && !created && row.RequestHash == op.RequestHash {
		row.RequestHash = honest // the same (misread) payload: the service sees a match
	}
	return row, created, err
}

// noRecipientHash keys the payload comparison on a hash without the
// recipient.
type noRecipientHash struct{ sluice.Store }

func hashWithoutRecipient(op sluice.NewOperation) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s|%d|%s", op.ID, op.Request.Amount, op.Request.Asset))
	return hex.EncodeToString(sum[:])
}

func (m noRecipientHash) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	honest := op.RequestHash
	op.RequestHash = hashWithoutRecipient(op)
	row, created, err := m.Store.Insert(ctx, op)
	if err == nil && !created && row.RequestHash == op.RequestHash {
		row.RequestHash = honest
	}
	return row, created, err
}

// otherHistory answers a log read with the log of the operation created just
// before (or after, for the first one), as a query with a wrong join would.
type otherHistory struct {
	sluice.Store
	w *world
}

func (m otherHistory) Events(ctx context.Context, id sluice.OperationID) ([]sluice.Event, error) {
	serverStore{m.w}.view().a.readRows() // the server's step scans every row
	ops := m.w.store.Snapshot().Operations
	for i, op := range ops {
		if op.ID != id || len(ops) < 2 {
			continue
		}
		other := ops[max(i-1, 0)]
		if i == 0 {
			other = ops[1]
		}
		return m.Store.Events(ctx, other.ID)
	}
	return m.Store.Events(ctx, id)
}

// adoptToken retries a fenced write under whatever token the row now
// carries, when the row is still in the state the worker expects: fencing
// bypassed by "helpful" retry code.
type adoptToken struct {
	sluice.Store
	a *actor
}

func (m adoptToken) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	op, err := m.Store.CAS(ctx, c)
	if !errors.Is(err, sluice.ErrFenced) {
		return op, err
	}
	row, gerr := m.a.w.store.Get(ctx, c.ID)
	m.a.readRow(c.ID)
	if gerr != nil || row.State != c.From || row.Token == c.Token || row.State.Terminal() {
		return op, err
	}
	c.Token = row.Token
	return m.Store.CAS(ctx, c)
}

// cachedLookup answers a lookup of a txid last found unknown with that old
// answer, as a client-side cache with a generous lifetime would. A proof of
// death then rests on a lookup made before the solid block it cites: the
// order observe exists to keep.
type cachedLookup struct {
	tron.Node
	a    *actor
	seen map[tron.Txid]tron.TxInfo
}

func (m *cachedLookup) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	if info, ok := m.seen[id]; ok {
		delete(m.seen, id)
		return info, nil
	}
	info, err := m.Node.Lookup(ctx, id)
	if err == nil && info.Status == tron.Unknown {
		m.seen[id] = info
	}
	return info, err
}
