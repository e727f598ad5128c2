package model

import (
	"testing"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// reviewed adds op 8 (8 USDT to alice), sent and included with SUCCESS;
// odd then changes what the inclusion really did and reported, and the core
// ends it in state end.
func reviewed(b *builder, odd func(in *mocknode.Inclusion), end sluice.State) *opb {
	return reviewedAs(b, 8, odd, end)
}

// reviewedAs is reviewed as op n, still paying 8 USDT.
func reviewedAs(b *builder, n int, odd func(in *mocknode.Inclusion), end sluice.State) *opb {
	o := b.create(n, 8_000_000, "c1").claim().build()
	o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil).include(tron.ReceiptSuccess)
	if odd != nil {
		odd(b.inclusion(o.txid()))
	}
	o.step(end, nil)
	if end == sluice.Review || end == sluice.Failed {
		o.row().Reason = "receipt SUCCESS, but the logs are not the payment asked"
	}
	return o
}

// The executions the chain and the node may carry out instead of the one
// asked, each set on an inclusion as the mock node would record it.
var oddInclusions = []struct {
	name string
	odd  func(in *mocknode.Inclusion)
}{
	{"fee on transfer", func(in *mocknode.Inclusion) {
		in.Execution = mocknode.Execution{Fee: 1000, FeeTo: bob}
		in.Moved = []tron.Transfer{
			{Contract: tron.USDTContract, From: hotWallet, To: bob, Amount: 1000},
			{Contract: tron.USDTContract, From: hotWallet, To: alice, Amount: 8_000_000 - 1000},
		}
	}},
	{"nothing moved", func(in *mocknode.Inclusion) {
		in.Execution = mocknode.Execution{NoTransfer: true}
		in.Moved, in.TransferOK, in.Transfer = nil, false, tron.Transfer{}
	}},
	{"half the amount", func(in *mocknode.Inclusion) {
		in.Execution = mocknode.Execution{Redirect: true, To: alice, Amount: 4_000_000}
		in.Moved[0].Amount = 4_000_000
	}},
	{"another recipient", func(in *mocknode.Inclusion) {
		in.Execution = mocknode.Execution{Redirect: true, To: mallory, Amount: 8_000_000}
		in.Moved[0].To = mallory
	}},
	{"exact, reported without a log", func(in *mocknode.Inclusion) {
		in.Execution = mocknode.Execution{Lie: true}
	}},
	{"exact, reported twice", func(in *mocknode.Inclusion) {
		l := tron.TransferLog(tron.USDTContract, hotWallet, alice, 8_000_000)
		in.Execution = mocknode.Execution{Lie: true, Logs: []tron.Log{l, l}}
	}},
	{"exact, reported for another amount", func(in *mocknode.Inclusion) {
		in.Execution = mocknode.Execution{Lie: true, Logs: []tron.Log{tron.TransferLog(tron.USDTContract, hotWallet, alice, 8_000_001)}}
	}},
}

// Goal: an operation sent to review because its solid SUCCESS was not
// reported as exactly the payment asked keeps every invariant, whatever
// really moved: conservation counts what moved under it, at-most-once
// allows its one inclusion, progress finds the justification on chain.
func TestReviewWithOddExecutionIsClean(t *testing.T) {
	for _, c := range oddInclusions {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			reviewed(b, c.odd, sluice.Review)
			if vs := Check(&b.s); len(vs) > 0 {
				t.Errorf("review after %s: want no violation, got:\n%s", c.name, describe(vs))
			}
			if o := CountOutcomes(&b.s); o.Review != 1 {
				t.Errorf("outcomes count %d in review, want 1", o.Review)
			}
		})
	}
}

// Goal: the decisions around review that would hurt someone are caught:
// confirming what did not pay as asked, failing what may have paid, and
// parking an exact payment in review for nothing.
func TestReviewCatches(t *testing.T) {
	fee := oddInclusions[0].odd
	for _, c := range []corruption{
		{
			name: "confirmed though a fee was taken on the way", op: opID(8), mention: "which made 2 movements",
			break_: func(b *builder) { reviewed(b, fee, sluice.Confirmed) },
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, Conservation, CheckConservation, c) })
	}
	for _, c := range []corruption{
		{
			name: "review of a payment reported exactly as asked", op: opID(8), mention: "reported as exactly the payment asked",
			break_: func(b *builder) { reviewed(b, nil, sluice.Review) },
		},
		{
			// Nor did an operator, refused bytes or the policy fail it.
			name: "failed on a SUCCESS that moved nothing", op: opID(8), mention: "without a justification",
			break_: func(b *builder) { reviewed(b, oddInclusions[1].odd, sluice.Failed) },
			also:   []string{NoOperationalFailure},
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, Progress, CheckProgress, c) })
	}
	t.Run("failed on a SUCCESS with a fee", func(t *testing.T) {
		wantCaught(t, AtMostOnce, CheckAtMostOnce, corruption{
			op: opID(8), mention: "is failed but moved tokens",
			break_: func(b *builder) { reviewed(b, fee, sluice.Failed) },
			also:   []string{Conservation, Progress, NoOperationalFailure},
		})
	})
}

// Goal: the model's own reading of a Transfer log agrees with the log the
// chain emits, and refuses what is not one.
func TestRefReadTransfer(t *testing.T) {
	l := tron.TransferLog(tron.USDTContract, hotWallet, alice, 8_000_000)
	got, ok := refReadTransfer(l)
	if !ok || got.From != [21]byte(hotWallet) || got.To != [21]byte(alice) || got.Units != 8_000_000 {
		t.Errorf("refReadTransfer(a Transfer log) = %+v, %v", got, ok)
	}
	bad := l
	bad.Topics = append([][32]byte(nil), l.Topics...)
	bad.Topics[0][0] ^= 1
	if _, ok := refReadTransfer(bad); ok {
		t.Error("refReadTransfer took a log whose first topic is not Transfer")
	}
	big := l
	big.Data = append([]byte(nil), l.Data...)
	big.Data[0] = 1
	if _, ok := refReadTransfer(big); ok {
		t.Error("refReadTransfer took an amount beyond 64 bits")
	}
}
