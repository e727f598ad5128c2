package model

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

func TestCheckProgressClean(t *testing.T) { wantClean(t, CheckProgress) }

// refusedFirstSend adds op 8, whose first send the node refused with code,
// and which the core then failed.
func refusedFirstSend(b *builder, code tron.Code) *opb {
	o := b.create(8, 8_000_000, "c1").claim().build()
	o.step(sluice.Broadcasting, nil).refuse(code).step(sluice.Failed, nil)
	o.row().Reason = "first send hard-rejected: " + string(code)
	return o
}

// revertedAndFailed adds op 8, included with REVERT and then failed
// outright: the old story, before a failed receipt parked and rebuilt.
func revertedAndFailed(b *builder) *opb {
	o := b.create(8, 8_000_000, "c1").claim().build()
	o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil).include(tron.ReceiptRevert)
	o.step(sluice.Failed, nil)
	o.row().Reason = "reverted on chain"
	return o
}

// cancelElapsed is how long, on the store's clock, opPolicyCancel waited
// from its first write-ahead to the policy's cancel.
func cancelElapsed(b *builder) time.Duration {
	id := opID(opPolicyCancel)
	return b.event(id, sluice.Broadcast, sluice.Failed).At.Sub(b.event(id, sluice.Signed, sluice.Broadcasting).At)
}

// dropEnvelope forgets the world's record of op n's last envelope: the
// model can then no longer reckon its expiration, so it cannot prove the
// txid dead (audit-log lets that pass: a live check sees only the rows'
// last envelopes).
func dropEnvelope(b *builder, n int) {
	last := b.row(opID(n)).Envelope.Txid
	b.s.Envelopes = slices.DeleteFunc(b.s.Envelopes, func(e sluice.Envelope) bool { return e.Txid == last })
}

