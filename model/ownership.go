package model

import (
	"fmt"
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
	s = withMemo(s)
	own := readOwnership(s)
	ix := s.index()

	// Every txid the node saw, each judged once (reported tells a repeat).
	var vs []Violation
	var reported map[tron.Txid]bool
	judge := func(t tron.Txid) {
		owners := own.owners[t]
		if len(owners) == 1 || reported[t] {
			return
		}
		if reported == nil {
			reported = make(map[tron.Txid]bool)
		}
		reported[t] = true
		where := ix.places(t)
		if len(owners) == 0 {
			vs = append(vs, Violation{Invariant: TxidOwnership, Message: fmt.Sprintf(
				"txid %s (%s) belongs to no operation's history", t.Short(), where)})
			return
		}
		for _, id := range owners {
			vs = append(vs, Violation{Invariant: TxidOwnership, Operation: id, Message: fmt.Sprintf(
				"txid %s (%s) belongs to %d operations: %s", t.Short(), where, len(owners), joinIDs(owners))})
		}
	}
	for i := range s.Accepted {
		judge(s.Accepted[i].Txid)
	}
	for i := range s.Wire {
		judge(s.Wire[i].Txid)
	}
	for i := range s.Inclusions {
		judge(s.Inclusions[i].Txid)
	}
	return finish(vs)
}

// places says where the node saw t, in a fixed order: "accepted, on the
// wire, included", or those of them that hold.
func (ix *index) places(t tron.Txid) string {
	var ps []string
	if ix.acceptedByNode(t) {
		ps = append(ps, "accepted")
	}
	if ix.onWire(t) {
		ps = append(ps, "on the wire")
	}
	if len(ix.onChain[t]) > 0 {
		ps = append(ps, "included")
	}
	return strings.Join(ps, ", ")
}
