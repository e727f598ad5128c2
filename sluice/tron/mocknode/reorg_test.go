package mocknode

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// Goal: a reorg takes the newest blocks off the canonical chain and each
// orphaned transaction meets the fate the world chose; the truth accessors
// tell the canonical chain from what was orphaned, and balances follow the
// canonical chain only. Method: a lands in block 1, b in block 2; at head 4
// (SolidLag 10) the newest 3 blocks are orphaned; b's fate per row.
func TestReorgFates(t *testing.T) {
	tests := []struct {
		name         string
		fate         func(Orphan) Fate // nil: the default
		wantFate     Fate
		wantStatus   tron.Status // b's lookup right after the reorg
		wantBlock    int64       // b's block right after, when included
		wantAliceNow uint64
		wantLater    tron.Status // b a block later
		wantAliceEnd uint64
	}{
		{"default: back to the pool", nil, OrphanReturned, pend, 0, 1, incl, 3},
		{"returned", func(Orphan) Fate { return OrphanReturned }, OrphanReturned, pend, 0, 1, incl, 3},
		{"re-included at the same height", func(Orphan) Fate { return OrphanReincluded }, OrphanReincluded, incl, 2, 3, incl, 3},
		{"vanished", func(Orphan) Fate { return OrphanVanished }, OrphanVanished, unkn, 0, 1, unkn, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newNetEnv(t, 1, func(c *Config) { c.SolidLag = 10 })
			a, b := e.landTwo()
			before := e.net.Blocks()
			oldB := e.net.TxInfo(b.Txid())
			if oldB.BlockNumber != 2 || e.net.Balance(alice) != 3 {
				t.Fatalf("setup: b in block %d, alice %d; want block 2 and 3", oldB.BlockNumber, e.net.Balance(alice))
			}

			var seen []Orphan
			fate := tt.fate
			if fate != nil {
				fate = func(o Orphan) Fate { seen = append(seen, o); return tt.fate(o) }
			}
			e.net.Reorg(3, fate)

			blocks := e.net.Blocks()
			if len(blocks) != 5 {
				t.Fatalf("%d blocks after the reorg, want 5 (same head number)", len(blocks))
			}
			for i, blk := range blocks {
				same := blk == before[i]
				if want := i < 2; same != want {
					t.Errorf("block %d unchanged = %v, want %v", i, same, want)
				}
				if !blk.Time.Equal(before[i].Time) || blk.Number != int64(i) {
					t.Errorf("block %d is #%d at %s, want the same height and slot as before", i, blk.Number, blk.Time)
				}
				if i > 0 {
					if got := forkBlockID(blk.Number, blk.Time, blocks[i-1].ID, e.net.BlockTxids(blk.Number), map[bool]int{true: 0, false: 1}[i < 2], false); got != blk.ID {
						t.Errorf("block %d id does not chain to its parent", i)
					}
				}
			}
			if e.net.Solid() != before[0] {
				t.Errorf("solid block changed")
			}
			head, _ := e.w1.HeadBlock(t.Context())
			if head.Number != 4 || head.ID == before[4].ID {
				t.Errorf("HeadBlock = #%d %x, want #4 with a new id", head.Number, head.ID[:4])
			}

			info, _ := e.w1.Lookup(t.Context(), b.Txid())
			if info.Status != tt.wantStatus || info.BlockNumber != tt.wantBlock {
				t.Errorf("b after the reorg: %s in block %d, want %s in block %d", info.Status, info.BlockNumber, tt.wantStatus, tt.wantBlock)
			}
			if tt.wantStatus == incl {
				if logs, _ := transfers(info.Logs); len(logs) != 1 || logs[0].Amount != 2 {
					t.Errorf("re-included b logs %+v, want its Transfer log", logs)
				}
			} else if info.Logs != nil || info.Receipt != "" {
				t.Errorf("orphaned b still shows receipt %q and %d logs", info.Receipt, len(info.Logs))
			}
			if got := e.net.Balance(alice); got != tt.wantAliceNow {
				t.Errorf("alice right after = %d, want %d", got, tt.wantAliceNow)
			}
			if got := e.net.Balance(hot); got != hotStart-tt.wantAliceNow {
				t.Errorf("hot right after = %d, want %d", got, hotStart-tt.wantAliceNow)
			}
			var ids []tron.Txid
			for _, in := range e.net.Inclusions() {
				ids = append(ids, in.Txid)
			}
			wantIDs := []tron.Txid{a.Txid()}
			if tt.wantFate == OrphanReincluded {
				wantIDs = append(wantIDs, b.Txid())
			}
			if !slices.Equal(ids, wantIDs) {
				t.Errorf("Inclusions() = %v, want %v (the canonical chain only)", ids, wantIDs)
			}
			orph := e.net.Orphaned()
			if len(orph) != 1 || orph[0].Txid != b.Txid() || orph[0].Fate != tt.wantFate || orph[0].Block != before[2] ||
				orph[0].BlockNumber != 2 || !orph[0].TransferOK || !orph[0].At.Equal(e.clock.now) {
				t.Errorf("Orphaned() = %+v, want b from block 2 with fate %s", orph, tt.wantFate)
			}
			if tt.fate != nil && (len(seen) != 1 || seen[0].Txid != b.Txid() || seen[0].Fate != OrphanReturned) {
				t.Errorf("fate callback saw %+v, want b once (fate preset to the default)", seen)
			}
			rs := e.net.Reorgs()
			if len(rs) != 1 || rs[0].Depth != 3 || !reflect.DeepEqual(rs[0].Orphaned, before[2:]) || !reflect.DeepEqual(rs[0].Replacement, blocks[2:]) {
				t.Errorf("Reorgs() = %+v", rs)
			}
			if eventCount(e.node, Reorged) != 1 || eventCount(e.node, TxOrphaned) != 1 {
				t.Errorf("events reorg %d, tx-orphaned %d; want 1 and 1", eventCount(e.node, Reorged), eventCount(e.node, TxOrphaned))
			}

			e.after(SlotInterval)
			if got := e.status(b.Txid()); got != tt.wantLater {
				t.Errorf("b a block later: %s, want %s", got, tt.wantLater)
			}
			if got := e.net.Balance(alice); got != tt.wantAliceEnd {
				t.Errorf("alice a block later = %d, want %d", got, tt.wantAliceEnd)
			}
			if tt.wantFate == OrphanVanished {
				// Nobody has it: the same bytes are taken again and land.
				e.mustSend(b, tron.CodeSuccess)
				e.after(SlotInterval)
				if got := e.status(b.Txid()); got != incl {
					t.Errorf("re-sent b: %s, want included", got)
				}
			}
		})
	}
}

