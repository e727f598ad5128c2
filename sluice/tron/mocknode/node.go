package mocknode

import (
	"crypto/sha256"
	"encoding/binary"
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

// Node is a single TRON full node with a USDT ledger, run under an injected
// clock. It is not safe for concurrent use: the simulator runs one process at
// a time, and determinism is the point.
type Node struct {
	clock Clock
	cfg   Config

	blocks   []chainBlock // every block, number = index
	nextSlot time.Time    // the earliest slot not yet produced or skipped
	skip     int          // how many of the coming slots produce no block
	lastNow  time.Time    // the latest clock reading, to catch a clock going back

	pool     []pending          // arrival order
	inPool   map[tron.Txid]bool // index over pool
	landed   []landing          // chain order
	onChain  map[tron.Txid]int  // index into landed
	outcomes map[tron.Txid]string
	balances map[tron.Address]uint64

	seq       int // calls so far, all kinds; numbers Wire and Queries
	wire      []WireAttempt
	queries   []QueryAttempt
	accepted  []Acceptance
	acceptIdx map[tron.Txid]int // index into accepted

	script [callKindEnd][]Fault
	hook   func(Call) Fault
	fired  [faultEnd]int
	events [eventEnd]int
}

type chainBlock struct {
	hdr   tron.Block
	txids []tron.Txid
}

type pending struct {
	tx      tron.Transaction // a deep copy: the caller may reuse its slices
	id      tron.Txid
	arrived time.Time
}

type landing struct {
	inc  Inclusion
	logs []tron.Log
}

// New returns a node whose block 0 is at cfg.Genesis (truncated to its slot).
func New(clock Clock, cfg Config) *Node {
	cfg = cfg.withDefaults(clock)
	n := &Node{
		clock:     clock,
		cfg:       cfg,
		nextSlot:  cfg.Genesis.Add(SlotInterval),
		inPool:    make(map[tron.Txid]bool),
		onChain:   make(map[tron.Txid]int),
		outcomes:  make(map[tron.Txid]string),
		balances:  make(map[tron.Address]uint64),
		acceptIdx: make(map[tron.Txid]int),
	}
	genesis := tron.Block{Number: 0, Time: cfg.Genesis}
	genesis.ID = blockID(genesis.Number, genesis.Time, [32]byte{}, nil)
	n.blocks = append(n.blocks, chainBlock{hdr: genesis})
	if !cfg.HotWallet.IsZero() {
		n.balances[cfg.HotWallet] = cfg.HotBalance
	}
	return n
}

// Client returns the view of the node a worker uses; its calls are recorded
// under the worker's name. The core only ever sees a Client.
func (n *Node) Client(worker string) tron.Node { return client{n: n, worker: worker} }

// Advance produces every block whose slot time is at or before the clock.
// Every other method does this first; Advance exists for a block-producer
// process that wants the chain to move without making a call.
func (n *Node) Advance() { n.advance() }

func (n *Node) advance() {
	now := n.clock.Now()
	if now.Before(n.lastNow) {
		// Blocks are produced lazily, so a clock that runs back would let
		// the number of observers change the chain. The node's clock is
		// simulation time, which never runs back: this is a wiring bug.
		panic(fmt.Sprintf("mocknode: clock ran backwards from %s to %s", n.lastNow.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano)))
	}
	n.lastNow = now
	for !n.nextSlot.After(now) {
		slot := n.nextSlot
		n.nextSlot = slot.Add(SlotInterval)
		if n.skip > 0 {
			n.skip--
			n.events[MissedSlot]++
			continue
		}
		if len(n.blocks) >= blocksMax {
			panic(fmt.Sprintf("mocknode: chain reached %d blocks at %s: the clock ran far past any simulation", len(n.blocks), slot.Format(time.RFC3339)))
		}
		n.produce(slot)
	}
}

// SkipSlots makes the next k slots (after the clock's current time) produce no
// block. Calls add up.
func (n *Node) SkipSlots(k int) {
	if k < 0 {
		panic(fmt.Sprintf("mocknode: SkipSlots(%d): negative", k))
	}
	n.advance()
	n.skip += k
}

// produce builds the block at slot on top of the current head.
func (n *Node) produce(slot time.Time) {
	parent := n.head()

	// The pool forgets old entries before anything is picked, as a node
	// that trims its pool between blocks would: an entry exactly PoolTTL old
	// is gone.
	live := make([]pending, 0, len(n.pool))
	for _, p := range n.pool {
		if slot.Sub(p.arrived) >= n.cfg.PoolTTL {
			delete(n.inPool, p.id)
			n.events[PoolTTLDrop]++
			continue
		}
		live = append(live, p)
	}

	// A block may include a transaction only while its expiration is later
	// than the parent block's time. One that fails this now fails it for
	// every later block too (parent times only grow), so it is dropped: this
	// is the rule proof of death rests on.
	parentMs := parent.Time.UnixMilli()
	var take, keep []pending
	for _, p := range live {
		switch {
		case p.tx.Raw.Expiration <= parentMs:
			delete(n.inPool, p.id)
			n.events[ExpiredDrop]++
		case len(take) < n.cfg.BlockCapacity:
			take = append(take, p)
			delete(n.inPool, p.id)
		default:
			keep = append(keep, p)
		}
	}
	n.pool = keep

	ids := make([]tron.Txid, len(take))
	for i, p := range take {
		ids[i] = p.id
	}
	hdr := tron.Block{Number: parent.Number + 1, Time: slot}
	hdr.ID = blockID(hdr.Number, hdr.Time, parent.ID, ids)
	n.blocks = append(n.blocks, chainBlock{hdr: hdr, txids: ids})
	for _, p := range take {
		n.execute(hdr, p)
	}
}

