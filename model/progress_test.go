package model

import (
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
			name: "failed on a refusal after the txid was accepted", op: opID(8), mention: "without a justification",
			break_: func(b *builder) {
				o := b.create(8, 8_000_000, "c1").claim().build()
				o.step(sluice.Broadcasting, nil).send(true).refuse(tron.CodeBandwidthError).step(sluice.Failed, nil)
			},
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
		},
		{
			name: "failed as reverted with nothing on chain", op: opID(opReverted), mention: "no failed receipt on chain",
			break_: func(b *builder) {
				txid := b.row(opID(opReverted)).Envelope.Txid
				b.s.Inclusions = slices.DeleteFunc(b.s.Inclusions, func(in mocknode.Inclusion) bool { return in.Txid == txid })
			},
		},
		{
			name: "gave up before the build budget was spent", op: opID(opGaveUp), mention: "3 of 4 builds",
			break_: func(b *builder) { b.s.BuildsMax = 4 },
		},
		{
			// The world never saw the last envelope stored, so the model
			// cannot reckon its expiration: no proof of death, no excuse.
			// (audit-log lets such a retirement pass: a live check sees
			// only the rows' last envelopes.)
			name: "gave up on a txid whose envelope the world never saw", op: opID(opGaveUp), mention: "never saw txid",
			break_: func(b *builder) {
				last := b.row(opID(opGaveUp)).Envelope.Txid
				for i, e := range b.s.Envelopes {
					if e.Txid == last {
						b.s.Envelopes = append(b.s.Envelopes[:i], b.s.Envelopes[i+1:]...)
						break
					}
				}
			},
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
			name: "failures in a fault-free run", op: opID(opGaveUp), mention: "in a fault-free run: every valid withdrawal must confirm",
			break_: func(b *builder) { b.s.FaultFree = true },
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, Progress, CheckProgress, c) })
	}
}

// Goal: a first send refused for a reason that is not the envelope's fault
// (the hot wallet's bandwidth, the contract's refusal) justifies a failure;
// the core's own bad bytes do not. Method: op 8's first send is refused
// with each code, and the core fails it.
func TestCheckProgressJudgesFirstSendRefusals(t *testing.T) {
	for _, c := range []struct {
		code      tron.Code
		justified bool
	}{
		{tron.CodeBandwidthError, true},
		{tron.CodeContractValidateError, true},
		{tron.CodeContractExeError, true},
		{tron.CodeSigError, false},
		{tron.CodeTooBigTransactionError, false},
		{tron.CodeOtherError, false},
	} {
		t.Run(string(c.code), func(t *testing.T) {
			b := clean(t)
			refusedFirstSend(b, c.code)
			got := Check(&b.s)
			if justified := len(got) == 0; justified != c.justified {
				t.Errorf("failure after a first send refused with %s: justified = %v, want %v; Check:\n%s", c.code, justified, c.justified, describe(got))
			}
			if !c.justified && (len(got) != 1 || got[0].Invariant != Progress || got[0].Operation != opID(8)) {
				t.Errorf("want exactly one progress violation about op %s, got:\n%s", opID(8), describe(got))
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
		Requested: 7, Accepted: 7, Confirmed: 4, Failed: 2, Rejected: 1, Open: 0,
		FailedBy: []Tally{{"build budget spent", 1}, {"reverted on chain: " + tron.ReceiptRevert, 1}},
	}
	if got := CountOutcomes(&b.s); !reflect.DeepEqual(got, want) {
		t.Errorf("CountOutcomes(clean) = %+v, want %+v", got, want)
	}
	const wantLine = "7 requested, 7 accepted: 4 confirmed, 2 failed (build budget spent 1, reverted on chain: REVERT 1), 1 rejected, 0 open"
	if got := CountOutcomes(&b.s).String(); got != wantLine {
		t.Errorf("CountOutcomes(clean).String() = %q, want %q", got, wantLine)
	}

	// An unjustified failure is counted as such, and an invalid post is
	// no requested withdrawal.
	refusedFirstSend(b, tron.CodeSigError)
	b.create(9, 9_000_000, "c9").claim().step(sluice.Validated, nil)
	want.Requested, want.Accepted, want.Failed, want.Open = 9, 9, 3, 1
	want.FailedBy = append(want.FailedBy, Tally{"unjustified", 1})
	if got := CountOutcomes(&b.s); !reflect.DeepEqual(got, want) {
		t.Errorf("CountOutcomes(clean + an unjustified failure + an open op) = %+v, want %+v", got, want)
	}
}

// Goal: outcomes of several runs add up field by field, failures merged by
// reason.
func TestOutcomesAdd(t *testing.T) {
	a := Outcomes{Requested: 3, Accepted: 3, Confirmed: 2, Failed: 1, FailedBy: []Tally{{"build budget spent", 1}}}
	b := Outcomes{Requested: 2, Accepted: 2, Confirmed: 1, Rejected: 1, Failed: 0, Open: 0, FailedBy: nil}
	c := Outcomes{Requested: 1, Accepted: 1, Failed: 1, FailedBy: []Tally{{"build budget spent", 1}}}
	want := Outcomes{Requested: 6, Accepted: 6, Confirmed: 3, Failed: 2, Rejected: 1, FailedBy: []Tally{{"build budget spent", 2}}}
	if got := a.Add(b).Add(c); !reflect.DeepEqual(got, want) {
		t.Errorf("Add = %+v, want %+v", got, want)
	}
}

// Goal: a build budget spent on envelopes rebuilt stale before their first
// send justifies a failure when the last one never left (nothing can land),
// and does not once that last txid reached a node without a proof of its
// death. Method: opGaveUp's last envelope loses its wire record, acceptance
// and inclusion (never sent), and its proof of death is made impossible by
// giving it an expiration past the end of the chain.
func TestCheckProgressBudgetSpentOnEnvelopesNeverSent(t *testing.T) {
	neverSent := func(b *builder) tron.Txid {
		last := b.row(opID(opGaveUp)).Envelope.Txid
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
