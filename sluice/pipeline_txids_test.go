package sluice

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

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

// chainStub is a node that answers only the two heads newEnvelope asks for.
type chainStub struct{ tron.Node }

func (chainStub) HeadBlock(context.Context) (tron.Block, error) {
	return tron.Block{Number: 9, Time: time.UnixMilli(9_000)}, nil
}
func (chainStub) SolidBlock(context.Context) (tron.Block, error) {
	return tron.Block{Number: 7, Time: time.UnixMilli(7_000)}, nil
}

// Goal: the memo and the call data that newEnvelope lays out in one buffer
// cannot grow into each other: appending to the memo (as any caller may do
// to a slice it was given) leaves the transfer's recipient and amount, and
// so the txid, as they were. Both an id that fits the buffer and one that
// spills are covered.
func TestNewEnvelopeMemoCannotOverwriteTheTransfer(t *testing.T) {
	to := tron.USDTContract
	for _, id := range []OperationID{"00000000-0000-4000-8000-000000000001", OperationID(strings.Repeat("x", 200))} {
		p := &Pipeline{Node: chainStub{}, Clock: fixedClock{}, Config: DefaultConfig()}
		op := Operation{ID: id, Request: Request{To: to, Amount: 5_000_000}}
		env, why := p.newEnvelope(context.Background(), op, 1, 1)
		if why != "" {
			t.Fatal(why)
		}
		data := bytes.Clone(env.Raw.Contract.Data)
		if !bytes.Equal(data, tron.EncodeTransfer(to, 5_000_000)) {
			t.Fatalf("id of %d bytes: call data %x, want the transfer's", len(id), data)
		}
		_ = append(env.Raw.Memo, bytes.Repeat([]byte{0xee}, 100)...)
		if !bytes.Equal(env.Raw.Contract.Data, data) {
			t.Errorf("id of %d bytes: appending to the memo changed the call data to %x", len(id), env.Raw.Contract.Data)
		}
		if got := env.Raw.Txid(); got != env.Txid {
			t.Errorf("id of %d bytes: appending to the memo changed the txid to %s, stored %s", len(id), got, env.Txid)
		}
	}
}

type fixedClock struct{}

func (fixedClock) Now() time.Time { return time.UnixMilli(9_500) }
