package mocknode

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"sluicesim/sluice/tron"
)

// nodesMax bounds a network: every block trims every pool and every
// acceptance may gossip to every node, so a network is a handful of nodes.
const nodesMax = 64

// Network is several full nodes over one chain of truth: one block producer
// schedule, one ledger, one list of inclusions. Node 0 produces the blocks
// from its own pending pool; a transaction accepted by another node reaches
// node 0 only by gossip (SetGossip), so a send to a node that loses it before
// gossiping never lands. Each node keeps its own pool and its own view of the
// chain (Node.SetLag, Node.Stall).
//
// Recording is network-wide: Seq numbers every call to every node in one
// order, and each WireAttempt and QueryAttempt names its node.
type Network struct {
	clock Clock
	cfg   Config

	blocks   chunked[chainBlock] // the canonical chain, number = index
	nextSlot time.Time           // the earliest slot not yet produced or skipped
	skip     int                 // how many of the coming slots produce no block
	lastNow  time.Time           // the latest clock reading, to catch a clock going back
	// advancing is set while advance runs: the execution and gossip hooks
	// are called from inside it, and a hook that reads the network (every
	// method advances first) must not build the next block in the middle
	// of this one.
	advancing bool
	// take is produce's list of the transactions a block takes, kept to
	// reuse its array: produce never runs inside itself (advancing).
	take []pending

	nodes []*Node // nodes[0] produces

	landed   chunked[landing]  // canonical chain order
	onChain  map[tron.Txid]int // index into landed
	outcomes map[tron.Txid]string
	balances map[tron.Address]uint64

	seq       int // calls so far, all kinds, all nodes; numbers Wire and Queries
	wire      chunked[WireAttempt]
	queries   chunked[QueryAttempt]
	accepted  []Acceptance
	acceptIdx map[tron.Txid]int // index into accepted

	events [eventEnd]int

	answers [8]struct { // see blockAnswer
		number int64
		text   string
	}

	gossip   func(Hop) Gossip
	inFlight []message // gossip on its way, by delivery time then sending order
	sent     int       // messages ever sent; orders messages due at the same time

	exec func(ExecRequest) Execution
	// energyPrice is what the hot wallet pays for a unit of energy, in
	// sun burnt (SetEnergyPrice); 0 leaves energy unmodelled.
	energyPrice int64

	quiet    [][32]byte // the quiet chain's ids as far as this network has asked (quietID)
	quietOff bool       // the chain has left the quiet chain

	reorgs    []Reorg
	orphaned  []Orphan
	wasOrphan map[tron.Txid]bool

	released bool // Release gave the records away
}

// Storage is the storage of a network's records (blocks, inclusions,
// calls), handed from a released network to a new one (Network.Release,
// Config.Storage): a simulated run's node records fill some hundreds of
// kilobytes, refilled from empty by the next run, and allocating them
// afresh was most of what the node allocated. The zero value is empty.
type Storage struct {
	blocks  [][]chainBlock
	landed  [][]landing
	wire    [][]WireAttempt
	queries [][]QueryAttempt
}

// Release ends the network's life and returns the storage of its records,
// emptied, for a network made after it. Everything the network returned
// is a copy and stays valid; the network itself must not be used again (a
// call that reads the chain panics).
func (net *Network) Release() *Storage {
	net.released = true
	st := &Storage{}
	giveChunks(&net.blocks, &st.blocks)
	giveChunks(&net.landed, &st.landed)
	giveChunks(&net.wire, &st.wire)
	giveChunks(&net.queries, &st.queries)
	return st
}

type chainBlock struct {
	hdr   tron.Block
	txids []tron.Txid
}

type landing struct {
	inc  Inclusion
	logs []tron.Log // what the node reports; differs from inc.Moved only for a lie
	tx   pending    // kept so that a reorg can return or re-include it
}

// NewNetwork returns a network of nodes full nodes (node 0 produces the
// blocks) whose block 0 is at cfg.Genesis, truncated to its slot. Every node
// starts in sync with an empty pool.
func NewNetwork(clock Clock, cfg Config, nodes int) *Network {
	if nodes < 1 || nodes > nodesMax {
		panic(fmt.Sprintf("mocknode: NewNetwork with %d nodes, want 1 to %d", nodes, nodesMax))
	}
	cfg = cfg.withDefaults(clock)
	st := cfg.Storage
	if st == nil {
		st = &Storage{}
	}
	cfg.Storage = nil // taken
	net := &Network{
		clock: clock,
		cfg:   cfg,
		// Entries are about 90 (a block), 600 (a landing) and 150 bytes
		// (a call); see chunked.
		blocks:    chunksOf(128, &st.blocks),
		landed:    chunksOf(16, &st.landed),
		wire:      chunksOf(64, &st.wire),
		queries:   chunksOf(64, &st.queries),
		nextSlot:  cfg.Genesis.Add(SlotInterval),
		onChain:   make(map[tron.Txid]int),
		outcomes:  make(map[tron.Txid]string),
		balances:  make(map[tron.Address]uint64),
		acceptIdx: make(map[tron.Txid]int),
		wasOrphan: make(map[tron.Txid]bool),
	}
	for i := range nodes {
		net.nodes = append(net.nodes, newNode(net, i))
	}
	genesis := tron.Block{Number: 0, Time: cfg.Genesis}
	genesis.ID = blockID(genesis.Number, genesis.Time, [32]byte{}, nil)
	net.blocks.push(chainBlock{hdr: genesis})
	if !cfg.HotWallet.IsZero() {
		net.balances[cfg.HotWallet] = cfg.HotBalance
	}
	return net
}

