package mocknode

import (
	"time"

	"sluicesim/sluice/tron"
)

// The quiet chain of a genesis time is the chain in which nothing happens:
// every slot produces a block and every block is empty. Every network's
// chain begins so: a world's genesis lies minutes before its first call,
// so each run first produces a couple of hundred empty blocks, the same
// ones run after run (in an exhaustive search of a one-withdrawal world
// that was a tenth of each run). Their ids are kept here, per genesis, for
// every network in the process: a block whose parent is the quiet chain's
// block before it, whose slot is the next one and which takes nothing is
// the quiet chain's next block, with the id kept here. The ids are
// blockID's, so nothing a network does or reports changes
// (TestQuietChainIsBlockID).
//
// The lists live in a tron.IDChains, which locks (this package may not):
// a network keeps its own copy of its list and asks again only for an id
// past its end.
var quietChains tron.IDChains

// quietMax is how many blocks of each quiet chain are kept: 12,288 slots
// are over ten hours, far more than a world lives, at 32 bytes each.
const quietMax = 12288

// quietID is the id of block number (whose slot is slot) when its parent is
// block number-1 of the quiet chain, with id parent, and it takes nothing;
// false if the parent is not on the quiet chain, or the slot is not the
// next one, or the chain is not kept that far.
func (net *Network) quietID(number int64, slot time.Time, parent [32]byte) ([32]byte, bool) {
	if net.quietOff || number < 1 || number >= quietMax {
		return [32]byte{}, false
	}
	if slot.UnixMilli() != net.cfg.Genesis.UnixMilli()+number*SlotInterval.Milliseconds() {
		return [32]byte{}, false
	}
	if number >= int64(len(net.quiet)) {
		net.quiet = net.quietChain(number)
		if number >= int64(len(net.quiet)) {
			return [32]byte{}, false
		}
	}
	if net.quiet[number-1] != parent {
		// The chain left the quiet one and never comes back: every later
		// block descends from this parent, and a reorg's blocks have ids
		// of their own (forkBlockID). Only a hint: the comparison above is
		// what keeps ids exact.
		net.quietOff = true
		return [32]byte{}, false
	}
	return net.quiet[number], true
}

// quietChain returns the quiet chain of the network's genesis, extended if
// needed to block number.
func (net *Network) quietChain(number int64) [][32]byte {
	g := net.cfg.Genesis
	return quietChains.Grow(g.UnixMilli(), int(number)+1, func(i int, ids [][32]byte) [32]byte {
		if i == 0 {
			return blockID(0, g, [32]byte{}, nil)
		}
		return blockID(int64(i), g.Add(time.Duration(i)*SlotInterval), ids[i-1], nil)
	})
}

// quietNext produces the block at slot when it is the quiet chain's next:
// every pool empty (so no node trims anything and the producer takes
// nothing) and the head on the quiet chain. It reports whether it did.
func (net *Network) quietNext(parent tron.Block, slot time.Time) bool {
	for _, n := range net.nodes {
		if len(n.pool) > 0 {
			return false
		}
	}
	id, ok := net.quietID(parent.Number+1, slot, parent.ID)
	if !ok {
		return false
	}
	net.blocks.push(chainBlock{hdr: tron.Block{Number: parent.Number + 1, Time: slot, ID: id}})
	return true
}
