package model

import (
	"fmt"
	"math/bits"
	"strings"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// CheckConservation checks that the money that left the hot wallet is
// exactly the money the clients asked for, on the operations that confirmed,
// plus what really moved under operations in review.
//
// What an operation should pay is its client's intent (intents: the payload
// sent, read by the model's own reference code), not the row: a parser with
// a wrong scale would store, pay and confirm the wrong amount consistently.
// What moved is the chain's ledger (Inclusion.Moved: every USDT movement an
// inclusion really made, fees included), not the logs a node reported. The
// units that left the hot wallet on chain equal the Confirmed operations'
// intended amounts plus whatever left under Review operations (money that
// moved, perhaps not as asked, and that an operator must settle), to the
// unit. Each Confirmed operation's inclusion moved exactly its intent: one
// USDT movement from the hot wallet to the intended recipient for the
// intended amount, nothing else (no fee on the way). Money that left the
// hot wallet under a txid of no operation is money nobody accounts for.
// A review an operator resolved as paid is counted like a review (what
// really moved), and must have moved some USDT from the hot wallet to the
// intended recipient: the operator settles a payment that differs from
// the request, never one that reached nobody we meant.
// A withdrawal whose client asked to pay the hot wallet itself never
// confirms, by a worker or an operator: the money would go from the hot
// wallet back into it, the customer debited for nothing that left.
// Without any intake record (a hand-built snapshot of the store alone) the
// row stands in for the intent.
func CheckConservation(s *Snapshot) []Violation {
	s = withMemo(s)
	own := readOwnership(s)
	var vs []Violation

	var onChain, accounted uint64
	overflow := false
	sum := func(acc *uint64, v uint64) {
		var carry uint64
		*acc, carry = bits.Add64(*acc, v, 0)
		overflow = overflow || carry != 0
	}
	for _, in := range s.Inclusions {
		d := debited(in, s.HotWallet)
		if d == 0 {
			continue
		}
		sum(&onChain, d)
		if len(own.owners[in.Txid]) == 0 {
			vs = append(vs, Violation{Invariant: Conservation, Message: fmt.Sprintf(
				"txid %s moved %d units from the hot wallet (%s) in block #%d but belongs to no operation",
				in.Txid.Short(), d, describeMoves(in.Moved), in.BlockNumber)})
		}
	}

	ix := s.index()
	onChainByTxid := ix.onChain
	meant := intents(s)
	seen := make([]bool, len(ix.ids)) // by slot
	for i := range s.Operations {
		op := &s.Operations[i]
		k := ix.slot[op.ID]
		if (op.State != sluice.Confirmed && op.State != sluice.Review) || seen[k] {
			continue
		}
		seen[k] = true
		// Confirmed by an operator: its last event is an operator's
		// confirmation.
		var resolved bool
		if last := ix.lastEv[k]; last >= 0 {
			e := &s.Events[last]
			resolved = e.To == sluice.Confirmed && strings.HasPrefix(string(e.Worker), sluice.OperatorPrefix)
		}
		if op.State == sluice.Review || resolved {
			reached := false
			want, ok := meant.of(op.ID)
			if !ok {
				want = rowIntent(op)
			}
			if resolved {
				vs = paidToSelf(vs, s, op, want)
			}
			for _, t := range own.byOp[k] {
				for _, in := range onChainByTxid[t] {
					sum(&accounted, debited(in, s.HotWallet))
					reached = reached || reachedIntended(in, s.HotWallet, want)
				}
			}
			if resolved && !reached {
				vs = append(vs, Violation{Invariant: Conservation, Operation: op.ID, Message: fmt.Sprintf(
					"op %s was resolved as paid by an operator, but the chain's ledger shows no USDT moving from the hot wallet %s to %s under any of its txids",
					op.ID, Base58Address(s.HotWallet), Base58Address(want.To))})
			}
			continue
		}
		want, ok := meant.of(op.ID)
		if !ok {
			if len(s.Intake) > 0 {
				vs = append(vs, Violation{Invariant: Conservation, Operation: op.ID, Message: fmt.Sprintf(
					"op %s is confirmed paying %s, but no client sent that instruction", op.ID, describeIntent(rowIntent(op)))})
			}
			want = rowIntent(op)
		}
		sum(&accounted, want.Units)
		vs = paidToSelf(vs, s, op, want)
		for _, t := range own.byOp[k] {
			for _, in := range onChainByTxid[t] {
				if in.Receipt != tron.ReceiptSuccess {
					continue
				}
				if why, exact := movedExactly(in, s, want); !exact {
					vs = append(vs, Violation{Invariant: Conservation, Operation: op.ID, Message: fmt.Sprintf(
						"op %s is confirmed by txid %s in block #%d, %s; the client asked for %d units of USDT from the hot wallet %s to %s",
						op.ID, t.Short(), in.BlockNumber, why, want.Units, Base58Address(s.HotWallet), Base58Address(want.To))})
				}
			}
		}
	}

	if overflow {
		vs = append(vs, Violation{Invariant: Conservation, Message: "a sum of amounts overflows uint64: the totals cannot be compared"})
	} else if onChain != accounted && !s.cutShort() {
		// The totals balance only once every payment has settled: a run
		// cut short (its step budget spent, or a process failed) may stop
		// with money in flight, and liveness or the failure reports the
		// cut.
		vs = append(vs, Violation{Invariant: Conservation, Message: fmt.Sprintf(
			"%d units left the hot wallet on chain but confirmed operations (and what moved under review) account for %d (difference %s)",
			onChain, accounted, difference(onChain, accounted))})
	}
	return finish(vs)
}

// paidToSelf reports a confirmed operation whose client asked to pay the
// hot wallet itself. Such a payment moves the money from the hot wallet
// back into it: the customer is debited and told it was paid, and nothing
// left the house. Its client's instruction is one the model would never
// pay (progress accepts its rejection); whatever the chain shows, it must
// not confirm.
func paidToSelf(vs []Violation, s *Snapshot, op *sluice.Operation, want Intent) []Violation {
	if want.To != [21]byte(s.HotWallet) {
		return vs
	}
	return append(vs, Violation{Invariant: Conservation, Operation: op.ID, Message: fmt.Sprintf(
		"op %s is confirmed paying %d units to the hot wallet %s itself: the customer is debited and nothing left the house; a withdrawal to the hot wallet must be rejected, its hold released",
		op.ID, want.Units, Base58Address(s.HotWallet))})
}

// reachedIntended reports whether in really moved some USDT from the hot
// wallet to the intended recipient (the chain's ledger, not the logs).
func reachedIntended(in mocknode.Inclusion, hot tron.Address, want Intent) bool {
	if in.Receipt != tron.ReceiptSuccess {
		return false
	}
	for _, m := range in.Moved {
		if m.Contract == refUSDTContract && m.From == hot && [21]byte(m.To) == want.To && m.Amount > 0 {
			return true
		}
	}
	return false
}

// debited is how many units really left from in this inclusion (nothing
// moves under a receipt other than SUCCESS).
func debited(in mocknode.Inclusion, from tron.Address) uint64 {
	if in.Receipt != tron.ReceiptSuccess {
		return 0
	}
	var sum uint64
	for _, m := range in.Moved {
		if m.From == from {
			sum += m.Amount
		}
	}
	return sum
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
