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
			break_: func(b *builder) { happy(b).Moved[0].Amount++ },
		},
		{
			name: "totals differ by one unit", op: "", mention: "difference +1",
			break_: func(b *builder) { happy(b).Moved[0].Amount++ },
		},
		{
			name: "transfer to the wrong recipient", op: opID(opHappy), mention: "goes to " + mallory.String(),
			break_: func(b *builder) { happy(b).Moved[0].To = mallory },
		},
		{
			name: "transfer on another contract", op: opID(opHappy), mention: "is on contract",
			break_: func(b *builder) { happy(b).Moved[0].Contract = bob },
		},
		{
			name: "transfer from another wallet", op: opID(opHappy), mention: "comes from " + mallory.String(),
			break_: func(b *builder) { happy(b).Moved[0].From = mallory },
		},
		{
			// A transaction nobody owns is also an ownership violation.
			name: "stray hot-wallet transfer", op: "", mention: "belongs to no operation",
			break_: func(b *builder) {
				b.s.Inclusions = append(b.s.Inclusions, mocknode.Inclusion{
					Txid: txidFor("stray"), BlockNumber: 500, BlockTime: b.s.Blocks[500].Time, Receipt: tron.ReceiptSuccess,
					Transfer:   tron.Transfer{Contract: tron.USDTContract, From: hotWallet, To: mallory, Amount: 1},
					TransferOK: true, Owner: hotWallet,
					Moved: []tron.Transfer{{Contract: tron.USDTContract, From: hotWallet, To: mallory, Amount: 1}},
				})
			},
			also: []string{TxidOwnership},
		},
		{
			// Self-consistent: the row, the chain and every answer say ten
			// times what the client sent. Judged against the row, this
			// run would be clean.
			name: "row, transfer and answers ten times what the client sent", op: opID(opHappy), mention: "moves 15000000 units; the client asked for 1500000 units",
			break_: func(b *builder) { tenfold(b, opHappy) },
			also:   []string{IntakeUniqueness, LinearizableIntake},
		},
		{
			name: "totals ten times what the client sent", op: "", mention: "difference +13500000",
			break_: func(b *builder) { tenfold(b, opHappy) },
			also:   []string{IntakeUniqueness, LinearizableIntake},
		},
		{
			// The row and the chain agree with each other; only the
			// client's intent says the recipient is wrong.
			name: "row and transfer to another recipient than the client's", op: opID(opHappy), mention: "goes to " + mallory.String(),
			break_: func(b *builder) {
				b.row(opID(opHappy)).Request.To = mallory
				happy(b).Moved[0].To = mallory
			},
			also: []string{IntakeUniqueness, LinearizableIntake},
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, Conservation, CheckConservation, c) })
	}
}

// Goal: the totals are exact in base units even past float precision.
// Method: a snapshot of the store alone (no intake records), where the row
// stands in for the intent, since no client may ask for 2^60 units.
func TestCheckConservationExactToTheUnit(t *testing.T) {
	b := clean(t)
	b.s.Intake = nil
	const big = 1 << 60
	b.row(opID(opHappy)).Request.Amount = big
	in := b.inclusion(b.row(opID(opHappy)).Envelope.Txid)
	in.Moved[0].Amount = big + 1
	got := CheckConservation(&b.s)
	found := false
	for _, v := range got {
		if v.Operation == "" && strings.Contains(v.Message, "(difference +1)") {
			found = true
		}
	}
	if !found {
		t.Errorf("amounts of 2^60 and 2^60+1: want a totals violation of +1, got:\n%s", describe(got))
	}
}

// Goal: a confirmed withdrawal that no client asked for is caught even when
// the chain paid exactly what its row says. Method: opCrashed's requests
// (the lost answer and its replay) carry another recipient, so no client
// payload is its row's instruction.
func TestCheckConservationConfirmedWithoutAnyClient(t *testing.T) {
	b := clean(t)
	id := opID(opCrashed)
	for i := range b.s.Intake {
		if r := &b.s.Intake[i]; r.ID == string(id) {
			r.Sent.To, r.Answer.To = bob.String(), bob.String()
		}
	}
	got := CheckConservation(&b.s)
	if len(got) != 1 || got[0].Operation != id || !strings.Contains(got[0].Message, "no client sent that instruction") {
		t.Errorf("want one violation about op %s saying no client sent it, got:\n%s", id, describe(got))
	}
}