// Goal: a reorg never reaches the solid block. Method: every depth around
// the bound, at a young and a grown chain.
func TestReorgDepthBound(t *testing.T) {
	tests := []struct {
		name  string
		head  int64
		lag   int
		depth int
		ok    bool
	}{
		{"zero", 30, 19, 0, false},
		{"one", 30, 19, 1, true},
		{"down to just above solid", 30, 19, 19, true},
		{"into the solid block", 30, 19, 20, false},
		{"young chain: down to block 1", 3, 19, 3, true},
		{"young chain: genesis", 3, 19, 4, false},
		{"lag 2", 10, 2, 2, true},
		{"lag 2, too deep", 10, 2, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newNetEnv(t, 1, func(c *Config) { c.SolidLag = tt.lag })
			e.at(time.Duration(tt.head) * SlotInterval)
			solid := e.net.Solid()
			if !tt.ok {
				mustPanic(t, "the solid block never changes", func() { e.net.Reorg(tt.depth, nil) })
				return
			}
			e.net.Reorg(tt.depth, nil)
			if e.net.Solid() != solid {
				t.Errorf("solid block changed")
			}
			if got := e.net.Reorgs()[0].Orphaned[0].Number; got != tt.head-int64(tt.depth)+1 {
				t.Errorf("lowest orphaned block %d, want %d", got, tt.head-int64(tt.depth)+1)
			}
		})
	}
}

