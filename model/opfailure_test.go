package model

import (
	"slices"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

func TestCheckNoOperationalFailureClean(t *testing.T) { wantClean(t, CheckNoOperationalFailure) }

// Goal: a shortage of ours never fails a customer's withdrawal: a failure
// after a refusal for bandwidth, energy or the contract's state, after a
// failed receipt, or after a park the world saw, is reported, and so is a
// failure that no operator, refused bytes or policy's cancel explains.
// Method: break one thing in a clean run.
func TestCheckNoOperationalFailureCatches(t *testing.T) {
	for _, c := range []corruption{
		{
			// Parked once, then sent to review on the next claim: short
			// of ParkLimit parks and of a ParkFor spell.
			name: "a review before the park bounds", op: opID(12), mention: "sent to review after 1 parks, its current spell of parks lasting 6s",
			break_: func(b *builder) {
				b.s.ParkFor = time.Hour
				o := b.create(12, 1_000_000, "c12").claim().build()
				o.step(sluice.Broadcasting, nil).refuse(tron.CodeBandwidthError).park("first send refused by the node: " + string(tron.CodeBandwidthError))
				o.claim().step(sluice.Review, nil)
			},
		},
		{
			// Parked a second time with ParkLimit 1: that park was the
			// review the bounds call for (the other side of "only past
			// them").
			name: "a park past ParkLimit", op: opID(12), mention: "its park number 2 in its life, past ParkLimit 1",
			break_: func(b *builder) {
				b.s.ParkLimit, b.s.ParkFor = 1, time.Hour
				twoParks(b)
			},
			// Parked on, it is still open when the run ends.
			also: []string{Liveness},
		},
		{
			// The first park's wait (6s) reached ParkFor 6s before the
			// second: the spell was at its bound, which is past it (the
			// boundary itself, so that ">" for ">=" fails here).
			name: "a park at ParkFor", op: opID(12), mention: "its spell of parks had lasted 6s, at or past ParkFor 6s",
			break_: func(b *builder) {
				b.s.ParkFor = 6 * time.Second
				twoParks(b)
			},
			// Parked on, it is still open when the run ends.
			also: []string{Liveness},
		},
		{
			// From signed, which the event's shape would take for a stale
			// send; the world read the worker's step as a park past the
			// bounds (its head block failed), and that is what is judged.
			name: "a review the world read as parked, from signed", op: opID(12), mention: "sent to review after 1 parks",
			break_: func(b *builder) { signedReview(b, ReviewParked) },
		},
		{
			// The old rule: a first send refused for bandwidth failed at
			// once. Progress still sees the refusal on the wire.
			name: "a failure after a bandwidth refusal", op: opID(8), mention: "refused BANDWITH_ERROR",
			break_: func(b *builder) { refusedFirstSend(b, tron.CodeBandwidthError) },
		},
		{
			name: "a failure after a refusal for the contract's state", op: opID(8), mention: "refused CONTRACT_VALIDATE_ERROR",
			break_: func(b *builder) { refusedFirstSend(b, tron.CodeContractValidateError) },
		},
		{
			// Its last txid was refused for bandwidth on every send and no
			// node ever took it, and the policy cancelled it with the
			// proof: the death was the shortage's, so it was for review.
			// (A refusal of a re-send after a node had taken the txid is
			// not: the txid then died of the chain's own doing.)
			name: "a policy cancel of a txid only ever refused", op: opID(opPolicyCancel), mention: "refused BANDWITH_ERROR and never accepted",
			break_: func(b *builder) { neverAccepted(b, tron.CodeBandwidthError) },
		},
		{
			// No node ever took its last txid (every send answered busy,
			// none reached a pool), and the policy cancelled it with the
			// proof: our sends never got through, so it was for review.
			name: "a policy cancel of a txid no node accepted", op: opID(opPolicyCancel), mention: "no node ever accepted its last txid",
			break_: func(b *builder) { neverAccepted(b, tron.CodeServerBusy) },
		},
		{
			// The old rule: a REVERT failed the operation.
			name: "a failure after a failed receipt", op: opID(8), mention: "on chain with receipt REVERT",
			break_: func(b *builder) { revertedAndFailed(b) },
		},
		{
			// The world saw the core park it (its signer was down), then
			// the policy cancelled it as if nothing had happened: that is
			// for review.
			name: "a policy cancel after a park", op: opID(opPolicyCancel), mention: "parked 1 times",
			break_: func(b *builder) {
				e := b.event(opID(opPolicyCancel), sluice.Signing, sluice.Signed)
				r := ReleaseRecord{Op: e.OperationID, Token: e.Token, Proc: string(e.Worker), At: e.At}
				b.s.Parks = append(b.s.Parks, r)
				b.s.Releases = append(b.s.Releases, r)
			},
		},
		{
			// Budget spent and the txid proven dead, but the event carries
			// no decision of the policy's: nobody decided.
			name: "a failure with no decision", op: opID(opPolicyCancel), mention: "by neither an operator, a refusal of its bytes, nor the stuck policy's cancel",
			break_: func(b *builder) { b.event(opID(opPolicyCancel), sluice.Broadcast, sluice.Failed).Decision = nil },
		},
		{
			name: "a failure whose decision was to rebuild", op: opID(opPolicyCancel), mention: "by neither an operator, a refusal of its bytes, nor the stuck policy's cancel",
			break_: func(b *builder) {
				b.event(opID(opPolicyCancel), sluice.Broadcast, sluice.Failed).Decision.Action = sluice.Rebuild
			},
		},
		{
			// The operator's cancel of opOpCancel (refused for bandwidth,
			// parked) written as a worker's: a worker may not fail it.
			// (Nothing else objects: progress takes the refused first send
			// for a justification, and broadcasting->failed keeping its
			// txid is a legal edge, the one a refusal of the bytes takes.)
			name: "an operator's cancel written by a worker", op: opID(opOpCancel), mention: "refused BANDWITH_ERROR and never accepted; parked 1 times",
			break_: func(b *builder) { b.event(opID(opOpCancel), sluice.Broadcasting, sluice.Failed).Worker = "w1" },
		},
		{
			// The node was busy, not short of anything of ours: re-send
			// later, do not back the withdrawal off as for a shortage.
			name: "a park after a busy node", op: opID(opOpCancel), mention: "a busy or unreachable node only delays",
			break_: func(b *builder) { parkTrouble(b).Answer = string(tron.CodeServerBusy) },
		},
		{
			name: "a park on another process's refusal", op: opID(opOpCancel), mention: "on the wire from w1",
			break_: func(b *builder) { parkTrouble(b).Worker = "w2" },
		},
		{
			// The refusal came before the claim the park ends: another
			// spell's trouble.
			name: "a park on a refusal before its claim", op: opID(opOpCancel), mention: "with no shortage of ours since its claim",
			break_: func(b *builder) {
				p := b.s.Parks[slices.IndexFunc(b.s.Parks, func(r ReleaseRecord) bool { return r.Op == opID(opOpCancel) })]
				parkTrouble(b).At = b.claimRecord(p.Op, p.Token).At.Add(-time.Second)
			},
			// A send before its claim is before its write-ahead too.
			also: []string{AuditLog},
		},
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, NoOperationalFailure, CheckNoOperationalFailure, c) })
	}
}

