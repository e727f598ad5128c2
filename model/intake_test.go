package model

import (
	"strings"
	"testing"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
)

func TestCheckIntakeUniquenessClean(t *testing.T) { wantClean(t, CheckIntakeUniqueness) }

// Goal: a refusal for want of funds of an id nobody created is clean, to
// every checker.
func TestUnfundedForAFreeIDIsClean(t *testing.T) {
	b := clean(t)
	b.unfunded()
	if got := Check(&b.s); len(got) != 0 {
		t.Errorf("clean run with an unfunded request: %d violations, want none:\n%s", len(got), describe(got))
	}
}

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
			name: "replay shown another customer", op: happy, mention: "told replayed with 1500000 units of " + sluice.Asset + " to " + alice.String() + " from customer cust-b",
			break_: func(b *builder) { b.recordOf("c2").Answer.Customer = "cust-b" },
			also:   []string{LinearizableIntake},
		},
		{
			// The same id, recipient and amount from another customer's
			// balance is another withdrawal: a 409, never a replay.
			name: "another customer replayed instead of refused", op: happy, mention: "a replayed answer returns the payload sent",
			break_: func(b *builder) {
				r := b.recordOf("c4")
				r.Sent = payFor(string(happy), "cust-b", alice, 1_500_000)
				r.Outcome, r.Answer, r.State = Replayed, original, sluice.Confirmed
			},
			also: []string{LinearizableIntake},
		},
		{
			// A customer's id is not case-folded: "CUST-A" is another one.
			name: "conflict for another customer is right; its replay is not", op: happy, mention: "was told replayed, but the row holds",
			break_: func(b *builder) {
				r := b.recordOf("c4")
				r.Sent = payFor(string(happy), "CUST-A", alice, 1_500_000)
				r.Outcome, r.Answer, r.State = Replayed, r.Sent, sluice.Confirmed
			},
			also: []string{LinearizableIntake},
		},
		{
			// The store paid from another customer's balance than its
			// client named; every answer showed the client's own.
			name: "row holding another customer than its creator sent", op: happy, mention: "holds 1500000 units of " + sluice.Asset + " to " + alice.String() + " from customer cust-b, not",
			break_: func(b *builder) { b.row(happy).Request.Customer = "cust-b" },
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
			name: "conflict for an invalid customer", op: happy, mention: "told conflict, not invalid",
			break_: func(b *builder) { b.recordOf("c4").Sent.Customer = "cust a" },
			also:   []string{LinearizableIntake},
		},
		{
			// Validation comes before the store: an invalid customer is a
			// 422, whatever anybody's balance.
			name: "unfunded for an invalid payload", op: opID(opUnfunded), mention: "told unfunded, not invalid",
			break_: func(b *builder) { b.unfunded(); b.recordOf("c10").Sent.Customer = strings.Repeat("p", 65) },
			also:   []string{LinearizableIntake},
		},
		{
			// Refused for want of funds, and stored anyway: no recorded
			// request created the row.
			// Its hold is then one the customer's balance never covered.
			name: "unfunded request that left a row", op: opID(opUnfunded), mention: "no recorded request created it",
			break_: func(b *builder) {
				b.unfunded()
				b.insertFor(opUnfunded, pauper, alice, 1_000_000).claim().step(sluice.Rejected, nil)
			},
			also: []string{Progress, Funds},
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
			// A failed row: a confirmed one would also pay what no client
			// asked for (conservation's).
			name: "row no recorded request created", op: opID(opPolicyCancel), mention: "no recorded request created it",
			break_: func(b *builder) {
				for i, r := range b.s.Intake {
					if r.ID == string(opID(opPolicyCancel)) {
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
			name: "replay answer naming a txid the log never had in that state", op: happy, mention: "never entered confirmed with that txid",
			break_: func(b *builder) { b.recordOf("c2").Txid = txidFor("other").String() },
		},
		{
			name: "created answer naming a txid", op: happy, mention: "a new operation has none",
			break_: func(b *builder) { b.recordOf("c1").Txid = txidFor("other").String() },
		},
		{
			// A self-consistent scale error: intake stored ten times what
			// the client asked, the chain paid it, and every answer and
			// read showed it. Only the client's own strings reveal it.
			name: "row holding ten times the amount sent", op: happy, mention: "sent 1500000 units of " + sluice.Asset + " to " + alice.String() + " from customer cust-a for op " + string(happy) + " and was told created",
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

// Goal: an Unfunded answer is wrong for a customer whose deposits cover the
// amount on top of every withdrawal any row holds for them, and is not
// judged otherwise: when the deposits fall short of that by a unit, or
// when the snapshot recorded no deposits. Method: the clean run's refusal
// of pauper (1 USDT), with pauper's deposits set on either side of the
// line. The clean run's rows are all payer's, so payer's deposits are set
// too, to show they do not count for pauper.
func TestUnfundedJudgedAgainstDeposits(t *testing.T) {
	id := opID(opUnfunded)
	for _, c := range []struct {
		name     string
		deposits []sluice.Credit
		wrong    bool
	}{
		{"no deposits recorded", nil, false},
		{"no deposits for the customer", []sluice.Credit{{Ref: "d1", Customer: payer, Amount: 1_000_000_000_000}}, false},
		{"deposits one unit short", []sluice.Credit{{Ref: "d1", Customer: pauper, Amount: 999_999}}, false},
		{"deposits that cover it", []sluice.Credit{{Ref: "d1", Customer: pauper, Amount: 400_000}, {Ref: "d2", Customer: pauper, Amount: 600_000}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			b.unfunded()
			b.s.Deposits = c.deposits
			got := CheckIntakeUniqueness(&b.s)
			found := false
			for _, v := range got {
				found = found || v.Operation == id && strings.Contains(v.Message, "refused 1000000 units for customer cust-poor as unfunded")
			}
			if found != c.wrong || len(got) > 1 || len(got) == 1 && !found {
				t.Errorf("deposits %v: violations:\n%s\nwant the refusal reported: %v", c.deposits, describe(got), c.wrong)
			}
		})
	}
	// Every row the customer holds counts against the deposits: with a row
	// of 2 USDT for pauper, 3 USDT of deposits no longer make the refusal
	// of 1 USDT more wrong than 2.999999 would. A row counts for what its
	// client asked: the same row holding 20 USDT (a store with a wrong
	// scale) counts 2.
	for _, c := range []struct {
		deposit money.Amount
		scaled  bool
		wrong   bool
	}{{2_999_999, false, false}, {3_000_000, false, true}, {3_000_000, true, true}} {
		b := clean(t)
		b.unfunded()
		b.createFor(12, pauper, alice, 2_000_000, "c12")
		if c.scaled {
			b.row(opID(12)).Request.Amount *= 10
		}
		b.s.Deposits = []sluice.Credit{{Ref: "d", Customer: pauper, Amount: c.deposit}}
		found := false
		for _, v := range CheckIntakeUniqueness(&b.s) {
			found = found || v.Operation == id && strings.Contains(v.Message, "as unfunded")
		}
		if found != c.wrong {
			t.Errorf("pauper holding a row of 2 USDT (scaled %v), deposits %d: refusal reported %v, want %v", c.scaled, c.deposit, found, c.wrong)
		}
	}
}

// Goal: an Unfunded answer the world bounded in the log is judged against
// the model's own books over the call: wrong when the customer's balance
// (deposits, less the intents' holds, plus releases) covered the amount at
// every event from the call to the answer, as money a release gave back
// does; right when the balance fell short at any of them, or when the
// answer is not bounded and only the deposits against every row's amount
// can be judged. Method: pauper's whole deposit held by a withdrawal to
// the hot wallet and released by its rejection, then a refusal of the
// same amount, bounded after the release, across the hold, or not at all,
// and one of a unit more.
func TestUnfundedJudgedAgainstTheBooks(t *testing.T) {
	id := opID(opUnfunded)
	for _, c := range []struct {
		name    string
		amount  uint64
		bounded bool
		across  bool // the call began before the hold was taken
		wrong   bool
	}{
		{"bounded after the release", pauperDeposit, true, false, true},
		{"bounded across the hold", pauperDeposit, true, true, false},
		{"a unit more than the balance", pauperDeposit + 1, true, false, false},
		{"not bounded", pauperDeposit, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			before := b.s.Events[len(b.s.Events)-1].Seq
			b.createFor(12, pauper, hotWallet, pauperDeposit, "c12").claim().step(sluice.Rejected, nil)
			b.row(opID(12)).Reason = "recipient is the hot wallet"
			after := b.s.Events[len(b.s.Events)-1].Seq
			b.record("c10", payFor(string(id), pauper, alice, c.amount), Unfunded, 0)
			r := b.recordOf("c10")
			r.Bounded, r.SeqAtCall, r.SeqAtReturn = c.bounded, after, after
			if c.across {
				r.SeqAtCall = before
			}
			var found []Violation
			for _, v := range Check(&b.s) {
				if v.Operation == id {
					found = append(found, v)
				}
			}
			switch {
			case c.wrong && (len(found) != 1 || !strings.Contains(found[0].Message, "by the model's books the customer's balance was at least 400000 units")):
				t.Errorf("want the refusal reported against the books, got:\n%s", describe(found))
			case !c.wrong && len(found) != 0:
				t.Errorf("want the refusal accepted, got:\n%s", describe(found))
			}
		})
	}
}

// Goal: a POST whose outcome was left unknown is held to a cause: a 5xx is
// an answer only when the world failed one of the request's store calls,
// and no other status leaves a client in the dark. A client that heard
// nothing (status 0) is judged on nothing. Method: a failed record added to
// a clean run, its status and store failure varied.
func TestFailedPostNeedsAStoreFailure(t *testing.T) {
	for _, c := range []struct {
		status      int
		storeFailed bool
		mention     string
	}{
		{0, false, ""},
		{503, true, ""},
		{503, false, "was answered 503 with no store failure to blame"},
		{500, false, "was answered 500 with no store failure to blame"},
		{400, true, "was answered 400, a status intake does not give a POST"},
	} {
		b := clean(t)
		b.record("c42", payFor(string(opID(42)), payer, alice, 1_000_000), Failed, 0)
		r := &b.s.Intake[len(b.s.Intake)-1]
		r.Status, r.StoreFailed = c.status, c.storeFailed
		got := describe(CheckIntakeUniqueness(&b.s))
		switch {
		case c.mention == "" && got != "":
			t.Errorf("status %d, store failed %v: want clean, got:\n%s", c.status, c.storeFailed, got)
		case c.mention != "" && !strings.Contains(got, c.mention):
			t.Errorf("status %d, store failed %v: want %q, got:\n%s", c.status, c.storeFailed, c.mention, got)
		}
	}
}
