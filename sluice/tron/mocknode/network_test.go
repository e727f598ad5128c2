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

// Short names for statuses in the tables.
const (
	pend = tron.Pending
	incl = tron.Included
	unkn = tron.Unknown
)

// Goal: gossip carries an accepted transaction from the node that took it to
// the producer and the other pools, with the loss and delay the world's hook
// decides, and only the producer's pool makes blocks. Method: three nodes, a
// transaction broadcast to node 1 at +1s; each row a gossip hook; what each
// node says at +2s (before the first block at +3s), whether the transaction
// lands by +30s, and what a re-send to node 2 at +2s is answered.
func TestGossip(t *testing.T) {
	tests := []struct {
		name       string
		hook       func(Hop) Gossip
		fault      Fault // node 1's fault on the broadcast
		wantAt2s   []tron.Status
		wantResend tron.Code // re-send to node 2 at +2s
		wantLands  bool
		wantLost   int // GossipLost events
	}{
		{
			name:     "no hook: delivered at once everywhere",
			wantAt2s: []tron.Status{pend, pend, pend}, wantResend: tron.CodeDupTransactionError,
			wantLands: true,
		},
		{
			name:     "delayed past the probe: only node 1 has it yet",
			hook:     func(Hop) Gossip { return Gossip{Delay: 1500 * time.Millisecond} },
			wantAt2s: []tron.Status{unkn, pend, unkn}, wantResend: tron.CodeSuccess,
			wantLands: true,
		},
		{
			name:     "every hop lost: the producer never hears of it",
			hook:     func(Hop) Gossip { return Gossip{Lost: true} },
			wantAt2s: []tron.Status{unkn, pend, unkn}, wantResend: tron.CodeSuccess,
			// The re-send to node 2 is gossiped too, and lost too (to node 0
			// only: node 1 holds it, so it is not told).
			wantLands: false, wantLost: 3,
		},
		{
			name:     "hop to the producer lost, relay through node 2",
			hook:     func(h Hop) Gossip { return Gossip{Lost: h.From == 1 && h.To == 0} },
			wantAt2s: []tron.Status{pend, pend, pend}, wantResend: tron.CodeDupTransactionError,
			wantLands: true, wantLost: 1,
		},
		{
			name:     "hop to the producer lost, no relays",
			hook:     func(h Hop) Gossip { return Gossip{Lost: h.Relay || h.To == 0} },
			wantAt2s: []tron.Status{unkn, pend, pend}, wantResend: tron.CodeDupTransactionError,
			wantLands: false, wantLost: 2,
		},
		{
			name:     "relay failure after accept gossips nothing",
			fault:    RelayFailAfterAccept,
			wantAt2s: []tron.Status{unkn, pend, unkn}, wantResend: tron.CodeSuccess,
			// The re-send to node 2 is an ordinary accept and gossips.
			wantLands: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newNetEnv(t, 3, nil)
			e.net.SetGossip(tt.hook)
			e.at(time.Second)
			tx := e.tx("gossip", 5)
			e.net.Node(1).Next(Broadcast, tt.fault)
			if got := e.sendTo(1, tx); tt.fault == None && got != string(tron.CodeSuccess) {
				t.Fatalf("broadcast to node 1 = %s, want SUCCESS", got)
			}
			e.at(2 * time.Second)
			if got := e.statuses(tx.Txid()); !slices.Equal(got, tt.wantAt2s) {
				t.Errorf("at +2s nodes say %v, want %v", got, tt.wantAt2s)
			}
			if got := e.sendTo(2, tx); got != string(tt.wantResend) {
				t.Errorf("re-send to node 2 at +2s = %s, want %s", got, tt.wantResend)
			}
			e.at(30 * time.Second)
			if got := e.net.TxInfo(tx.Txid()).Status == incl; got != tt.wantLands {
				t.Errorf("included by +30s = %v, want %v", got, tt.wantLands)
			}
			if n := len(e.net.Inclusions()); n > 1 {
				t.Errorf("%d inclusions, want at most 1: gossip must never land a txid twice", n)
			}
			if got := eventCount(e.node, GossipLost); got != tt.wantLost {
				t.Errorf("GossipLost events = %d, want %d", got, tt.wantLost)
			}
		})
	}
}

