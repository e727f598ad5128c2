package model

import (
	"testing"

	"sluicesim/sluice"
)

func TestCheckIntakeUniquenessClean(t *testing.T) { wantClean(t, CheckIntakeUniqueness) }

func TestCheckIntakeUniquenessCatches(t *testing.T) {
	happy := opID(opHappy)
	original := hashOf(happy, alice, 1_500_000)
	other := hashOf(happy, bob, 1_500_000)
	recordOf := func(b *builder, client string) *IntakeRecord {
		for i := range b.s.Intake {
			if b.s.Intake[i].Client == client {
				return &b.s.Intake[i]
			}
		}
		b.t.Fatalf("no record of client %s", client)
		return nil
	}
	for _, c := range []corruption{
		{
			name: "two Created records for one id", op: happy, mention: "created 2 times",
			break_: func(b *builder) { b.record("c7", string(happy), original, Created, sluice.Requested) },
		},
		{
			name: "replay that returned another payload", op: happy, mention: "the row holds",
			break_: func(b *builder) { recordOf(b, "c2").Returned = other },
		},
		{
			name: "conflict that overwrote the row", op: happy, mention: "a later request changed the row",
			break_: func(b *builder) { b.row(happy).RequestHash = other },
		},
		{
			name: "another payload replayed instead of refused", op: happy, mention: "a replayed answer returns the payload sent",
			break_: func(b *builder) {
				r := recordOf(b, "c4")
				r.Outcome, r.Returned, r.State = Replayed, original, sluice.Confirmed
			},
		},
		{
			name: "conflict refusing the stored payload", op: happy, mention: "the refusal was wrong",
			break_: func(b *builder) { recordOf(b, "c4").RequestHash = original },
		},
		{
			name: "two rows for one id", op: happy, mention: "has 2 rows",
			break_: func(b *builder) { b.s.Operations = append(b.s.Operations, *b.row(happy)) },
		},
		{
			name: "row no recorded request created", op: opID(opRejected), mention: "no recorded request created it",
			break_: func(b *builder) {
				for i, r := range b.s.Intake {
					if r.ID == string(opID(opRejected)) {
						b.s.Intake = append(b.s.Intake[:i], b.s.Intake[i+1:]...)
						break
					}
				}
			},
		},
		{
			name: "invalid request that left a row", op: opID(9), mention: "no valid request created it",
			break_: func(b *builder) {
				b.record("c9", string(opID(9)), "", Invalid, 0)
				b.insert(9, alice, 9).claim().step(sluice.Rejected, nil)
			},
		},
		{
			name: "invalid payload told created", op: opID(9), mention: "sent an invalid payload",
			break_: func(b *builder) {
				o := b.insert(9, alice, 9)
				b.record("c9", string(o.id), "", Created, sluice.Requested)
				b.s.Intake[len(b.s.Intake)-1].Returned = o.row().RequestHash
				o.claim().step(sluice.Rejected, nil)
			},
		},
		{
			name: "created answer in a later state", op: happy, mention: "created in state confirmed",
			break_: func(b *builder) { recordOf(b, "c1").State = sluice.Confirmed },
		},
		{
			name: "replay answer in a state the log never entered", op: happy, mention: "never entered",
			break_: func(b *builder) { recordOf(b, "c2").State = sluice.Failed },
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, IntakeUniqueness, CheckIntakeUniqueness, c) })
	}
}

// Goal: an id sent in upper case is the same operation as its lowercase
// form (intake canonicalizes the case), so its replay is judged against that
// row, and a wrong answer to it is caught.
func TestCheckIntakeUniquenessMatchesIDsCaseInsensitively(t *testing.T) {
	b := clean(t)
	for i, r := range b.s.Intake {
		if r.Client == "c3" { // the upper-case replay of opHappy
			b.s.Intake[i].Returned = hashOf(opID(opHappy), bob, 1)
		}
	}
	got := CheckIntakeUniqueness(&b.s)
	if len(got) == 0 || got[0].Operation != opID(opHappy) {
		t.Errorf("want a violation about %s, got:\n%s", opID(opHappy), describe(got))
	}
}