// Goal: a re-included transaction executes afresh: an override set meanwhile
// applies, the execution hook is asked again (Reorged set), and the ledger
// holds only the new result.
func TestReorgReExecutes(t *testing.T) {
	e := newNetEnv(t, 1, nil)
	var asked []ExecRequest
	e.net.SetExecution(func(r ExecRequest) Execution { asked = append(asked, r); return Execution{} })
	paid, failed := e.tx("paid", 5), e.tx("failed", 7)
	e.mustSend(paid, tron.CodeSuccess)
	e.mustSend(failed, tron.CodeSuccess)
	e.at(2 * SlotInterval)
	e.net.SetOutcome(failed.Txid(), tron.ReceiptRevert) // too late for block 1
	if got := e.net.Balance(alice); got != 12 {
		t.Fatalf("setup: alice %d, want 12", got)
	}
	e.net.SetExecution(func(r ExecRequest) Execution {
		asked = append(asked, r)
		return Execution{Fee: 1, FeeTo: feeAddr}
	})
	e.net.Reorg(2, func(Orphan) Fate { return OrphanReincluded })
	var got []string
	for _, in := range e.net.Inclusions() {
		got = append(got, fmt.Sprintf("%s %s #%d %s", in.Txid.Short(), in.Receipt, in.BlockNumber, in.Execution))
	}
	want := []string{
		paid.Txid().Short() + " SUCCESS #1 fee 1 to " + feeAddr.String(),
		failed.Txid().Short() + " REVERT #1 exact",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("inclusions after the reorg\n%q\nwant\n%q", got, want)
	}
	if a, f, h := e.net.Balance(alice), e.net.Balance(feeAddr), e.net.Balance(hot); a != 4 || f != 1 || h != hotStart-5 {
		t.Errorf("balances alice %d fee %d hot %d, want 4, 1 and %d", a, f, h, hotStart-5)
	}
	if len(asked) != 3 || asked[0].Reorged || !asked[2].Reorged || asked[2].Txid != paid.Txid() {
		t.Errorf("hook asked %+v, want paid and failed, then paid again marked Reorged", asked)
	}
}

// Goal: TAPoS follows the canonical chain: a reference to an orphaned block
// fails at broadcast, and a pending transaction whose reference a reorg
// orphaned is dropped by the producer.
func TestReorgTapos(t *testing.T) {
	e := newNetEnv(t, 1, nil)
	e.at(5 * SlotInterval)
	orphanedRef := e.net.Head()
	pendingTx := e.tx("pending", 1, refTo(orphanedRef))
	e.node.SkipSlots(1) // keep it pending through the reorg
	e.mustSend(pendingTx, tron.CodeSuccess)
	e.net.Reorg(1, nil)
	late := e.tx("late", 1, refTo(orphanedRef))
	e.mustSend(late, tron.CodeTaposError)
	e.at(7 * SlotInterval)
	if got := e.status(pendingTx.Txid()); got != unkn {
		t.Errorf("pending transaction referencing an orphaned block: %s, want unknown (dropped)", got)
	}
	if got := eventCount(e.node, TaposDrop); got != 1 {
		t.Errorf("TaposDrop events = %d, want 1", got)
	}
}

// Goal: returned transactions go back to the pools of the nodes whose view
// held the orphaned block; a node that never saw that block keeps whatever
// it had. Method: four nodes; b lands in block 1; node 1 is in sync, nodes 2
// and 3 lag below block 1, and gossip reached node 3 but not node 2.
func TestReorgReturnsToPools(t *testing.T) {
	e := newNetEnv(t, 4, func(c *Config) { c.SolidLag = 10 })
	e.net.SetGossip(func(h Hop) Gossip { return Gossip{Lost: h.To == 2} })
	e.net.Node(2).SetLag(4)
	e.net.Node(3).SetLag(4)
	b := e.tx("b", 2)
	e.mustSend(b, tron.CodeSuccess)
	e.at(4 * SlotInterval)
	if got := e.statuses(b.Txid()); !slices.Equal(got, []tron.Status{incl, incl, unkn, pend}) {
		t.Fatalf("setup: nodes say %v, want [included included unknown pending]", got)
	}
	c := e.tx("c", 3)
	e.mustSend(c, tron.CodeSuccess) // pending when the reorg comes
	e.net.Reorg(4, nil)
	if got := e.statuses(b.Txid()); !slices.Equal(got, []tron.Status{pend, pend, unkn, pend}) {
		t.Errorf("after the reorg nodes say %v, want [pending pending unknown pending]", got)
	}
	// Re-pushed ahead of what was already pending, as java-tron does.
	if p := e.net.Node(0).Pool(); !slices.Equal(p, []tron.Txid{b.Txid(), c.Txid()}) {
		t.Errorf("producer pool %v, want [b c]", p)
	}
}

