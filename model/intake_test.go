package model

import (
	"strings"
	"testing"

	"sluicesim/sluice"
)

func TestCheckIntakeUniquenessClean(t *testing.T) { wantClean(t, CheckIntakeUniqueness) }

func TestCheckIntakeUniquenessCatches(t *testing.T) {
	happy := opID(opHappy)
	original := pay(string(happy), alice, 1_500_000)
	toBob := pay(string(happy), bob, 1_500_000)
	for _, c := range []corruption{
		{
			// Created on a row that exists is no sequential history either.
			name: "two Created records for one id", op: happy, mention: "created 2 times",
			break_: func(b *builder) { b.record("c7", original, Created, sluice.Requested) },
			also:   []string{LinearizableIntake},
		},
		{
			name: "replay shown another amount", op: happy, mention: "a replayed answer returns the payload sent",
			break_: func(b *builder) { b.recordOf("c2").Answer.Amount = "1.6" },
			also:   []string{LinearizableIntake},
		},
		{
			name: "replay shown another recipient", op: happy, mention: "told replayed with 1500000 units of " + sluice.Asset + " to " + bob.String(),
			break_: func(b *builder) { b.recordOf("c2").Answer.To = bob.String() },
			also:   []string{LinearizableIntake},
		},
		{
			// The conflicting client's payload overwrote the row: every
			// client who was told the original now disagrees with it, and
			// so does the read that showed it.
			name: "conflict that overwrote the row", op: happy, mention: "that its creator c1 (call 1) sent",
			break_: func(b *builder) { b.row(happy).Request.To = bob },
			also:   []string{LinearizableIntake},
		},
		{
			name: "another payload replayed instead of refused", op: happy, mention: "a replayed answer returns the payload sent",
			break_: func(b *builder) {
				r := b.recordOf("c4")
				r.Outcome, r.Answer, r.State = Replayed, original, sluice.Confirmed
			},
			also: []string{LinearizableIntake},
		},
		{
			name: "conflict refusing the stored payload", op: happy, mention: "the refusal was wrong",
			break_: func(b *builder) { b.recordOf("c4").Sent = original },
			also:   []string{LinearizableIntake},
		},
		{
			// The id's case is spelling, not meaning: the payload is the
			// stored instruction and must be replayed, not refused.
			name: "conflict refusing the stored payload under an upper-case id", op: happy, mention: "the refusal was wrong",
			break_: func(b *builder) {
				r := b.recordOf("c4")
				r.ID = strings.ToUpper(string(happy))
				r.Sent = pay(r.ID, alice, 1_500_000)
			},
			also: []string{LinearizableIntake},
		},
		{
			name: "conflict for an invalid payload", op: happy, mention: "told conflict, not invalid",
			break_: func(b *builder) { b.recordOf("c4").Sent.Amount = "1.5000000" },
			also:   []string{LinearizableIntake},
		},
		{
			name: "valid payload refused as invalid", op: opID(opHappy), mention: "sent a valid payload",
			break_: func(b *builder) { b.record("c8", toBob, Invalid, 0) },
			also:   []string{LinearizableIntake},
		},
		{
			name: "two rows for one id", op: happy, mention: "has 2 rows",
			break_: func(b *builder) { b.s.Operations = append(b.s.Operations, *b.row(happy)) },
		},
		{
			name: "row no recorded request created", op: opID(opReverted), mention: "no recorded request created it",
			break_: func(b *builder) {
				for i, r := range b.s.Intake {
					if r.ID == string(opID(opReverted)) {
						b.s.Intake = append(b.s.Intake[:i], b.s.Intake[i+1:]...)
						break
					}
				}
			},
		},
		{
			// No client's payload is known for the row, so its rejection
			// cannot be justified either.
			name: "invalid request that left a row", op: opID(9), mention: "no valid request created it",
			break_: func(b *builder) {
				b.record("c9", pay(string(opID(9)), alice, 9), Invalid, 0)
				b.recordOf("c9").Sent.Amount = "0.0000090" // seven decimals
				b.insert(9, alice, 9).claim().step(sluice.Rejected, nil)
			},
			also: []string{Progress},
		},
		{
			name: "invalid payload told created", op: opID(9), mention: "sent an invalid payload",
			break_: func(b *builder) {
				o := b.insert(9, alice, 9)
				b.record("c9", pay(string(o.id), alice, 9), Created, sluice.Requested)
				b.recordOf("c9").Sent.Amount = "0.0000090" // seven decimals; the answer shows the row's 0.000009
				o.claim().step(sluice.Rejected, nil)
			},
			also: []string{Progress, LinearizableIntake},
		},
		{
			name: "created answer in a later state", op: happy, mention: "created in state confirmed",
			break_: func(b *builder) { b.recordOf("c1").State = sluice.Confirmed },
		},
		{
			name: "replay answer in a state the log never entered", op: happy, mention: "never entered",
			break_: func(b *builder) { b.recordOf("c2").State = sluice.Failed },
		},
		{
			// A self-consistent scale error: intake stored ten times what
			// the client asked, the chain paid it, and every answer and
			// read showed it. Only the client's own strings reveal it.
			name: "row holding ten times the amount sent", op: happy, mention: "sent 1500000 units of " + sluice.Asset + " to " + alice.String() + " for op " + string(happy) + " and was told created",
			break_: func(b *builder) { tenfold(b, opHappy) },
			also:   []string{Conservation, LinearizableIntake},
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, IntakeUniqueness, CheckIntakeUniqueness, c) })
	}
}

// tenfold makes op n a consistent tenfold of what its client sent: the row,
// the transfer on chain, every answer and every read show ten times the
// amount. The envelope's raw data is left alone; no invariant reads the
// amount from it.
func tenfold(b *builder, n int) {
	id := opID(n)
	row := b.row(id)
	row.Request.Amount *= 10
	ten := usdt(uint64(row.Request.Amount))
	if !row.Envelope.Txid.IsZero() {
		for i := range b.s.Inclusions {
			if b.s.Inclusions[i].Txid == row.Envelope.Txid && b.s.Inclusions[i].TransferOK {
				b.s.Inclusions[i].Moved[0].Amount *= 10
			}
		}
	}
	for i := range b.s.Intake {
		if r := &b.s.Intake[i]; opKey(r.ID) == id && (r.Outcome == Created || r.Outcome == Replayed) {
			r.Answer.Amount = ten
		}
	}
	for i := range b.s.Reads {
		if r := &b.s.Reads[i]; opKey(r.ID) == id {
			r.Answer.Amount = ten
		}
	}
}

// Goal: an id sent in upper case is the same operation as its lowercase
// form (intake canonicalizes the case), so its replay is judged against that
// row, and a wrong answer to it is caught.
func TestCheckIntakeUniquenessMatchesIDsCaseInsensitively(t *testing.T) {
	b := clean(t)
	b.recordOf("c3").Answer = pay(string(opID(opHappy)), bob, 1) // the upper-case replay of opHappy
	got := CheckIntakeUniqueness(&b.s)
	if len(got) == 0 || got[0].Operation != opID(opHappy) {
		t.Errorf("want a violation about %s, got:\n%s", opID(opHappy), describe(got))
	}
}
