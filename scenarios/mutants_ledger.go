package scenarios

import (
	"context"
	"fmt"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// --- ledger and parking mutants ---

// releaseTwice credits a released hold's amount a second time: a release
// that does not check that the hold is still held, retried once (a crash
// after the commit, a redelivered message).
type releaseTwice struct {
	sluice.Store
	a *actor
}

func (m releaseTwice) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	row, err := m.Store.CAS(ctx, c)
	if err == nil && c.Hold == sluice.HoldRelease {
		m.a.w.store.Credit(ctx, sluice.Credit{
			Ref: "release-again:" + string(c.ID), Customer: row.Request.Customer, Amount: row.Request.Amount,
		})
		m.a.touchedAccount(row.Request.Customer, true)
	}
	return row, err
}

// parkFails fails an operation where the worker would park it: an
// operational error (a refusal for bandwidth, a failed receipt, an
// unreachable node) read as the customer's failure.
type parkFails struct {
	sluice.Store
	a *actor
}

func (m parkFails) Park(ctx context.Context, p sluice.Park) (sluice.Operation, error) {
	row, err := m.a.w.store.Get(ctx, p.ID)
	m.a.readRow(p.ID)
	if err != nil || row.Token != p.Token || !sluice.CanTransition(row.State, sluice.Failed) {
		return m.Store.Park(ctx, p)
	}
	reason := "operational error: " + p.Reason
	return m.Store.CAS(ctx, sluice.Change{ID: p.ID, Token: p.Token, Worker: p.Worker, From: row.State, To: sluice.Failed,
		Reason: reason, Hold: sluice.HoldRelease, Note: reason})
}

// parkNoop's park changes nothing and answers with the row as it is (an
// UPDATE whose WHERE matches nothing, its count of rows never read, then a
// SELECT of the row): the worker moves on with the row still leased to it.
type parkNoop struct {
	sluice.Store
	a *actor
}

func (m parkNoop) Park(ctx context.Context, p sluice.Park) (sluice.Operation, error) {
	row, err := m.a.w.store.Get(ctx, p.ID)
	m.a.readRow(p.ID)
	return row, err
}

// impatientCancel cancels a sent withdrawal that has waited past the stuck
// policy's CancelAfter without proof of death: at the worker's next wait
// on it, the operation fails and its hold is released while its txid may
// still land.
type impatientCancel struct {
	sluice.Store
	a *actor
}

func (m impatientCancel) Release(ctx context.Context, id sluice.OperationID, token sluice.FencingToken, after time.Duration) error {
	row, err := m.a.w.store.Get(ctx, id)
	m.a.readRow(id)
	cfg := m.a.w.cfg.Sluice.Stuck
	if err == nil && row.Token == token && (row.State == sluice.Broadcasting || row.State == sluice.Broadcast) &&
		!row.FirstSentAt.IsZero() && m.a.w.s.Now().Sub(row.FirstSentAt) >= cfg.CancelAfter/4 {
		d := sluice.Decision{Action: sluice.Cancel, Rebuilds: row.Builds - 1,
			Waited: m.a.w.s.Now().Sub(row.FirstSentAt), Reason: "waited long enough"}
		reason := fmt.Sprintf("cancelled by the stuck policy: %s", d.Reason)
		_, err := m.Store.CAS(ctx, sluice.Change{ID: id, Token: token, Worker: sluice.WorkerID(m.a.p.Name()), From: row.State,
			To: sluice.Failed, Reason: reason, RetiredTxid: row.Envelope.Txid, Decision: &d, Hold: sluice.HoldRelease, Note: reason})
		if err == nil {
			return nil
		}
	}
	return m.Store.Release(ctx, id, token, after)
}

// proofBeliever is the node an operator's cancel reads when its proof
// check is skipped: every txid not in a block reads as unknown to a node
// that has seen everything, and the solid block looks a day later than it
// is, so any cancel goes through, with whatever was in flight.
type proofBeliever struct{ tron.Node }

func (n proofBeliever) SolidBlock(ctx context.Context) (tron.Block, error) {
	b, err := n.Node.SolidBlock(ctx)
	b.Time = b.Time.Add(24 * time.Hour)
	return b, err
}

func (n proofBeliever) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	info, err := n.Node.Lookup(ctx, id)
	if err == nil && info.Status != tron.Included {
		info.Status, info.NodeSolid = tron.Unknown, 1<<40
	}
	return info, err
}
