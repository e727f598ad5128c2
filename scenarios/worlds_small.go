package scenarios

import "time"

// PairNodes is pair behind two full nodes: one withdrawal, two workers,
// pair's scaled-down times, and the nodes world's network cut to its
// smallest: a balancer that picks a node per call, node 1 that falls behind
// the producer (node 0), and gossip between their pools that may be lost. It
// is the small version of nodes for exhaustive search, which branches on
// which node each call reaches, when node 1 falls behind and which gossip
// hop is lost (ExhaustiveBounds.Routes, Lags and GossipLosses). The two
// bugs that need two nodes are found here within small bounds (see
// TestExhaustiveFindsTwoNodeMutants):
//
//   - a re-send refused outright by the node that never saw the
//     transaction (gossip lost it) while the producer holds it and will
//     include it: terminal only in a core that trusts the refusal
//     (resend-reject-is-terminal);
//   - a proof of death from a lookup on a node behind the solid block the
//     proof cites (proof-from-lagging-node).
//
// Two choices shape the second, so that it needs three routed calls and two
// lag changes rather than a dozen routed lookups:
//
//   - node 1 falls 20 blocks behind (about the solid lag: a worker that
//     reads the solid block and the lookup from it waits another minute for
//     solidity) or 60 (three minutes: a transaction already below node 0's
//     solid block is above node 1's head). Any lookup on node 0 once the
//     transaction is solid confirms the withdrawal, and the proof window
//     opens at least the safety margin (30 s) later, so without a wait that
//     spans that gap every lookup in it would have to be routed to node 1.
//   - the chain process's first gap is 40 s, not chaos's 15 s: exhaustive
//     search takes the first entry of the timing menus, so node 1 can change
//     its lag at 40 s and 80 s into the fault phase, not at seven points.
func PairNodes() Config {
	c := Pair()
	n := Nodes()
	c.Name = "pairnodes"
	c.Nodes, c.Route = 2, n.Route
	c.NodeLags = []int{20, 60}
	c.LagP, c.GossipLossP = n.LagP, n.GossipLossP
	c.ChainGaps = durations(40*time.Second, 15*time.Second, 90*time.Second)
	return c
}