// Goal: every failure or rejection that nothing outside the core bears out
// is reported, naming the operation. Method: break one thing in a clean run.
func TestCheckProgressCatches(t *testing.T) {
	for _, c := range []corruption{
		{
			// A signature error is the core's own bad bytes.
			name: "failed after a first send refused with SIGERROR", op: opID(8), mention: "without a justification",
			break_: func(b *builder) { refusedFirstSend(b, tron.CodeSigError) },
		},
		{
			name: "failed after a first send refused with TOO_BIG_TRANSACTION_ERROR", op: opID(8), mention: "without a justification",
			break_: func(b *builder) { refusedFirstSend(b, tron.CodeTooBigTransactionError) },
		},
		{
			// The refusal is not the first send's answer: the node took the
			// txid before, so the refusal says nothing about it.
			// (A refusal for bandwidth is also operational trouble,
			// which never justifies failing.)
			name: "failed on a refusal after the txid was accepted", op: opID(8), mention: "without a justification",
			break_: func(b *builder) {
				o := b.create(8, 8_000_000, "c1").claim().build()
				o.step(sluice.Broadcasting, nil).send(true).refuse(tron.CodeBandwidthError).step(sluice.Failed, nil)
			},
			also: []string{NoOperationalFailure},
		},
		{
			// The first send was refused, but the node took the txid on a
			// later send: it may still land, and failing the operation
			// now is no verified excuse.
			name: "failed on a first refusal though the node accepted the txid later", op: opID(8), mention: "without a justification",
			break_: func(b *builder) {
				o := b.create(8, 8_000_000, "c1").claim().build()
				o.step(sluice.Broadcasting, nil).refuse(tron.CodeBandwidthError).send(true).step(sluice.Failed, nil)
			},
			also: []string{NoOperationalFailure},
		},
		{
			// Nothing justifies the failure to no-operational-failure
			// either: no operator, no refused bytes, no policy's cancel.
			name: "failed as reverted with nothing on chain", op: opID(8), mention: "no failed receipt on chain",
			break_: func(b *builder) {
				txid := revertedAndFailed(b).txid()
				b.s.Inclusions = slices.DeleteFunc(b.s.Inclusions, func(in mocknode.Inclusion) bool { return in.Txid == txid })
			},
			also: []string{NoOperationalFailure},
		},
		{
			// Its decision says cancel, but neither were its rebuilds spent
			// (3 of 4 envelopes) nor had it waited half of CancelAfter.
			name: "a policy cancel neither past the budget nor past half of CancelAfter", op: opID(opPolicyCancel), mention: "3 of 4 builds",
			break_: func(b *builder) { b.s.BuildsMax = 4 },
		},
		{
			// The waiting is measured on the oracle's clock, and half of
			// CancelAfter is the bar: a nanosecond short is short.
			name: "a policy cancel a nanosecond short of half of CancelAfter", op: opID(opPolicyCancel), mention: "3 of 4 builds",
			break_: func(b *builder) {
				b.s.BuildsMax = 4
				b.s.Stuck.CancelAfter = 2*cancelElapsed(b) + 2*time.Nanosecond
			},
		},
		{
			// Past CancelAfter but its txid not provably dead.
			name: "a policy cancel past CancelAfter of a txid not proven dead", op: opID(opPolicyCancel), mention: "past CancelAfter, but the world never saw",
			break_: func(b *builder) {
				b.s.BuildsMax = 4
				b.s.Stuck.CancelAfter = cancelElapsed(b)
				dropEnvelope(b, opPolicyCancel)
			},
		},
		{
			// Stale before its first send with rebuilds left: the core
			// must rebuild it, not hand it to an operator.
			name: "a review of a stale envelope before the rebuilds are spent", op: opID(8), mention: "is review",
			break_: func(b *builder) {
				o := b.create(8, 8_000_000, "c1").claim().build()
				b.tick(window)
				o.step(sluice.Review, nil)
			},
		},
		{
			// An operator cancelled a txid that was sent (refused for
			// bandwidth) and that the model cannot prove dead.
			name: "an operator's cancel of a txid not proven dead", op: opID(opOpCancel), mention: "cancelled by an operator, but the world never saw",
			break_: func(b *builder) { dropEnvelope(b, opOpCancel) },
		},
		{
			// The world never saw the last envelope stored, so the model
			// cannot reckon its expiration: no proof of death, no excuse.
			// (audit-log lets such a retirement pass: a live check sees
			// only the rows' last envelopes.)
			name: "gave up on a txid whose envelope the world never saw", op: opID(opPolicyCancel), mention: "never saw txid",
			break_: func(b *builder) { dropEnvelope(b, opPolicyCancel) },
		},
		{
			// The client sent a withdrawal to alice; the core rejected it.
			name: "rejected a valid withdrawal", op: opID(opRejected), mention: "the client's payload is a valid withdrawal",
			break_: func(b *builder) {
				b.row(opID(opRejected)).Request.To = alice
				for i := range b.s.Intake {
					if r := &b.s.Intake[i]; r.ID == string(opID(opRejected)) {
						r.Sent.To, r.Answer.To = alice.String(), alice.String()
					}
				}
			},
		},
		{
			name: "failures in a fault-free run", op: opID(opPolicyCancel), mention: "in a fault-free run: every valid withdrawal must confirm",
			break_: func(b *builder) { b.s.FaultFree = true },
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, Progress, CheckProgress, c) })
	}
}

