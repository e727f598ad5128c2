package model

import (
	"fmt"
	"slices"
	"strings"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// CheckNoOperationalFailure checks that no operation reaches failed for an
// operational reason: a shortage of ours (bandwidth, energy, a fee limit,
// the hot wallet's own USDT, an unreachable node) must park the operation
// and, past its bounds, send it to review for an operator, never fail the
// customer's withdrawal.
//
// A failed operation passes only as one of:
//
//   - an operator's cancel (its failing event was written by an operator:
//     a person decided; audit-log checks the proof behind it);
//   - a first send refused for the bytes themselves (SIGERROR,
//     TOO_BIG_TRANSACTION_ERROR on the wire for its last txid: progress
//     judges whether that is the core's own bug);
//   - the stuck policy's cancel of a withdrawal whose last transaction the
//     chain did not take for reasons of the chain's own, by the model's
//     sight of the world: its last txid was not refused on the wire for
//     bandwidth, energy or the contract's state without ever being
//     accepted, is not on chain with a failed receipt, and the world never
//     saw the core park the operation (the core's own rule: parked once,
//     never cancelled, only reviewed).
//
// Anything else (a refusal or a failed receipt turned into a failure, a
// cancel after the operation was parked) is an operational failure. An
// earlier txid's trouble does not count: it was answered by a rebuild, and
// a worker that crashed between that rebuild and its park left the core no
// record of it; what ended the withdrawal is the last txid's death.
func CheckNoOperationalFailure(s *Snapshot) []Violation {
	var vs []Violation
	s = withMemo(s)
	j := newJudge(s)
	ix := j.ix
	seen := make([]bool, len(ix.ids)) // by slot
	// Every operational refusal on the wire by txid, in wire order: read
	// on first use.
	var refused map[tron.Txid][]string
	for i := range s.Operations {
		op := &s.Operations[i]
		k := ix.slot[op.ID]
		if op.State != sluice.Failed || seen[k] {
			continue
		}
		seen[k] = true
		e := ix.lastEvent(s, op.ID)
		if strings.HasPrefix(string(e.Worker), sluice.OperatorPrefix) {
			continue
		}
		txids := j.own.byOp[k]
		if n := len(txids); n > 0 {
			if w, ok := ix.firstWire(s, txids[n-1]); ok && (w.Answer == string(tron.CodeSigError) || w.Answer == string(tron.CodeTooBigTransactionError)) {
				continue
			}
		}
		// The death that ended it is its last txid's: a shortage behind
		// that death makes the failure ours. An earlier txid's trouble was
		// answered by its rebuild; what ended the withdrawal came later.
		var trouble []string
		if n := len(txids); n > 0 {
			t := txids[n-1]
			if !ix.accepted(t) {
				if refused == nil {
					refused = make(map[tron.Txid][]string)
					for _, w := range s.Wire {
						if slices.Contains(operationalRefusals, w.Answer) {
							refused[w.Txid] = append(refused[w.Txid], w.Answer)
						}
					}
				}
				for _, code := range refused[t] {
					trouble = append(trouble, fmt.Sprintf("its last txid %s was refused %s and never accepted", t.Short(), code))
				}
			}
			for _, in := range j.onChain[t] {
				if in.Receipt != tron.ReceiptSuccess {
					trouble = append(trouble, fmt.Sprintf("its last txid %s is on chain with receipt %s", t.Short(), in.Receipt))
				}
			}
		}
		if n := ix.parked[k]; n > 0 {
			trouble = append(trouble, fmt.Sprintf("parked %d times", n))
		}
		switch {
		case len(trouble) > 0:
			vs = append(vs, Violation{Invariant: NoOperationalFailure, Operation: op.ID, Message: fmt.Sprintf(
				"op %s failed (%q) after operational trouble the customer did not cause: %s", op.ID, op.Reason, strings.Join(dedupe(trouble), "; "))})
		case e.Decision == nil || e.Decision.Action != sluice.Cancel:
			vs = append(vs, Violation{Invariant: NoOperationalFailure, Operation: op.ID, Message: fmt.Sprintf(
				"op %s failed (%q) by neither an operator, a refusal of its bytes, nor the stuck policy's cancel", op.ID, op.Reason)})
		}
	}
	return finish(vs)
}

// dedupe drops repeats, keeping the first of each.
func dedupe(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	out := ss[:0:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
