package model

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

func TestCheckAuditLogClean(t *testing.T) { wantClean(t, CheckAuditLog) }

func TestCheckAuditLogCatches(t *testing.T) {
	rebuilt := opID(opRebuilt)
	rebuildOf := func(b *builder) *sluice.Event { return b.event(rebuilt, sluice.Broadcasting, sluice.Signing) }
	for _, c := range []corruption{
		{
			// A failure before any envelope is also one nothing justifies,
			// to progress and to no-operational-failure.
			name: "illegal transition", op: opID(opRejected), mention: "requested->failed is not a legal transition",
			break_: func(b *builder) {
				b.event(opID(opRejected), sluice.Requested, sluice.Rejected).To = sluice.Failed
				b.row(opID(opRejected)).State = sluice.Failed
			},
			also: []string{Progress, NoOperationalFailure},
		},
		{
			name: "event that does not start where the last one ended", op: opID(opCrashed), mention: "does not start where",
			break_: func(b *builder) {
				e := b.event(opID(opCrashed), sluice.Broadcasting, sluice.Broadcast)
				e.From = sluice.Signed // signed -> broadcast is no edge either
			},
		},
		{
			// A rejection of a payload to alice is also one nothing
			// justifies.
			name: "log that does not replay to the row's state", op: opID(opPolicyCancel), mention: "replays to failed",
			break_: func(b *builder) { b.row(opID(opPolicyCancel)).State = sluice.Rejected },
			also:   []string{Progress},
		},
		{
			name: "log that does not end on the row's txid", op: opID(opHappy), mention: "log ends on txid",
			break_: func(b *builder) { b.row(opID(opHappy)).Envelope.Txid = txidFor("elsewhere") },
		},
		{
			name: "row txid not derived from its raw_data", op: opID(opHappy), mention: "is not its raw_data's txid",
			break_: func(b *builder) { b.row(opID(opHappy)).Envelope.Raw.Timestamp++ },
		},
		{
			name: "token going back", op: rebuilt, mention: "fencing tokens went back",
			break_: func(b *builder) { b.lastEvent(rebuilt, sluice.Signing, sluice.Signed).Token = 1 },
		},
		{
			name: "row token below its log's", op: rebuilt, mention: "the row's token 1 is below token 2",
			break_: func(b *builder) { b.row(rebuilt).Token = 1 },
		},
		{
			// A write-ahead lost in a crash and written again when the
			// operation was driven anew: the log reads the same, the
			// clocks do not.
			name: "write-ahead stamped after the send", op: opID(opHappy), mention: "before the intent to send was durable",
			break_: func(b *builder) {
				e := b.event(opID(opHappy), sluice.Signed, sluice.Broadcasting)
				b.wireOf(e.Txid).At = e.At.Add(-time.Millisecond)
			},
		},
		{
			// The world's record of the write names the Seq the store gave.
			name: "Seq not increasing", op: opID(opHappy), mention: "Seq must strictly increase",
			break_: func(b *builder) {
				b.write(&b.s.Events[2]).Seq = 1
				b.s.Events[2].Seq = 1
			},
		},
		{
			// The world saw the solid head one block short of the
			// inclusion when the confirmation landed.
			name: "confirmed before its block was solid", op: opID(opHappy), mention: "while the chain's solid head was",
			break_: func(b *builder) {
				e := b.lastEvent(opID(opHappy), sluice.Broadcast, sluice.Confirmed)
				b.write(e).SolidSeen = b.inclusion(e.Txid).BlockNumber - 1
			},
		},
		{
			// The worker's step had no head from the node, yet it wrote
			// the write-ahead (independent bug 138).
			name: "write-ahead with no head answered", op: opID(opHappy), mention: "in a step where the node answered no head block",
			break_: func(b *builder) {
				b.write(b.event(opID(opHappy), sluice.Signed, sluice.Broadcasting)).AheadHead = time.Time{}
			},
		},
		{
			// The head the node answered left less than MinValidity.
			name: "write-ahead of a stale envelope", op: opID(opHappy), mention: "left before its expiration by the head the node answered",
			break_: func(b *builder) {
				w := b.write(b.event(opID(opHappy), sluice.Signed, sluice.Broadcasting))
				w.AheadHead = w.AheadHead.Add(window - minValidity)
			},
		},
		{
			// A build whose step had no head from the node (independent
			// bug 137 took the worker's clock instead).
			name: "envelope built with no head answered", op: opID(opHappy), mention: "built in a step where the node answered no head block",
			break_: func(b *builder) {
				b.write(b.event(opID(opHappy), sluice.Validated, sluice.Signing)).BuiltHead = time.Time{}
			},
		},
		{
			// An expiration from a clock a minute ahead of the head.
			name: "expiration past the window", op: opID(opHappy), mention: "outside [MinValidity",
			break_: func(b *builder) {
				w := b.write(b.event(opID(opHappy), sluice.Validated, sluice.Signing))
				w.BuiltHead = w.BuiltHead.Add(-time.Minute)
			},
		},
		{
			// An expiration from a clock behind: stale at birth.
			name: "expiration within MinValidity of the head", op: opID(opHappy), mention: "outside [MinValidity",
			break_: func(b *builder) {
				w := b.write(b.event(opID(opHappy), sluice.Validated, sluice.Signing))
				w.BuiltHead = w.BuiltHead.Add(window - minValidity + time.Second)
			},
		},
		{
			// The reference is a block the world had not yet seen solid
			// (independent bug 194 took the head block).
			name: "TAPoS reference above the solid head", op: opID(opHappy), mention: "names no block at or below the solid head",
			break_: func(b *builder) {
				w := b.write(b.event(opID(opHappy), sluice.Validated, sluice.Signing))
				w.BuiltSolid = refNumber(b, w) - 1
			},
		},
		{
			name: "resolved as paid before its block was solid", op: opID(opReviewPaid), mention: "(by operator) confirmed txid",
			break_: func(b *builder) {
				e := b.lastEvent(opID(opReviewPaid), sluice.Review, sluice.Confirmed)
				b.write(e).SolidSeen = b.inclusion(e.Txid).BlockNumber - 1
			},
		},
		{
			name: "log not opening with the creation", op: opID(opStale), mention: "must open with the creation",
			break_: func(b *builder) { b.event(opID(opStale), sluice.None, sluice.Requested).To = sluice.Validated },
		},
		{
			// The stuck policy read by the model, not by its code: a
			// policy that waits longer than the log shows the worker
			// waited (the same as a worker that rebuilt too early).
			name: "rebuild before RebuildAfter", op: rebuilt, mention: "before RebuildAfter 1h59m0s",
			break_: func(b *builder) { b.s.Stuck.RebuildAfter = 2*time.Hour - time.Minute },
		},
		{
			name: "rebuild past CancelAfter", op: opID(opPolicyCancel), mention: "at or past CancelAfter 1m30s",
			break_: func(b *builder) { b.s.Stuck.CancelAfter = 90 * time.Second },
		},
		{
			name: "rebuild beyond the budget", op: opID(opPolicyCancel), mention: fmt.Sprintf("is rebuild %d, but the stuck policy allows %d", buildsMax-1, buildsMax-2),
			break_: func(b *builder) { b.s.Stuck.Rebuilds = buildsMax - 2 },
		},
		{
			// The world's record of a step that got a broadcasting row's
			// txid answered as taken and wrote nothing.
			name: "a taken answer left unwritten", op: rebuilt, mention: "got it answered as taken by a node, with the row in broadcasting, and wrote nothing",
			break_: func(b *builder) {
				r := waitAt(rebuildOf(b))
				r.Taken = true
				b.s.Waits = append(b.s.Waits, r)
			},
		},
		{
			// A wait writes nothing: the world's record of one, on the
			// chain's answers that proved the first txid dead past
			// RebuildAfter, where w2 in fact rebuilt.
			name: "wait past RebuildAfter", op: rebuilt, mention: "past RebuildAfter 1m0s it rebuilds",
			break_: func(b *builder) { b.s.Waits = append(b.s.Waits, waitAt(rebuildOf(b))) },
		},
		{
			// A policy of no rebuilds: the first txid, proven dead, has
			// the budget spent (by the log: no rebuild before it).
			name: "wait with the rebuilds spent", op: rebuilt, mention: "with 0 rebuilds of 0 spent",
			break_: func(b *builder) {
				b.s.Stuck.Rebuilds = 0
				b.s.Waits = append(b.s.Waits, waitAt(rebuildOf(b)))
			},
		},
		{
			// The world's record of a step that got the happy op's txid
			// settled and tried no write; reported whatever the policy
			// (here one with no RebuildAfter at all).
			name: "a settled answer left unwritten", op: opID(opHappy), mention: "and wrote nothing",
			break_: func(b *builder) {
				b.s.Stuck.RebuildAfter = 0
				b.s.Waits = append(b.s.Waits, WaitRecord{Op: opID(opHappy), Proc: "w1", Txid: b.row(opID(opHappy)).Envelope.Txid, Settled: 5, Reason: "pending"})
			},
		},
		{
			name: "rebuild without evidence", op: rebuilt, mention: "without evidence",
			break_: func(b *builder) { rebuildOf(b).Evidence = nil },
		},
		{
			name: "give-up without evidence", op: opID(opPolicyCancel), mention: "without evidence",
			break_: func(b *builder) { b.event(opID(opPolicyCancel), sluice.Broadcast, sluice.Failed).Evidence = nil },
		},
		{
			name: "rebuild that retires nothing", op: rebuilt, mention: "retires no txid",
			break_: func(b *builder) { e := rebuildOf(b); e.RetiredTxid, e.Evidence = tron.Txid{}, nil },
		},
		{
			name: "txid swapped without a retirement", op: opID(opCrashed), mention: "without retiring it",
			break_: func(b *builder) { b.event(opID(opCrashed), sluice.Signing, sluice.Signed).Txid = txidFor("swap") },
		},
		{
			name: "rebuild retiring a txid the op did not hold", op: rebuilt, mention: "but the operation held",
			break_: func(b *builder) {
				e := rebuildOf(b)
				e.RetiredTxid, e.Evidence.Txid = txidFor("other"), txidFor("other")
			},
		},
		{
			name: "evidence about another txid", op: rebuilt, mention: "evidence about another txid",
			break_: func(b *builder) { rebuildOf(b).Evidence.Txid = txidFor("other") },
		},
		{
			name: "evidence whose solid time is before expiration+margin", op: rebuilt, mention: "proves nothing",
			break_: func(b *builder) {
				ev := rebuildOf(b).Evidence
				// The last real block before expiration + margin.
				blk := b.s.Blocks[0]
				for _, x := range b.s.Blocks {
					if x.Time.Before(ev.Expiration.Add(ev.Margin)) {
						blk = x
					}
				}
				ev.SolidNumber, ev.SolidTime = blk.Number, blk.Time
			},
		},
		{
			name: "evidence whose lookup found the txid", op: rebuilt, mention: "proves nothing",
			break_: func(b *builder) { rebuildOf(b).Evidence.Lookup = tron.Pending },
		},
		{
			// Behind a load balancer: the unknown came from a node that had
			// not seen the cited solid block.
			name: "evidence whose lookup came from a node behind the cited block", op: rebuilt, mention: "from a node whose own solid head reached the cited block",
			break_: func(b *builder) { ev := rebuildOf(b).Evidence; ev.LookupSolid = ev.SolidNumber - 40 },
		},
		{
			name: "evidence citing a block that does not exist", op: rebuilt, mention: "not on the chain",
			break_: func(b *builder) { rebuildOf(b).Evidence.SolidNumber = 1 << 40 },
		},
		{
			name: "evidence citing a block with another time", op: rebuilt, mention: "but the chain's block",
			break_: func(b *builder) { rebuildOf(b).Evidence.SolidTime = rebuildOf(b).Evidence.SolidTime.Add(time.Second) },
		},
		{
			name: "evidence citing a block that was never solid", op: rebuilt, mention: "it was never solid",
			break_: func(b *builder) {
				above := b.s.Blocks[b.s.SolidNumber+1]
				ev := rebuildOf(b).Evidence
				ev.SolidNumber, ev.SolidTime = above.Number, above.Time
			},
		},
		{
			// A failed receipt on chain is also trouble no policy cancel
			// may follow.
			name: "retired txid that was included", op: opID(opPolicyCancel), mention: "as dead, but it is on chain",
			break_: func(b *builder) {
				txid := b.row(opID(opPolicyCancel)).Envelope.Txid
				b.s.Inclusions = append(b.s.Inclusions, mocknode.Inclusion{
					Txid: txid, BlockNumber: 500, BlockTime: b.s.Blocks[500].Time, Receipt: tron.ReceiptRevert, Owner: hotWallet,
				})
			},
			also: []string{NoOperationalFailure},
		},
		{
			name: "never-sent rebuild whose txid was on the wire", op: opID(opStale), mention: "but it was on the wire",
			break_: func(b *builder) {
				retired := b.event(opID(opStale), sluice.Signed, sluice.Signing).RetiredTxid
				b.s.Wire = append(b.s.Wire, mocknode.WireAttempt{Seq: len(b.s.Wire) + 1, Worker: "w1", Txid: retired, At: b.now})
			},
		},
		{
			// The evidence is not taken at its word: the expiration is the
			// retired envelope's own, from the raw data the world saw
			// stored.
			name: "evidence claiming an expiration other than the raw data's", op: rebuilt, mention: "but its raw_data expires at",
			break_: func(b *builder) {
				rebuildOf(b).Evidence.Expiration = rebuildOf(b).Evidence.Expiration.Add(-time.Minute)
			},
		},
		{
			name: "evidence using another margin than the configured one", op: rebuilt, mention: "using margin 0s, but the configured safety margin is 30s",
			break_: func(b *builder) { rebuildOf(b).Evidence.Margin = 0 },
		},
		{
			// The evidence's own numbers add up (solid time = its claimed
			// expiration + its margin), but the real expiration is later:
			// the model's own proof check, with the re-derived expiration,
			// finds that the cited block proves nothing.
			name: "evidence whose proof holds only with its own expiration", op: rebuilt, mention: "proves nothing",
			break_: func(b *builder) {
				ev := rebuildOf(b).Evidence
				real := time.UnixMilli(b.envelopeOf(ev.Txid).Raw.Expiration)
				cited := b.s.Blocks[0]
				for _, x := range b.s.Blocks {
					if x.Time.Before(real.Add(margin)) {
						cited = x // the last block before the real deadline
					}
				}
				ev.SolidNumber, ev.SolidTime = cited.Number, cited.Time
				ev.Expiration = cited.Time.Add(-margin)
			},
		},
		{
			name: "events for an op with no row", op: opID(9), mention: "no row",
			break_: func(b *builder) {
				b.appendEvent(sluice.Event{OperationID: opID(9), From: sluice.None, To: sluice.Requested, At: b.now})
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, AuditLog, CheckAuditLog, c) })
	}
}