// Goal: progress judges a first send refused, then failed, by who is at
// fault: a refusal that is not the envelope's fault (the hot wallet's
// bandwidth, the contract's refusal) is a failure progress sees the chain
// bear out, but it is operational trouble, which must park, never fail
// (no-operational-failure); the core's own bad bytes (SIGERROR,
// TOO_BIG_TRANSACTION_ERROR) fail without a justification progress
// accepts, and are not operational; any other answer is neither. Method:
// op 8's first send is refused with each code, and the core fails it.
func TestCheckProgressJudgesFirstSendRefusals(t *testing.T) {
	for _, c := range []struct {
		code        tron.Code
		justified   bool // by progress
		operational bool // a failure no-operational-failure reports
	}{
		{tron.CodeBandwidthError, true, true},
		{tron.CodeContractValidateError, true, true},
		{tron.CodeContractExeError, true, true},
		{tron.CodeSigError, false, false},
		{tron.CodeTooBigTransactionError, false, false},
		{tron.CodeOtherError, false, true},
	} {
		t.Run(string(c.code), func(t *testing.T) {
			b := clean(t)
			refusedFirstSend(b, c.code)
			var want []string
			if !c.justified {
				want = append(want, Progress)
			}
			if c.operational {
				want = append(want, NoOperationalFailure)
			}
			got := Check(&b.s)
			var seen []string
			for _, v := range got {
				if v.Operation != opID(8) {
					t.Errorf("violation about another op than %s: %s", opID(8), v)
				}
				seen = append(seen, v.Invariant)
			}
			if !slices.Equal(seen, want) {
				t.Errorf("failure after a first send refused with %s: violated %q, want %q; Check:\n%s", c.code, seen, want, describe(got))
			}
		})
	}
}

// Goal: the stuck policy's cancel is justified by its budget spent (the
// clean run) or, before that, by waiting at least CancelAfter on the store's
// clock (first write-ahead to the cancel) with the last txid provably dead,
// and not by waiting any less. Method: opPolicyCancel with a budget one
// envelope larger, and CancelAfter exactly its wait, then one nanosecond
// more.
func TestCheckProgressPolicyCancelPastCancelAfter(t *testing.T) {
	b := clean(t)
	b.s.BuildsMax = 4
	b.s.Stuck.CancelAfter = cancelElapsed(b) + time.Nanosecond
	if got := CheckProgress(&b.s); len(got) != 1 {
		t.Errorf("policy cancel a nanosecond before CancelAfter: want one progress violation, got:\n%s", describe(got))
	}
	b.s.Stuck.CancelAfter = cancelElapsed(b)
	if got := Check(&b.s); len(got) != 0 {
		t.Errorf("policy cancel at CancelAfter, txid dead: want clean, got:\n%s", describe(got))
	}
	o := CountOutcomes(&b.s)
	if want := []Tally{{"cancelled by an operator", 1}, {"cancelled by the stuck policy past CancelAfter", 1}}; !reflect.DeepEqual(o.FailedBy, want) {
		t.Errorf("failures by reason = %v, want %v", o.FailedBy, want)
	}
}

