package mocknode

import (
	"fmt"
	"slices"
	"time"

	"sluicesim/sluice/tron"
)

// inFlightMax bounds the gossip on its way: a world whose hook delays
// messages without end fails loudly instead of eating memory.
const inFlightMax = 1 << 16

// Hop is one gossip message about to be sent: node From tells node To of a
// transaction it just took into its pool. The gossip hook sees it when it is
// sent, before anything about its delivery is known.
type Hop struct {
	Txid     tron.Txid
	From, To int
	At       time.Time // when From took the transaction (the sending time)
	// Relay: From got the transaction by gossip itself rather than from a
	// broadcast; a world that wants one-hop gossip loses these.
	Relay bool
}

// Gossip is the fate of a Hop: lost, or delivered Delay after it was sent.
// The zero Gossip is delivered at once (at the next call to the network).
type Gossip struct {
	Lost  bool
	Delay time.Duration
}

// message is a Hop on its way.
type message struct {
	at    time.Time // delivery time
	order int       // sending order, for messages due at the same time
	from  int
	to    int
	tx    pending
}

// SetGossip installs the hook that decides every gossip hop's loss and delay;
// nil delivers every hop at once. Gossip floods: a node that takes a
// transaction into its pool, from a broadcast or from gossip, tells every
// other node that does not hold it yet, in node order; the hook is asked once
// per hop, when it is sent.
//
// A broadcast answered NOT_ENOUGH_EFFECTIVE_CONNECTION by the
// RelayFailAfterAccept fault gossips nothing: the node has the transaction,
// its peers do not.
func (net *Network) SetGossip(hook func(Hop) Gossip) { net.gossip = hook }

// spread sends p from node from to every node that does not hold it.
func (net *Network) spread(from *Node, p pending, at time.Time, relay bool) {
	for _, to := range net.nodes {
		if to == from || to.holds(p.id) {
			continue
		}
		var g Gossip
		if net.gossip != nil {
			g = net.gossip(Hop{Txid: p.id, From: from.index, To: to.index, At: at, Relay: relay})
		}
		if g.Delay < 0 {
			panic(fmt.Sprintf("mocknode: gossip hook returned a negative delay %s for %s from node %d to %d", g.Delay, p.id.Short(), from.index, to.index))
		}
		if g.Lost {
			net.events[GossipLost]++
			continue
		}
		if len(net.inFlight) >= inFlightMax {
			panic(fmt.Sprintf("mocknode: %d gossip messages in flight: the gossip hook delays without end", len(net.inFlight)))
		}
		m := message{at: at.Add(g.Delay), order: net.sent, from: from.index, to: to.index, tx: p}
		net.sent++
		// Keep the queue ordered by delivery time, then sending order.
		i := slices.IndexFunc(net.inFlight, func(q message) bool { return q.at.After(m.at) })
		if i < 0 {
			i = len(net.inFlight)
		}
		net.inFlight = slices.Insert(net.inFlight, i, m)
	}
}

// deliver hands the first message in flight to its node, which takes it as a
// real node takes a gossiped transaction: not if it already holds it, not if
// its pool is full, not if the transaction can no longer land on its view of
// the chain. What it takes, it gossips on.
func (net *Network) deliver() {
	m := net.inFlight[0]
	net.inFlight = slices.Delete(net.inFlight, 0, 1)
	to := net.nodes[m.to]
	switch {
	case to.holds(m.tx.id):
		return
	case len(to.pool) >= net.cfg.PoolMax:
		return
	case m.tx.tx.Raw.Expiration <= to.head().Time.UnixMilli():
		return
	}
	p := pending{tx: m.tx.tx, id: m.tx.id, arrived: m.at}
	to.pool = append(to.pool, p)
	to.inPool[p.id] = true
	net.spread(to, p, m.at, true)
}
