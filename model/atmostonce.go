package model

import (
	"fmt"
	"strings"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// CheckAtMostOnce checks that no withdrawal was paid twice, and that the
// state of each one tells the truth about the chain.
//
// Per operation (its txids are its history, as for txid-ownership): at most
// one of its txids is included on chain, with any receipt, since a reverted
// transaction still shows that a second envelope was alive, except that an
// inclusion with a failed receipt (REVERT, OUT_OF_ENERGY) in a solid block
// is a dead end that proves its own death (the core rebuilds after it, and
// audit-log checks that the rebuild cited it solid); a Confirmed
// operation has exactly one inclusion that moved tokens (SUCCESS receipt and
// a Transfer log); an operation in review has at most one (review is where
// money that moved, perhaps not as asked, waits for an operator: one
// payment at most still holds for it); an operation in any other state has
// none.
func CheckAtMostOnce(s *Snapshot) []Violation {
	s = withMemo(s)
	own := readOwnership(s)
	ix := s.index()
	onChain := ix.onChain

	// Every operation with a txid, and every row (one with no txid at all
	// is still judged if confirmed); the order does not matter, finish
	// sorts.
	var vs []Violation
	var included, paid []mocknode.Inclusion // reused: messages copy what they show
	for k, id := range ix.ids {
		row := ix.row(s, id)
		if row == nil && len(own.byOp[k]) == 0 {
			continue
		}
		state := "without a row"
		confirmed, review := false, false
		if row != nil {
			state = row.State.String()
			confirmed = row.State == sluice.Confirmed
			review = row.State == sluice.Review
		}
		included, paid = included[:0], paid[:0]
		alive := 0 // inclusions that are not solid failures
		for _, t := range own.byOp[k] {
			for _, in := range onChain[t] {
				included = append(included, in)
				if in.Receipt == tron.ReceiptSuccess || in.BlockNumber > s.SolidNumber {
					alive++
				}
				if moved(in) {
					paid = append(paid, in)
				}
			}
		}
		v := Violation{Invariant: AtMostOnce, Operation: id}
		if alive > 1 {
			v.Message = fmt.Sprintf("op %s (%s) has %d inclusions on chain that are not solid failures, want at most one: %s",
				id, state, alive, describeInclusions(included))
			vs = append(vs, v)
		}
		switch {
		case confirmed && len(paid) == 0:
			v.Message = fmt.Sprintf("op %s is confirmed but none of its txids [%s] moved tokens on chain (on chain: %s)",
				id, shortTxids(own.byOp[k]), describeInclusions(included))
			vs = append(vs, v)
		case confirmed && len(paid) > 1:
			v.Message = fmt.Sprintf("op %s is confirmed with %d successful transfers, want exactly one: %s",
				id, len(paid), describeInclusions(paid))
			vs = append(vs, v)
		case review && len(paid) > 1:
			v.Message = fmt.Sprintf("op %s is in review with %d successful transfers, want at most one: %s",
				id, len(paid), describeInclusions(paid))
			vs = append(vs, v)
		case !confirmed && !review && len(paid) > 0 && (row == nil || Terminal(row.State) || !s.cutShort()):
			// A run cut short (its step budget spent, or a process
			// failed) may stop between a payment and its confirmation
			// (liveness or the failure reports the cut); a row the
			// automation is done with has no such excuse.
			v.Message = fmt.Sprintf("op %s is %s but moved tokens on chain: %s",
				id, state, describeInclusions(paid))
			vs = append(vs, v)
		}
	}
	return finish(vs)
}

// describeInclusions is "txid@#block RECEIPT" for each, or "none".
func describeInclusions(ins []mocknode.Inclusion) string {
	if len(ins) == 0 {
		return "none"
	}
	parts := make([]string, len(ins))
	for i, in := range ins {
		r := in.Receipt
		if r == "" {
			r = "no receipt"
		}
		if in.Receipt == tron.ReceiptSuccess && !in.TransferOK {
			r += " without a Transfer log"
		}
		parts[i] = fmt.Sprintf("%s@#%d %s", in.Txid.Short(), in.BlockNumber, r)
	}
	return strings.Join(parts, ", ")
}