// Node returns node i (0 produces the blocks).
func (net *Network) Node(i int) *Node {
	if i < 0 || i >= len(net.nodes) {
		panic(fmt.Sprintf("mocknode: node %d of a network of %d", i, len(net.nodes)))
	}
	return net.nodes[i]
}

// Nodes returns every node, in index order.
func (net *Network) Nodes() []*Node { return append([]*Node(nil), net.nodes...) }

// Advance produces every block whose slot time is at or before the clock and
// delivers the gossip due by then, in time order. Every other method does
// this first.
func (net *Network) Advance() { net.advance() }

func (net *Network) advance() {
	if net.advancing {
		return
	}
	if net.released {
		panic("mocknode: network used after Release")
	}
	net.advancing = true
	defer func() { net.advancing = false }()
	now := net.clock.Now()
	if now.Before(net.lastNow) {
		// Blocks are produced lazily, so a clock that runs back would let
		// the number of observers change the chain. The node's clock is
		// simulation time, which never runs back: this is a wiring bug.
		panic(fmt.Sprintf("mocknode: clock ran backwards from %s to %s", net.lastNow.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano)))
	}
	net.lastNow = now
	for {
		slotDue := !net.nextSlot.After(now)
		// Gossip due strictly before the next slot arrives before that
		// block is built; gossip due at the slot time itself arrives just
		// after it, as a broadcast made at that instant does.
		if len(net.inFlight) > 0 {
			at := net.inFlight[0].at
			if !at.After(now) && (!slotDue || at.Before(net.nextSlot)) {
				net.deliver()
				continue
			}
		}
		if !slotDue {
			return
		}
		slot := net.nextSlot
		net.nextSlot = slot.Add(SlotInterval)
		if net.skip > 0 {
			net.skip--
			net.events[MissedSlot]++
			continue
		}
		if net.blocks.len() >= blocksMax {
			panic(fmt.Sprintf("mocknode: chain reached %d blocks at %s: the clock ran far past any simulation", net.blocks.len(), slot.Format(time.RFC3339)))
		}
		net.produce(slot)
	}
}

// SkipSlots makes the next k slots (after the clock's current time) produce no
// block. Calls add up.
func (net *Network) SkipSlots(k int) {
	if k < 0 {
		panic(fmt.Sprintf("mocknode: SkipSlots(%d): negative", k))
	}
	net.advance()
	net.skip += k
}

// produce builds the block at slot on top of the current head, from the
// producer's (node 0's) pool.
func (net *Network) produce(slot time.Time) {
	producer := net.nodes[0]
	parent := net.head()
	if net.quietNext(parent, slot) {
		return
	}
	for _, n := range net.nodes[1:] {
		n.trim(slot)
	}

	// The pool forgets old entries before anything is picked, as a node
	// that trims its pool between blocks would: an entry exactly PoolTTL old
	// is gone. That is the first case below: one pass in pool order gives
	// what a pass that forgets first would, since an entry's fate depends
	// only on itself and on how many were taken before it.
	//
	// A block may include a transaction only while its expiration is later
	// than the parent block's time. One that fails this now fails it for
	// every later block too (parent times only grow), so it is dropped: this
	// is the rule proof of death rests on.
	parentMs := parent.Time.UnixMilli()
	take := net.take[:0]      // reused from block to block; cleared below
	keep := producer.pool[:0] // filtered in place, see setPool
	for _, p := range producer.pool {
		switch {
		case slot.Sub(p.arrived) >= net.cfg.PoolTTL:
			delete(producer.inPool, p.id)
			net.events[PoolTTLDrop]++
		case p.tx.Raw.Expiration <= parentMs:
			delete(producer.inPool, p.id)
			net.events[ExpiredDrop]++
		case len(net.reorgs) > 0 && !net.refOK(p.tx.Raw, parent.Number):
			// Only a reorg can orphan the block a pending transaction
			// references; the block producer then fails its TAPoS check
			// and drops it. Without a reorg this check is skipped, so a
			// network that never reorganises behaves as it always has.
			delete(producer.inPool, p.id)
			net.events[TaposDrop]++
		case len(take) < net.cfg.BlockCapacity:
			take = append(take, p)
			delete(producer.inPool, p.id)
		default:
			keep = append(keep, p)
		}
	}
	producer.setPool(keep)

	ids := make([]tron.Txid, len(take))
	for i, p := range take {
		ids[i] = p.id
	}
	hdr := tron.Block{Number: parent.Number + 1, Time: slot}
	hdr.ID = forkBlockID(hdr.Number, hdr.Time, parent.ID, ids, 0, net.cfg.RememberBlockIDs)
	net.blocks.push(chainBlock{hdr: hdr, txids: ids})
	for _, p := range take {
		net.execute(hdr, p)
	}
	clear(take)
	net.take = take[:0]
	for _, n := range net.nodes[1:] {
		n.dropIncluded()
	}
}

