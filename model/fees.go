package model

import (
	"fmt"
	"strconv"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// CheckFeeLimits judges what the hot wallet paid for energy, by the chain's
// own inclusions (the fee limit the bytes on chain carry and the receipt
// they got, never what a store recorded), and what the workers built, by
// the world's record of each build and of the release its worker ran:
//
//   - no transaction lands with a fee limit above FeeLimitMax, the most the
//     owner agreed to burn on one transfer (judged when the world set it);
//   - no withdrawal runs out of energy at a fee limit at or below one at
//     which it already ran out of energy, unless that one was FeeLimitMax
//     already (nothing higher is allowed): energy did not get cheaper, so
//     the same limit buys no more of it, and the limit it burns buys
//     nothing.
//   - no worker builds an envelope with a fee limit below the FeeLimit of
//     the release it runs, or above that release's FeeLimitMax (the
//     world's record of the release, WriteRecord.FeeFloor and FeeCeiling):
//     a rebuild starts from the row's earlier limit, and that limit may
//     come from a release with other limits (a deploy between the builds).
//
// A rebuild after OUT_OF_ENERGY must raise the limit; a rebuild for any
// other reason must not lower it below one that ran out. The order is the
// chain's: a txid proven dead by its own failed receipt lands before the
// rebuild that answers it. "Nothing higher is allowed" is judged by the
// ceiling of the release that built the transaction that ran out again.
func CheckFeeLimits(s *Snapshot) []Violation {
	s = withMemo(s)
	own := readOwnership(s)
	var vs []Violation
	// The ceiling each built txid was built under.
	var ceiling map[tron.Txid]int64
	for i := range s.Writes {
		wr := &s.Writes[i]
		if !wr.Built || wr.FeeFloor == 0 {
			continue
		}
		if wr.FeeLimit < wr.FeeFloor || wr.FeeLimit > wr.FeeCeiling {
			edge, limit := "below the FeeLimit", wr.FeeFloor
			if wr.FeeLimit > wr.FeeCeiling {
				edge, limit = "above the FeeLimitMax", wr.FeeCeiling
			}
			vs = append(vs, Violation{Invariant: FeeLimits, Operation: wr.Op, Message: fmt.Sprintf(
				"op %s: %s built txid %s with fee limit %s, %s %s of the release it runs",
				wr.Op, wr.Proc, wr.Txid.Short(), trx(wr.FeeLimit), edge, trx(limit))})
		}
		if ceiling == nil {
			ceiling = make(map[tron.Txid]int64)
		}
		ceiling[wr.Txid] = wr.FeeCeiling
	}
	// The highest fee limit each withdrawal ran out of energy at so far,
	// and the txid that did.
	type spent struct {
		limit int64
		txid  tron.Txid
	}
	var ran map[sluice.OperationID]spent
	for _, in := range s.Inclusions {
		owners := own.owners[in.Txid]
		if s.FeeLimitMax > 0 && in.FeeLimit > s.FeeLimitMax {
			v := Violation{Invariant: FeeLimits, Message: fmt.Sprintf("txid %s landed in #%d with fee limit %s, above FeeLimitMax %s",
				in.Txid.Short(), in.BlockNumber, trx(in.FeeLimit), trx(s.FeeLimitMax))}
			if len(owners) > 0 {
				v.Operation = owners[0]
				v.Message = "op " + string(owners[0]) + ": " + v.Message
			}
			vs = append(vs, v)
		}
		if in.Receipt != tron.ReceiptOutOfEnergy {
			continue
		}
		for _, id := range owners {
			before, ok := ran[id]
			top, built := ceiling[in.Txid]
			if !built {
				top = s.FeeLimitMax
			}
			if ok && in.FeeLimit <= before.limit && (top == 0 || before.limit < top) {
				burnt := ""
				if in.Burnt > 0 {
					burnt = ", burning " + trx(in.Burnt)
				}
				vs = append(vs, Violation{Invariant: FeeLimits, Operation: id, Message: fmt.Sprintf(
					"op %s: txid %s ran out of energy in #%d with fee limit %s%s, though its txid %s had already run out of energy with %s: a limit that could not buy the energy was sent again",
					id, in.Txid.Short(), in.BlockNumber, trx(in.FeeLimit), burnt, before.txid.Short(), trx(before.limit))})
			}
			if !ok || in.FeeLimit > before.limit {
				if ran == nil {
					ran = make(map[sluice.OperationID]spent)
				}
				ran[id] = spent{in.FeeLimit, in.Txid}
			}
		}
	}
	return finish(vs)
}

// trx spells an amount of sun in TRX, as few decimals as it needs.
func trx(sun int64) string {
	return strconv.FormatFloat(float64(sun)/1e6, 'f', -1, 64) + " TRX"
}
