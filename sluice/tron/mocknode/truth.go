package mocknode

import (
	"time"

	"sluicesim/sluice/tron"
)

// Ground truth for the checkers. The core never reads any of this: it sees
// only a Client (or a Balancer). Every accessor first brings the chain up to
// the clock (as every method does; that changes nothing another call would
// not) and returns copies in a deterministic order.
//
// The chain's truth (Accepted, Inclusions, Orphaned, Reorgs, Balance, Blocks,
// BlockTxids, Events) is one per network; a Node's accessors of it answer for
// the whole network's canonical chain. What a node itself saw or would say
// (Wire, Queries, Head, Solid, Pool, TxInfo, FaultsFired) is per node, and
// the Network's accessors of the same names give the network-wide record or
// the producer's (the canonical head's) view.

// WireAttempt is one broadcast as it happened on the wire.
type WireAttempt struct {
	Seq    int // position among all calls to the network (broadcasts and queries), from 1
	Worker string
	Txid   tron.Txid
	At     time.Time // the clock when the call was made
	Head   int64     // the called node's head block number when the call was made
	Fault  Fault     // the fault chosen for the call
	Fired  bool      // whether the fault changed anything (false for None)
	// Reached: the node processed the transaction (ran its checks). False
	// for a lost request and for injected SERVER_BUSY or NO_CONNECTION.
	Reached bool
	// Truth is the node's own answer; empty when it never processed the call.
	Truth tron.Code
	// Answer is what the caller saw: a code, or AnswerTimeout.
	Answer string
	// Accepted: this call put the transaction into the node's pool
	// (SUCCESS) or found it there or in a block (DUP), whatever the caller
	// was told.
	Accepted bool
	// Node is the node called (0 for a single node, and then left out of
	// JSON so that a single node's record reads as it always has).
	Node int `json:",omitempty"`
}

// QueryAttempt is one Lookup, HeadBlock or SolidBlock call.
type QueryAttempt struct {
	Seq    int // position among all calls to the network, from 1
	Kind   CallKind
	Worker string
	Txid   tron.Txid // zero for Head and Solid
	At     time.Time
	Head   int64 // the called node's head
	Fault  Fault
	Fired  bool
	// Answer: AnswerTimeout, the lookup status ("unknown", "pending",
	// "included") or the block number ("#12").
	Answer string
	Node   int `json:",omitempty"` // the node called
}

// Acceptance counts how often a txid went into a pool by a broadcast
// (SUCCESS) on any node, including acceptances the caller never learned of (a
// lost answer, a lie). Gossip and reorgs are not acceptances.
type Acceptance struct {
	Txid  tron.Txid
	Times int
	First time.Time // the clock at the first acceptance
}

// Inclusion is a transaction on chain with its execution result.
type Inclusion struct {
	Txid        tron.Txid
	BlockNumber int64
	BlockTime   time.Time
	Receipt     string
	// Transfer is the USDT movement to the recipient this inclusion really
	// made; TransferOK is false when no token moved (any receipt but
	// SUCCESS, or a SUCCESS with the NoTransfer execution). With the exact
	// execution it is exactly the one Transfer log. Under a fee-on-transfer
	// it is the recipient's part only: the fee is in Moved.
	Transfer   tron.Transfer
	TransferOK bool
	Owner      tron.Address
	// Moved is every USDT movement the inclusion really made, in order:
	// nil when nothing moved. It is what a checker sums to compare money
	// that left a wallet with what was asked (see Debited). The logs a
	// node reports (TxInfo) describe exactly these movements unless
	// Execution.Lie is set.
	Moved []tron.Transfer `json:",omitempty"`
	// Execution is what the execution hook chose; the zero Execution (the
	// exact one) for every inclusion when no hook is installed.
	Execution Execution `json:",omitzero"`
	// FeeLimit is the fee_limit of the transaction's raw data, as the
	// bytes on chain say (not as any store recorded it). Burnt is the TRX,
	// in sun, the transaction burnt for energy at the network's energy
	// price (SetEnergyPrice): its whole fee limit when it ran out of
	// energy, and 0 when energy is not modelled or a forced receipt
	// (SetOutcome) decided the inclusion.
	FeeLimit int64 `json:",omitempty"`
	Burnt    int64 `json:",omitempty"`
}

// Debited is how many units really left from in this inclusion.
func (in Inclusion) Debited(from tron.Address) uint64 {
	var sum uint64
	for _, m := range in.Moved {
		if m.From == from {
			sum += m.Amount
		}
	}
	return sum
}

// Wire returns every broadcast to this node in call order.
func (n *Node) Wire() []WireAttempt {
	n.net.advance()
	var out []WireAttempt
	for i := range n.net.wire.len() {
		if w := n.net.wire.at(i); w.Node == n.index {
			out = append(out, *w)
		}
	}
	return out
}

// Wire returns every broadcast to every node in call order.
func (net *Network) Wire() []WireAttempt {
	net.advance()
	return net.wire.appendTo(nil, 0)
}

// Queries returns every Lookup, HeadBlock and SolidBlock call to this node
// in call order.
func (n *Node) Queries() []QueryAttempt {
	n.net.advance()
	var out []QueryAttempt
	for i := range n.net.queries.len() {
		if q := n.net.queries.at(i); q.Node == n.index {
			out = append(out, *q)
		}
	}
	return out
}

// Queries returns every query to every node in call order.
func (net *Network) Queries() []QueryAttempt {
	net.advance()
	return net.queries.appendTo(nil, 0)
}

