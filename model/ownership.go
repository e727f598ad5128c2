package model

import (
	"fmt"
	"slices"
	"strings"

	"sluicesim/sluice/tron"
)

// CheckTxidOwnership checks that every txid that ever reached the node
// belongs to exactly one operation's history.
//
// An operation's history is every txid its events name (Txid and
// RetiredTxid) plus its row's envelope txid. The txids checked are those the
// node accepted, those put on the wire, and those included on chain. A txid
// with no owner is a transaction nobody can reconcile; one with two owners is
// one on-chain fate shared by two withdrawals.
func CheckTxidOwnership(s *Snapshot) []Violation {
	own := readOwnership(s)

	// Where each txid was seen, in first-seen order over the snapshot's
	// slices, so messages never depend on map order.
	var order []tron.Txid
	where := make(map[tron.Txid][]string)
	note := func(t tron.Txid, place string) {
		if _, ok := where[t]; !ok {
			order = append(order, t)
		}
		if !slices.Contains(where[t], place) {
			where[t] = append(where[t], place)
		}
	}
	for _, a := range s.Accepted {
		note(a.Txid, "accepted")
	}
	for _, w := range s.Wire {
		note(w.Txid, "on the wire")
	}
	for _, in := range s.Inclusions {
		note(in.Txid, "included")
	}

	var vs []Violation
	for _, t := range order {
		owners := own.owners[t]
		switch len(owners) {
		case 1:
			continue
		case 0:
			vs = append(vs, Violation{Invariant: TxidOwnership, Message: fmt.Sprintf(
				"txid %s (%s) belongs to no operation's history", t.Short(), joinPlaces(where[t]))})
		default:
			for _, id := range owners {
				vs = append(vs, Violation{Invariant: TxidOwnership, Operation: id, Message: fmt.Sprintf(
					"txid %s (%s) belongs to %d operations: %s", t.Short(), joinPlaces(where[t]), len(owners), joinIDs(owners))})
			}
		}
	}
	return finish(vs)
}

func joinPlaces(ps []string) string { return strings.Join(ps, ", ") }