// Goal: balances always follow the canonical chain, whatever the world does.
// Method: an oracle replays Moved of the canonical Inclusions from the
// starting balance after each step of a pseudo-random run with gossip,
// lags, restarts, execution variants and reorgs of every fate; the ledger
// must agree, tokens are conserved, and no txid is on the chain twice.
func TestLedgerFollowsCanonicalChain(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 0x1ed9e7))
		e := newNetEnv(t, 3, func(c *Config) { c.SolidLag = 6; c.BlockCapacity = 2; c.HotBalance = 400 })
		e.net.SetGossip(func(Hop) Gossip {
			return Gossip{Lost: r.IntN(4) == 0, Delay: time.Duration(r.IntN(5000)) * time.Millisecond}
		})
		e.net.SetExecution(func(req ExecRequest) Execution {
			switch r.IntN(6) {
			case 0:
				return Execution{NoTransfer: true}
			case 1:
				return Execution{Fee: req.Amount / 3, FeeTo: feeAddr}
			case 2:
				return Execution{Redirect: true, To: eve, Amount: req.Amount + uint64(r.IntN(3))}
			case 3:
				return Execution{Lie: true, Logs: []tron.Log{req.Log()}}
			}
			return Execution{}
		})
		addrs := []tron.Address{hot, alice, bob, eve, feeAddr}
		var txs []tron.Transaction
		for step := range 200 {
			e.after(time.Duration(r.IntN(3000)) * time.Millisecond)
			switch r.IntN(8) {
			case 0, 1, 2:
				tx := e.tx(fmt.Sprintf("s%d.%d", seed, step), uint64(r.IntN(60)))
				txs = append(txs, tx)
				e.sendTo(r.IntN(3), tx)
			case 3:
				if len(txs) > 0 {
					e.sendTo(r.IntN(3), txs[r.IntN(len(txs))])
				}
			case 4:
				if head, solid := e.net.Head().Number, e.net.Solid().Number; head > solid {
					e.net.Reorg(1+r.IntN(int(head-solid)), func(Orphan) Fate { return Fate(1 + r.IntN(3)) })
				}
			case 5:
				e.net.Node(1 + r.IntN(2)).SetLag(r.IntN(8))
			case 6:
				e.net.Node(r.IntN(3)).Restart()
			case 7:
				e.net.Node(1 + r.IntN(2)).Stall()
			}
			want := map[tron.Address]uint64{hot: 400}
			seen := map[tron.Txid]bool{}
			for _, in := range e.net.Inclusions() {
				if seen[in.Txid] {
					t.Fatalf("seed %d step %d: %s on the chain twice", seed, step, in.Txid.Short())
				}
				seen[in.Txid] = true
				for _, m := range in.Moved {
					want[m.From] -= m.Amount
					want[m.To] += m.Amount
				}
			}
			var sum uint64
			for _, a := range addrs {
				sum += e.net.Balance(a)
				if got := e.net.Balance(a); got != want[a] {
					t.Fatalf("seed %d step %d: balance of %s = %d, the canonical chain's Moved say %d", seed, step, a, got, want[a])
				}
			}
			if sum != 400 {
				t.Fatalf("seed %d step %d: balances sum to %d, want 400", seed, step, sum)
			}
		}
		if eventCount(e.node, Reorged) == 0 || eventCount(e.node, OddExecution) == 0 || len(e.net.Inclusions()) < 10 {
			t.Errorf("seed %d exercised too little: %d reorgs, %d odd executions, %d inclusions", seed,
				eventCount(e.node, Reorged), eventCount(e.node, OddExecution), len(e.net.Inclusions()))
		}
	}
}

