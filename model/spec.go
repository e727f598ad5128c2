package model

import "sluicesim/sluice"

// The state machine as the design states it, written here and not read
// from sluice. The audit-log invariant and the coverage catalog used to
// take the edges from sluice.Transitions, the code under test: a core that
// lost an edge (bug 33 of scenarios/testdata/independent-bugs: no
// broadcasting -> failed, so an operator can no longer cancel a parked
// send) then also lost the coverage condition that asked for it, and a
// core that gained an edge would have had its own illegal moves judged
// legal. TestSpecIsTheCoresTable compares the two tables, edge by edge.

// Edge is one edge of the state machine.
type Edge struct {
	From, To sluice.State
	// Operator marks an edge only an operator takes (Store.Resolve).
	Operator bool
	Doc      string
}

// specEdges is every edge, the automation's first, each once, in a fixed
// order (the coverage catalog's).
var specEdges = []Edge{
	{From: sluice.Requested, To: sluice.Validated, Doc: "request passed validation"},
	{From: sluice.Requested, To: sluice.Rejected, Doc: "request failed validation"},
	{From: sluice.Validated, To: sluice.Signing, Doc: "envelope built; txid stored before signing"},
	{From: sluice.Validated, To: sluice.Rejected, Doc: "refused before any envelope existed"},
	{From: sluice.Signing, To: sluice.Signed, Doc: "signature stored"},
	{From: sluice.Signing, To: sluice.Failed, Doc: "signing refused for good"},
	{From: sluice.Signed, To: sluice.Broadcasting, Doc: "write-ahead: intent to send committed before the send"},
	{From: sluice.Signed, To: sluice.Signing, Doc: "stale before first send: never sent, rebuilt"},
	{From: sluice.Signed, To: sluice.Failed, Doc: "first send hard-rejected, or builds exhausted"},
	{From: sluice.Broadcasting, To: sluice.Broadcast, Doc: "node accepted, or txid pending or included"},
	{From: sluice.Broadcasting, To: sluice.Signing, Doc: "rebuild with proof of death"},
	{From: sluice.Broadcasting, To: sluice.Failed, Doc: "first send hard-rejected, or proof of death with builds exhausted"},
	{From: sluice.Broadcast, To: sluice.Confirmed, Doc: "solid, SUCCESS receipt, matching Transfer log"},
	{From: sluice.Broadcast, To: sluice.Signing, Doc: "rebuild with proof of death"},
	{From: sluice.Broadcast, To: sluice.Failed, Doc: "reverted on chain, or proof of death with builds exhausted"},
	{From: sluice.Broadcast, To: sluice.Review, Doc: "solid, SUCCESS receipt, but the Transfer logs do not show exactly the payment asked; or parked past its bounds"},
	{From: sluice.Validated, To: sluice.Review, Doc: "parked past its bounds (node unavailable before the first build)"},
	{From: sluice.Signing, To: sluice.Review, Doc: "parked past its bounds (signer unavailable)"},
	{From: sluice.Signed, To: sluice.Review, Doc: "parked past its bounds, or stale again with the rebuild budget spent"},
	{From: sluice.Broadcasting, To: sluice.Review, Doc: "parked past its bounds, or proven dead with the budget spent after operational trouble"},
	{From: sluice.Requested, To: sluice.Failed, Operator: true, Doc: "operator cancel: nothing was ever built"},
	{From: sluice.Validated, To: sluice.Failed, Operator: true, Doc: "operator cancel: nothing was ever built"},
	{From: sluice.Review, To: sluice.Failed, Operator: true, Doc: "operator cancel: every txid proven dead"},
	{From: sluice.Review, To: sluice.Confirmed, Operator: true, Doc: "operator: resolved as paid by a txid the chain shows paying exactly the request"},
}

// specLegal[from][to]: 1 an automation edge, 2 an operator-only edge.
var specLegal = func() (m [sluice.StateCount][sluice.StateCount]uint8) {
	for _, e := range specEdges {
		m[e.From][e.To] = 1
		if e.Operator {
			m[e.From][e.To] = 2
		}
	}
	return m
}()

// Edges returns the state machine's edges (a copy), automation first.
func Edges() []Edge { return append([]Edge(nil), specEdges...) }

// Legal reports whether the automation (a worker) may move a row from ->
// to.
func Legal(from, to sluice.State) bool { return inRange(from, to) && specLegal[from][to] == 1 }

// OperatorLegal reports whether an operator may move a row from -> to: an
// operator-only edge, or any automation edge into failed (a cancel).
// Retrying (to == from) is not an edge.
func OperatorLegal(from, to sluice.State) bool {
	return inRange(from, to) && (specLegal[from][to] == 2 || to == sluice.Failed && specLegal[from][to] == 1)
}

// Terminal reports whether the automation is done with a row in s: no
// worker write may change it (an operator may still settle a review).
func Terminal(s sluice.State) bool {
	return s == sluice.Confirmed || s == sluice.Failed || s == sluice.Rejected || s == sluice.Review
}

func inRange(from, to sluice.State) bool {
	return int(from) < sluice.StateCount && int(to) < sluice.StateCount
}