// neverAccepted makes every send of opPolicyCancel's last txid answered
// code, taken by no node, and in no pool.
func neverAccepted(b *builder, code tron.Code) {
	last := b.row(opID(opPolicyCancel)).Envelope.Txid
	for i := range b.s.Wire {
		if w := &b.s.Wire[i]; w.Txid == last {
			w.Answer, w.Truth, w.Accepted = string(code), code, false
		}
	}
	b.s.Accepted = slices.DeleteFunc(b.s.Accepted, func(a mocknode.Acceptance) bool { return a.Txid == last })
}

// twoParks writes operation 12 parked twice in broadcasting, each time
// after a refusal for bandwidth since its claim, with no transition
// between: one spell.
func twoParks(b *builder) {
	o := b.create(12, 1_000_000, "c12").claim().build()
	o.step(sluice.Broadcasting, nil).refuse(tron.CodeBandwidthError).park("first send refused by the node: " + string(tron.CodeBandwidthError))
	o.claim().refuse(tron.CodeBandwidthError).park("re-send refused by the node: " + string(tron.CodeBandwidthError))
}

// parkTrouble is the clean run's refusal for bandwidth that opOpCancel's
// park answers.
func parkTrouble(b *builder) *mocknode.WireAttempt {
	txid := b.row(opID(opOpCancel)).Envelope.Txid
	for i := range b.s.Wire {
		if w := &b.s.Wire[i]; w.Txid == txid && w.Answer == string(tron.CodeBandwidthError) {
			return w
		}
	}
	b.t.Fatalf("setup: no refusal for bandwidth of op %s's txid", opID(opOpCancel))
	return nil
}