// Goal: gossip floods. Every node that takes a transaction into its pool
// tells every node that does not hold it yet, the hook asked once per hop
// when the hop is sent, in node order. Method: record the hops of one
// broadcast to node 1 of three.
func TestGossipFloods(t *testing.T) {
	e := newNetEnv(t, 3, nil)
	var hops []Hop
	e.net.SetGossip(func(h Hop) Gossip { hops = append(hops, h); return Gossip{} })
	e.at(time.Second)
	tx := e.tx("flood", 1)
	e.sendTo(1, tx)
	e.net.Advance()
	id, at := tx.Txid(), genesis.Add(time.Second)
	want := []Hop{
		{Txid: id, From: 1, To: 0, At: at},
		{Txid: id, From: 1, To: 2, At: at},
		// Node 0 takes it first and tells node 2, whose own copy is still
		// on its way; node 2 then takes node 1's copy and tells nobody
		// (everyone holds it), and ignores node 0's.
		{Txid: id, From: 0, To: 2, At: at, Relay: true},
	}
	if !reflect.DeepEqual(hops, want) {
		t.Errorf("hops\n%+v\nwant\n%+v", hops, want)
	}
	if got := e.statuses(id); !slices.Equal(got, []tron.Status{pend, pend, pend}) {
		t.Errorf("nodes say %v, want pending everywhere", got)
	}
}

// Goal: a node that lags answers from its own height. Method: a chain at
// head 30 (SolidLag 4) with a transaction included in block 20; node 1 lags
// by each row's blocks; what its head, its solid block and its lookup say,
// with the transaction in its pool (gossip reached it) and without.
func TestLaggingNode(t *testing.T) {
	tests := []struct {
		name         string
		lag          int
		inPool       bool
		wantHead     int64
		wantSolid    int64
		wantStatus   tron.Status
		wantSolidTx  bool
		wantResendOn tron.Code // re-send of the included transaction to node 1
	}{
		{"in sync", 0, false, 30, 26, incl, true, tron.CodeDupTransactionError},
		{"lag 5: included and solid for it", 5, false, 25, 21, incl, true, tron.CodeDupTransactionError},
		{"lag 8: included, not yet solid for it", 8, false, 22, 18, incl, false, tron.CodeDupTransactionError},
		{"lag 10, never heard of it: unknown", 10, false, 20, 16, incl, false, tron.CodeDupTransactionError},
		{"lag 11, never heard of it: unknown", 11, false, 19, 15, unkn, false, tron.CodeSuccess},
		{"lag 11, gossip reached it: pending", 11, true, 19, 15, pend, false, tron.CodeDupTransactionError},
		// At height 0 the node lacks the block the transaction references.
		{"lag beyond the chain", 40, false, 0, 0, unkn, false, tron.CodeTaposError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newNetEnv(t, 2, func(c *Config) { c.SolidLag = 4 })
			e.net.SetGossip(func(Hop) Gossip { return Gossip{Lost: !tt.inPool} })
			n1 := e.net.Node(1)
			n1.SetLag(tt.lag)
			e.at(19*SlotInterval + time.Second)
			tx := e.tx("lagging", 1)
			e.mustSend(tx, tron.CodeSuccess)
			e.at(30 * SlotInterval)
			if got := e.net.TxInfo(tx.Txid()); got.BlockNumber != 20 {
				t.Fatalf("setup: included in block %d (%s), want 20", got.BlockNumber, got.Status)
			}
			c := e.on(1)
			head, _ := c.HeadBlock(t.Context())
			solid, _ := c.SolidBlock(t.Context())
			info, _ := c.Lookup(t.Context(), tx.Txid())
			if head.Number != tt.wantHead || solid.Number != tt.wantSolid {
				t.Errorf("node 1 head #%d solid #%d, want #%d and #%d", head.Number, solid.Number, tt.wantHead, tt.wantSolid)
			}
			if head != e.net.Blocks()[tt.wantHead] {
				t.Errorf("node 1 head %+v is not canonical block %d", head, tt.wantHead)
			}
			if info.Status != tt.wantStatus || info.Solid != tt.wantSolidTx {
				t.Errorf("node 1 lookup = %s solid=%v, want %s solid=%v", info.Status, info.Solid, tt.wantStatus, tt.wantSolidTx)
			}
			if got := n1.Height(); got != tt.wantHead {
				t.Errorf("Height() = %d, want %d", got, tt.wantHead)
			}
			// A node that cannot see the inclusion takes the same bytes
			// again; the chain still holds the txid once.
			if got := e.sendTo(1, tx); got != string(tt.wantResendOn) {
				t.Errorf("re-send to node 1 = %s, want %s", got, tt.wantResendOn)
			}
			e.after(time.Minute)
			if n := len(e.net.Inclusions()); n != 1 {
				t.Errorf("%d inclusions, want 1", n)
			}
		})
	}
}