// Goal: a node kept on the old fork at a reorg (ReorgKeeping) shows what it
// had: the orphaned blocks (their ids, not the replacements') and the
// inclusions in them, never solid; below the fork, and on every other node,
// the canonical chain. It stays there while the chain grows, and SetLag
// brings it back. A node the keep function refuses, or one without an
// orphaned block, switches at once.
// Method: b lands in block 2; at head 4 (SolidLag 10) the newest 3 blocks
// are orphaned and b vanishes; node 1 (in sync) is kept, node 2 refused,
// node 3 (lagging below the fork) asked nothing.
func TestReorgKeepingStaleFork(t *testing.T) {
	e := newNetEnv(t, 4, func(c *Config) { c.SolidLag = 10 })
	e.net.Node(3).SetLag(4)
	a, b := e.landTwo()
	old := e.net.Blocks()
	var asked []int
	e.net.ReorgKeeping(3, func(Orphan) Fate { return OrphanVanished }, func(n *Node) bool {
		asked = append(asked, n.Index())
		return n.Index() == 1
	})
	if !slices.Equal(asked, []int{1, 2}) {
		t.Errorf("keep asked of nodes %v, want [1 2] (node 3 has no orphaned block)", asked)
	}
	n1 := e.net.Node(1)
	if !n1.OnStaleFork() || e.net.Node(2).OnStaleFork() || e.net.Node(3).OnStaleFork() {
		t.Fatalf("on a stale fork: %v %v %v, want only node 1", n1.OnStaleFork(), e.net.Node(2).OnStaleFork(), e.net.Node(3).OnStaleFork())
	}
	if got := e.statuses(b.Txid()); !slices.Equal(got, []tron.Status{unkn, incl, unkn, pend}) {
		t.Errorf("nodes say %v about b, want [unknown included unknown pending] (node 3 lags below block 2, b in its pool)", got)
	}
	in := n1.TxInfo(b.Txid())
	if in.BlockNumber != 2 || in.Solid || in.Receipt != tron.ReceiptSuccess || len(in.Logs) != 1 {
		t.Errorf("node 1 on b: %+v, want block 2, not solid, SUCCESS with its log", in)
	}
	if got := n1.TxInfo(a.Txid()); got.Status != incl || got.BlockNumber != 1 {
		t.Errorf("node 1 on a (below the fork): %+v, want included in block 1", got)
	}
	if h := n1.Head(); h.ID != old[4].ID || h.ID == e.net.Node(0).Head().ID {
		t.Errorf("node 1's head %x, want the orphaned block 4's %x", h.ID[:4], old[4].ID[:4])
	}
	e.at(20 * SlotInterval) // the chain grows; the stale node does not
	if h := n1.Head(); h.Number != 4 || n1.TxInfo(b.Txid()).Status != incl {
		t.Errorf("later, node 1's head is #%d and b %v; want #4 and still included", h.Number, n1.TxInfo(b.Txid()).Status)
	}
	n1.SetLag(0)
	if n1.OnStaleFork() || n1.TxInfo(b.Txid()).Status != unkn || n1.Head() != e.net.Node(0).Head() {
		t.Errorf("after SetLag(0): stale %v, b %v, head #%d; want the canonical chain", n1.OnStaleFork(), n1.TxInfo(b.Txid()).Status, n1.Head().Number)
	}
}

// landTwo sends a (paying alice 1), which lands in block 1, then b (2),
// which lands in block 2, and brings the head to block 4.
func (e *netEnv) landTwo() (a, b tron.Transaction) {
	a = e.tx("a", 1)
	e.mustSend(a, tron.CodeSuccess)
	e.at(4 * time.Second)
	b = e.tx("b", 2)
	e.mustSend(b, tron.CodeSuccess)
	e.at(4 * SlotInterval)
	return a, b
}
