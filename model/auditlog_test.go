package model

import (
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
			// A failure before any envelope is also one nothing justifies.
			name: "illegal transition", op: opID(opRejected), mention: "requested->failed is not a legal transition",
			break_: func(b *builder) {
				b.event(opID(opRejected), sluice.Requested, sluice.Rejected).To = sluice.Failed
				b.row(opID(opRejected)).State = sluice.Failed
			},
			also: []string{Progress},
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
			name: "log that does not replay to the row's state", op: opID(opReverted), mention: "replays to failed",
			break_: func(b *builder) { b.row(opID(opReverted)).State = sluice.Rejected },
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
			// The world's record of the write names the Seq the store gave.
			name: "Seq not increasing", op: opID(opHappy), mention: "Seq must strictly increase",
			break_: func(b *builder) {
				b.write(&b.s.Events[2]).Seq = 1
				b.s.Events[2].Seq = 1
			},
		},
		{
			name: "log not opening with the creation", op: opID(opStale), mention: "must open with the creation",
			break_: func(b *builder) { b.event(opID(opStale), sluice.None, sluice.Requested).To = sluice.Validated },
		},
		{
			name: "rebuild without evidence", op: rebuilt, mention: "without evidence",
			break_: func(b *builder) { rebuildOf(b).Evidence = nil },
		},
		{
			name: "give-up without evidence", op: opID(opGaveUp), mention: "without evidence",
			break_: func(b *builder) { b.event(opID(opGaveUp), sluice.Broadcast, sluice.Failed).Evidence = nil },
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
			name: "retired txid that was included", op: opID(opGaveUp), mention: "as dead, but it is on chain",
			break_: func(b *builder) {
				txid := b.row(opID(opGaveUp)).Envelope.Txid
				b.s.Inclusions = append(b.s.Inclusions, mocknode.Inclusion{
					Txid: txid, BlockNumber: 500, BlockTime: b.s.Blocks[500].Time, Receipt: tron.ReceiptRevert, Owner: hotWallet,
				})
			},
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
