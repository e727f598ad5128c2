package mocknode

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// runNetwork is a small run of the kind a world makes: a network of three
// nodes with delayed gossip, one lagging, and four workers behind a
// balancer that each send a transfer, poll head, solid and the txid every
// second until it is solid, then start the next. It returns the inclusions.
func runNetwork(transfers int) int {
	ctx := context.Background()
	signer := tron.NewHMACSigner([]byte("hot wallet key"))
	clock := &testClock{now: genesis}
	net := NewNetwork(clock, Config{Genesis: genesis, HotWallet: hot, HotBalance: hotStart, Verifier: signer}, 3)
	net.SetGossip(func(h Hop) Gossip { return Gossip{Delay: time.Duration(h.To) * 500 * time.Millisecond} })
	net.Node(2).SetLag(2)
	const workers = 4
	var nodes [workers]tron.Node
	var pending [workers]tron.Txid
	var sent [workers]int
	for w := range workers {
		nodes[w] = net.Balancer(fmt.Sprint("w", w), func(r Route) int {
			if r.Attempt > 0 {
				return Stop
			}
			return (w + int(r.Kind)) % 3
		})
	}
	done := 0
	for tick := 0; done < transfers; tick++ {
		clock.now = clock.now.Add(time.Second)
		for w, n := range nodes {
			head, _ := n.HeadBlock(ctx)
			solid, _ := n.SolidBlock(ctx)
			if !pending[w].IsZero() {
				info, _ := n.Lookup(ctx, pending[w])
				if !(info.Status == tron.Included && info.Solid) {
					continue
				}
				pending[w] = tron.Txid{}
				done++
			}
			sent[w]++
			refBytes, refHash := solid.Ref()
			raw := tron.RawData{RefBlockBytes: refBytes, RefBlockHash: refHash,
				Expiration: head.Time.Add(60 * time.Second).UnixMilli(), Timestamp: clock.now.UnixMilli(),
				FeeLimit: 100_000_000, Memo: []byte(fmt.Sprintf("00000000-0000-4000-8000-%012d/%d", w, sent[w])),
				Contract: tron.TriggerSmartContract{Owner: hot, Contract: tron.USDTContract, Data: tron.EncodeTransfer(alice, 1)}}
			sig, _ := signer.Sign(ctx, raw)
			tx := tron.Transaction{Raw: raw, Signature: sig}
			if res, err := n.Broadcast(ctx, tx); err == nil && tron.Read(res.Code) == tron.Accepted {
				pending[w] = tx.Txid()
			}
		}
	}
	return len(net.Inclusions())
}

// BenchmarkNetworkRun is runNetwork with 40 transfers: the mock node's
// share of a world's run (blocks, pools, gossip, calls and their records).
func BenchmarkNetworkRun(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if n := runNetwork(40); n < 40 {
			b.Fatalf("%d inclusions, want at least 40", n)
		}
	}
}

// BenchmarkLookupIncluded is one Lookup of an included transaction, whose
// logs are copied out.
func BenchmarkLookupIncluded(b *testing.B) {
	e := newEnv(&testing.T{}, nil)
	tx := e.sign(e.raw("op-1", 5))
	if res, err := e.w1.Broadcast(context.Background(), tx); err != nil || res.Code != tron.CodeSuccess {
		b.Fatalf("broadcast: %v, %v", res, err)
	}
	e.after(10 * time.Second)
	ctx := context.Background()
	id := tx.Txid()
	b.ReportAllocs()
	for b.Loop() {
		if info, err := e.w1.Lookup(ctx, id); err != nil || info.Status != tron.Included {
			b.Fatalf("lookup: %v, %v", info.Status, err)
		}
	}
}
