package model

import (
	"strings"
	"testing"

	"sluicesim/sluice"
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
		{
			// Self-consistent: the client asked to pay the hot wallet,
			// and the row, the chain and every answer agree on it. The
			// money went from the hot wallet back into it, to the unit.
			name: "a withdrawal to the hot wallet itself, paid and confirmed", op: opID(opHappy), mention: "to the hot wallet " + hotWallet.String() + " itself",
			break_: func(b *builder) { toHotWallet(b, opHappy) },
		},
		{
			// The same resolved as paid by an operator from review.
			name: "a withdrawal to the hot wallet itself, resolved as paid", op: opID(opReviewPaid), mention: "to the hot wallet " + hotWallet.String() + " itself",
			break_: func(b *builder) { toHotWallet(b, opReviewPaid) },
		},
		{
			// An operator settled opReviewPaid as paid, but its transfer,
			// fee and all, went to mallory: nothing reached the recipient.
			// What moved is still counted (the totals agree); what it
			// paid is no payment.
			name: "an operator-resolved confirmation whose money reached nobody intended", op: opID(opReviewPaid), mention: "resolved as paid by an operator, but the chain's ledger shows no USDT moving",
			break_: func(b *builder) {
				for i := range b.inclusion(b.row(opID(opReviewPaid)).Envelope.Txid).Moved {
					b.inclusion(b.row(opID(opReviewPaid)).Envelope.Txid).Moved[i].To = mallory
				}
			},
		},
		{
			// The same when the transfer moved nothing at all.
			name: "an operator-resolved confirmation that moved nothing", op: opID(opReviewPaid), mention: "resolved as paid by an operator, but the chain's ledger shows no USDT moving",
			break_: func(b *builder) {
				in := b.inclusion(b.row(opID(opReviewPaid)).Envelope.Txid)
				in.Moved, in.Transfer, in.TransferOK = nil, tron.Transfer{}, false
			},
			also: []string{AtMostOnce},
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, Conservation, CheckConservation, c) })
	}
}

// Goal: a review an operator resolved as paid is counted by what really
// moved, fee included: the clean run's opReviewPaid paid 1000 units less
// to the recipient than asked, and a fee to bob, and keeps conservation;
// judged as an ordinary confirmation, it would not.
func TestCheckConservationCountsAResolvedReviewByWhatMoved(t *testing.T) {
	b := clean(t)
	if got := CheckConservation(&b.s); len(got) != 0 {
		t.Fatalf("clean: %s", describe(got))
	}
	e := b.event(opID(opReviewPaid), sluice.Review, sluice.Confirmed)
	e.Worker = "w1" // no longer an operator's
	got := CheckConservation(&b.s)
	if len(got) != 1 || got[0].Operation != opID(opReviewPaid) || !strings.Contains(got[0].Message, "which made 2 movements") {
		t.Errorf("the fee-taking payment confirmed by a worker: want one violation about op %s, got:\n%s", opID(opReviewPaid), describe(got))
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

// toHotWallet makes operation n, consistently everywhere (the client's
// payload, the row, every answer and the chain's ledger), a withdrawal to
// the hot wallet itself.
func toHotWallet(b *builder, n int) {
	id := opID(n)
	row := b.row(id)
	was := row.Request.To.String()
	row.Request.To = hotWallet
	for i := range b.s.Inclusions {
		if in := &b.s.Inclusions[i]; in.Txid == row.Envelope.Txid {
			for j := range in.Moved {
				if in.Moved[j].To.String() == was {
					in.Moved[j].To = hotWallet
				}
			}
			if in.Transfer.To.String() == was {
				in.Transfer.To = hotWallet
			}
		}
	}
	for i := range b.s.Intake {
		// Not the conflicting request some client sent under this id.
		if r := &b.s.Intake[i]; opKey(r.ID) == id && r.Sent.To == was {
			r.Sent.To = hotWallet.String()
			if r.Answer.To == was {
				r.Answer.To = hotWallet.String()
			}
		}
	}
	for i := range b.s.Reads {
		if r := &b.s.Reads[i]; opKey(r.ID) == id && r.Answer.To == was {
			r.Answer.To = hotWallet.String()
		}
	}
}