// Goal: a review is justified by operational trouble past its bounds (the
// world saw a park), by a failed receipt on chain once the rebuilds are
// spent, by a rebuild budget spent on envelopes that went stale before
// their first send, and by a SUCCESS not reported as the payment asked
// (review_test.go); without any of them it is reported. Method: op 8 is
// sent to review after each story; then the one thing that justifies it is
// taken away.
func TestCheckProgressJudgesReviews(t *testing.T) {
	for _, c := range []struct {
		name string
		// story adds op 8 ending in review; unjustify takes away what
		// justifies it, leaving the rest of the run as clean as it was.
		story, unjustify func(b *builder)
		why              string // its ReviewBy kind
		// unsent: unjustify sends an envelope that never had its
		// write-ahead, which audit-log reports too.
		unsent bool
	}{
		{
			// The node refuses every send for bandwidth, over and over.
			name: "parked past its bounds",
			story: func(b *builder) {
				o := b.create(8, 8_000_000, "c1").claim().build().step(sluice.Broadcasting, nil)
				for range parkLimit {
					o.refuse(tron.CodeBandwidthError).park("re-send refused by the node: " + string(tron.CodeBandwidthError)).claim()
				}
				o.refuse(tron.CodeBandwidthError).step(sluice.Review, nil)
				o.row().Reason = fmt.Sprintf("parked %d times, the limit is %d", parkLimit+1, parkLimit)
			},
			unjustify: func(b *builder) {
				b.s.Parks = slices.DeleteFunc(b.s.Parks, func(r ReleaseRecord) bool { return r.Op == opID(8) })
			},
			why: "parked for operational trouble, then past its bounds",
		},
		{
			// Two envelopes dropped from the pool and proven dead, the
			// third reverted on chain: no rebuild left, and failing it
			// would make our shortage the customer's failure.
			name: "a failed receipt with the rebuilds spent",
			story: func(b *builder) {
				o := b.create(8, 8_000_000, "c1").claim().build()
				for range buildsMax - 1 {
					o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil)
					o.waitOutDeath().claim().rebuild(o.evidence())
				}
				o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil).include(tron.ReceiptRevert)
				ev := o.receiptEvidence()
				d := o.decide(sluice.Escalate, "receipt REVERT; rebuilt 2 times, the policy allows 2")
				o.step(sluice.Review, func(e *sluice.Event) { e.Evidence, e.Decision = ev, d })
				o.row().Reason = "failed on chain for operational reasons, to review: " + d.Reason
			},
			unjustify: func(b *builder) {
				txid := b.row(opID(8)).Envelope.Txid
				b.s.Inclusions = slices.DeleteFunc(b.s.Inclusions, func(in mocknode.Inclusion) bool { return in.Txid == txid })
			},
			why: "failed on chain with receipt REVERT, rebuilt until the budget was spent",
		},
		{
			// Every send of every envelope lost: each txid proven dead
			// and rebuilt, and with the rebuilds spent the stuck policy
			// sends it to review (no node was heard accepting it).
			name: "the stuck policy's budget spent, escalated",
			story: func(b *builder) {
				o := b.create(8, 8_000_000, "c1").claim().build()
				for range buildsMax - 1 {
					o.step(sluice.Broadcasting, nil).send(false)
					o.waitOutDeath().claim().rebuild(o.evidence())
				}
				o.step(sluice.Broadcasting, nil).send(false)
				o.waitOutDeath().claim()
				ev := o.evidence()
				d := o.decide(sluice.Escalate, "rebuilt 2 times, the policy allows 2; no node was ever heard accepting the txid")
				o.step(sluice.Review, func(e *sluice.Event) { e.Evidence, e.Decision = ev, d })
				o.row().Reason = "stuck, to review: " + d.Reason
			},
			// The last txid landed after all, paying exactly: not dead.
			unjustify: func(b *builder) { b.op(8).include(tron.ReceiptSuccess) },
			why:       "stuck policy's budget spent on a dead txid",
		},
		{
			// A signer so slow that every envelope is stale by the time it
			// is signed: never sent, rebuilt until none is left.
			name: "every envelope stale before its first send",
			story: func(b *builder) {
				o := b.create(8, 8_000_000, "c1").claim().build()
				for range buildsMax - 1 {
					b.tick(window)
					o.rebuild(nil)
				}
				b.tick(window)
				o.step(sluice.Review, nil)
				o.row().Reason = "stale before first send, and 2 rebuilds spent"
			},
			// A send of the last envelope: it was not stale after all.
			unjustify: func(b *builder) {
				o := b.op(8)
				o.send(false)
			},
			why:    "build budget spent (last envelope never sent)",
			unsent: true,
		},
		{
			// The first envelope was sent, dropped and proven dead; its
			// replacements went stale before their first send until the
			// rebuilds were spent. The pipeline's send sends that to
			// review (sluice.Pipeline.send): the last envelope never left,
			// and every earlier one was proven dead when it was retired.
			name: "stale before its first send after a proven death, rebuilds spent",
			story: func(b *builder) {
				o := b.create(8, 8_000_000, "c1").claim().build()
				o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil)
				o.waitOutDeath().claim().rebuild(o.evidence())
				b.tick(window)
				o.rebuild(nil)
				b.tick(window)
				o.step(sluice.Review, nil)
				o.row().Reason = "stale before first send, and 2 rebuilds spent"
			},
			unjustify: func(b *builder) { b.op(8).send(false) },
			unsent:    true,
			why:       "build budget spent (last envelope never sent)",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			c.story(b)
			if got := Check(&b.s); len(got) != 0 {
				t.Errorf("review after %s: want clean, got:\n%s", c.name, describe(got))
			}
			o := CountOutcomes(&b.s)
			if want := []Tally{{c.why, 1}}; o.Review != 1 || !reflect.DeepEqual(o.ReviewBy, want) {
				t.Errorf("outcomes: %d in review by %v, want 1 by %v", o.Review, o.ReviewBy, want)
			}
			c.unjustify(b)
			got := Check(&b.s)
			if c.unsent {
				if len(got) != 2 || got[1].Invariant != AuditLog || got[1].Operation != opID(8) || !strings.Contains(got[1].Message, "never wrote its write-ahead") {
					t.Errorf("review after %s, its last envelope sent: want audit-log to report the send without a write-ahead, got:\n%s", c.name, describe(got))
				}
				got = got[:min(len(got), 1)]
			}
			if len(got) != 1 || got[0].Invariant != Progress || got[0].Operation != opID(8) || !strings.Contains(got[0].Message, "is review") {
				t.Errorf("review after %s, its justification taken away: want one progress violation about op %s, got:\n%s", c.name, opID(8), describe(got))
			}
		})
	}
}

