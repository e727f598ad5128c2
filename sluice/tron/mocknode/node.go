package mocknode

import (
	"fmt"
	"time"

	"sluicesim/sluice/tron"
)

// Clock is the node's only source of time: the simulator's virtual clock. It
// must never run backwards (see advance).
type Clock interface {
	Now() time.Time
}

// Chain constants (TRON.md).
const (
	// SlotInterval is the block slot: block times are multiples of it.
	SlotInterval = 3 * time.Second
	// TaposWindow is how many recent blocks a transaction may reference.
	TaposWindow = 65536
	// ExpirationLeadMin is how far past the head time a broadcast
	// transaction's expiration must be at least.
	ExpirationLeadMin = 3 * time.Second
	// ExpirationLeadMax is how far past the head time it may be at most.
	ExpirationLeadMax = 24 * time.Hour
)

// Defaults for zero Config fields.
const (
	DefaultSolidLag      = 19
	DefaultPoolMax       = 2000
	DefaultPoolTTL       = 60 * time.Second
	DefaultBlockCapacity = 1000
	DefaultMaxTxBytes    = 500
)

// blocksMax bounds the chain so that a clock run far past any sensible
// simulation fails loudly instead of eating memory (about 36 days of slots).
const blocksMax = 1 << 20

// Config sets up a node. Zero fields take the defaults above; a zero Genesis
// is the clock's time at New.
type Config struct {
	Genesis       time.Time     // time of block 0, truncated to the 3 s slot
	SolidLag      int           // blocks between head and solid head
	PoolMax       int           // pending pool size at which SERVER_BUSY starts
	PoolTTL       time.Duration // pending entries this old are dropped
	BlockCapacity int           // transactions per block at most
	MaxTxBytes    int           // serialized raw data plus signature, at most
	HotWallet     tron.Address  // the account that starts with HotBalance
	HotBalance    uint64        // USDT base units (6 decimals)
	// Verifier checks signatures (SIGERROR). Nil accepts any non-empty
	// signature.
	Verifier tron.Verifier
	// Storage, if set, is a released network's storage (Network.Release)
	// for this network's records; the network takes it, so it must not be
	// given to another. It changes nothing but what is allocated.
	Storage *Storage
	// RememberBlockIDs keeps the ids of the blocks this network produces
	// in a table shared by every network in the process, and looks there
	// first. It pays when one world runs again and again (exhaustive
	// search produces the same blocks tens of thousands of times) and
	// costs when blocks never repeat: a random run's never do after its
	// first transaction (95 ids a chaos seed, none found), and two runs at
	// once contend for the table's lock. It changes no id.
	RememberBlockIDs bool
	// Txids, if set, is where the network looks up the txid of each
	// transaction broadcast to it (tron.NewTxidCache), rather than hashing
	// it: a simulation hands it the cache its workers share, which has
	// just computed the same txid. It changes no answer.
	Txids *tron.TxidCache
}

func (c Config) withDefaults(clock Clock) Config {
	if c.Genesis.IsZero() {
		c.Genesis = clock.Now()
	}
	c.Genesis = slotFloor(c.Genesis)
	if c.SolidLag <= 0 {
		c.SolidLag = DefaultSolidLag
	}
	if c.PoolMax <= 0 {
		c.PoolMax = DefaultPoolMax
	}
	if c.PoolTTL <= 0 {
		c.PoolTTL = DefaultPoolTTL
	}
	if c.BlockCapacity <= 0 {
		c.BlockCapacity = DefaultBlockCapacity
	}
	if c.MaxTxBytes <= 0 {
		c.MaxTxBytes = DefaultMaxTxBytes
	}
	return c
}

// slotFloor truncates t to its slot, counted from the Unix epoch so that
// block times are multiples of 3 s in milliseconds, as on the real chain.
func slotFloor(t time.Time) time.Time {
	ms := t.UnixMilli()
	slot := SlotInterval.Milliseconds()
	r := ms % slot
	if r < 0 {
		r += slot
	}
	return time.UnixMilli(ms - r).UTC()
}

// Node is one TRON full node: its own pending pool, its own view of the
// chain (it may lag the network's head), its own fault script and hook. The
// chain itself (blocks, balances, inclusions) belongs to the Network the node
// is part of; New makes a network of one node, which is the node sluice has
// always been tested against. A Node is not safe for concurrent use: the
// simulator runs one process at a time, and determinism is the point.
type Node struct {
	net   *Network
	index int // position in net.nodes; 0 is the producer

	pool   []pending          // arrival order
	inPool map[tron.Txid]bool // index over pool

	// The node's view of the chain: lag blocks behind the network's head,
	// or, while stalled, frozen at stallAt. The producer never lags.
	lag     int64
	stalled bool
	stallAt int64
	// fork, while set, is the orphaned fork the node stayed on at a reorg
	// (Network.ReorgKeeping): it is stalled at fork's top and shows those
	// blocks and their inclusions, not the canonical ones at their heights.
	fork *staleFork

	script [callKindEnd][]Fault
	hook   func(Call) Fault
	fired  [faultEnd]int

	// silentSolid: the node leaves its own solid block number out of its
	// lookups (OmitSolid).
	silentSolid bool
}

