package model

import (
	"testing"

	"sluicesim/sluice"
	"sluicesim/sluice/tron/mocknode"
)

func TestCheckTxidOwnershipClean(t *testing.T) { wantClean(t, CheckTxidOwnership) }

func TestCheckTxidOwnershipCatches(t *testing.T) {
	stray := txidFor("stray")
	for _, c := range []corruption{
		{
			name: "accepted txid owned by nobody", op: "", mention: stray.Short(),
			break_: func(b *builder) {
				b.s.Accepted = append(b.s.Accepted, mocknode.Acceptance{Txid: stray, Times: 1, First: b.now})
			},
		},
		{
			name: "txid on the wire owned by nobody", op: "", mention: stray.Short() + " (on the wire)",
			break_: func(b *builder) {
				b.s.Wire = append(b.s.Wire, mocknode.WireAttempt{Seq: len(b.s.Wire) + 1, Worker: "w9", Txid: stray, At: b.now})
			},
		},
		{
			// The store refuses this (ErrTxidTaken); the checker must not
			// rely on that. Op 8 is built around op 3's txid and fails
			// after its first send is lost, so beyond ownership only its
			// failure is wrong: nothing the chain shows justifies it (to
			// progress), and no operator, refused bytes or policy's cancel
			// made it (to no-operational-failure).
			name: "txid owned by two ops", op: opID(8), mention: "belongs to 2 operations",
			break_: func(b *builder) {
				o := shareTxid(b, opPolicyCancel, 8)
				o.step(sluice.Broadcasting, nil).send(false).step(sluice.Failed, nil)
			},
			// And to audit-log, op 8's write-ahead came after the other
			// operation put the txid on the wire.
			also: []string{Progress, NoOperationalFailure, AuditLog},
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, TxidOwnership, CheckTxidOwnership, c) })
	}
}

// Goal: a txid owned by two operations is reported once for each of them,
// so each operation's report names it.
func TestCheckTxidOwnershipNamesEveryOwner(t *testing.T) {
	b := clean(t)
	o := shareTxid(b, opPolicyCancel, 8)
	o.step(sluice.Broadcasting, nil).send(false).step(sluice.Failed, nil)
	var ops []sluice.OperationID
	for _, v := range CheckTxidOwnership(&b.s) {
		ops = append(ops, v.Operation)
	}
	want := []sluice.OperationID{opID(opPolicyCancel), opID(8)}
	if len(ops) != 2 || ops[0] != want[0] || ops[1] != want[1] {
		t.Errorf("violations about %v, want %v", ops, want)
	}
}

// shareTxid creates op n built around op owner's envelope, as if the store
// had let two operations share one txid.
func shareTxid(b *builder, owner, n int) *opb {
	shared := b.row(opID(owner)).Envelope
	o := b.create(n, 8_000_000, "c1").claim().build()
	for _, e := range b.events(o.id) {
		if !e.Txid.IsZero() {
			e.Txid = shared.Txid
		}
	}
	o.row().Envelope = shared
	return o
}