// Goal: in a fault-free run every valid withdrawal a client sent has a row
// and confirms; a run without failures keeps progress. Method: a run of two
// confirmed withdrawals, then a valid post whose answer was lost and that
// left no row.
func TestCheckProgressFaultFree(t *testing.T) {
	b := newBuilder(t)
	b.s.FaultFree = true
	b.create(1, 1_000_000, "c1").claim().build().broadcastAndConfirm()
	b.create(2, 2_000_000, "c2").claim().build().broadcastAndConfirm()
	if got := Check(&b.s); len(got) != 0 {
		t.Fatalf("fault-free run of two confirmed withdrawals: Check gave\n%s", describe(got))
	}
	b.record("c3", pay(string(opID(9)), alice, 9_000_000), Failed, 0)
	got := Check(&b.s)
	if len(got) != 1 || got[0].Invariant != Progress || got[0].Operation != opID(9) {
		t.Errorf("a valid withdrawal with no row in a fault-free run: want one progress violation about op %s, got:\n%s", opID(9), describe(got))
	}
}

// Goal: the outcome counts say how the clean run's withdrawals ended and
// name each failure by the justification the model verified.
func TestCountOutcomes(t *testing.T) {
	b := clean(t)
	want := Outcomes{
		Requested: 9, Accepted: 9, Confirmed: 6, Failed: 2, Rejected: 1, Open: 0, Parked: 2,
		FailedBy: []Tally{{"build budget spent", 1}, {"cancelled by an operator", 1}},
	}
	if got := CountOutcomes(&b.s); !reflect.DeepEqual(got, want) {
		t.Errorf("CountOutcomes(clean) = %+v, want %+v", got, want)
	}
	const wantLine = "9 requested, 9 accepted: 6 confirmed, 2 failed (build budget spent 1, cancelled by an operator 1), 2 parked on the way, 1 rejected, 0 open"
	if got := CountOutcomes(&b.s).String(); got != wantLine {
		t.Errorf("CountOutcomes(clean).String() = %q, want %q", got, wantLine)
	}

	// An unjustified failure is counted as such, and an invalid post is
	// no requested withdrawal; a review is counted by its justification.
	refusedFirstSend(b, tron.CodeSigError)
	b.create(9, 9_000_000, "c9").claim().step(sluice.Validated, nil)
	reviewedAs(b, 12, oddInclusions[2].odd, sluice.Review) // half the amount
	want.Requested, want.Accepted, want.Failed, want.Open, want.Review = 12, 12, 3, 1, 1
	want.FailedBy = append(want.FailedBy, Tally{"unjustified", 1})
	want.ReviewBy = []Tally{{"node reported a USDT Transfer log other than the payment asked", 1}}
	if got := CountOutcomes(&b.s); !reflect.DeepEqual(got, want) {
		t.Errorf("CountOutcomes(clean + an unjustified failure + an open op + a review) = %+v, want %+v", got, want)
	}
	const wantMore = "12 requested, 12 accepted: 6 confirmed, 3 failed (build budget spent 1, cancelled by an operator 1, unjustified 1), 1 in review (node reported a USDT Transfer log other than the payment asked 1), 2 parked on the way, 1 rejected, 1 open"
	if got := CountOutcomes(&b.s).String(); got != wantMore {
		t.Errorf("CountOutcomes(...).String() = %q, want %q", got, wantMore)
	}
}