// Goal: an operator's action is judged against the chain like a worker's:
// a cancel of a txid that may have been sent carries a proof of its death
// that holds (the clean run's opOpCancel: first send refused, parked,
// cancelled once dead), a review resolved as paid names a txid the chain
// has in a solid block with SUCCESS (opReviewPaid), and an operator takes
// only its own edges (opReverted's retry is one). Method: break one thing
// in a clean run.
func TestCheckAuditLogCatchesOperatorActions(t *testing.T) {
	cancelled := opID(opOpCancel)
	cancelOf := func(b *builder) *sluice.Event { return b.event(cancelled, sluice.Broadcasting, sluice.Failed) }
	paid := opID(opReviewPaid)
	paidIn := func(b *builder) *mocknode.Inclusion { return b.inclusion(b.row(paid).Envelope.Txid) }
	for _, c := range []corruption{
		{
			name: "an operator's cancel without evidence", op: cancelled, mention: "which may have been sent, without proof of its death",
			break_: func(b *builder) { cancelOf(b).Evidence = nil },
		},
		{
			// The proof the operator filed before the txid had expired.
			name: "an operator's cancel with evidence that does not prove", op: cancelled, mention: "with evidence that proves nothing",
			break_: func(b *builder) {
				ev := cancelOf(b).Evidence
				blk := b.s.Blocks[0]
				for _, x := range b.s.Blocks {
					if x.Time.Before(ev.Expiration.Add(ev.Margin)) {
						blk = x // the last block before expiration + margin
					}
				}
				ev.SolidNumber, ev.SolidTime = blk.Number, blk.Time
			},
		},
		{
			name: "an operator's cancel whose lookup came from a node behind the cited block", op: cancelled, mention: "with evidence that proves nothing",
			break_: func(b *builder) { ev := cancelOf(b).Evidence; ev.LookupSolid = ev.SolidNumber - 1 },
		},
		{
			name: "an operator's cancel citing a block that was never solid", op: cancelled, mention: "it was never solid",
			break_: func(b *builder) {
				above := b.s.Blocks[b.s.SolidNumber+1]
				ev := cancelOf(b).Evidence
				ev.SolidNumber, ev.SolidTime, ev.LookupSolid = above.Number, above.Time, above.Number
			},
		},
		{
			name: "an operator's cancel with evidence about another txid", op: cancelled, mention: "citing evidence about txid",
			break_: func(b *builder) { cancelOf(b).Evidence.Txid = txidFor("other") },
		},
		{
			// The lookup said unknown; the chain has it (with a failed
			// receipt, so nothing else is wrong).
			name: "an operator's cancel of a txid on chain", op: cancelled, mention: "is an operator's cancel of txid",
			break_: func(b *builder) {
				b.s.Inclusions = append(b.s.Inclusions, mocknode.Inclusion{
					Txid: b.row(cancelled).Envelope.Txid, BlockNumber: 500, BlockTime: b.s.Blocks[500].Time, Receipt: tron.ReceiptRevert, Owner: hotWallet,
				})
			},
		},
		{
			// No transfer at all: the money the operator settled never
			// left, so the ledger of the chain disagrees too.
			name: "resolved as paid by a txid not on chain", op: paid, mention: "resolves the review as paid by txid",
			break_: func(b *builder) {
				txid := b.row(paid).Envelope.Txid
				b.s.Inclusions = slices.DeleteFunc(b.s.Inclusions, func(in mocknode.Inclusion) bool { return in.Txid == txid })
			},
			also: []string{AtMostOnce, Conservation},
		},
		{
			name: "resolved as paid by a txid not yet solid", op: paid, mention: "which the final chain does not have in a solid block with SUCCESS",
			break_: func(b *builder) {
				in := paidIn(b)
				in.BlockNumber = b.s.SolidNumber + 1
				in.BlockTime = b.s.Blocks[in.BlockNumber].Time
			},
		},
		{
			// The operator's edge into rejected does not exist: a cancel
			// fails the operation. (Rejecting a valid request is also
			// progress's.)
			name: "an operator's transition no operator may make", op: cancelled, mention: "is not a transition an operator may make",
			break_: func(b *builder) {
				cancelOf(b).To = sluice.Rejected
				b.row(cancelled).State = sluice.Rejected
			},
			also: []string{Progress},
		},
		{
			name: "an operator's retry of a terminal operation", op: opID(opPolicyCancel), mention: "an operator retried a terminal operation",
			break_: func(b *builder) { b.op(opPolicyCancel).resolve("alice", sluice.Failed, "again", nil) },
		},
		{
			// A retry by a worker: no worker writes an event that leaves
			// the state where it was. (One-writer judges who wrote by the
			// world's records, not by the event's Worker.)
			name: "a retry written by a worker", op: opID(opReverted), mention: "signing->signing is not a legal transition",
			break_: func(b *builder) { b.lastEvent(opID(opReverted), sluice.Signing, sluice.Signing).Worker = "w1" },
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, AuditLog, CheckAuditLog, c) })
	}
}

