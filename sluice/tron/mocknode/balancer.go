package mocknode

import (
	"context"
	"fmt"

	"sluicesim/sluice/tron"
)

// FailoverMax bounds the attempts a balancer makes for one call: the route
// hook is not asked again after that many, and the caller gets the last
// attempt's outcome.
const FailoverMax = 8

// Stop is what a route hook returns, on a retry, to hand the previous
// attempt's outcome to the caller instead of trying another node.
const Stop = -1

// Route describes a call the balancer is about to send somewhere. The route
// hook sees it before any node does, once for the first attempt and again
// after each attempt that failed with an error (a timeout, a lost request),
// so a world can be sticky per worker, pick per call, or fail over on error.
type Route struct {
	Kind    CallKind
	Worker  string
	Txid    tron.Txid // zero for Head and Solid
	Attempt int       // 0 for the first attempt
	Prev    int       // the node the previous attempt went to; -1 on the first
	PrevErr error     // the error the previous attempt returned; nil on the first
}

// balancer is a tron.Node in front of the network's nodes, as a load balancer
// or a client-side pool of endpoints is. Every attempt is an ordinary call to
// the chosen node, recorded there under the worker's name with that node's
// faults: a retry by the balancer is a second call on the wire.
type balancer struct {
	net    *Network
	worker string
	route  func(Route) int
}

var _ tron.Node = balancer{}

// Balancer returns a tron.Node for worker that sends each call to the node
// route picks (an index into the network). A call that fails with an error is
// offered to route again with Prev and PrevErr set; route returns another
// node to fail over, or Stop to give the caller that error. Answers, even
// refusals such as SERVER_BUSY, go to the caller at once: a balancer retries
// transport failures, not a node's verdict. At most FailoverMax attempts are
// made per call. route returning Stop on the first attempt, or a node that
// does not exist, panics.
func (net *Network) Balancer(worker string, route func(Route) int) tron.Node {
	if route == nil {
		panic("mocknode: Balancer with a nil route hook")
	}
	return balancer{net: net, worker: worker, route: route}
}

// each runs call on the routed nodes until one answers, route says Stop, or
// FailoverMax attempts are spent, and returns the last attempt's error.
func (b balancer) each(k CallKind, id tron.Txid, call func(*Node) error) error {
	r := Route{Kind: k, Worker: b.worker, Txid: id, Prev: -1}
	for {
		i := b.route(r)
		if i == Stop {
			if r.Attempt == 0 {
				panic(fmt.Sprintf("mocknode: route hook returned Stop for the first attempt of %s by %q", k, b.worker))
			}
			return r.PrevErr
		}
		if i < 0 || i >= len(b.net.nodes) {
			panic(fmt.Sprintf("mocknode: route hook returned node %d of a network of %d for %s by %q", i, len(b.net.nodes), k, b.worker))
		}
		err := call(b.net.nodes[i])
		if err == nil || r.Attempt+1 >= FailoverMax {
			return err
		}
		r.Attempt, r.Prev, r.PrevErr = r.Attempt+1, i, err
	}
}

func (b balancer) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	var res tron.BroadcastResult
	id := b.net.txid(&tx) // once, not once a node tried
	err := b.each(Broadcast, id, func(n *Node) error {
		var err error
		res, err = n.broadcast(b.worker, tx, id)
		return err
	})
	return res, err
}

func (b balancer) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	var info tron.TxInfo
	err := b.each(Lookup, id, func(n *Node) error {
		var err error
		info, err = client{n: n, worker: b.worker}.Lookup(ctx, id)
		return err
	})
	return info, err
}

func (b balancer) HeadBlock(ctx context.Context) (tron.Block, error) {
	var blk tron.Block
	err := b.each(Head, tron.Txid{}, func(n *Node) error {
		var err error
		blk, err = client{n: n, worker: b.worker}.HeadBlock(ctx)
		return err
	})
	return blk, err
}

func (b balancer) SolidBlock(ctx context.Context) (tron.Block, error) {
	var blk tron.Block
	err := b.each(Solid, tron.Txid{}, func(n *Node) error {
		var err error
		blk, err = client{n: n, worker: b.worker}.SolidBlock(ctx)
		return err
	})
	return blk, err
}
