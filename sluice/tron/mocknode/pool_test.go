package mocknode

import (
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// A pending entry at least PoolTTL old is dropped when the next block is
// built. The transaction is still valid (it has not expired), so re-sending
// the same bytes is accepted again and lands.
func TestPoolTTLEviction(t *testing.T) {
	tests := []struct {
		name        string
		arrive      time.Duration // after genesis
		skip        int           // slots missed after arrival
		wantEvicted bool
	}{
		{"next block well inside the ttl", time.Second, 0, false},
		{"age just under the ttl", time.Millisecond, 1, false}, // block at +6s, age 5.999s
		{"age exactly the ttl", 0, 1, true},                    // block at +6s, age 6s
		{"age past the ttl", time.Second, 2, true},             // block at +9s, age 8s
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.PoolTTL = 6 * time.Second })
			e.at(tt.arrive)
			tx := e.tx("ttl", 7)
			e.mustSend(tx, tron.CodeSuccess)
			e.node.SkipSlots(tt.skip)
			e.at(time.Duration(tt.skip+1) * SlotInterval)
			if got := e.node.Head().Number; got != 1 {
				t.Fatalf("head %d, want 1", got)
			}
			got := e.status(tx.Txid())
			want := tron.Included
			if tt.wantEvicted {
				want = tron.Unknown
			}
			if got != want {
				t.Fatalf("after the first block: %s, want %s", got, want)
			}
			if !tt.wantEvicted {
				return
			}
			if got := eventCount(e.node, PoolTTLDrop); got != 1 {
				t.Errorf("PoolTTLDrop events = %d, want 1", got)
			}
			e.mustSend(tx, tron.CodeSuccess)
			e.after(SlotInterval)
			if got := e.status(tx.Txid()); got != tron.Included {
				t.Errorf("after re-send: %s, want included", got)
			}
			if acc := e.node.Accepted(); len(acc) != 1 || acc[0].Times != 2 {
				t.Errorf("Accepted() = %+v, want one txid accepted twice", acc)
			}
			if got := e.node.Balance(alice); got != 7 {
				t.Errorf("alice balance %d, want 7 (one inclusion)", got)
			}
		})
	}
}

// A restart loses the pending pool but no block; re-sending the same bytes
// lands them.
func TestRestartLosesPool(t *testing.T) {
	e := newEnv(t, nil)
	e.at(4 * time.Second)
	landed := e.tx("landed", 1)
	e.mustSend(landed, tron.CodeSuccess)
	e.at(6 * time.Second)
	tx := e.tx("pending", 2)
	e.mustSend(tx, tron.CodeSuccess)
	e.node.Restart()

	info, err := e.w1.Lookup(t.Context(), tx.Txid())
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	if info.Status != tron.Unknown {
		t.Errorf("after restart: %s, want unknown", info.Status)
	}
	if got := e.status(landed.Txid()); got != tron.Included {
		t.Errorf("included transaction after restart: %s, want included", got)
	}
	if got := eventCount(e.node, PoolRestart); got != 1 {
		t.Errorf("PoolRestart events = %d, want 1", got)
	}
	e.node.Restart() // empty pool: nothing lost, not counted
	if got := eventCount(e.node, PoolRestart); got != 1 {
		t.Errorf("PoolRestart events after an empty restart = %d, want 1", got)
	}

	e.mustSend(tx, tron.CodeSuccess)
	e.at(9 * time.Second)
	if got := e.status(tx.Txid()); got != tron.Included {
		t.Errorf("after re-send: %s, want included", got)
	}
}

// Evict drops exactly one pending transaction and says whether it did.
func TestEvict(t *testing.T) {
	e := newEnv(t, nil)
	a, b := e.tx("a", 1), e.tx("b", 1)
	e.mustSend(a, tron.CodeSuccess)
	e.mustSend(b, tron.CodeSuccess)
	tests := []struct {
		name string
		id   tron.Txid
		want bool
	}{
		{"pending", a.Txid(), true},
		{"already evicted", a.Txid(), false},
		{"never seen", tron.Txid{1}, false},
	}
	for _, tt := range tests {
		if got := e.node.Evict(tt.id); got != tt.want {
			t.Errorf("%s: Evict = %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := e.node.Pool(); len(got) != 1 || got[0] != b.Txid() {
		t.Errorf("Pool() = %v, want only b", got)
	}
	e.at(3 * time.Second)
	if got := e.node.Evict(b.Txid()); got {
		t.Errorf("Evict of an included transaction = true, want false")
	}
	if got := e.status(b.Txid()); got != tron.Included {
		t.Errorf("b: %s, want included", got)
	}
	if got := eventCount(e.node, PoolEvict); got != 1 {
		t.Errorf("PoolEvict events = %d, want 1", got)
	}
}

// SERVER_BUSY starts when the pool holds PoolMax; nothing is taken until a
// block makes room.
func TestServerBusyAtPoolMax(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.PoolMax = 2 })
	txs := []tron.Transaction{e.tx("a", 1), e.tx("b", 1), e.tx("c", 1)}
	want := []tron.Code{tron.CodeSuccess, tron.CodeSuccess, tron.CodeServerBusy}
	for i, tx := range txs {
		if got := e.send(tx); got != string(want[i]) {
			t.Errorf("Broadcast #%d = %s, want %s", i, got, want[i])
		}
	}
	if got := len(e.node.Pool()); got != 2 {
		t.Errorf("pool holds %d, want 2", got)
	}
	if got := e.status(txs[2].Txid()); got != tron.Unknown {
		t.Errorf("busy-rejected transaction: %s, want unknown", got)
	}
	e.at(3 * time.Second)
	e.mustSend(txs[2], tron.CodeSuccess)
}

// A block takes at most BlockCapacity transactions, in arrival order; the rest
// wait for the next block.
func TestBlockCapacity(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.BlockCapacity = 2 })
	var ids []tron.Txid
	for _, m := range []string{"a", "b", "c", "d", "e"} {
		tx := e.tx(m, 1)
		e.mustSend(tx, tron.CodeSuccess)
		ids = append(ids, tx.Txid())
	}
	e.at(9 * time.Second)
	want := [][]tron.Txid{nil, ids[0:2], ids[2:4], ids[4:5]}
	for n, w := range want {
		got := e.node.BlockTxids(int64(n))
		if len(got) != len(w) {
			t.Errorf("block %d holds %d transactions, want %d", n, len(got), len(w))
			continue
		}
		for i := range w {
			if got[i] != w[i] {
				t.Errorf("block %d position %d = %s, want %s", n, i, got[i].Short(), w[i].Short())
			}
		}
	}
}
