package model

import (
	"testing"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

func TestCheckAtMostOnceClean(t *testing.T) { wantClean(t, CheckAtMostOnce) }

func TestCheckAtMostOnceCatches(t *testing.T) {
	// includeRetired puts op's first (retired) txid on chain too.
	includeRetired := func(b *builder, n int, receipt string) {
		retired := b.event(opID(n), sluice.Validated, sluice.Signing).Txid
		in := mocknode.Inclusion{Txid: retired, BlockNumber: 500, BlockTime: b.s.Blocks[500].Time, Receipt: receipt, Owner: hotWallet}
		if receipt == tron.ReceiptSuccess {
			row := b.row(opID(n))
			in.Transfer = tron.Transfer{Contract: tron.USDTContract, From: hotWallet, To: row.Request.To, Amount: uint64(row.Request.Amount)}
			in.TransferOK = true
			in.Moved = []tron.Transfer{in.Transfer}
		}
		b.s.Inclusions = append(b.s.Inclusions, in)
	}
	for _, c := range []corruption{
		{
			// Any second inclusion is of a retired txid, which the audit
			// log must also flag; a REVERT keeps conservation out of it.
			name: "two inclusions for one op", op: opID(opStale), mention: "2 inclusions",
			break_: func(b *builder) { includeRetired(b, opStale, tron.ReceiptRevert) },
			also:   []string{AuditLog},
		},
		{
			name: "two successful transfers for one confirmed op", op: opID(opRebuilt), mention: "2 successful transfers",
			break_: func(b *builder) { includeRetired(b, opRebuilt, tron.ReceiptSuccess) },
			also:   []string{Conservation, AuditLog},
		},
		{
			// A confirmation without the money moving is also money the
			// confirmed total promises and the chain does not show.
			name: "confirmed without inclusion", op: opID(opHappy), mention: "moved tokens",
			break_: func(b *builder) {
				b.s.Inclusions = b.s.Inclusions[1:] // opHappy's
			},
			also: []string{Conservation},
		},
		{
			name: "a REVERT counted as confirmed", op: opID(opReverted), mention: "REVERT",
			break_: func(b *builder) {
				b.event(opID(opReverted), sluice.Broadcast, sluice.Failed).To = sluice.Confirmed
				b.row(opID(opReverted)).State = sluice.Confirmed
			},
			also: []string{Conservation},
		},
		{
			// A failed op whose transfer went through has no failure the
			// chain bears out either.
			name: "failed op whose transaction paid", op: opID(opReverted), mention: "is failed but moved tokens",
			break_: func(b *builder) {
				row := b.row(opID(opReverted))
				in := b.inclusion(row.Envelope.Txid)
				in.Receipt, in.TransferOK = tron.ReceiptSuccess, true
				in.Transfer = tron.Transfer{Contract: tron.USDTContract, From: hotWallet, To: row.Request.To, Amount: uint64(row.Request.Amount)}
				in.Moved = []tron.Transfer{in.Transfer}
			},
			also: []string{Conservation, Progress},
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, AtMostOnce, CheckAtMostOnce, c) })
	}
}