// blockID is sha256 over the block's number, time, parent id and txids: a pure
// function of the chain, so two nodes fed the same calls agree on every id.
func blockID(number int64, t time.Time, parent [32]byte, ids []tron.Txid) [32]byte {
	b := make([]byte, 0, 64+32*len(ids))
	b = append(b, "mocknode-block-v1"...)
	b = binary.BigEndian.AppendUint64(b, uint64(number))
	b = binary.BigEndian.AppendUint64(b, uint64(t.UnixMilli()))
	b = append(b, parent[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		b = append(b, id[:]...)
	}
	return sha256.Sum256(b)
}

// execute runs an included transfer against the ledger. A failed transaction
// is still on chain and uses up its txid; it moves no tokens and emits no log.
func (n *Node) execute(hdr tron.Block, p pending) {
	c := p.tx.Raw.Contract
	to, amount, err := tron.DecodeTransfer(c.Data)
	if err != nil {
		panic(fmt.Sprintf("mocknode: pending %s is not a transfer: broadcast let it through: %v", p.id, err))
	}
	inc := Inclusion{
		Txid:        p.id,
		BlockNumber: hdr.Number,
		BlockTime:   hdr.Time,
		Owner:       c.Owner,
	}
	var logs []tron.Log
	if o, ok := n.outcomes[p.id]; ok {
		inc.Receipt = o
		n.events[OverrideReceipt]++
	} else if n.balances[c.Owner] < amount {
		inc.Receipt = tron.ReceiptRevert
		n.events[InsufficientBalance]++
	} else {
		inc.Receipt = tron.ReceiptSuccess
		// Debit before credit so a transfer to oneself nets to zero.
		n.balances[c.Owner] -= amount
		n.balances[to] += amount
		logs = []tron.Log{tron.TransferLog(tron.USDTContract, c.Owner, to, amount)}
		inc.Transfer, inc.TransferOK = tron.ParseTransferLog(logs[0])
	}
	n.onChain[p.id] = len(n.landed)
	n.landed = append(n.landed, landing{inc: inc, logs: logs})
}

// SetOutcome fixes the receipt txid gets if it is ever included: REVERT,
// OUT_OF_ENERGY or any other failure receipt moves no tokens and emits no log.
// SUCCESS or "" removes the override, leaving the ledger to decide (a forced
// success the owner cannot pay for would break conservation). It has no effect
// on a transaction already included.
func (n *Node) SetOutcome(id tron.Txid, receipt string) {
	n.advance()
	if receipt == "" || receipt == tron.ReceiptSuccess {
		delete(n.outcomes, id)
		return
	}
	n.outcomes[id] = receipt
}

// Restart loses the pending pool, as a node restart does; blocks are kept.
// The transactions stay valid until they expire and can be re-sent.
func (n *Node) Restart() {
	n.advance()
	if len(n.pool) > 0 {
		n.events[PoolRestart]++
	}
	n.pool = nil
	n.inPool = make(map[tron.Txid]bool)
}

// Evict drops one pending transaction and reports whether it was pending.
func (n *Node) Evict(id tron.Txid) bool {
	n.advance()
	if !n.inPool[id] {
		return false
	}
	for i, p := range n.pool {
		if p.id == id {
			n.pool = append(n.pool[:i:i], n.pool[i+1:]...)
			break
		}
	}
	delete(n.inPool, id)
	n.events[PoolEvict]++
	return true
}

func (n *Node) head() tron.Block { return n.blocks[len(n.blocks)-1].hdr }

func (n *Node) solid() tron.Block {
	h := n.head().Number - int64(n.cfg.SolidLag)
	if h < 0 {
		h = 0
	}
	return n.blocks[h].hdr
}

func cloneTx(tx tron.Transaction) tron.Transaction {
	tx.Signature = clone(tx.Signature)
	tx.Raw.Memo = clone(tx.Raw.Memo)
	tx.Raw.Contract.Data = clone(tx.Raw.Contract.Data)
	return tx
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

func cloneLogs(logs []tron.Log) []tron.Log {
	if logs == nil {
		return nil
	}
	out := make([]tron.Log, len(logs))
	for i, l := range logs {
		out[i] = tron.Log{
			Address: l.Address,
			Topics:  append([][32]byte(nil), l.Topics...),
			Data:    clone(l.Data),
		}
	}
	return out
}
