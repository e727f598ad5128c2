package model

import (
	"fmt"
	"strconv"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// CheckFeeLimits judges what the hot wallet paid for energy, by the chain's
// own inclusions (the fee limit the bytes on chain carry and the receipt
// they got, never what a store recorded):
//
//   - no transaction lands with a fee limit above FeeLimitMax, the most the
//     owner agreed to burn on one transfer (judged when the world set it);
//   - no withdrawal runs out of energy at a fee limit at or below one at
//     which it already ran out of energy, unless that one was FeeLimitMax
//     already (nothing higher is allowed): energy did not get cheaper, so
//     the same limit buys no more of it, and the limit it burns buys
//     nothing.
//
// A rebuild after OUT_OF_ENERGY must raise the limit; a rebuild for any
// other reason must not lower it below one that ran out. The order is the
// chain's: a txid proven dead by its own failed receipt lands before the
// rebuild that answers it.
func CheckFeeLimits(s *Snapshot) []Violation {
	s = withMemo(s)
	own := readOwnership(s)
	var vs []Violation
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
			if ok && in.FeeLimit <= before.limit && (s.FeeLimitMax == 0 || before.limit < s.FeeLimitMax) {
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
