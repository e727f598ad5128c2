package model

import (
	"slices"
	"testing"

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
			break_: func(b *builder) {
				last := b.row(opID(opPolicyCancel)).Envelope.Txid
				for i := range b.s.Wire {
					if w := &b.s.Wire[i]; w.Txid == last {
						w.Answer, w.Truth, w.Accepted = string(tron.CodeBandwidthError), tron.CodeBandwidthError, false
					}
				}
				b.s.Accepted = slices.DeleteFunc(b.s.Accepted, func(a mocknode.Acceptance) bool { return a.Txid == last })
			},
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
	} {
		t.Run(c.name, func(t *testing.T) { wantCaught(t, NoOperationalFailure, CheckNoOperationalFailure, c) })
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
