package mocknode

import (
	"fmt"
	"time"

	"sluicesim/sluice/tron"
)

// Fate is what a reorg does with a transaction of an orphaned block.
type Fate int

const (
	// OrphanReturned: the transaction goes back to the front of the
	// producer's pending pool (and of every node's that had the orphaned
	// block), as java-tron re-pushes the transactions of popped blocks. It
	// lands again in a later block unless it expires or a pool forgets it.
	// This is the fate when Reorg is given no callback.
	OrphanReturned Fate = iota + 1
	// OrphanReincluded: the replacement block at the same height holds the
	// transaction again, executed afresh (the execution hook is asked again,
	// a SetOutcome override applies).
	OrphanReincluded
	// OrphanVanished: no pool takes the transaction back; only a node that
	// never saw the orphaned block may still have it pending. The same
	// bytes can be broadcast again while they are valid.
	OrphanVanished
)

func (f Fate) String() string {
	switch f {
	case OrphanReturned:
		return "returned"
	case OrphanReincluded:
		return "reincluded"
	case OrphanVanished:
		return "vanished"
	}
	return fmt.Sprintf("fate(%d)", int(f))
}

// Orphan is an inclusion a reorg took off the canonical chain.
type Orphan struct {
	Inclusion            // as it was in the orphaned block
	Block     tron.Block // the orphaned block
	At        time.Time  // the clock at the reorg
	Fate      Fate       // what became of the transaction
}

// Reorg is one reorganisation: the blocks it orphaned and those that replaced
// them, at the same heights and slot times.
type Reorg struct {
	At          time.Time
	Depth       int
	Orphaned    []tron.Block // lowest first
	Replacement []tron.Block // lowest first
}

// Reorg orphans the newest depth blocks and replaces them with as many new
// blocks at the same heights and slot times. fate decides, in chain order,
// what becomes of each orphaned transaction (nil: OrphanReturned for all).
//
// depth must be between 1 and head - solid (at most SolidLag): the solid
// block and everything below it never change, which is what sluice's proof
// of death and its confirmations rest on. A reorg deeper than that is a
// wiring bug and panics.
//
// After the reorg: Lookup no longer finds an orphaned inclusion's block,
// receipt or logs (unless it was re-included); HeadBlock answers the
// replacement head (same number, another id); balances are those of the
// canonical chain, the orphaned inclusions' movements undone; Inclusions and
// Blocks list the canonical chain only, Orphaned and Reorgs what was
// replaced. A transaction that referenced an orphaned block (TAPoS) fails
// that check at broadcast and is dropped from the producer's pool.
//
// Every node switches to the new fork at once, a lagging or stalled one
// included: no node serves an orphaned block afterwards (ReorgKeeping lets
// some stay on the old fork).
func (net *Network) Reorg(depth int, fate func(Orphan) Fate) { net.ReorgKeeping(depth, fate, nil) }

