package mocknode

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// Goal: the quiet chain changes no block. Two networks are driven through
// the same random life (long quiet stretches, transfers to any node,
// skipped slots, reorgs), one of them never taking the quiet chain's ids;
// their chains must be equal block for block, ids, times and txids, after
// every move. Three genesis times share the process's quiet chains (one
// not on a slot, which the network truncates to its slot: not the first
// one's, so there are three chains); the quiet ids must have been used, and the networks must
// have left the quiet chain (a transfer landed) in most lives.
func TestQuietChainIsBlockID(t *testing.T) {
	ctx := context.Background()
	signer := tron.NewHMACSigner([]byte("hot wallet key"))
	used, left := 0, 0
	lives := 0
	for _, g := range []time.Time{genesis, genesis.Add(4700 * time.Millisecond), genesis.Add(7 * 24 * time.Hour)} {
		for seed := range uint64(12) {
			lives++
			r := rand.New(rand.NewPCG(seed, 0x9e17))
			clock := &testClock{now: g.Add(time.Duration(r.IntN(900)) * time.Second)}
			var nets [2]*Network
			for i := range nets {
				nets[i] = NewNetwork(clock, Config{Genesis: g, HotWallet: hot, HotBalance: hotStart, Verifier: signer}, 3)
				nets[i].SetGossip(func(h Hop) Gossip { return Gossip{Delay: time.Duration(h.To) * 700 * time.Millisecond} })
			}
			nets[1].quietOff = true // hashes every block
			sent := 0
			for move := range 120 {
				switch k := r.IntN(20); {
				case k < 12:
					clock.now = clock.now.Add(time.Duration(r.IntN(12000)) * time.Millisecond)
				case k < 16:
					node := r.IntN(3)
					var raw tron.RawData
					for i, net := range nets {
						solid, head := net.Node(node).Solid(), net.Node(node).Head()
						refBytes, refHash := solid.Ref()
						raw = tron.RawData{RefBlockBytes: refBytes, RefBlockHash: refHash,
							Expiration: head.Time.Add(60 * time.Second).UnixMilli(), Timestamp: clock.now.UnixMilli(),
							FeeLimit: 100_000_000, Memo: fmt.Appendf(nil, "life %d move %d", seed, move),
							Contract: tron.TriggerSmartContract{Owner: hot, Contract: tron.USDTContract, Data: tron.EncodeTransfer(alice, 1)}}
						sig, _ := signer.Sign(ctx, raw)
						if _, err := net.Node(node).Client("w").Broadcast(ctx, tron.Transaction{Raw: raw, Signature: sig}); err != nil {
							t.Fatalf("network %d: broadcast: %v", i, err)
						}
					}
					sent++
				case k < 18:
					n := r.IntN(3)
					for _, net := range nets {
						net.SkipSlots(n)
					}
				default:
					head, solid := nets[0].Head().Number, nets[0].Solid().Number
					if head-solid < 1 {
						continue
					}
					depth := 1 + r.IntN(int(head-solid))
					for _, net := range nets {
						net.Reorg(depth, nil)
					}
				}
				a, b := nets[0].Blocks(), nets[1].Blocks()
				if !slices.Equal(a, b) {
					t.Fatalf("genesis %s, life %d, move %d: the chains differ (%d and %d blocks)", g, seed, move, len(a), len(b))
				}
				for n := range a {
					if !slices.Equal(nets[0].BlockTxids(int64(n)), nets[1].BlockTxids(int64(n))) {
						t.Fatalf("genesis %s, life %d, move %d: block %d's txids differ", g, seed, move, n)
					}
				}
			}
			if len(nets[0].quiet) > 1 {
				used++
			}
			if nets[0].quietOff && len(nets[0].Inclusions()) > 0 {
				left++
			}
			if len(nets[1].quiet) != 0 {
				t.Fatalf("the network told not to used the quiet chain")
			}
		}
	}
	if used != lives || left < lives/2 {
		t.Errorf("of %d lives, %d used the quiet chain (want all) and %d left it with a landed transfer (want half at least)", lives, used, left)
	}
}
