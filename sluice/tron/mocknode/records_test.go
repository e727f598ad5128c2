package mocknode

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// Goal: a chunked list behaves as a slice under push, truncate, at, last
// and appendTo. Method: random operations on both, compared after each.
func TestChunkedMatchesSlice(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	c := chunked[int]{per: 7}
	var want []int
	for step := range 20000 {
		switch k := r.IntN(10); {
		case k < 8:
			c.push(step)
			want = append(want, step)
		default:
			n := len(want) - r.IntN(min(len(want), 3*c.per)+1)
			c.truncate(n)
			want = want[:n]
		}
		if c.len() != len(want) {
			t.Fatalf("step %d: len = %d, want %d", step, c.len(), len(want))
		}
		if len(want) > 0 {
			i := r.IntN(len(want))
			if *c.at(i) != want[i] || *c.last() != want[len(want)-1] {
				t.Fatalf("step %d: at(%d) = %d, last = %d; want %d, %d", step, i, *c.at(i), *c.last(), want[i], want[len(want)-1])
			}
		}
		if step%97 == 0 {
			from := r.IntN(len(want) + 1)
			if got := c.appendTo(nil, from); !slices.Equal(got, want[from:]) && !(len(got) == 0 && len(want[from:]) == 0) {
				t.Fatalf("step %d: appendTo(nil, %d) = %d entries, want %d", step, from, len(got), len(want[from:]))
			}
		}
	}
}

// A network built on a released network's storage answers and records
// exactly what a fresh one does, on the very chunks the first one filled;
// the released network refuses to be used again. The first network lives
// another life (another genesis, solid lag and block capacity), so that
// whatever it left behind differs from what the second writes: a run of
// the same scenario on the same storage would hide a leak.
func TestReleasedStorageChangesNothing(t *testing.T) {
	a1, t1, _ := scenarioOn(t, nil)
	_, _, first := scenarioWith(t, func(c *Config) {
		c.Genesis, c.SolidLag, c.BlockCapacity = genesis.Add(-90*time.Second), 2, 1
	})
	chunk0 := &first.queries.chunks[0][:1][0]
	st := first.Release()
	if n := first.queries.len(); n != 0 {
		t.Errorf("released network still holds %d calls", n)
	}
	a2, t2, second := scenarioOn(t, st)
	if st.blocks != nil || st.landed != nil || st.wire != nil || st.queries != nil {
		t.Error("the new network did not take the storage")
	}
	if &second.queries.chunks[0][:1][0] != chunk0 {
		t.Error("the new network's call record is not on the released chunks")
	}
	if !reflect.DeepEqual(a1, a2) {
		t.Error("answers differ between a fresh network and one on released storage")
	}
	for i := range t1 {
		if !reflect.DeepEqual(t1[i], t2[i]) {
			t.Errorf("ground truth %d (%T) differs between a fresh network and one on released storage", i, t1[i])
		}
	}
	defer func() {
		// Its own refusal, not an index out of range in what it gave away.
		if r := recover(); r != "mocknode: network used after Release" {
			t.Errorf("a released network's call: %v, want its refusal", r)
		}
	}()
	first.Head()
}

// Goal: a network given a txid cache (Config.Txids) answers and records
// exactly what one without it does, over the all-faults scenario, and does
// look its txids up there.
func TestTxidCacheChangesNothing(t *testing.T) {
	a1, t1, _ := scenarioOn(t, nil)
	cache := tron.NewTxidCache(16)
	a2, t2, _ := scenarioWith(t, func(c *Config) { c.Txids = cache })
	if !reflect.DeepEqual(a1, a2) {
		t.Error("answers differ between a network with a txid cache and one without")
	}
	for i := range t1 {
		if !reflect.DeepEqual(t1[i], t2[i]) {
			t.Errorf("ground truth %d (%T) differs between a network with a txid cache and one without", i, t1[i])
		}
	}
	// The cache's slots are made on its first use.
	if reflect.ValueOf(cache).Elem().Field(0).FieldByName("slots").IsNil() {
		t.Error("the network never used the txid cache it was given")
	}
}
