package model

import (
	"slices"
	"strings"
	"testing"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

func TestCheckAtMostOnceClean(t *testing.T) { wantClean(t, CheckAtMostOnce) }

func TestCheckAtMostOnceCatches(t *testing.T) {
	// includeRetired puts op's first (retired) txid on chain too, in
	// block 500 (solid).
	includeRetired := func(b *builder, n int, receipt string) { includeRetiredIn(b, n, receipt, 500) }
	for _, c := range []corruption{
		{
			// Any second inclusion is of a retired txid, which the audit
			// log must also flag; a REVERT keeps conservation out of it.
			// Not yet solid, it may still be reorganized into a SUCCESS.
			name: "an unsolid failure plus a success", op: opID(opStale), mention: "2 inclusions on chain that are not solid failures",
			break_: func(b *builder) { includeRetiredIn(b, opStale, tron.ReceiptRevert, b.s.SolidNumber+1) },
			also:   []string{AuditLog},
		},
		{
			// The clean run's solid REVERT, its proof of death, made
			// unsolid: it no longer proves anything.
			name: "a failed receipt rebuilt on that is not solid after all", op: opID(opReverted), mention: "2 inclusions on chain that are not solid failures",
			break_: func(b *builder) {
				in := b.inclusion(b.event(opID(opReverted), sluice.Validated, sluice.Signing).Txid)
				in.BlockNumber = b.s.SolidNumber + 1
				in.BlockTime = b.s.Blocks[in.BlockNumber].Time
			},
			// The park after the rebuild answered a failed receipt
			// that was not yet on chain then.
			also: []string{AuditLog, NoOperationalFailure},
		},
		{
			name: "two successful transfers for one confirmed op", op: opID(opRebuilt), mention: "2 successful transfers",
			break_: func(b *builder) { includeRetired(b, opRebuilt, tron.ReceiptSuccess) },
			also:   []string{Conservation, AuditLog},
		},
		{
			// Two SUCCESS inclusions are two live ones, whatever they moved.
			name: "two SUCCESS inclusions for one confirmed op", op: opID(opRebuilt), mention: "2 inclusions on chain that are not solid failures",
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
			// Op 8 reverted and was confirmed anyway: the customer's hold
			// is settled for a payment that never happened.
			name: "a REVERT counted as confirmed", op: opID(8), mention: "REVERT",
			break_: func(b *builder) {
				o := b.create(8, 8_000_000, "c1").claim().build()
				o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil).include(tron.ReceiptRevert)
				o.step(sluice.Confirmed, nil)
			},
			also: []string{Conservation},
		},
		{
			// A failed op whose transfer went through has no failure the
			// chain bears out either, and its customer was refunded money
			// that left.
			name: "failed op whose transaction paid", op: opID(8), mention: "is failed but moved tokens",
			break_: failedThatPaid,
			also:   []string{Conservation, Progress, NoOperationalFailure},
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, AtMostOnce, CheckAtMostOnce, c) })
	}
}

// includeRetiredIn puts op n's first (retired) txid on chain in block blk
// with receipt; a SUCCESS pays the request.
func includeRetiredIn(b *builder, n int, receipt string, blk int64) {
	retired := b.event(opID(n), sluice.Validated, sluice.Signing).Txid
	in := mocknode.Inclusion{Txid: retired, BlockNumber: blk, BlockTime: b.s.Blocks[blk].Time, Receipt: receipt, Owner: hotWallet}
	if receipt == tron.ReceiptSuccess {
		row := b.row(opID(n))
		in.Transfer = tron.Transfer{Contract: tron.USDTContract, From: hotWallet, To: row.Request.To, Amount: uint64(row.Request.Amount)}
		in.TransferOK = true
		in.Moved = []tron.Transfer{in.Transfer}
	}
	b.s.Inclusions = append(b.s.Inclusions, in)
}

