package nodehttp

import (
	"context"
	"sync"

	"sluicesim/sluice/tron"
)

// Serialized wraps a node client for use from many goroutines, as a
// server's handlers are. The mock node is a single-threaded simulation
// object (its package may not even import sync), so outside the simulator
// every caller, and anything else that drives the node such as a block
// producer, must hold the same mu.
func Serialized(mu *sync.Mutex, n tron.Node) tron.Node { return serialized{mu: mu, n: n} }

type serialized struct {
	mu *sync.Mutex
	n  tron.Node
}

func (s serialized) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n.Broadcast(ctx, tx)
}

func (s serialized) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n.Lookup(ctx, id)
}

func (s serialized) HeadBlock(ctx context.Context) (tron.Block, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n.HeadBlock(ctx)
}

func (s serialized) SolidBlock(ctx context.Context) (tron.Block, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n.SolidBlock(ctx)
}
