package scenarios

import (
	"context"
	"math"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// --- node-side mutants ---

type timeSource int

const (
	wallClock timeSource = iota
	headTime
)

// solidTime answers SolidBlock with another notion of "now": the wall clock
// or the head block's time, which is what a proof judged by them sees.
type solidTime struct {
	tron.Node
	a   *actor
	src timeSource
}

func (m solidTime) SolidBlock(ctx context.Context) (tron.Block, error) {
	b, err := m.Node.SolidBlock(ctx)
	if err != nil {
		return b, err
	}
	switch m.src {
	case wallClock:
		b.Time = m.a.w.s.Now().Add(m.a.skew)
	case headTime:
		return m.Node.HeadBlock(ctx)
	}
	return b, nil
}

// believer takes a word from the node (an expiration or TAPoS answer, or a
// timeout) as proof of death: the next observation of that txid reports it
// unknown under a solid block far past its deadline.
type believer struct {
	tron.Node
	a         *actor
	onCode    bool
	onTimeout bool
	dead      map[tron.Txid]bool
	pending   bool
}

func (m *believer) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	res, err := m.Node.Broadcast(ctx, tx)
	if (m.onTimeout && err != nil) || (m.onCode && err == nil && tron.Read(res.Code) == tron.NotProof) {
		if m.dead == nil {
			m.dead = map[tron.Txid]bool{}
		}
		m.dead[tx.Txid()] = true
		m.pending = true
	}
	return res, err
}

func (m *believer) SolidBlock(ctx context.Context) (tron.Block, error) {
	b, err := m.Node.SolidBlock(ctx)
	if err == nil && m.pending {
		b.Time = b.Time.Add(48 * time.Hour)
	}
	return b, err
}

func (m *believer) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	if m.dead[id] {
		delete(m.dead, id)
		m.pending = len(m.dead) > 0
		return tron.TxInfo{Txid: id, Status: tron.Unknown}, nil
	}
	return m.Node.Lookup(ctx, id)
}

// timeoutRefuses turns a broadcast timeout into a hard reject, which a first
// send reads as a refusal for good.
type timeoutRefuses struct{ tron.Node }

func (m timeoutRefuses) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	res, err := m.Node.Broadcast(ctx, tx)
	if err != nil {
		return tron.BroadcastResult{Code: tron.CodeSigError, Message: "timeout read as refusal (mutant)"}, nil
	}
	return res, err
}

// resendRejectFails fails the operation when a re-send is hard-rejected, as
// a core that made such a reject terminal would.
type resendRejectFails struct {
	tron.Node
	a    *actor
	sent map[tron.Txid]bool
}

func (m *resendRejectFails) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	id := tx.Txid()
	res, err := m.Node.Broadcast(ctx, tx)
	if err == nil && m.sent[id] && tron.Read(res.Code) == tron.HardReject {
		if row, ok := rowOf(m.a, id); ok {
			// Through the worker's own store view, as the core's write would be.
			storeView{m.a}.CAS(ctx, sluice.Change{ID: row.ID, Token: row.Token, Worker: sluice.WorkerID(m.a.p.Name()),
				From: row.State, To: sluice.Failed, Reason: "re-send rejected (mutant)", Hold: sluice.HoldRelease, Note: "re-send rejected (mutant)"})
		}
	}
	m.sent[id] = true
	return res, err
}

// firstRefusalFails reads a node-state refusal of a txid's first send as a
// refusal of the bytes themselves (SIGERROR), which the core fails at once:
// the core before it learned that a refusal speaks for one node only.
type firstRefusalFails struct {
	tron.Node
	sent map[tron.Txid]bool
}

func (m *firstRefusalFails) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	id := tx.Txid()
	res, err := m.Node.Broadcast(ctx, tx)
	if err == nil && !m.sent[id] && tron.Read(res.Code) == tron.HardReject && !tron.Intrinsic(res.Code) {
		res = tron.BroadcastResult{Code: tron.CodeSigError, Message: string(res.Code) + " read as final (mutant)"}
	}
	m.sent[id] = true
	return res, err
}

// lookupRewrite edits lookup answers as a broken confirmation check would
// misread them.
type lookupRewrite struct {
	tron.Node
	a    *actor
	edit func(a *actor, info *tron.TxInfo)
}

func (m lookupRewrite) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	info, err := m.Node.Lookup(ctx, id)
	if err == nil && info.Status == tron.Included {
		m.edit(m.a, &info)
	}
	return info, err
}

func markSolid(_ *actor, info *tron.TxInfo) { info.Solid = true }

// forgeSuccess reads any receipt as SUCCESS with the expected Transfer log.
func forgeSuccess(a *actor, info *tron.TxInfo) {
	if info.Receipt == tron.ReceiptSuccess {
		return
	}
	row, ok := rowOf(a, info.Txid)
	if !ok {
		return
	}
	info.Receipt = tron.ReceiptSuccess
	info.Logs = []tron.Log{tron.TransferLog(tron.USDTContract, a.w.hot, row.Request.To, uint64(row.Request.Amount))}
}

// rowOf is the operation a txid belongs to, read from the world's store
// (as a broken check comparing against its own row would). The step reads
// that row; finding none, it read that no row holds the txid, which a write
// of any row could change.
func rowOf(a *actor, id tron.Txid) (sluice.Operation, bool) {
	owner, ok := a.w.store.TxidOwner(id)
	if !ok {
		a.readRows()
		return sluice.Operation{}, false
	}
	row, err := a.w.store.Get(context.Background(), owner)
	a.readRow(owner)
	return row, err == nil
}

// logsAsAsked reads a SUCCESS as if its logs were exactly the payment asked.
func logsAsAsked(a *actor, info *tron.TxInfo) {
	if info.Receipt != tron.ReceiptSuccess {
		return
	}
	if row, ok := rowOf(a, info.Txid); ok {
		info.Logs = []tron.Log{tron.TransferLog(tron.USDTContract, a.w.hot, row.Request.To, uint64(row.Request.Amount))}
	}
}

// anyContractIsUSDT reads every Transfer log as if the USDT contract had
// emitted it.
func anyContractIsUSDT(_ *actor, info *tron.TxInfo) {
	logs := make([]tron.Log, len(info.Logs))
	for i, l := range info.Logs {
		if _, ok := tron.ParseTransferLog(l); ok {
			l.Address = tron.USDTContract.Bytes20()
		}
		logs[i] = l
	}
	info.Logs = logs
}

// anyAmountIsAsked reads every USDT Transfer log from the hot wallet to the
// recipient as if it carried the amount asked.
func anyAmountIsAsked(a *actor, info *tron.TxInfo) {
	row, ok := rowOf(a, info.Txid)
	if !ok {
		return
	}
	logs := make([]tron.Log, len(info.Logs))
	for i, l := range info.Logs {
		if t, ok := tron.ParseTransferLog(l); ok && t.Contract == tron.USDTContract && t.To == row.Request.To {
			l = tron.TransferLog(t.Contract, t.From, t.To, uint64(row.Request.Amount))
		}
		logs[i] = l
	}
	info.Logs = logs
}

// anyNodeProves is the proof of death before the cross-node fix: the
// lookup's answer counts as if the node that gave it had seen every block,
// so an "unknown" from a node behind the one that gave the solid block
// proves death.
type anyNodeProves struct{ tron.Node }

func (m anyNodeProves) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	info, err := m.Node.Lookup(ctx, id)
	if err == nil {
		info.NodeSolid = math.MaxInt64
	}
	return info, err
}
