package mocknode

import (
	"time"

	"sluicesim/sluice/tron"
)

// Ground truth for the checkers. The core never reads any of this: it sees
// only a Client. Every accessor first brings the chain up to the clock (as
// every method does; that changes nothing another call would not) and returns
// copies in a deterministic order.

// WireAttempt is one broadcast as it happened on the wire.
type WireAttempt struct {
	Seq    int // position among all calls to the node (broadcasts and queries), from 1
	Worker string
	Txid   tron.Txid
	At     time.Time // the clock when the call was made
	Head   int64     // head block number when the call was made
	Fault  Fault     // the fault chosen for the call
	Fired  bool      // whether the fault changed anything (false for None)
	// Reached: the node processed the transaction (ran its checks). False
	// for a lost request and for injected SERVER_BUSY or NO_CONNECTION.
	Reached bool
	// Truth is the node's own answer; empty when it never processed the call.
	Truth tron.Code
	// Answer is what the caller saw: a code, or AnswerTimeout.
	Answer string
	// Accepted: this call put the transaction into the pool (SUCCESS) or
	// found it there or in a block (DUP), whatever the caller was told.
	Accepted bool
}

// QueryAttempt is one Lookup, HeadBlock or SolidBlock call.
type QueryAttempt struct {
	Seq    int // position among all calls to the node, from 1
	Kind   CallKind
	Worker string
	Txid   tron.Txid // zero for Head and Solid
	At     time.Time
	Head   int64
	Fault  Fault
	Fired  bool
	// Answer: AnswerTimeout, the lookup status ("unknown", "pending",
	// "included") or the block number ("#12").
	Answer string
}

// Acceptance counts how often a txid went into the pool (SUCCESS), including
// acceptances the caller never learned of (a lost answer, a lie).
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
	// Transfer is the decoded Transfer log; TransferOK is false when the
	// transaction emitted none (any receipt but SUCCESS).
	Transfer   tron.Transfer
	TransferOK bool
	Owner      tron.Address
}

// Wire returns every broadcast in call order.
func (n *Node) Wire() []WireAttempt {
	n.advance()
	return append([]WireAttempt(nil), n.wire...)
}

// Queries returns every Lookup, HeadBlock and SolidBlock call in call order.
func (n *Node) Queries() []QueryAttempt {
	n.advance()
	return append([]QueryAttempt(nil), n.queries...)
}

// Accepted returns one entry per txid ever accepted into the pool, ordered
// by first acceptance.
func (n *Node) Accepted() []Acceptance {
	n.advance()
	return append([]Acceptance(nil), n.accepted...)
}

// Inclusions returns every included transaction in chain order.
func (n *Node) Inclusions() []Inclusion {
	n.advance()
	out := make([]Inclusion, len(n.landed))
	for i, l := range n.landed {
		out[i] = l.inc
	}
	return out
}

// Balance is addr's USDT balance on the mock ledger, in base units.
func (n *Node) Balance(addr tron.Address) uint64 {
	n.advance()
	return n.balances[addr]
}

// Blocks returns every block header from 0 to the head.
func (n *Node) Blocks() []tron.Block {
	n.advance()
	out := make([]tron.Block, len(n.blocks))
	for i, b := range n.blocks {
		out[i] = b.hdr
	}
	return out
}

// BlockTxids returns the txids included in block number, in block order, or
// nil if there is no such block.
func (n *Node) BlockTxids(number int64) []tron.Txid {
	n.advance()
	if number < 0 || number >= int64(len(n.blocks)) {
		return nil
	}
	return append([]tron.Txid(nil), n.blocks[number].txids...)
}

// Head is the newest block, without faults or recording.
func (n *Node) Head() tron.Block {
	n.advance()
	return n.head()
}

// Solid is the solid head (head number - SolidLag, never below 0), without
// faults or recording.
func (n *Node) Solid() tron.Block {
	n.advance()
	return n.solid()
}

// Pool returns the pending txids in arrival order.
func (n *Node) Pool() []tron.Txid {
	n.advance()
	out := make([]tron.Txid, len(n.pool))
	for i, p := range n.pool {
		out[i] = p.id
	}
	return out
}

// TxInfo is what a Lookup would say about id, without faults or recording.
func (n *Node) TxInfo(id tron.Txid) tron.TxInfo {
	n.advance()
	return n.lookup(id)
}