// Goal: a failed receipt proves its txid's death only as the chain bears
// it out: the txid in the block cited, at or below the solid block cited
// and the final solid head, with the failed receipt cited, and solid on the
// node that showed it. Method: break
// the clean run's opReverted, rebuilt on the proof of its REVERT.
func TestCheckAuditLogCatchesFailedReceiptProofs(t *testing.T) {
	id := opID(opReverted)
	proofOf := func(b *builder) *sluice.Evidence { return b.event(id, sluice.Broadcast, sluice.Signing).Evidence }
	for _, c := range []corruption{
		{
			// The chain has it with SUCCESS: it was alive, and two live
			// inclusions are at-most-once's too; a confirmed operation's
			// SUCCESS that moved nothing is conservation's.
			name: "a failed-receipt proof of a txid the chain has with SUCCESS", op: id, mention: "as dead by a failed receipt, but it is on chain in block",
			break_: func(b *builder) { b.inclusion(proofOf(b).Txid).Receipt = tron.ReceiptSuccess },
			// and the park after the rebuild answered no failure.
			also: []string{AtMostOnce, Conservation, NoOperationalFailure},
		},
		{
			name: "a failed-receipt proof citing a SUCCESS receipt", op: id, mention: "an inclusion proves death only with a failed receipt",
			break_: func(b *builder) { proofOf(b).Receipt = tron.ReceiptSuccess },
		},
		{
			// The inclusion cited is above the solid block cited.
			name: "a failed-receipt proof citing a block not yet solid", op: id, mention: "in a block at or below the cited solid block",
			break_: func(b *builder) {
				ev := proofOf(b)
				ev.BlockNumber = ev.SolidNumber + 1
			},
		},
		{
			// Behind a balancer, a node on an orphaned fork shows a failed
			// receipt at a height the other node's solid block covers.
			name: "a failed-receipt proof from a node that did not call the block solid", op: id, mention: "which the node that showed it calls solid",
			break_: func(b *builder) { proofOf(b).SeenSolid = false },
		},
		{
			name: "a failed-receipt proof citing a solid block that was never solid", op: id, mention: "it was never solid",
			break_: func(b *builder) {
				above := b.s.Blocks[b.s.SolidNumber+1]
				ev := proofOf(b)
				ev.SolidNumber, ev.SolidTime, ev.LookupSolid = above.Number, above.Time, above.Number
			},
		},
		{
			name: "a failed-receipt proof citing the wrong block", op: id, mention: "but the final chain has no such solid inclusion",
			break_: func(b *builder) { proofOf(b).BlockNumber-- },
		},
		{
			name: "a failed-receipt proof citing another receipt", op: id, mention: "citing receipt OUT_OF_ENERGY",
			break_: func(b *builder) { proofOf(b).Receipt = tron.ReceiptOutOfEnergy },
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, AuditLog, CheckAuditLog, c) })
	}
}

