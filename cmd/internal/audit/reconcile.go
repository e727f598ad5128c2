package audit

import (
	"context"
	"fmt"
	"strings"

	"sluicesim/model"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/nodehttp"
)

// Reconciliation is the name reconciliation's findings carry, next to the
// model's invariants.
const Reconciliation = "reconciliation"

// Rescan is what reconciliation looked at.
type Rescan struct {
	From         int64 `json:"from"` // the solid blocks rescanned, From..To inclusive
	To           int64 `json:"to"`
	Transactions int   `json:"transactions"` // included in them
	Known        int   `json:"known"`        // owned by an operation
	Unknown      int   `json:"unknown"`      // owned by none, each looked up
	Strays       int   `json:"strays"`       // unknown ones that touch the hot wallet: each a violation
}

// looker is the node's ordinary lookup, what a real node answers too.
type looker interface {
	Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error)
}

// reconcile rescans the last n solid blocks (every solid block when n is
// 0) for transactions no operation owns, and reports each that the hot
// wallet signed or whose Transfer logs move the hot wallet's tokens.
//
// The blocks' transactions come from the mock's ground truth (a real node:
// getblockbynum, whose transactions carry their owner); what each unknown
// one did comes from the node's own lookup (receipt and logs), as a real
// node reports it, and not from the mock's ledger, which conservation
// already reads. A transaction known to sluice is not looked up: the other
// invariants judge it.
func reconcile(ctx context.Context, node looker, truth nodehttp.Truth, known func(tron.Txid) bool, n int64) (Rescan, []model.Violation, error) {
	r := Rescan{From: 0, To: truth.Solid.Number}
	if n > 0 {
		r.From = max(0, r.To-n+1)
	}
	var vs []model.Violation
	for _, in := range truth.Inclusions {
		if in.BlockNumber < r.From || in.BlockNumber > r.To {
			continue
		}
		r.Transactions++
		if known(in.Txid) {
			r.Known++
			continue
		}
		r.Unknown++
		info, err := node.Lookup(ctx, in.Txid)
		if err != nil {
			return r, nil, fmt.Errorf("reconciliation: %w", err)
		}
		if info.Status != tron.Included || info.BlockNumber != in.BlockNumber {
			return r, nil, fmt.Errorf("reconciliation: the node lists txid %s in solid block #%d, but its lookup says %s in block #%d",
				in.Txid, in.BlockNumber, info.Status, info.BlockNumber)
		}
		var what []string
		if in.Owner == truth.HotWallet {
			what = append(what, "was signed by the hot wallet")
		}
		for _, l := range info.Logs {
			if t, ok := tron.ParseTransferLog(l); ok && t.From == truth.HotWallet {
				what = append(what, fmt.Sprintf("moves %d units of %s from the hot wallet to %s (Transfer log)", t.Amount, token(t.Contract), t.To))
			}
		}
		if len(what) == 0 {
			continue // neither from nor of the hot wallet: not sluice's business
		}
		r.Strays++
		vs = append(vs, model.Violation{Invariant: Reconciliation, Message: fmt.Sprintf(
			"txid %s in solid block #%d (receipt %s) %s, but no operation owns it: a payment sluice does not know about",
			in.Txid, in.BlockNumber, receipt(info.Receipt), strings.Join(what, " and "))})
	}
	return r, vs, nil
}

func token(contract tron.Address) string {
	if contract == tron.USDTContract {
		return "USDT"
	}
	return "the token at " + contract.String()
}

func receipt(r string) string {
	if r == "" {
		return "none"
	}
	return r
}