// Goal: a signing the world failed for the parking process, on the
// operation's txid within the spell, justifies a park as a refusal does;
// one for another process or another txid does not.
// Method: the clean run with opOpCancel's refusal turned into SERVER_BUSY
// and a signer failure added.
func TestCheckParksTakeASignerFailure(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(*SignerFailure)
		clean bool
	}{
		{"the parking process, its txid", func(*SignerFailure) {}, true},
		{"another process", func(f *SignerFailure) { f.Proc = "w2" }, false},
		{"another txid", func(f *SignerFailure) { f.Txid = tron.Txid{9} }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			w := parkTrouble(b)
			w.Answer = string(tron.CodeServerBusy)
			f := SignerFailure{Proc: w.Worker, Txid: w.Txid, At: w.At}
			c.edit(&f)
			b.s.SignerFailures = append(b.s.SignerFailures, f)
			got := CheckNoOperationalFailure(&b.s)
			if c.clean && len(got) > 0 {
				t.Errorf("want clean, got:\n%s", describe(got))
			}
			if !c.clean && len(got) == 0 {
				t.Errorf("want the park reported, got nothing")
			}
		})
	}
}

// Goal: three failures are not operational and pass: an operator's cancel
// (the clean run's opOpCancel, which was refused for bandwidth and parked:
// a person decided, and audit-log checks the proof), a first send refused
// for the bytes themselves (SIGERROR: progress's to judge), and the stuck
// policy's cancel of a withdrawal that met no trouble (opPolicyCancel).
// Method: the clean run with op 8 refused SIGERROR; the trouble opOpCancel
// met is asserted, so that its passing means something.
func TestCheckNoOperationalFailurePasses(t *testing.T) {
	b := clean(t)
	refusedFirstSend(b, tron.CodeSigError)
	if got := CheckNoOperationalFailure(&b.s); len(got) != 0 {
		t.Errorf("an operator's cancel, a SIGERROR and a clean policy cancel: want none, got:\n%s", describe(got))
	}
	parks := 0
	for _, p := range b.s.Parks {
		if p.Op == opID(opOpCancel) {
			parks++
		}
	}
	refused := slices.ContainsFunc(b.s.Wire, func(w mocknode.WireAttempt) bool {
		return w.Txid == b.row(opID(opOpCancel)).Envelope.Txid && w.Answer == string(tron.CodeBandwidthError)
	})
	if parks != 1 || !refused {
		t.Errorf("setup: op %s was parked %d times and refused for bandwidth %v, want parked once and refused", opID(opOpCancel), parks, refused)
	}
	for _, id := range []sluice.OperationID{opID(opOpCancel), opID(8), opID(opPolicyCancel)} {
		if s := b.row(id).State; s != sluice.Failed {
			t.Errorf("setup: op %s is %s, want failed", id, s)
		}
	}
}

// Goal: a park's wait follows the policy: a spell's first park waits
// ParkRetry, each later one at least as long as the spell had lasted when
// the row came free (capped at ParkBackoffMax), and none more than twice
// the cap; a transition between two parks starts a new spell.
// Method: spells of parks written directly, each judged alone.
func TestCheckParkBackoff(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	park := func(at, after time.Duration, seq int64) ReleaseRecord {
		return ReleaseRecord{Op: opID(1), Token: 1, Proc: "w1", At: t0.Add(at), After: after, Seq: seq}
	}
	for _, c := range []struct {
		name   string
		parks  []ReleaseRecord
		writes []int64 // Seqs of the operation's writes
		want   string  // "" for none
	}{
		{"doubling", []ReleaseRecord{park(0, 6*time.Second, 1), park(7*time.Second, 7*time.Second, 1), park(15*time.Second, 15*time.Second, 1)}, nil, ""},
		{"capped, with jitter", []ReleaseRecord{park(0, 6*time.Second, 1), park(time.Hour, 90*time.Second, 1)}, nil, ""},
		{"a first park short of ParkRetry", []ReleaseRecord{park(0, 5*time.Second, 1)}, nil, "wants at least 6s"},
		{"a later park that does not double", []ReleaseRecord{park(0, 6*time.Second, 1), park(7*time.Second, 7*time.Second, 1), park(15*time.Second, 8*time.Second, 1)}, nil, "for 8s, but its spell of parks wants at least 14s"},
		{"a transition ends the spell", []ReleaseRecord{park(0, 40*time.Second, 1), park(50*time.Second, 6*time.Second, 3)}, []int64{2}, ""},
		{"a write before the spell does not end it", []ReleaseRecord{park(0, 40*time.Second, 3), park(50*time.Second, 6*time.Second, 3)}, []int64{2}, "wants at least 40s"},
		{"past twice the cap", []ReleaseRecord{park(0, 121*time.Second, 1)}, nil, "more than twice ParkBackoffMax 1m0s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Snapshot{Parks: c.parks, ParkRetry: 6 * time.Second, ParkBackoffMax: time.Minute}
			for _, seq := range c.writes {
				s.Writes = append(s.Writes, WriteRecord{Seq: seq, Op: opID(1), Proc: "w1"})
			}
			got := checkParkBackoff(s, nil)
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("want none, got:\n%s", describe(got))
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0].Message, c.want)):
				t.Errorf("want one violation mentioning %q, got:\n%s", c.want, describe(got))
			}
		})
	}
}