// OmitSolid makes the node leave its own solid block number out of its
// lookups (TxInfo.NodeSolid 0), as a gateway older than that field does: a
// caller cannot then tell how far its "unknown" reaches, and must not take
// it for proof of death.
func (n *Node) OmitSolid() { n.silentSolid = true }

type pending struct {
	tx      tron.Transaction // a deep copy: the caller may reuse its slices
	id      tron.Txid
	arrived time.Time
}

// New returns a single node whose block 0 is at cfg.Genesis (truncated to its
// slot): a Network of one node, which is also the block producer. Every
// method of the Node answers exactly as the node always has; Network gives
// the opt-in features (reorgs, the execution hook).
func New(clock Clock, cfg Config) *Node {
	return NewNetwork(clock, cfg, 1).nodes[0]
}

func newNode(net *Network, index int) *Node {
	return &Node{net: net, index: index, inPool: make(map[tron.Txid]bool)}
}

// Network is the network the node belongs to: the chain of truth, the other
// nodes, reorgs and the execution hook.
func (n *Node) Network() *Network { return n.net }

// Index is the node's position in its network; node 0 produces the blocks.
func (n *Node) Index() int { return n.index }

// Client returns the view of the node a worker uses; its calls are recorded
// under the worker's name. The core only ever sees a Client.
func (n *Node) Client(worker string) tron.Node { return client{n: n, worker: worker} }

// Advance produces every block whose slot time is at or before the clock (and
// delivers the gossip due by then). Every other method does this first;
// Advance exists for a block-producer process that wants the chain to move
// without making a call.
func (n *Node) Advance() { n.net.advance() }

// SkipSlots makes the next k slots (after the clock's current time) produce no
// block. Calls add up. The slots are the network's: see Network.SkipSlots.
func (n *Node) SkipSlots(k int) { n.net.SkipSlots(k) }

// SetOutcome fixes the receipt txid gets if it is ever included; see
// Network.SetOutcome.
func (n *Node) SetOutcome(id tron.Txid, receipt string) { n.net.SetOutcome(id, receipt) }

// Restart loses the node's pending pool, as a node restart does; blocks are
// kept. The transactions stay valid until they expire and can be re-sent.
// Other nodes' pools are untouched: in a network, a transaction this node
// already gossiped can still land.
func (n *Node) Restart() {
	n.net.advance()
	if len(n.pool) > 0 {
		n.net.events[PoolRestart]++
	}
	n.pool = nil
	n.inPool = make(map[tron.Txid]bool)
}

// Evict drops one pending transaction from this node's pool and reports
// whether it was pending there.
func (n *Node) Evict(id tron.Txid) bool {
	n.net.advance()
	if !n.inPool[id] {
		return false
	}
	n.removeFromPool(id)
	n.net.events[PoolEvict]++
	return true
}

func (n *Node) removeFromPool(id tron.Txid) {
	for i, p := range n.pool {
		if p.id == id {
			n.pool = append(n.pool[:i:i], n.pool[i+1:]...)
			break
		}
	}
	delete(n.inPool, id)
}

// SetLag makes the node follow the network's head blocks behind: it answers
// HeadBlock, SolidBlock, Lookup and the broadcast checks (expiration window,
// TAPoS, duplicates) from that height, as a node still importing blocks
// does. SetLag(0) is a node in sync. It ends a Stall. The producer cannot
// lag: it is the head.
func (n *Node) SetLag(blocks int) {
	if blocks < 0 {
		panic(fmt.Sprintf("mocknode: SetLag(%d) on node %d: negative", blocks, n.index))
	}
	if n.index == 0 && blocks != 0 {
		panic(fmt.Sprintf("mocknode: SetLag(%d) on node 0: the producer is the head and cannot lag", blocks))
	}
	n.net.advance()
	n.lag, n.stalled, n.stallAt, n.fork = int64(blocks), false, 0, nil
	n.dropIncluded()
}

// OnStaleFork reports whether the node still shows a fork a reorg
// orphaned (Network.ReorgKeeping); SetLag, CatchUp or LeaveFork ends it.
func (n *Node) OnStaleFork() bool { return n.fork != nil }

// LeaveFork brings a node on a stale fork back to the canonical chain, at
// the lag it had: it imports the chain as it now stands. A node on no
// stale fork is left as it is.
func (n *Node) LeaveFork() {
	if n.fork != nil {
		n.SetLag(int(n.lag))
	}
}

// Stall makes the node stop importing blocks: its view stays at its current
// height while the chain grows, so its lag grows by a block a slot until
// SetLag or CatchUp. The producer cannot stall.
func (n *Node) Stall() {
	if n.index == 0 {
		panic("mocknode: Stall on node 0: the producer is the head and cannot fall behind")
	}
	n.net.advance()
	n.stallAt = n.height()
	n.stalled = true
}