// waitAt is a wait a worker might have decided instead of rebuild e, on the
// same chain answers.
func waitAt(e *sluice.Event) WaitRecord {
	ev := e.Evidence
	return WaitRecord{Op: e.OperationID, Proc: "w2", Txid: ev.Txid,
		SolidNumber: ev.SolidNumber, SolidTime: ev.SolidTime, LookupSolid: ev.LookupSolid, Reason: "no proof of death yet"}
}

// refNumber is the number of the block the envelope stored by build write w
// references (TAPoS), found by its id in the chain.
func refNumber(b *builder, w *WriteRecord) int64 {
	raw, ok := b.s.index().envelope(&b.s, writeEvent(&b.s, w).Txid)
	if !ok {
		b.t.Fatalf("no envelope for the write at Seq %d", w.Seq)
	}
	for _, blk := range b.s.Blocks {
		// The builder's ids share bytes 8..16 among many blocks: the
		// number's two bytes tell them apart.
		if [8]byte(blk.ID[8:16]) == raw.RefBlockHash && blk.Number&0xffff == int64(raw.RefBlockBytes[0])<<8|int64(raw.RefBlockBytes[1]) {
			return blk.Number
		}
	}
	b.t.Fatalf("the envelope references no block of the chain")
	return 0
}

// Goal: an envelope referencing exactly the solid head is kept; one block
// above it is not.
func TestReferencesSolidBoundary(t *testing.T) {
	for _, above := range []int64{0, 1} {
		b := clean(t)
		w := b.write(b.event(opID(opHappy), sluice.Validated, sluice.Signing))
		w.BuiltSolid = refNumber(b, w) - above
		var got []Violation
		for _, v := range CheckAuditLog(&b.s) {
			if strings.Contains(v.Message, "TAPoS reference") {
				got = append(got, v)
			}
		}
		if (len(got) == 0) != (above == 0) {
			t.Errorf("reference %d above the solid head: got %v", above, got)
		}
	}
}