// Goal: a review after ParkLimit parks, or after a spell of ParkFor, is
// within the park bounds (the control of "a review before the park
// bounds"): no violation about it.
// signedReview parks operation 12 once in signed, then sends it to review
// from signed, the world reading the review's step as why.
func signedReview(b *builder, why string) {
	b.s.ParkFor = time.Hour
	o := b.create(12, 1_000_000, "c12").claim().build()
	o.park("head block: " + tron.ErrTimeout.Error())
	o.claim().step(sluice.Review, nil)
	b.s.Writes[len(b.s.Writes)-1].Review = why
}

// Goal: a review from signed that the world read as a stale send (the
// node's head block answered, the envelope too close to expiry) is not the
// park bounds' to judge, though the row had parked.
func TestStaleReviewIsNotAParkReview(t *testing.T) {
	b := clean(t)
	signedReview(b, ReviewStale)
	for _, v := range CheckNoOperationalFailure(&b.s) {
		if v.Operation == opID(12) && strings.Contains(v.Message, "sent to review after") {
			t.Errorf("a stale review judged by the park bounds: %s", v)
		}
	}
}

func TestParkReviewWithinTheBounds(t *testing.T) {
	for _, c := range []struct {
		name  string
		parks int
		every time.Duration // the wait each park asks
	}{
		{"ParkLimit parks", parkLimit, 6 * time.Second},
		{"a spell of ParkFor", 1, 61 * time.Minute}, // a second park would have been past the bound
	} {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			b.s.ParkFor = time.Hour
			o := b.create(12, 1_000_000, "c12").claim().build()
			o.step(sluice.Broadcasting, nil)
			for range c.parks {
				o.refuse(tron.CodeBandwidthError).park("first send refused by the node: " + string(tron.CodeBandwidthError))
				b.s.Parks[len(b.s.Parks)-1].After = c.every
				o.claim()
			}
			o.step(sluice.Review, nil)
			for _, v := range CheckNoOperationalFailure(&b.s) {
				if v.Operation == opID(12) {
					t.Errorf("a review within the park bounds reported: %s", v)
				}
			}
		})
	}
}

// TestSpellIncludesAReleasesWait holds the park bounds to the spell the
// core measures (NotBefore - ParkedSince): a release within a spell (a
// busy node) moves the row's NotBefore past the last park's end, and a
// review or a park under the next claim is judged by that; a stale
// release (its lease already taken over) moves nothing.
func TestSpellIncludesAReleasesWait(t *testing.T) {
	for _, c := range []struct {
		name  string
		stale bool         // the release names a lease another claim took
		then  sluice.State // Review: the claim reviews; else it parks again
		want  string       // a violation's text; "": none
	}{
		{"a review past ParkFor by a release's wait", false, sluice.Review, ""},
		{"a review within ParkFor, the release stale", true, sluice.Review, "sent to review after 1 parks, its current spell of parks lasting 6s"},
		{"a park past ParkFor by a release's wait", false, sluice.None, "at or past ParkFor 1m0s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			b.s.ParkFor = time.Minute
			o := b.create(12, 1_000_000, "c12").claim().build()
			o.step(sluice.Broadcasting, nil)
			o.refuse(tron.CodeBandwidthError).park("first send refused by the node: " + string(tron.CodeBandwidthError))
			o.claim()
			held := o.token
			if c.stale {
				o.claimBy("w2") // w1's lease lapsed and w2 took the row
			}
			o.release(held, time.Minute) // a busy node: come back in a minute
			b.tick(time.Minute)
			o.claim()
			if c.then == sluice.Review {
				o.step(sluice.Review, nil)
			} else {
				o.refuse(tron.CodeBandwidthError).park("first send refused by the node: " + string(tron.CodeBandwidthError))
				b.s.Parks[len(b.s.Parks)-1].After = time.Minute // the spell's length, capped: the backoff is met
			}
			var got []string
			for _, v := range CheckNoOperationalFailure(&b.s) {
				if v.Operation == opID(12) {
					got = append(got, v.Message)
				}
			}
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("reported, though the core's spell had reached ParkFor: %q", got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Errorf("got %q, want one violation mentioning %q", got, c.want)
			}
		})
	}
}
