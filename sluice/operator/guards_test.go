package operator_test

// Tests that hold guards no test held (independent review). Each passes on
// the code as it stands and fails with its guard removed.

import (
	"context"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// Holds service.go proof(): LookupSolid is the LOOKUP node's solid head.
// A review that paid, looked up on a node that has not reached the solid
// block fetched first, answers "unknown": the cancel must be refused.
func TestGuardCancelNeedsALookupNodeThatSawTheSolidBlock(t *testing.T) {
	w := newWorld(t, func(c *sluice.Config) { c.ParkLimit = 1 })
	w.fund("cust-1", "100")
	id := w.reviewAfterParking("cust-1")
	w.idle(5 * time.Minute)
	w.svc.Node = laggingLookups{w.node.Client("operator")}
	_, err := w.svc.Cancel(w.ctx, id, act)
	wantRefused(t, "cancel on a lagging node's unknown", err, "behind the solid block")
	if h := w.hold(id); h.State != sluice.HoldHeld {
		t.Fatalf("hold %s, want held", h.State)
	}
}

var stranger = tron.AddressFromBytes20([20]byte{0x5e, 0x5e})
var otherToken = tron.AddressFromBytes20([20]byte{0x70, 0x4e})

// reviewWith makes a review whose transaction ran as exec says.
func reviewWith(t *testing.T, exec mocknode.Execution) (*world, sluice.OperationID) {
	w := newWorld(t, nil)
	w.node.Network().SetExecution(func(mocknode.ExecRequest) mocknode.Execution { return exec })
	w.fund("cust-1", "100")
	id := w.submit("cust-1", "10")
	if op := w.runUntil(id, 3*time.Minute, func(op sluice.Operation) bool { return op.State.Terminal() }); op.State != sluice.Review {
		t.Fatalf("%s, want review", op.State)
	}
	return w, id
}

// Holds reachedRecipient's contract check: a Transfer(hot, recipient, 10)
// log emitted by ANOTHER token contract is not a USDT payment.
func TestGuardResolvePaidNeedsTheUSDTContract(t *testing.T) {
	w, id := reviewWith(t, mocknode.Execution{NoTransfer: true,
		Extra: []tron.Log{tron.TransferLog(otherToken, hotWallet, bob, 10_000_000)}})
	_, err := w.svc.ResolvePaid(w.ctx, id, w.get(id).Envelope.Txid, act)
	wantRefused(t, "resolve on another token's Transfer log", err, "no USDT transfer")
}

// Holds reachedRecipient's sender check: a USDT Transfer to the recipient
// from someone other than the hot wallet is not our payment.
func TestGuardResolvePaidNeedsTheHotWalletAsSender(t *testing.T) {
	w, id := reviewWith(t, mocknode.Execution{NoTransfer: true, Lie: true,
		Logs: []tron.Log{tron.TransferLog(tron.USDTContract, stranger, bob, 10_000_000)}})
	_, err := w.svc.ResolvePaid(w.ctx, id, w.get(id).Envelope.Txid, act)
	wantRefused(t, "resolve on a stranger's transfer", err, "no USDT transfer")
}

// Holds reachedRecipient's Amount > 0: a zero transfer paid nothing.
func TestGuardResolvePaidNeedsAPositiveAmount(t *testing.T) {
	w, id := reviewWith(t, mocknode.Execution{NoTransfer: true, Lie: true,
		Logs: []tron.Log{tron.TransferLog(tron.USDTContract, hotWallet, bob, 0)}})
	_, err := w.svc.ResolvePaid(w.ctx, id, w.get(id).Envelope.Txid, act)
	wantRefused(t, "resolve on a zero transfer", err, "no USDT transfer")
}

// Holds resolve()'s ErrFenced -> Refusal: the
// retry of a row that left its state between the read and the write is a
// 409-class refusal, not a store failure ("may or may not have landed").
func TestGuardRetryOfARowThatMovedIsARefusal(t *testing.T) {
	w := newWorld(t, nil)
	w.fund("cust-1", "100")
	id := w.parkedInBroadcasting("cust-1")
	moved := false
	w.svc.Store = resolveHook{Store: w.store, before: func() {
		if !moved {
			moved = true
			w.clock.advance(time.Hour)
			w.worker.Tick(w.ctx) // the worker moves it on (or reviews it)
		}
	}}
	before := w.get(id)
	_, err := w.svc.Retry(w.ctx, id, act)
	if after := w.get(id); after.State == before.State {
		t.Fatalf("setup: the worker did not move the row (%s)", after.State)
	}
	wantRefused(t, "retry of a row that moved", err, "no longer")
}

// Holds Credit's Act.Check: the one action that creates money names who
// and why (the store keeps neither, so the check is all there is).
func TestGuardCreditNamesWhoAndWhy(t *testing.T) {
	w := newWorld(t, nil)
	for _, a := range []operator.Act{{}, {Operator: "alice"}, {Why: "deposit 7"}} {
		if _, _, err := w.svc.Credit(w.ctx, sluice.Credit{Ref: "dep-7", Customer: "cust-1", Amount: 5}, a); err == nil {
			t.Errorf("credit by %+v landed", a)
		}
	}
}

// staleForkLookups answers every lookup as a node left on an orphaned fork
// does: the txid included with a failed receipt in a block at the height of
// the solid block another node gives, which this node does not call solid
// (its own solid head is below it).
type staleForkLookups struct{ tron.Node }

func (s staleForkLookups) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	solid, err := s.Node.SolidBlock(ctx)
	if err != nil {
		return tron.TxInfo{}, err
	}
	return tron.TxInfo{Txid: id, Status: tron.Included, BlockNumber: solid.Number, Receipt: "REVERT",
		Solid: false, NodeSolid: solid.Number - 5}, nil
}

// A failed receipt proves the txid dead only in a block the answering node
// calls solid, as the pipeline's await demands: behind a balancer, a node
// left on an orphaned fork shows the orphaned block's receipt at a height
// another node's solid block covers, while on the canonical chain the
// transaction went back to the pools and may still pay. Cancelling on it
// would refund a withdrawal that may be paid.
func TestGuardCancelNeedsTheReceiptsBlockSolidWhereItWasSeen(t *testing.T) {
	w := newWorld(t, func(c *sluice.Config) { c.ParkLimit = 1 })
	w.fund("cust-1", "100")
	id := w.reviewAfterParking("cust-1")
	w.idle(time.Minute)
	w.svc.Node = staleForkLookups{w.node.Client("operator")}
	_, err := w.svc.Cancel(w.ctx, id, act)
	wantRefused(t, "cancel on a stale fork's failed receipt", err, "does not call it solid")
	if h := w.hold(id); h.State != sluice.HoldHeld {
		t.Fatalf("hold %s, want held", h.State)
	}
}
