package model

import (
	"strings"
	"testing"

	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

func TestCheckConservationClean(t *testing.T) { wantClean(t, CheckConservation) }

func TestCheckConservationCatches(t *testing.T) {
	happy := func(b *builder) *mocknode.Inclusion { return b.inclusion(b.row(opID(opHappy)).Envelope.Txid) }
	for _, c := range []corruption{
		{
			name: "amount off by one unit", op: opID(opHappy), mention: "moves 1500001 units",
			break_: func(b *builder) { happy(b).Transfer.Amount++ },
		},
		{
			name: "totals differ by one unit", op: "", mention: "difference +1",
			break_: func(b *builder) { happy(b).Transfer.Amount++ },
		},
		{
			name: "transfer to the wrong recipient", op: opID(opHappy), mention: "goes to " + mallory.String(),
			break_: func(b *builder) { happy(b).Transfer.To = mallory },
		},
		{
			name: "transfer on another contract", op: opID(opHappy), mention: "is on contract",
			break_: func(b *builder) { happy(b).Transfer.Contract = bob },
		},
		{
			name: "transfer from another wallet", op: opID(opHappy), mention: "comes from " + mallory.String(),
			break_: func(b *builder) { happy(b).Transfer.From = mallory },
		},
		{
			// A transaction nobody owns is also an ownership violation.
			name: "stray hot-wallet transfer", op: "", mention: "belongs to no operation",
			break_: func(b *builder) {
				b.s.Inclusions = append(b.s.Inclusions, mocknode.Inclusion{
					Txid: txidFor("stray"), BlockNumber: 500, BlockTime: b.s.Blocks[500].Time, Receipt: tron.ReceiptSuccess,
					Transfer:   tron.Transfer{Contract: tron.USDTContract, From: hotWallet, To: mallory, Amount: 1},
					TransferOK: true, Owner: hotWallet,
				})
			},
			also: []string{TxidOwnership},
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, Conservation, CheckConservation, c) })
	}
}

// Goal: the totals are exact in base units even past float precision.
func TestCheckConservationExactToTheUnit(t *testing.T) {
	b := clean(t)
	const big = 1 << 60
	b.row(opID(opHappy)).Request.Amount = big
	in := b.inclusion(b.row(opID(opHappy)).Envelope.Txid)
	in.Transfer.Amount = big + 1
	got := CheckConservation(&b.s)
	found := false
	for _, v := range got {
		if v.Operation == "" && strings.Contains(v.Message, "difference +1") {
			found = true
		}
	}
	if !found {
		t.Errorf("amounts of 2^60 and 2^60+1: want a totals violation, got:\n%s", describe(got))
	}
}