// Goal: a lagging node runs the broadcast checks on its own view: a
// reference to a block it does not have fails TAPoS, and the expiration
// window is counted from its own head. Method: node 1 lags 10 blocks behind
// head 40; the same transactions go to node 0 and to node 1.
func TestLaggingNodeBroadcastChecks(t *testing.T) {
	e := newNetEnv(t, 2, nil)
	e.net.Node(1).SetLag(10)
	e.at(40 * SlotInterval)
	head := e.net.Head()
	lagHead := e.net.Blocks()[30]
	tests := []struct {
		name       string
		mods       []func(*tron.RawData)
		want0      tron.Code
		wantLagged tron.Code
	}{
		{"reference to the lagging node's head", []func(*tron.RawData){refTo(lagHead)}, tron.CodeSuccess, tron.CodeSuccess},
		{"reference to a block it lacks", []func(*tron.RawData){refTo(head)}, tron.CodeSuccess, tron.CodeTaposError},
		{"expiring a day after the real head", []func(*tron.RawData){refTo(lagHead), expires(head.Time.Add(24 * time.Hour))}, tron.CodeSuccess, tron.CodeTransactionExpirationError},
		{"expiring a day after its own head", []func(*tron.RawData){refTo(lagHead), expires(lagHead.Time.Add(24 * time.Hour))}, tron.CodeSuccess, tron.CodeSuccess},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.net.SetGossip(func(Hop) Gossip { return Gossip{Lost: true} }) // keep the nodes apart
			a := e.tx("a"+string(rune('0'+i)), 1, tt.mods...)
			b := e.tx("b"+string(rune('0'+i)), 1, tt.mods...)
			if got := e.sendTo(0, a); got != string(tt.want0) {
				t.Errorf("node 0 = %s, want %s", got, tt.want0)
			}
			if got := e.sendTo(1, b); got != string(tt.wantLagged) {
				t.Errorf("lagging node 1 = %s, want %s", got, tt.wantLagged)
			}
		})
	}
}

// Goal: a stalled node falls further behind a block a slot and catches up
// at once; catching up drops from its pool what it now sees included.
func TestStallAndCatchUp(t *testing.T) {
	e := newNetEnv(t, 2, nil)
	n1 := e.net.Node(1)
	e.at(5 * SlotInterval)
	n1.Stall()
	tx := e.tx("stalled", 1)
	e.mustSend(tx, tron.CodeSuccess) // gossiped to node 1 at once
	steps := []struct {
		at         time.Duration
		catchUp    bool
		wantHeight int64
		wantStatus tron.Status
		wantPool   int
	}{
		{5 * SlotInterval, false, 5, pend, 1},
		{6 * SlotInterval, false, 5, pend, 1}, // included in block 6, which node 1 lacks
		{12 * SlotInterval, false, 5, pend, 1},
		{12 * SlotInterval, true, 12, incl, 0},
		{15 * SlotInterval, false, 15, incl, 0},
	}
	for _, s := range steps {
		e.at(s.at)
		if s.catchUp {
			n1.CatchUp()
		}
		if got := n1.Height(); got != s.wantHeight {
			t.Errorf("at +%s (catch up %v): height %d, want %d", s.at, s.catchUp, got, s.wantHeight)
		}
		if got := e.statusOn(1, tx.Txid()); got != s.wantStatus {
			t.Errorf("at +%s: node 1 says %s, want %s", s.at, got, s.wantStatus)
		}
		if got := len(n1.Pool()); got != s.wantPool {
			t.Errorf("at +%s: node 1 pool holds %d, want %d", s.at, got, s.wantPool)
		}
	}
}

