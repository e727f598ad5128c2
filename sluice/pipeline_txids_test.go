package sluice

import (
	"reflect"
	"testing"

	"sluicesim/sluice/tron"
)

// Goal: a pipeline given a shared txid cache (Pipeline.Txids) uses it and
// leaves its own untouched; without one, it uses its own. Either way the
// txid is the raw_data's.
func TestPipelineTxidCache(t *testing.T) {
	raw := tron.RawData{Timestamp: 1, Expiration: 2, Memo: []byte("sluice:test:1")}
	for _, shared := range []*tron.TxidCache{tron.NewTxidCache(8), nil} {
		p := &Pipeline{Txids: shared}
		for range 2 { // a miss, then a hit
			if got, want := p.txid(&raw), raw.Txid(); got != want {
				t.Fatalf("shared %v: txid %s, want %s", shared != nil, got, want)
			}
		}
		if ownUsed := !reflect.ValueOf(&p.txids).Elem().IsZero(); ownUsed != (shared == nil) {
			t.Errorf("shared cache given: %v; the pipeline's own cache used: %v", shared != nil, ownUsed)
		}
	}
}
