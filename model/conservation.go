package model

import (
	"fmt"
	"math/bits"
	"strings"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// CheckConservation checks that the money that left the hot wallet is
// exactly the money the clients asked for, on the operations that confirmed.
//
// What an operation should pay is its client's intent (intents: the payload
// sent, read by the model's own reference code), not the row: a parser with
// a wrong scale would store, pay and confirm the wrong amount consistently.
// The sum of every transfer out of the hot wallet that moved tokens on chain
// (SUCCESS receipt, Transfer log) equals the sum of the Confirmed operations'
// intended amounts, to the unit. Each Confirmed operation's successful
// transfer is a USDT transfer from the hot wallet to the intended recipient
// for exactly the intended amount. A successful transfer out of the hot
// wallet whose txid belongs to no operation is money nobody accounts for.
// Without any intake record (a hand-built snapshot of the store alone) the
// row stands in for the intent.
func CheckConservation(s *Snapshot) []Violation {
	own := readOwnership(s)
	var vs []Violation

	var onChain, confirmed uint64
	overflow := false
	for _, in := range s.Inclusions {
		if !moved(in) || in.Transfer.From != s.HotWallet {
			continue
		}
		var carry uint64
		onChain, carry = bits.Add64(onChain, in.Transfer.Amount, 0)
		overflow = overflow || carry != 0
		if len(own.owners[in.Txid]) == 0 {
			vs = append(vs, Violation{Invariant: Conservation, Message: fmt.Sprintf(
				"txid %s moved %d units from the hot wallet to %s in block #%d but belongs to no operation",
				in.Txid.Short(), in.Transfer.Amount, in.Transfer.To, in.BlockNumber)})
		}
	}

	onChainByTxid := inclusionsByTxid(s)
	meant := intents(s)
	seen := make(map[sluice.OperationID]bool)
	for i := range s.Operations {
		op := &s.Operations[i]
		if op.State != sluice.Confirmed || seen[op.ID] {
			continue
		}
		seen[op.ID] = true
		want, ok := meant[op.ID]
		if !ok {
			if len(s.Intake) > 0 {
				vs = append(vs, Violation{Invariant: Conservation, Operation: op.ID, Message: fmt.Sprintf(
					"op %s is confirmed paying %s, but no client sent that instruction", op.ID, describeIntent(rowIntent(op)))})
			}
			want = rowIntent(op)
		}
		var carry uint64
		confirmed, carry = bits.Add64(confirmed, want.Units, 0)
		overflow = overflow || carry != 0
		for _, t := range own.byOp[op.ID] {
			for _, in := range onChainByTxid[t] {
				if !moved(in) {
					continue
				}
				if bad := transferMismatch(s, want, in.Transfer); bad != "" {
					vs = append(vs, Violation{Invariant: Conservation, Operation: op.ID, Message: fmt.Sprintf(
						"op %s is confirmed by txid %s in block #%d, whose transfer %s; the client asked for %d units of USDT from the hot wallet %s to %s",
						op.ID, t.Short(), in.BlockNumber, bad, want.Units, Base58Address(s.HotWallet), Base58Address(want.To))})
				}
			}
		}
	}

	if overflow {
		vs = append(vs, Violation{Invariant: Conservation, Message: "a sum of amounts overflows uint64: the totals cannot be compared"})
	} else if onChain != confirmed {
		vs = append(vs, Violation{Invariant: Conservation, Message: fmt.Sprintf(
			"%d units left the hot wallet on chain but confirmed operations account for %d (difference %s)",
			onChain, confirmed, difference(onChain, confirmed))})
	}
	return finish(vs)
}

// transferMismatch says how t differs from what the client asked for, or "".
func transferMismatch(s *Snapshot, want Intent, t tron.Transfer) string {
	var bad []string
	if t.Contract != refUSDTContract {
		bad = append(bad, "is on contract "+Base58Address(t.Contract))
	}
	if t.From != s.HotWallet {
		bad = append(bad, "comes from "+Base58Address(t.From))
	}
	if t.To != want.To {
		bad = append(bad, "goes to "+Base58Address(t.To))
	}
	if t.Amount != want.Units {
		bad = append(bad, fmt.Sprintf("moves %d units", t.Amount))
	}
	return strings.Join(bad, " and ")
}

// difference is a - b with its sign, without overflow.
func difference(a, b uint64) string {
	if a >= b {
		return fmt.Sprintf("+%d", a-b)
	}
	return fmt.Sprintf("-%d", b-a)
}