// CatchUp brings the node back in sync with the head (SetLag(0)).
func (n *Node) CatchUp() { n.SetLag(0) }

// Height is the number of the newest block the node has, without faults or
// recording.
func (n *Node) Height() int64 {
	n.net.advance()
	return n.height()
}

// height is the node's view: lag blocks behind the head, or frozen while
// stalled. A reorg switches every node to the new fork at once: no node ever
// serves an orphaned block afterwards (see Network.Reorg).
func (n *Node) height() int64 {
	head := n.net.head().Number
	if n.stalled {
		return min(n.stallAt, head)
	}
	return max(head-n.lag, 0)
}

// head is the newest block of the node's view.
func (n *Node) head() tron.Block { return n.block(n.height()) }

// block is the block at number num of the node's view (num at most its
// height): its stale fork's from the fork's first block up, else the
// canonical chain's.
func (n *Node) block(num int64) tron.Block {
	if f := n.fork; f != nil && num >= f.first {
		return f.blocks[num-f.first]
	}
	return n.net.blocks.at(int(num)).hdr
}

// solid is the node's solid block: SolidLag below its own head. On a
// stale fork it is below the fork (a reorg never reaches the solid block),
// so canonical.
func (n *Node) solid() tron.Block {
	h := n.height() - int64(n.net.cfg.SolidLag)
	if h < 0 {
		h = 0
	}
	return n.block(h)
}

// isOnChain: the txid is in a block the node has, canonical below its
// stale fork (if any), or in the fork.
func (n *Node) isOnChain(id tron.Txid) bool {
	if f := n.fork; f != nil {
		if _, ok := f.index[id]; ok {
			return true
		}
		i, ok := n.net.onChain[id]
		return ok && n.net.landed.at(i).inc.BlockNumber < f.first
	}
	i, ok := n.net.onChain[id]
	return ok && n.net.landed.at(i).inc.BlockNumber <= n.height()
}

// landingOf is the inclusion of id the node shows (isOnChain must hold).
func (n *Node) landingOf(id tron.Txid) *landing {
	if f := n.fork; f != nil {
		if i, ok := f.index[id]; ok {
			return &f.landed[i]
		}
	}
	return n.net.landed.at(n.net.onChain[id])
}

// holds: the node would answer DUP for the txid (its pool or its chain).
func (n *Node) holds(id tron.Txid) bool { return n.inPool[id] || n.isOnChain(id) }

// trim drops what a node other than the producer forgets before a block at
// slot: entries PoolTTL old, and entries whose expiration is not later than
// its own head's time (they can never land). The producer's pool is trimmed
// by produce itself, as it always was.
func (n *Node) trim(slot time.Time) {
	if len(n.pool) == 0 {
		return
	}
	headMs := n.head().Time.UnixMilli()
	keep := n.pool[:0]
	for _, p := range n.pool {
		switch {
		case slot.Sub(p.arrived) >= n.net.cfg.PoolTTL:
			delete(n.inPool, p.id)
			n.net.events[PoolTTLDrop]++
		case p.tx.Raw.Expiration <= headMs:
			delete(n.inPool, p.id)
			n.net.events[ExpiredDrop]++
		default:
			keep = append(keep, p)
		}
	}
	n.setPool(keep)
}

// setPool makes keep, a filtered prefix of the pool's own array, the pool.
// Filtering in place allocates nothing (trim runs for every node at every
// block); it is safe because nothing but n.pool refers to that array: every
// other holder of a pending entry (a gossip message, a landing, a reorg's
// list) has its own copy of the value. The entries past keep are zeroed so
// the array does not hold on to their transactions.
func (n *Node) setPool(keep []pending) {
	clear(n.pool[len(keep):])
	n.pool = keep
}

// dropIncluded removes the pool entries that are in a block the node has,
// as a node importing a block does.
func (n *Node) dropIncluded() {
	if len(n.pool) == 0 {
		return
	}
	keep := n.pool[:0]
	for _, p := range n.pool {
		if n.isOnChain(p.id) {
			delete(n.inPool, p.id)
			continue
		}
		keep = append(keep, p)
	}
	n.setPool(keep)
}

// cloneTx is a deep copy of tx, its three byte slices in one allocation
// (each capped at its length, so an append to one cannot reach the next).
func cloneTx(tx tron.Transaction) tron.Transaction {
	buf := make([]byte, 0, len(tx.Signature)+len(tx.Raw.Memo)+len(tx.Raw.Contract.Data))
	carve := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		start := len(buf)
		buf = append(buf, b...)
		return buf[start:len(buf):len(buf)]
	}
	tx.Signature = carve(tx.Signature)
	tx.Raw.Memo = carve(tx.Raw.Memo)
	tx.Raw.Contract.Data = carve(tx.Raw.Contract.Data)
	return tx
}