// Goal: outcomes of several runs add up field by field, failures merged by
// reason.
func TestOutcomesAdd(t *testing.T) {
	a := Outcomes{Requested: 3, Accepted: 3, Confirmed: 2, Failed: 1, Parked: 1, FailedBy: []Tally{{"build budget spent", 1}}}
	b := Outcomes{Requested: 2, Accepted: 2, Confirmed: 1, Rejected: 1, Failed: 0, Open: 0, FailedBy: nil,
		Review: 1, ReviewBy: []Tally{{"parked for operational trouble, then past its bounds", 1}}}
	c := Outcomes{Requested: 1, Accepted: 1, Failed: 1, Parked: 2, FailedBy: []Tally{{"build budget spent", 1}},
		Review: 2, ReviewBy: []Tally{{"build budget spent (last envelope never sent)", 1}, {"parked for operational trouble, then past its bounds", 1}}}
	want := Outcomes{Requested: 6, Accepted: 6, Confirmed: 3, Failed: 2, Rejected: 1, Parked: 3, FailedBy: []Tally{{"build budget spent", 2}},
		Review: 3, ReviewBy: []Tally{{"build budget spent (last envelope never sent)", 1}, {"parked for operational trouble, then past its bounds", 2}}}
	if got := a.Add(b).Add(c); !reflect.DeepEqual(got, want) {
		t.Errorf("Add = %+v, want %+v", got, want)
	}
}

// Goal: a build budget spent on envelopes rebuilt stale before their first
// send justifies a failure when the last one never left (nothing can land),
// and does not once that last txid reached a node without a proof of its
// death. Method: opPolicyCancel's last envelope loses its wire record, acceptance
// and inclusion (never sent), and its proof of death is made impossible by
// giving it an expiration past the end of the chain.
func TestCheckProgressBudgetSpentOnEnvelopesNeverSent(t *testing.T) {
	neverSent := func(b *builder) tron.Txid {
		last := b.row(opID(opPolicyCancel)).Envelope.Txid
		b.s.Wire = slices.DeleteFunc(b.s.Wire, func(w mocknode.WireAttempt) bool { return w.Txid == last })
		b.s.Accepted = slices.DeleteFunc(b.s.Accepted, func(a mocknode.Acceptance) bool { return a.Txid == last })
		for i, e := range b.s.Envelopes {
			if e.Txid == last {
				b.s.Envelopes[i].Raw.Expiration = b.s.End.Add(time.Hour).UnixMilli()
			}
		}
		return last
	}
	b := clean(t)
	neverSent(b)
	if got := CheckProgress(&b.s); len(got) != 0 {
		t.Errorf("budget spent, last envelope never sent: want justified, got:\n%s", describe(got))
	}
	b = clean(t)
	last := neverSent(b)
	b.s.Wire = append(b.s.Wire, mocknode.WireAttempt{Seq: len(b.s.Wire) + 1, Worker: "w1", Txid: last, Answer: mocknode.AnswerTimeout})
	if got := CheckProgress(&b.s); len(got) != 1 || !strings.Contains(got[0].Message, "no solid block reaches") {
		t.Errorf("budget spent, last envelope sent and not provably dead: want one progress violation, got:\n%s", describe(got))
	}
}