// Accepted returns one entry per txid ever accepted into a pool by a
// broadcast, ordered by first acceptance (network-wide).
func (n *Node) Accepted() []Acceptance { return n.net.Accepted() }

// Accepted returns one entry per txid ever accepted into a pool by a
// broadcast to any node, ordered by first acceptance.
func (net *Network) Accepted() []Acceptance {
	net.advance()
	return append([]Acceptance(nil), net.accepted...)
}

// Inclusions returns every included transaction of the canonical chain in
// chain order (network-wide).
func (n *Node) Inclusions() []Inclusion { return n.net.Inclusions() }

// Inclusions returns every included transaction of the canonical chain in
// chain order. An inclusion a reorg orphaned is not here (see Orphaned); one
// re-included is here once, in its replacement block.
func (net *Network) Inclusions() []Inclusion {
	net.advance()
	out := make([]Inclusion, net.landed.len())
	moved := 0
	for i := range out {
		moved += len(net.landed.at(i).inc.Moved)
	}
	// Every inclusion's movements are copied into one array, each capped
	// at its own length so that appending to one cannot reach the next.
	all := make([]tron.Transfer, 0, moved)
	for i := range out {
		l := net.landed.at(i)
		out[i] = l.inc
		out[i].Moved = nil
		if n := len(l.inc.Moved); n > 0 {
			all = append(all, l.inc.Moved...)
			out[i].Moved = all[len(all)-n : len(all) : len(all)]
		}
		out[i].Execution = l.inc.Execution.clone()
	}
	return out
}

// Orphaned returns every inclusion a reorg took off the chain, in the order
// the reorgs orphaned them, each with its fate.
func (net *Network) Orphaned() []Orphan {
	net.advance()
	out := make([]Orphan, len(net.orphaned))
	for i, o := range net.orphaned {
		out[i] = o
		out[i].Moved = append([]tron.Transfer(nil), o.Moved...)
		out[i].Execution = o.Execution.clone()
	}
	return out
}

// Reorgs returns every reorg in order.
func (net *Network) Reorgs() []Reorg {
	net.advance()
	out := make([]Reorg, len(net.reorgs))
	for i, r := range net.reorgs {
		out[i] = r
		out[i].Orphaned = append([]tron.Block(nil), r.Orphaned...)
		out[i].Replacement = append([]tron.Block(nil), r.Replacement...)
	}
	return out
}

// Balance is addr's USDT balance on the ledger of the canonical chain, in
// base units (network-wide).
func (n *Node) Balance(addr tron.Address) uint64 { return n.net.Balance(addr) }

// Balance is addr's USDT balance on the ledger of the canonical chain, in
// base units: the movements of orphaned inclusions are undone.
func (net *Network) Balance(addr tron.Address) uint64 {
	net.advance()
	return net.balances[addr]
}

// Blocks returns every block header of the canonical chain from 0 to the
// network's head (network-wide: a lagging node's Head is lower).
func (n *Node) Blocks() []tron.Block { return n.net.Blocks() }

// Blocks returns every block header of the canonical chain from 0 to the
// head; the blocks a reorg replaced are in Reorgs.
func (net *Network) Blocks() []tron.Block {
	net.advance()
	out := make([]tron.Block, net.blocks.len())
	for i := range out {
		out[i] = net.blocks.at(i).hdr
	}
	return out
}

// BlockTxids returns the txids included in canonical block number, in block
// order, or nil if there is no such block (network-wide).
func (n *Node) BlockTxids(number int64) []tron.Txid { return n.net.BlockTxids(number) }

// BlockTxids returns the txids included in canonical block number, in block
// order, or nil if there is no such block.
func (net *Network) BlockTxids(number int64) []tron.Txid {
	net.advance()
	if number < 0 || number >= int64(net.blocks.len()) {
		return nil
	}
	return append([]tron.Txid(nil), net.blocks.at(int(number)).txids...)
}

// Head is the newest block the node has, without faults or recording.
func (n *Node) Head() tron.Block {
	n.net.advance()
	return n.head()
}

// Head is the newest block of the canonical chain.
func (net *Network) Head() tron.Block {
	net.advance()
	return net.head()
}

// Solid is the node's solid head (its head number - SolidLag, never below
// 0), without faults or recording.
func (n *Node) Solid() tron.Block {
	n.net.advance()
	return n.solid()
}

// Solid is the solid head of the canonical chain.
func (net *Network) Solid() tron.Block {
	net.advance()
	return net.solid()
}

// SolidSeen is the canonical chain's solid head number as the chain stands
// now, without producing the blocks due since it last moved: no block is
// made and no execution drawn, so a world may read it at any point without
// changing its run. It is never ahead of the truth, and never behind a
// solid head any node has answered, since a node's answer moves the chain
// first and a node's solid is never above the canonical one.
func (net *Network) SolidSeen() int64 { return net.solid().Number }

// Pool returns the node's pending txids in arrival order.
func (n *Node) Pool() []tron.Txid {
	n.net.advance()
	out := make([]tron.Txid, len(n.pool))
	for i, p := range n.pool {
		out[i] = p.id
	}
	return out
}

// TxInfo is what a Lookup on this node would say about id, without faults or
// recording.
func (n *Node) TxInfo(id tron.Txid) tron.TxInfo {
	n.net.advance()
	return n.lookup(id)
}

// TxInfo is what the producer (in sync with the canonical head) would say
// about id.
func (net *Network) TxInfo(id tron.Txid) tron.TxInfo {
	net.advance()
	return net.nodes[0].lookup(id)
}