// txid is tx's txid, by Config.Txids if the network has one.
func (net *Network) txid(tx *tron.Transaction) tron.Txid {
	if net.cfg.Txids != nil {
		return net.cfg.Txids.Txid(&tx.Raw)
	}
	return tx.Txid()
}

// blockID is sha256 over the block's number, time, parent id and txids: a pure
// function of the chain, so two nodes fed the same calls agree on every id.
func blockID(number int64, t time.Time, parent [32]byte, ids []tron.Txid) [32]byte {
	return forkBlockID(number, t, parent, ids, 0, false)
}

// forkBlockID is blockID for a block a reorg made: the reorg's number goes
// into the hash, so a replacement block differs from the block it replaces
// even when it holds the same transactions (another producer, another
// signature, another id). fork 0 is blockID exactly. remember looks the id
// up in blockIDs first (see Config.RememberBlockIDs); the id is the same.
func forkBlockID(number int64, t time.Time, parent [32]byte, ids []tron.Txid, fork int, remember bool) [32]byte {
	// On the stack up to a few transactions; more only spill to the heap.
	var buf [72 + 32*8]byte
	b := append(buf[:0], "mocknode-block-v1"...)
	if fork > 0 {
		b = append(b, "-fork"...)
		b = binary.BigEndian.AppendUint64(b, uint64(fork))
	}
	b = binary.BigEndian.AppendUint64(b, uint64(number))
	b = binary.BigEndian.AppendUint64(b, uint64(t.UnixMilli()))
	b = append(b, parent[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		b = append(b, id[:]...)
	}
	if remember {
		return blockIDs.Sum(b)
	}
	return sha256.Sum256(b)
}

// blockIDs remembers block ids by their exact input for every network in
// the process that asks (Config.RememberBlockIDs): exhaustive search
// produces the same blocks run after run (in the two-crash pair search
// hashing them was a tenth of the time).
var blockIDs tron.SHA256Memo

// refOK is the TAPoS check against the canonical chain as of head number
// head: the one block whose number has the low 16 bits RefBlockBytes among
// the last TaposWindow blocks must have id bytes 8..16 equal to RefBlockHash.
func (net *Network) refOK(raw tron.RawData, head int64) bool {
	return taposOK(raw, head, func(num int64) tron.Block { return net.blocks.at(int(num)).hdr })
}

// taposOK is the TAPoS check against a chain as of head number head whose
// block number num is block(num).
func taposOK(raw tron.RawData, head int64, block func(num int64) tron.Block) bool {
	ref := int64(raw.RefBlockBytes[0])<<8 | int64(raw.RefBlockBytes[1])
	num := head - ((head - ref) & (TaposWindow - 1))
	if num < 0 {
		return false
	}
	id := block(num).ID
	return [8]byte(id[8:16]) == raw.RefBlockHash
}

// SetOutcome fixes the receipt txid gets if it is ever included: REVERT,
// OUT_OF_ENERGY or any other failure receipt moves no tokens and emits no log.
// SUCCESS or "" removes the override, leaving the ledger to decide (a forced
// success the owner cannot pay for would break conservation). It has no effect
// on a transaction already included, until a reorg orphans that inclusion: a
// re-inclusion executes again and the override then applies.
func (net *Network) SetOutcome(id tron.Txid, receipt string) {
	net.advance()
	if receipt == "" || receipt == tron.ReceiptSuccess {
		delete(net.outcomes, id)
		return
	}
	net.outcomes[id] = receipt
}

// SetEnergyPrice fixes, from now on, what a unit of energy costs the owner
// of a transfer, in sun of TRX burnt: the owner has no energy staked, so a
// transfer buys its TransferEnergy at this price, up to its raw data's
// fee_limit. A transfer whose fee limit cannot buy it runs out of energy on
// chain (OUT_OF_ENERGY, no token moved) and burns its whole fee limit, as
// TRON does. sun 0 (the default) models no energy: every transfer has
// what it needs. Blocks already due are produced at the old price first;
// a transaction re-included after a reorg pays the price of its new block.
func (net *Network) SetEnergyPrice(sun int64) {
	if sun < 0 {
		panic(fmt.Sprintf("mocknode: SetEnergyPrice(%d): a price is not negative", sun))
	}
	net.advance()
	net.energyPrice = sun
}

func (net *Network) head() tron.Block { return net.blocks.last().hdr }

func (net *Network) solid() tron.Block {
	h := net.head().Number - int64(net.cfg.SolidLag)
	if h < 0 {
		h = 0
	}
	return net.blocks.at(int(h)).hdr
}
