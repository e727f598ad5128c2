package mocknode

import "sluicesim/sluice/tron"

// CanRefuseForBandwidth reports whether this node, asked now to broadcast tx,
// would get as far as its bandwidth check: whether it passes every check that
// java-tron runs before that one (pool room, contract present, expiration
// window, signature, TAPoS, size, duplicate; TRON.md), on this node's own view
// of the chain. Only such a transaction can be refused with BANDWITH_ERROR: a
// node that holds it, in its pool or in a block it has, answers
// DUP_TRANSACTION_ERROR first, and one that finds it expired says so first.
//
// The BandwidthExhausted fault skips those checks (a lie, cruder than any
// node). A world that wants only the refusals a node can give asks this
// before choosing the fault. In a network that is the case a re-send must
// survive: the node that never saw the transaction refuses it for bandwidth
// (its view of the hot wallet's resources is spent) while another node holds
// it and the producer will include it.
//
// It is a question, not a call: no fault is asked, nothing is recorded, and
// nothing changes but the chain advancing to the clock as every method does.
func (n *Node) CanRefuseForBandwidth(tx tron.Transaction) bool {
	n.net.advance()
	_, passed := n.precheck(tx, n.net.txid(&tx))
	return passed
}