// Goal: a failed receipt in a solid block is a dead end, not a second live
// envelope: the clean run's opReverted, REVERT in a solid block then a
// SUCCESS, keeps at-most-once; the same REVERT on a retired txid that was
// never sent is audit-log's to report, not at-most-once's.
func TestCheckAtMostOnceSolidFailurePlusSuccess(t *testing.T) {
	b := clean(t)
	id := opID(opReverted)
	var receipts []string
	for _, in := range b.s.Inclusions {
		if in.Txid == b.event(id, sluice.Validated, sluice.Signing).Txid || in.Txid == b.row(id).Envelope.Txid {
			receipts = append(receipts, in.Receipt)
		}
	}
	if want := []string{tron.ReceiptRevert, tron.ReceiptSuccess}; !slices.Equal(receipts, want) {
		t.Fatalf("setup: op %s's inclusions have receipts %q, want %q", id, receipts, want)
	}
	if got := CheckAtMostOnce(&b.s); len(got) != 0 {
		t.Errorf("a solid REVERT then a SUCCESS: want clean, got:\n%s", describe(got))
	}
	b = clean(t)
	includeRetiredIn(b, opStale, tron.ReceiptRevert, 500)
	if got := CheckAtMostOnce(&b.s); len(got) != 0 {
		t.Errorf("a solid REVERT of a retired txid: at-most-once reported\n%s", describe(got))
	}
	got := Check(&b.s)
	if len(got) != 1 || got[0].Invariant != AuditLog || !strings.Contains(got[0].Message, "without proof of death as never sent, but it is on chain") {
		t.Errorf("a solid REVERT of a txid retired as never sent: want one audit-log violation, got:\n%s", describe(got))
	}
}

// Goal: a run cut short, by the step budget or by a failed process, is not
// charged with the states a payment passes through on its way (sent and
// paid, not yet confirmed), which liveness or the failure reports as the
// cut; a terminal row that paid is charged all the same, and so is the
// total in a run that was not cut. Method: op 8 paid while broadcast, the
// run not cut, cut by the budget, and cut by a failure; then op 8 failed
// after paying, in a run cut either way.
func TestCutExcusesOnlyPaymentsInFlight(t *testing.T) {
	inFlight := func(b *builder) {
		o := b.create(8, 8_000_000, "c1").claim().build()
		o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil).include(tron.ReceiptSuccess)
	}
	for _, c := range []struct {
		name            string
		budget, failure bool
	}{{"not cut", false, false}, {"budget spent", true, false}, {"a process failed", false, true}} {
		b := clean(t)
		inFlight(b)
		b.s.BudgetExhausted, b.s.Failed = c.budget, c.failure
		cut := c.budget || c.failure
		vs := Check(&b.s)
		got := map[string]bool{}
		for _, v := range vs {
			got[v.Invariant] = true
		}
		if got[AtMostOnce] == cut || got[Conservation] == cut || c.budget && !got[Liveness] {
			t.Errorf("paid while broadcast, %s: at-most-once %v, conservation %v, liveness %v; want %v, %v, and liveness if the budget was spent:\n%s",
				c.name, got[AtMostOnce], got[Conservation], got[Liveness], !cut, !cut, describe(vs))
		}
	}
	for _, failure := range []bool{false, true} {
		b := clean(t)
		failedThatPaid(b)
		b.s.BudgetExhausted, b.s.Failed = !failure, failure
		if vs := CheckAtMostOnce(&b.s); len(vs) == 0 {
			t.Errorf("a failed op that paid passed at-most-once because the run was cut short (by a failure: %v)", failure)
		}
	}
}

// failedThatPaid adds op 8, failed on a REVERT whose transfer in truth went
// through: a failed row that moved tokens.
func failedThatPaid(b *builder) {
	o := revertedAndFailed(b)
	row := o.row()
	in := b.inclusion(row.Envelope.Txid)
	in.Receipt, in.TransferOK = tron.ReceiptSuccess, true
	in.Transfer = tron.Transfer{Contract: tron.USDTContract, From: hotWallet, To: row.Request.To, Amount: uint64(row.Request.Amount)}
	in.Moved = []tron.Transfer{in.Transfer}
}
