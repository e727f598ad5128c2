package scenarios

import (
	"encoding/binary"
	"fmt"
	"slices"

	"sluicesim/model"
	"sluicesim/sim"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// nodeFault is the mock node's fault hook: every lie in the menu, chosen on
// the tape, until the heal point.
func (w *world) nodeFault(c mocknode.Call) mocknode.Fault {
	if !w.faulty() || c.Worker == relayName {
		return mocknode.None
	}
	if c.Kind != mocknode.Broadcast {
		if w.s.Chance("query-lie", w.cfg.QueryLieP) {
			return mocknode.QueryTimeout
		}
		return mocknode.None
	}
	short := w.short(c.Node)
	if !w.seen[c.Txid] {
		w.seen[c.Txid] = true
		if short == shortEnergy {
			// Energy is burnt at execution: with none left, the contract
			// runs out of it whenever this transaction lands.
			w.node.SetOutcome(c.Txid, tron.ReceiptOutOfEnergy)
			w.tally["wallet-short-energy-tx"]++
		} else if w.s.Chance("receipt-fail", w.cfg.ReceiptFailP) {
			r := []string{tron.ReceiptRevert, tron.ReceiptOutOfEnergy}[w.s.Choose("receipt", 2)]
			if r == tron.ReceiptRevert && w.cfg.OtherReceipts {
				// The contract fails another way TRON reports (or
				// stays REVERT): none moves a token.
				if k := w.s.Choose("receipt-other", len(otherReceipts)+1); k > 0 {
					r = otherReceipts[k-1]
				}
			}
			w.node.SetOutcome(c.Txid, r)
		}
	}
	if short == shortTRX {
		// No TRX to burn for bandwidth: every node refuses the hot
		// wallet's broadcasts, honestly.
		w.tally["wallet-short-trx-refusal"]++
		return mocknode.BandwidthExhausted
	}
	if w.s.Chance("lie", w.cfg.BroadcastLieP) {
		f := broadcastLies[w.s.Choose("lie-kind", len(broadcastLies))]
		if f == mocknode.BandwidthExhausted && w.cfg.FaultsAtWork && !w.net.Node(c.Node).CanRefuseForBandwidth(w.sentTxOrZero(c.Txid)) {
			// Exhaustive search shows its first failing schedule as a
			// finding, so it refuses for bandwidth only where a node can:
			// one that holds the transaction answers DUP_TRANSACTION_ERROR
			// before any bandwidth check (TRON.md), and the lie would put an
			// answer on the wire that no node gives. With two nodes this
			// leaves the re-send refused by the node that never saw the
			// transaction while the other holds it. Random worlds keep the
			// cruder lie their recorded seeds were measured with.
			return mocknode.None
		}
		if f == mocknode.LoseRequest {
			w.lostTxid = c.Txid // the node wrapper keeps the bytes for a relay
		}
		if f == mocknode.TaposLie && c.Txid[len(c.Txid)-1]&1 == 1 && w.resending[c.Worker] {
			// Half the TAPoS lies on a worker's re-send (by the txid, as
			// below) refuse the signature instead: a node whose view of
			// the hot wallet's permissions moved refuses bytes it holds,
			// or another node holds. Only ever on a re-send: TRON.md lets
			// a first send's SIGERROR stand as final, and behind a
			// balancer a first send's retry may reach a node that holds
			// the bytes by gossip.
			f = mocknode.SignatureLie
		}
		if f == mocknode.BandwidthExhausted && c.Txid[len(c.Txid)-1]&1 == 1 {
			// The same refusal in another code, half the time by the txid
			// (the data, not the tape, so that every recorded tape keeps
			// its choices): a node's own state refuses at the contract's
			// check as well as at bandwidth's (the caller's account not yet
			// known to it, a fee limit above its parameters). Neither says
			// anything of another node, nor of the bytes: read as final,
			// it fails a withdrawal whose earlier send lands.
			f = mocknode.ContractStateRefusal
		}
		return f
	}
	return mocknode.None
}

// The hot wallet's shortages (ShortageP).
const (
	shortNone = iota
	shortTRX
	shortEnergy
)

// short says what the hot wallet is short of now. Its reads are a chain
// footprint: a shortage starting or ending does not commute with a send.
func (w *world) short(int) int {
	if w.shortKind == shortNone || !w.faulty() || !w.s.Now().Before(w.shortUntil) {
		return shortNone
	}
	return w.shortKind
}

// relayName is the node client of the relay: a peer that re-sends what
// some node lost. The node's faults never touch it.
const relayName = "relay"

// relayLoop, until the heal point, now and then hands the chain a
// transaction some node lost (a send that never arrived, a pool entry
// dropped by an eviction or a restart), as a peer's pool or a relay would:
// the send a worker believes lost can still land, while its envelope is
// valid. Proof of death must hold against that.
func (w *world) relayLoop(p *sim.Proc) {
	for {
		p.Sleep(w.cfg.ChainGaps[w.s.Choose("relay-gap", len(w.cfg.ChainGaps))].D())
		if !w.faulty() {
			return
		}
		if len(w.relayable) == 0 || !w.s.Chance("relay", w.cfg.RelayP) {
			continue
		}
		k := w.s.Choose("relay-pick", len(w.relayable))
		tx := w.relayable[k]
		w.relayable = slices.Delete(w.relayable, k, k+1)
		res, err := w.node.Client(relayName).Broadcast(w.ctx, tx)
		w.s.Touch("chain", true)
		w.tally["relay"]++
		if w.s.Tracing() {
			answer := string(res.Code)
			if err != nil {
				answer = err.Error()
			}
			w.fact(model.Fact{Kind: model.FactRelay, Txid: tx.Txid().Short(), Answer: answer})
		}
	}
}

// dropped makes a transaction the node just dropped from its pool
// relayable.
func (w *world) dropped(id tron.Txid) {
	if tx, ok := w.sentTx(id); ok && w.cfg.RelayP > 0 {
		w.relayable = append(w.relayable, tx)
	}
}

var broadcastLies = []mocknode.Fault{
	mocknode.LoseRequest, mocknode.AcceptThenTimeout, mocknode.Busy, mocknode.NoConnection,
	mocknode.UnknownCode, mocknode.RelayFailAfterAccept, mocknode.OtherErrorAfterAccept,
	mocknode.ExpirationLie, mocknode.TaposLie, mocknode.BandwidthExhausted,
}

// chainLoop injects chain and pool events until the heal point: node
// restarts (pool lost), evictions, missed slots.
func (w *world) chainLoop(p *sim.Proc) {
	for {
		p.Sleep(w.cfg.ChainGaps[w.s.Choose("chain-gap", len(w.cfg.ChainGaps))].D())
		if !w.faulty() {
			// Healed: a node left on a stale fork comes back, and the
			// energy price falls back.
			for i := range w.cfg.Nodes {
				w.net.Node(i).LeaveFork()
			}
			w.energyBack()
			return
		}
		if w.cfg.LagP > 0 {
			// Whether or not a node falls behind now, this step may change
			// what a node answers: it does not commute with any node call.
			// (A footprint that depended on the choice below would let
			// exhaustive search's sleep sets miss the orders that matter.)
			w.s.Touch("chain", true)
		}
		if w.cfg.LagP > 0 && w.s.Chance("lag", w.cfg.LagP) {
			// A node other than the producer falls behind (or catches up):
			// it answers from its own height, as a node behind a load
			// balancer does.
			n := w.net.Node(1 + w.s.Choose("lag-node", w.cfg.Nodes-1))
			k := w.cfg.NodeLags[w.s.Choose("lag-len", len(w.cfg.NodeLags))]
			n.SetLag(k)
			w.tally["node-lag"]++
			w.fact(model.Fact{Kind: model.FactNodeLag, N: k, Answer: fmt.Sprintf("node %d", n.Index())})
		}
		if w.cfg.ShortageP > 0 && !w.s.Now().Before(w.shortUntil) && w.s.Chance("shortage", w.cfg.ShortageP) {
			w.shortKind = 1 + w.s.Choose("shortage-kind", 2)
			d := w.cfg.Shortages[w.s.Choose("shortage-len", len(w.cfg.Shortages))].D()
			w.shortUntil = w.s.Now().Add(d)
			name := [...]string{shortTRX: "trx", shortEnergy: "energy"}[w.shortKind]
			w.tally["wallet-short-"+name]++
			w.fact(model.Fact{Kind: model.FactShortage, Dur: d, Answer: name})
		}
		if w.cfg.EnergySpikeP > 0 {
			w.energyMarket()
		}
		if w.cfg.ReorgP > 0 && w.s.Chance("reorg", w.cfg.ReorgP) {
			depth := 1 + w.s.Choose("reorg-depth", w.cfg.ReorgDepthMax)
			var keep func(*mocknode.Node) bool
			stale := ""
			if w.cfg.StaleForkP > 0 {
				keep = func(n *mocknode.Node) bool {
					k := w.s.Chance("stale-fork", w.cfg.StaleForkP)
					if k {
						stale += fmt.Sprintf(" node %d stays on the old fork", n.Index())
					}
					return k
				}
			}
			w.net.ReorgKeeping(depth, func(o mocknode.Orphan) mocknode.Fate {
				return []mocknode.Fate{mocknode.OrphanReturned, mocknode.OrphanReincluded, mocknode.OrphanVanished}[w.s.Choose("reorg-fate", 3)]
			}, keep)
			w.fact(model.Fact{Kind: model.FactReorg, N: depth, Answer: stale})
		}
		if !w.cfg.ChainEvents {
			continue
		}
		ev := w.s.Choose("chain-event", 3)
		// Behind a balancer any node may restart or evict, not only the
		// producer: a restarted peer has lost what it held, while the
		// others still have it.
		nd, which := w.node, ""
		if w.cfg.Nodes > 1 && ev < 2 {
			nd = w.net.Node(w.s.Choose("chain-event-node", w.cfg.Nodes))
			which = fmt.Sprintf("node %d", nd.Index())
		}
		switch ev {
		case 0:
			for _, id := range nd.Pool() {
				w.dropped(id)
			}
			nd.Restart()
			w.fact(model.Fact{Kind: model.FactNodeRestart, Answer: which})
		case 1:
			if pool := nd.Pool(); len(pool) > 0 {
				id := pool[w.s.Choose("evict", len(pool))]
				w.dropped(id)
				nd.Evict(id)
				w.fact(model.Fact{Kind: model.FactEvict, Txid: id.Short(), Answer: which})
			}
		case 2:
			k := 1 + w.s.Choose("skip-slots", 3)
			w.node.SkipSlots(k)
			w.fact(model.Fact{Kind: model.FactMissedSlots, N: k})
		}
	}
}

// gossip decides the fate of one hop of a transaction between two nodes'
// pools: lost with GossipLossP before the heal point, else delivered.
func (w *world) gossip(h mocknode.Hop) mocknode.Gossip {
	if w.faulty() && w.s.Chance("gossip-loss", w.cfg.GossipLossP) {
		return mocknode.Gossip{Lost: true}
	}
	return mocknode.Gossip{}
}

// router is a worker's load balancer: which node each call goes to.
// per-call: any node, on the tape; sticky: one node per worker incarnation,
// chosen once; failover: the sticky node until it errs, then the next.
func (w *world) router(worker string) func(mocknode.Route) int {
	n := w.cfg.Nodes
	home := -1
	return func(r mocknode.Route) int {
		switch w.cfg.Route {
		case "per-call":
			if r.Attempt > 0 {
				return mocknode.Stop
			}
			return w.s.Choose("route", n)
		case "failover":
			if home < 0 {
				home = w.s.Choose("route", n)
			}
			if r.Attempt > 0 {
				if r.Attempt >= n {
					return mocknode.Stop
				}
				home = (r.Prev + 1) % n
			}
			return home
		}
		if home < 0 {
			home = w.s.Choose("route", n)
		}
		if r.Attempt > 0 {
			return mocknode.Stop
		}
		return home
	}
}

// stranger receives what a redirected transfer sends to the wrong account,
// and fees: an account no withdrawal names.
var stranger = tron.AddressFromBytes20([20]byte{0x57, 0x4a, 0x9e, 0x12, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})

// foreignToken is a TRC-20 contract that is not USDT: its Transfer logs move
// no USDT, whatever they say.
var foreignToken = tron.AddressFromBytes20([20]byte{0xf0, 0x4e, 0x19, 0x70, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})

// oddExecution is one kind of odd execution: its tally name, and what the
// execution hook answers for a request.
type oddExecution struct {
	name string
	make func(q mocknode.ExecRequest) mocknode.Execution
}

// oddExecutions is the menu of transfers that succeed other than as asked,
// or are reported other than as they were. Every one but extra-log must
// keep the core from confirming (and from failing: tokens may have moved);
// extra-log is a foreign contract's log beside an exact transfer, which must
// still confirm. A lie always reports logs a careful reader rejects: a node
// that reports the exact payment for one that did not happen is not a fault
// any processor can see, so the world never tells it.
var oddExecutions = []oddExecution{
	{"no-transfer", func(mocknode.ExecRequest) mocknode.Execution { return mocknode.Execution{NoTransfer: true} }},
	{"fee", func(q mocknode.ExecRequest) mocknode.Execution {
		// USDT's fee-on-transfer: basis points of the amount, at least one
		// unit, never more than the amount.
		return mocknode.Execution{Fee: min(q.Amount, max(1, q.Amount/1000)), FeeTo: stranger}
	}},
	{"short", func(q mocknode.ExecRequest) mocknode.Execution {
		return mocknode.Execution{Redirect: true, To: q.To, Amount: q.Amount / 2}
	}},
	{"other-recipient", func(q mocknode.ExecRequest) mocknode.Execution {
		return mocknode.Execution{Redirect: true, To: stranger, Amount: q.Amount}
	}},
	{"foreign-log", func(q mocknode.ExecRequest) mocknode.Execution {
		return mocknode.Execution{NoTransfer: true, Extra: []tron.Log{tron.TransferLog(foreignToken, q.Owner, q.To, q.Amount)}}
	}},
	{"extra-log", func(q mocknode.ExecRequest) mocknode.Execution {
		// Other contracts' logs beside the exact transfer: a foreign
		// token's Transfer (one data word), and a hook's events of two
		// words and of none (every field indexed). A log carries whatever
		// its contract emitted, so a reader that wants one word of every
		// log fails the lookup of a paid withdrawal (blind bug 251). No
		// draw: the world's tapes do not move.
		return mocknode.Execution{Extra: []tron.Log{tron.TransferLog(foreignToken, q.Owner, q.To, q.Amount), hookLog(q, 2), hookLog(q, 0)}}
	}},
	{"lie-no-log", func(mocknode.ExecRequest) mocknode.Execution { return mocknode.Execution{Lie: true} }},
	{"lie-log-twice", func(q mocknode.ExecRequest) mocknode.Execution {
		return mocknode.Execution{Lie: true, Logs: []tron.Log{q.Log(), q.Log()}}
	}},
	{"lie-other-sender", func(q mocknode.ExecRequest) mocknode.Execution {
		// Nothing left the hot wallet; the node reports a USDT transfer to
		// the recipient from someone else (a node that indexes logs of
		// another transaction).
		return mocknode.Execution{NoTransfer: true, Lie: true, Logs: []tron.Log{tron.TransferLog(tron.USDTContract, stranger, q.To, q.Amount)}}
	}},
}

// hookTopic is the event signature of hookLog, a foreign contract's event.
var hookTopic = [32]byte{0x5a, 0x1c, 0xe0, 0x0c}

// hookLog is an event of the foreign contract (a transfer hook) with words
// data words: the amount, then zeros.
func hookLog(q mocknode.ExecRequest, words int) tron.Log {
	data := make([]byte, 32*words)
	if words > 0 {
		binary.BigEndian.PutUint64(data[24:32], q.Amount)
	}
	return tron.Log{Address: foreignToken.Bytes20(), Topics: [][32]byte{hookTopic}, Data: data}
}

// wideExecutions is oddExecutions with the lies a world asks for with
// WideLogs.
var wideExecutions = append(oddExecutions[:len(oddExecutions):len(oddExecutions)], oddExecution{"lie-wide-value", func(q mocknode.ExecRequest) mocknode.Execution {
	// Nothing left the hot wallet; the node reports the payment's log
	// with 1 in the value's byte 15: 2^128 + the amount, whose low 64
	// bits are the amount (a node or proxy that mangles a word, another
	// token's uint256 value).
	l := q.Log()
	l.Data = append([]byte(nil), l.Data...)
	l.Data[15] = 1
	return mocknode.Execution{NoTransfer: true, Lie: true, Logs: []tron.Log{l}}
}}, oddExecution{"lie-long-data", func(q mocknode.ExecRequest) mocknode.Execution {
	// Nothing left the hot wallet; the node reports the payment's log
	// with a second data word after the value (another token's event
	// that carries a fee beside it, a proxy that pads): a Transfer has
	// exactly one, and a reader of only the first takes it for the
	// payment (blind bug 154).
	l := q.Log()
	l.Data = append(append([]byte(nil), l.Data...), make([]byte, 32)...)
	return mocknode.Execution{NoTransfer: true, Lie: true, Logs: []tron.Log{l}}
}})

// oddExecutionTallies are the tally kinds of wideExecutions, one per kind.
func oddExecutionTallies() []string {
	out := make([]string, len(wideExecutions))
	for i, k := range wideExecutions {
		out[i] = "odd-execution-" + k.name
	}
	return out
}

// execution is the network's execution hook: before the heal point, now and
// then a successful USDT transfer does something other than what was asked.
func (w *world) execution(q mocknode.ExecRequest) mocknode.Execution {
	if !w.faulty() || !w.s.Chance("odd-execution", w.cfg.OddExecutionP) {
		return mocknode.Execution{}
	}
	menu := oddExecutions
	if w.cfg.WideLogs {
		menu = wideExecutions
	}
	k := menu[w.s.Choose("odd-execution-kind", len(menu))]
	w.tally["odd-execution-"+k.name]++
	if w.s.Tracing() {
		w.fact(model.Fact{Kind: model.FactOddExecution, Txid: q.Txid.Short(), Answer: k.name})
	}
	return k.make(q)
}

// otherReceipts are failure receipts TRON gives besides REVERT and
// OUT_OF_ENERGY (its contractResult values; TRON.md: "and others"). Each is
// on chain, uses up its txid and moves no token: proof of death like any
// failed receipt.
var otherReceipts = []string{"OUT_OF_TIME", "TRANSFER_FAILED", "BAD_JUMP_DESTINATION", "ILLEGAL_OPERATION", "UNKNOWN"}

// energyMarket, at a chain gap before the heal point, ends a spike of the
// energy price whose spell is over and, with no spike on, now and then
// starts one (EnergySpikeP).
func (w *world) energyMarket() {
	if w.energySpiked && !w.s.Now().Before(w.energyUntil) {
		w.energyBack()
	}
	if w.energySpiked || !w.s.Chance("energy-spike", w.cfg.EnergySpikeP) {
		return
	}
	price := w.cfg.EnergySpikes[w.s.Choose("energy-spike-price", len(w.cfg.EnergySpikes))]
	d := w.cfg.EnergySpells[w.s.Choose("energy-spike-len", len(w.cfg.EnergySpells))].D()
	w.energySpiked, w.energyUntil = true, w.s.Now().Add(d)
	// What a block's transfers pay changes: it does not commute with a send.
	w.s.Touch("chain", true)
	w.net.SetEnergyPrice(price)
	w.tally["energy-spike"]++
	w.fact(model.Fact{Kind: model.FactEnergyPrice, N: int(price), Dur: d})
}

// energyBack ends a spike of the energy price, if one is on.
func (w *world) energyBack() {
	if !w.energySpiked {
		return
	}
	w.energySpiked = false
	w.s.Touch("chain", true)
	w.net.SetEnergyPrice(w.cfg.EnergyPrice)
	w.fact(model.Fact{Kind: model.FactEnergyPrice, N: int(w.cfg.EnergyPrice)})
}
