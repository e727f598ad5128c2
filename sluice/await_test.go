package sluice

import (
	"context"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// laggingLookup is a node behind a balancer whose lookups reach a backend
// that lags the one answering SolidBlock: it reports the txid included in
// block, not yet solid by its own solid head nodeSolid.
type laggingLookup struct {
	tron.Node
	solid, block, nodeSolid int64
}

func (l laggingLookup) SolidBlock(context.Context) (tron.Block, error) {
	return tron.Block{Number: l.solid, Time: time.UnixMilli(l.solid * 3_000)}, nil
}
func (l laggingLookup) Lookup(_ context.Context, id tron.Txid) (tron.TxInfo, error) {
	return tron.TxInfo{Txid: id, Status: tron.Included, BlockNumber: l.block, BlockTime: time.UnixMilli(l.block * 3_000),
		Solid: false, Receipt: tron.ReceiptSuccess, NodeSolid: l.nodeSolid}, nil
}

// Goal: a broadcast operation whose txid is included and not yet solid
// waits at least one block before it asks again, whatever the two answers
// say: when the lookup's node lags the solid block's (a balancer's two
// backends), the inclusion may sit at or below the solid block seen, and
// "the blocks left" are zero or fewer. A step that asked again at once
// would poll the node in a tight loop for as long as the lag lasts (a
// rate-limited provider's key throttled, every withdrawal stalled), a
// world's per-call balancer soon landing elsewhere and hiding it.
// (Independent bug 123 dropped the floor.) Method: await against such a
// node, the inclusion above, at and below the solid block seen.
func TestAwaitWaitsAtLeastABlockForSolidity(t *testing.T) {
	cfg := DefaultConfig()
	for _, c := range []struct {
		name              string
		block, wantBlocks int64
	}{{"above the solid block seen", 104, 4}, {"at it", 100, 1}, {"below it", 96, 1}} {
		p := &Pipeline{Node: laggingLookup{solid: 100, block: c.block, nodeSolid: 90}, Clock: fixedClock{}, Config: cfg}
		raw := tron.RawData{Timestamp: 1, Expiration: 2, Memo: []byte("sluice:test:1")}
		op := Operation{ID: "00000000-0000-4000-8000-000000000001", State: Broadcast, Envelope: Envelope{Raw: raw, Txid: raw.Txid()}}
		out, err := p.await(context.Background(), "w1", op)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := time.Duration(c.wantBlocks) * cfg.BlockInterval; out.Wait != want {
			t.Errorf("included in #%d, solid #100 seen, the lookup's node solid at #90 (%s): wait %s (%s), want %s", c.block, c.name, out.Wait, out.Why, want)
		}
	}
}