// Goal: a restart loses one node's pool only; what it already gossiped can
// still land, and the node that lost it takes the same bytes again.
func TestRestartOneNode(t *testing.T) {
	e := newNetEnv(t, 2, nil)
	e.at(time.Second)
	tx := e.tx("restart", 1)
	if got := e.sendTo(1, tx); got != "SUCCESS" {
		t.Fatalf("send to node 1 = %s", got)
	}
	e.net.Node(1).Restart()
	if got := e.statuses(tx.Txid()); !slices.Equal(got, []tron.Status{pend, unkn}) {
		t.Errorf("after node 1's restart nodes say %v, want [pending unknown]", got)
	}
	if got := e.sendTo(1, tx); got != "SUCCESS" {
		t.Errorf("re-send to the restarted node = %s, want SUCCESS", got)
	}
	if got := e.sendTo(0, tx); got != "DUP_TRANSACTION_ERROR" {
		t.Errorf("re-send to node 0 = %s, want DUP", got)
	}
	e.at(time.Minute)
	if n := len(e.net.Inclusions()); n != 1 {
		t.Errorf("%d inclusions, want 1", n)
	}
	if acc := e.net.Accepted(); len(acc) != 1 || acc[0].Times != 2 {
		t.Errorf("Accepted() = %+v, want one txid accepted twice (node 1, twice)", acc)
	}
}

// Goal: pools of nodes other than the producer forget as the producer's
// does, at each slot: by age, and by expiration against their own head (an
// entry that can no longer land). Method: gossip never reaches node 0, so
// nodes 1 and 2 hold their own copies; PoolTTL 9s.
func TestOtherPoolsForget(t *testing.T) {
	e := newNetEnv(t, 3, func(c *Config) { c.PoolTTL = 9 * time.Second })
	e.net.SetGossip(func(h Hop) Gossip { return Gossip{Lost: h.To == 0 || h.Relay} })
	old := e.tx("old", 1)
	if e.sendTo(1, old) != "SUCCESS" {
		t.Fatal("setup send refused")
	}
	e.at(time.Second)
	dying := e.tx("dying", 1, expires(genesis.Add(4*time.Second)))
	if e.sendTo(2, dying) != "SUCCESS" {
		t.Fatal("setup send refused")
	}
	steps := []struct {
		at                   time.Duration
		wantOld, wantDying   []tron.Status
		wantTTL, wantExpired int
	}{
		// Block 2 (+6s) has parent block 1 (+3s): dying could still land.
		{6 * time.Second, []tron.Status{unkn, pend, pend}, []tron.Status{unkn, pend, pend}, 0, 0},
		// Before block 3 (+9s): old is 9s old; dying's expiration is not
		// later than block 2's time.
		{9 * time.Second, []tron.Status{unkn, unkn, unkn}, []tron.Status{unkn, unkn, unkn}, 2, 2},
	}
	for _, s := range steps {
		e.at(s.at)
		if got := e.statuses(old.Txid()); !slices.Equal(got, s.wantOld) {
			t.Errorf("+%s: old on nodes %v, want %v", s.at, got, s.wantOld)
		}
		if got := e.statuses(dying.Txid()); !slices.Equal(got, s.wantDying) {
			t.Errorf("+%s: dying on nodes %v, want %v", s.at, got, s.wantDying)
		}
		if got := eventCount(e.node, PoolTTLDrop); got != s.wantTTL {
			t.Errorf("+%s: PoolTTLDrop = %d, want %d", s.at, got, s.wantTTL)
		}
		if got := eventCount(e.node, ExpiredDrop); got != s.wantExpired {
			t.Errorf("+%s: ExpiredDrop = %d, want %d", s.at, got, s.wantExpired)
		}
	}
}