// ReorgKeeping is Reorg, except that each node other than the producer that
// has an orphaned block and for which keep says so stays on the old fork,
// as a real node that missed the switch does: it stops importing blocks
// (stalled at its height) and shows the orphaned blocks it had, with their
// inclusions, receipts and logs, until SetLag, CatchUp or LeaveFork brings it back to
// the canonical chain. Below the fork its view is canonical (the solid
// block never changes). A node already on a stale fork first comes back:
// it imports the chain as it now stands. keep is asked in node order.
func (net *Network) ReorgKeeping(depth int, fate func(Orphan) Fate, keep func(n *Node) bool) {
	net.advance()
	head, solid := net.head().Number, net.solid().Number
	if depth < 1 || int64(depth) > head-solid {
		panic(fmt.Sprintf("mocknode: Reorg(%d) at head %d, solid %d: depth must be 1 to %d, the solid block never changes", depth, head, solid, head-solid))
	}
	now := net.clock.Now()
	first := head - int64(depth) + 1
	net.events[Reorged]++
	for _, n := range net.nodes[1:] {
		n.LeaveFork()
	}
	// The nodes that stay take their copy of the old fork before it goes.
	for _, n := range net.nodes[1:] {
		if h := n.height(); h >= first && keep != nil && keep(n) {
			f := &staleFork{first: first, index: make(map[tron.Txid]int)}
			for num := first; num <= h; num++ {
				f.blocks = append(f.blocks, net.blocks.at(int(num)).hdr)
			}
			for i := net.landed.len() - 1; i >= 0 && net.landed.at(i).inc.BlockNumber >= first; i-- {
				if l := net.landed.at(i); l.inc.BlockNumber <= h {
					f.index[l.inc.Txid] = len(f.landed)
					f.landed = append(f.landed, *l)
				}
			}
			n.stallAt, n.stalled, n.fork = h, true, f
			net.events[StaleFork]++
		}
	}

	// The orphaned inclusions are the newest: undo them newest first, so the
	// ledger is the canonical chain's at every step.
	cut := net.landed.len()
	for cut > 0 && net.landed.at(cut-1).inc.BlockNumber >= first {
		cut--
	}
	orphans := net.landed.appendTo(nil, cut)
	for i := len(orphans) - 1; i >= 0; i-- {
		net.unmove(orphans[i].inc.Moved)
		delete(net.onChain, orphans[i].inc.Txid)
	}
	net.landed.truncate(cut)

	old := net.blocks.appendTo(nil, int(first))
	rec := Reorg{At: now, Depth: depth}
	for _, b := range old {
		rec.Orphaned = append(rec.Orphaned, b.hdr)
	}

	// Decide every fate first, in chain order, so the callback sees the
	// orphans in one deterministic order whatever it chooses.
	reinclude := make(map[tron.Txid]bool)
	var returned []landing
	for _, l := range orphans {
		o := Orphan{Inclusion: l.inc, Block: net.blocks.at(int(l.inc.BlockNumber)).hdr, At: now, Fate: OrphanReturned}
		if fate != nil {
			o.Fate = fate(o)
		}
		switch o.Fate {
		case OrphanReincluded:
			reinclude[o.Txid] = true
		case OrphanReturned:
			returned = append(returned, l)
		case OrphanVanished:
		default:
			panic(fmt.Sprintf("mocknode: reorg fate callback returned %s for %s", o.Fate, o.Txid.Short()))
		}
		net.wasOrphan[o.Txid] = true
		net.events[TxOrphaned]++
		net.orphaned = append(net.orphaned, o)
	}

	// Replace the blocks: same heights and slot times (so every expiration
	// that held holds again), the re-included transactions in their old
	// order, executed afresh on the canonical ledger.
	fork := len(net.reorgs) + 1
	net.blocks.truncate(int(first))
	for _, b := range old {
		var take []pending
		for _, l := range orphans {
			if l.inc.BlockNumber == b.hdr.Number && reinclude[l.inc.Txid] {
				take = append(take, l.tx)
			}
		}
		ids := make([]tron.Txid, len(take))
		for i, p := range take {
			ids[i] = p.id
		}
		parent := net.head()
		hdr := tron.Block{Number: b.hdr.Number, Time: b.hdr.Time}
		hdr.ID = forkBlockID(hdr.Number, hdr.Time, parent.ID, ids, fork, net.cfg.RememberBlockIDs)
		net.blocks.push(chainBlock{hdr: hdr, txids: ids})
		rec.Replacement = append(rec.Replacement, hdr)
		for _, p := range take {
			net.execute(hdr, p)
		}
	}
	net.reorgs = append(net.reorgs, rec)

	// The returned transactions go back to the front of the pending pools,
	// in chain order, arriving now: the producer's, and every other node's
	// whose view held the block they were orphaned from.
	for _, n := range net.nodes {
		var back []pending
		for _, l := range returned {
			// A node on the old fork still shows the inclusion.
			had := n.index == 0 || l.inc.BlockNumber <= n.height() && n.fork == nil
			if had && !n.inPool[l.tx.id] {
				back = append(back, pending{tx: l.tx.tx, id: l.tx.id, arrived: now})
				n.inPool[l.tx.id] = true
			}
		}
		n.pool = append(back, n.pool...)
		n.dropIncluded()
	}
}

// staleFork is the part of an orphaned fork a node stayed on: the blocks
// from first to its height, and the inclusions in them (index: by txid).
type staleFork struct {
	first  int64
	blocks []tron.Block
	landed []landing
	index  map[tron.Txid]int
}
