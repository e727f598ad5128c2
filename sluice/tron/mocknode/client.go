package mocknode

import (
	"context"
	"strconv"

	"sluicesim/sluice/tron"
)

// client is one worker's view of the node. Every call is recorded under the
// worker's name and asks the fault script and hook first.
//
// ctx is ignored on purpose: a context deadline runs on the real clock, and
// letting it decide anything would make a run depend on the machine's speed.
// Timeouts are faults, chosen by the script or the hook.
type client struct {
	n      *Node
	worker string
}

var _ tron.Node = client{}

func (c client) Broadcast(_ context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	return c.n.broadcast(c.worker, tx, c.n.net.txid(&tx))
}

func (c client) Lookup(_ context.Context, id tron.Txid) (tron.TxInfo, error) {
	n := c.n
	if n.query(Lookup, c.worker, id) {
		return tron.TxInfo{}, &timeoutError{call: "lookup", worker: c.worker, txid: id, hasTxid: true}
	}
	info := n.lookup(id)
	n.net.queries.last().Answer = info.Status.String()
	return info, nil
}

func (c client) HeadBlock(_ context.Context) (tron.Block, error) {
	n := c.n
	if n.query(Head, c.worker, tron.Txid{}) {
		return tron.Block{}, &timeoutError{call: "head block", worker: c.worker}
	}
	b := n.head()
	n.net.queries.last().Answer = n.net.blockAnswer(b)
	return b, nil
}

func (c client) SolidBlock(_ context.Context) (tron.Block, error) {
	n := c.n
	if n.query(Solid, c.worker, tron.Txid{}) {
		return tron.Block{}, &timeoutError{call: "solid block", worker: c.worker}
	}
	b := n.solid()
	n.net.queries.last().Answer = n.net.blockAnswer(b)
	return b, nil
}

// blockAnswer is the recorded answer of a head or solid query: "#12".
// Workers ask for the same few blocks over and over between two slots, so
// the network keeps the last answers it built (strings are immutable).
func (net *Network) blockAnswer(b tron.Block) string {
	c := &net.answers[b.Number%int64(len(net.answers))]
	if c.text == "" || c.number != b.Number {
		var buf [24]byte
		c.number, c.text = b.Number, string(strconv.AppendInt(append(buf[:0], '#'), b.Number, 10))
	}
	return c.text
}

// query brings the chain up to the clock, picks the call's fault and records
// the call. It reports whether the caller times out; otherwise the caller
// fills in the recorded Answer.
func (n *Node) query(k CallKind, worker string, id tron.Txid) (timeout bool) {
	net := n.net
	net.advance()
	net.seq++
	f := n.pick(Call{Kind: k, Worker: worker, Txid: id, Node: n.index})
	q := QueryAttempt{
		Seq:    net.seq,
		Kind:   k,
		Worker: worker,
		Txid:   id,
		At:     net.clock.Now(),
		Head:   n.head().Number,
		Fault:  f,
		Node:   n.index,
	}
	if f == QueryTimeout {
		q.Fired = true
		q.Answer = AnswerTimeout
		n.fired[f]++
	}
	net.queries.push(q)
	return q.Fired
}

// lookup is what the node answers about id from its own view: included only
// in a block it has (a lagging node does not know a newer inclusion: it says
// pending if the transaction is still in its pool, else unknown), solid only
// at or below its own solid block.
func (n *Node) lookup(id tron.Txid) tron.TxInfo {
	said := n.solid().Number // the solid number the answer carries
	if n.silentSolid {
		said = 0
	}
	if n.isOnChain(id) {
		l := n.landingOf(id)
		return tron.TxInfo{
			Txid:        id,
			Status:      tron.Included,
			BlockNumber: l.inc.BlockNumber,
			BlockTime:   l.inc.BlockTime,
			Solid:       l.inc.BlockNumber <= n.solid().Number,
			Receipt:     l.inc.Receipt,
			Logs:        cloneLogs(l.logs),
			NodeSolid:   said,
		}
	}
	if n.inPool[id] {
		return tron.TxInfo{Txid: id, Status: tron.Pending, NodeSolid: said}
	}
	return tron.TxInfo{Txid: id, Status: tron.Unknown, NodeSolid: said}
}