// Goal: a node's truth is its own (Wire, Queries, FaultsFired), the chain's
// is the network's; Seq numbers every call to every node in one order.
func TestTruthPerNodeAndNetwork(t *testing.T) {
	e := newNetEnv(t, 2, nil)
	a, b := e.tx("a", 1), e.tx("b", 1)
	e.net.Node(1).Next(Broadcast, Busy)
	e.sendTo(0, a)
	e.sendTo(1, b)
	e.on(1).HeadBlock(t.Context())
	e.sendTo(1, b)
	type rec struct {
		Seq, Node int
		Answer    string
	}
	var got []rec
	for _, w := range e.net.Wire() {
		got = append(got, rec{w.Seq, w.Node, w.Answer})
	}
	want := []rec{{1, 0, "SUCCESS"}, {2, 1, "SERVER_BUSY"}, {4, 1, "SUCCESS"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Network.Wire() = %+v, want %+v", got, want)
	}
	if w := e.net.Node(1).Wire(); len(w) != 2 || w[0].Seq != 2 || w[1].Seq != 4 {
		t.Errorf("Node(1).Wire() = %+v, want seqs 2 and 4", w)
	}
	if q := e.net.Node(1).Queries(); len(q) != 1 || q[0].Seq != 3 || q[0].Node != 1 {
		t.Errorf("Node(1).Queries() = %+v, want seq 3 on node 1", q)
	}
	if n := len(e.net.Node(0).Queries()); n != 0 {
		t.Errorf("Node(0).Queries() has %d entries, want 0", n)
	}
	if firedCount(e.net.Node(1), Busy) != 1 || firedCount(e.net.Node(0), Busy) != 0 {
		t.Errorf("Busy fired on node 1 %d, node 0 %d; want 1 and 0", firedCount(e.net.Node(1), Busy), firedCount(e.net.Node(0), Busy))
	}
	var sum int
	for _, fc := range e.net.FaultsFired() {
		sum += fc.Count
	}
	if sum != 1 {
		t.Errorf("Network.FaultsFired sums to %d, want 1", sum)
	}
	e.at(time.Minute)
	if !reflect.DeepEqual(e.net.Node(1).Inclusions(), e.net.Inclusions()) || e.net.Node(1).Balance(alice) != 2 {
		t.Errorf("a node's chain truth is not the network's")
	}
}

// Invalid network wiring panics with the sentence that describes it.
func TestNetworkMisusePanics(t *testing.T) {
	tests := []struct {
		name string
		want string
		do   func(e *netEnv)
	}{
		{"no nodes", "want 1 to", func(e *netEnv) { NewNetwork(e.clock, Config{}, 0) }},
		{"too many nodes", "want 1 to", func(e *netEnv) { NewNetwork(e.clock, Config{}, nodesMax+1) }},
		{"no such node", "node 2 of a network of 2", func(e *netEnv) { e.net.Node(2) }},
		{"producer lags", "producer", func(e *netEnv) { e.net.Node(0).SetLag(1) }},
		{"producer stalls", "producer", func(e *netEnv) { e.net.Node(0).Stall() }},
		{"negative lag", "negative", func(e *netEnv) { e.net.Node(1).SetLag(-1) }},
		{"negative gossip delay", "negative delay", func(e *netEnv) {
			e.net.SetGossip(func(Hop) Gossip { return Gossip{Delay: -time.Second} })
			e.sendTo(0, e.tx("x", 1))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newNetEnv(t, 2, nil)
			mustPanic(t, tt.want, func() { tt.do(e) })
		})
	}
	// The producer may be told to be in sync.
	e := newNetEnv(t, 1, nil)
	e.net.Node(0).SetLag(0)
	e.net.Node(0).CatchUp()
}

// networkScenario drives a network through every new feature (gossip with
// losses and delays, lags and stalls, restarts, a balancer with failover,
// reorgs of every fate, execution variants) with choices from a seeded
// stream standing in for the simulator's tape, and returns everything a
// checker could look at.
func networkScenario(t *testing.T, seed uint64) []any {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	e := newNetEnv(t, 3, func(c *Config) { c.SolidLag = 5; c.BlockCapacity = 2; c.PoolTTL = 20 * time.Second })
	e.net.SetGossip(func(h Hop) Gossip {
		return Gossip{Lost: r.IntN(5) == 0, Delay: time.Duration(r.IntN(4000)) * time.Millisecond}
	})
	e.net.SetExecution(func(req ExecRequest) Execution {
		if r.IntN(4) == 0 {
			return Execution{Fee: 1, FeeTo: feeAddr}
		}
		return Execution{}
	})
	for _, n := range e.net.Nodes() {
		n.SetFaults(func(c Call) Fault {
			if c.Kind == Broadcast && r.IntN(4) == 0 {
				return LoseRequest
			}
			return None
		})
	}
	var answers []string
	var txs []tron.Transaction
	clients := []tron.Node{
		e.net.Balancer("b1", func(rt Route) int { return (rt.Attempt + 1) % 3 }),
		e.net.Balancer("b2", func(rt Route) int { return r.IntN(3) }),
	}
	for step := range 150 {
		e.after(time.Duration(r.IntN(2500)) * time.Millisecond)
		c := clients[r.IntN(2)]
		switch r.IntN(7) {
		case 0, 1:
			tx := e.tx(fmt.Sprintf("n%d", step), uint64(1+r.IntN(9)))
			txs = append(txs, tx)
			answers = append(answers, sendAs(t, c, tx))
		case 2:
			if len(txs) > 0 {
				info, err := c.Lookup(t.Context(), txs[r.IntN(len(txs))].Txid())
				answers = append(answers, fmt.Sprintf("%+v %v", info, err))
			}
		case 3:
			b, err := c.SolidBlock(t.Context())
			answers = append(answers, fmt.Sprintf("%+v %v", b, err))
		case 4:
			if head, solid := e.net.Head().Number, e.net.Solid().Number; head > solid {
				e.net.Reorg(1+r.IntN(int(head-solid)), func(Orphan) Fate { return Fate(1 + r.IntN(3)) })
			}
		case 5:
			e.net.Node(1 + r.IntN(2)).SetLag(r.IntN(4))
		case 6:
			e.net.Node(r.IntN(3)).Restart()
		}
	}
	e.after(time.Minute)
	return []any{answers, e.net.Blocks(), e.net.Wire(), e.net.Queries(), e.net.Accepted(), e.net.Inclusions(),
		e.net.Orphaned(), e.net.Reorgs(), e.net.Node(1).Pool(), e.net.FaultsFired(), e.net.Events(),
		e.net.Balance(hot), e.net.Balance(alice), e.net.Balance(feeAddr)}
}

// Goal: a network is as deterministic as a node: two runs fed the same
// choices agree on every answer and every record.
func TestNetworkDeterminism(t *testing.T) {
	for seed := range uint64(3) {
		a, b := networkScenario(t, seed), networkScenario(t, seed)
		for i := range a {
			if !reflect.DeepEqual(a[i], b[i]) {
				t.Errorf("seed %d: record %d (%T) differs between two identical runs", seed, i, a[i])
			}
		}
		if len(a[6].([]Orphan)) == 0 || len(a[5].([]Inclusion)) < 5 {
			t.Errorf("seed %d exercised too little: %d orphans, %d inclusions", seed, len(a[6].([]Orphan)), len(a[5].([]Inclusion)))
		}
	}
}

// Goal: a node told to OmitSolid leaves its own solid number out of every
// lookup answer (an older gateway), while the rest of each answer stays
// its own view; a node not told keeps giving it. Method: node 1 lags 11
// blocks and omits; a transaction included at 20 is unknown to it and
// included to node 0, and one still pending is pending to both.
func TestNodeOmitsItsSolidNumber(t *testing.T) {
	e := newNetEnv(t, 2, func(c *Config) { c.SolidLag = 4 })
	e.net.SetGossip(func(Hop) Gossip { return Gossip{Lost: true} })
	n1 := e.net.Node(1)
	n1.SetLag(11)
	n1.OmitSolid()
	e.at(19*SlotInterval + time.Second)
	tx := e.tx("silent", 1)
	e.mustSend(tx, tron.CodeSuccess)
	e.at(30 * SlotInterval)
	for i, want := range []struct {
		status tron.Status
		solid  int64
	}{{incl, 26}, {unkn, 0}} {
		info, err := e.on(i).Lookup(t.Context(), tx.Txid())
		if err != nil || info.Status != want.status || info.NodeSolid != want.solid {
			t.Errorf("node %d: lookup %s, solid number %d (%v), want %s and %d", i, info.Status, info.NodeSolid, err, want.status, want.solid)
		}
	}
	if solid, _ := e.on(1).SolidBlock(t.Context()); solid.Number != 15 {
		t.Errorf("node 1's solid block #%d, want #15: only its lookups leave it out", solid.Number)
	}
}
