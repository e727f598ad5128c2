package mocknode

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"sluicesim/sluice/tron"
)

// cloneLogsBefore is cloneLogs as it was, one allocation per slice: the
// definition the one-allocation copy is held to.
func cloneLogsBefore(logs []tron.Log) []tron.Log {
	if logs == nil {
		return nil
	}
	out := make([]tron.Log, len(logs))
	for i, l := range logs {
		var data []byte
		if l.Data != nil {
			data = append([]byte{}, l.Data...)
		}
		out[i] = tron.Log{
			Address: l.Address,
			Topics:  append([][32]byte(nil), l.Topics...),
			Data:    data,
		}
	}
	return out
}

// randomLogs draws log lists of every shape around the one-log fast path:
// none, nil or empty topics and data, up to four topics and 40 bytes.
func randomLogs(r *rand.Rand) []tron.Log {
	switch r.IntN(8) {
	case 0:
		return nil
	case 1:
		return []tron.Log{}
	}
	logs := make([]tron.Log, 1+r.IntN(3)*r.IntN(2))
	for i := range logs {
		l := &logs[i]
		l.Address[r.IntN(20)] = byte(r.Uint32())
		switch n := r.IntN(6); n {
		case 5:
			l.Topics = [][32]byte{}
		default:
			for range n {
				var t [32]byte
				t[r.IntN(32)] = byte(r.Uint32())
				l.Topics = append(l.Topics, t)
			}
		}
		switch n := r.IntN(4); n {
		case 0: // nil
		case 1:
			l.Data = []byte{}
		default:
			l.Data = make([]byte, []int{0, 0, 32, 1 + r.IntN(40)}[n])
			for j := range l.Data {
				l.Data[j] = byte(r.Uint32())
			}
		}
	}
	return logs
}

// Goal: cloneLogs copies exactly as it did (nil stays nil, empty data stays
// empty), shares no memory with its source, and hands out the slices it
// carves from one allocation (a single log's) capped at their length, so
// that appending to one never writes into its neighbour.
func TestCloneLogsMatchesBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		src := randomLogs(r)
		want := cloneLogsBefore(src)
		got := cloneLogs(src)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("cloneLogs(%v) = %v, want %v", src, got, want)
		}
		carved := len(src) == 1 && len(src[0].Topics) <= 3 && len(src[0].Data) <= 32
		for i := range got {
			if len(got[i].Topics) > 0 {
				if carved && cap(got[i].Topics) != len(got[i].Topics) {
					t.Fatalf("topics of %v: cap %d, len %d", got[i], cap(got[i].Topics), len(got[i].Topics))
				}
				got[i].Topics[0][0]++
				if src[i].Topics[0] == got[i].Topics[0] {
					t.Fatalf("topics of %v share memory with the source", src[i])
				}
			}
			if len(got[i].Data) > 0 {
				if carved && cap(got[i].Data) != len(got[i].Data) {
					t.Fatalf("data of %v: cap %d, len %d", got[i], cap(got[i].Data), len(got[i].Data))
				}
				got[i].Data[0]++
				if src[i].Data[0] == got[i].Data[0] {
					t.Fatalf("data of %v shares memory with the source", src[i])
				}
			}
		}
	}
}

// Goal: the exact execution's one-allocation effects are what effects
// computed for it before (one movement, tron.TransferLog's log), and the
// recipient's transfer is what parsing that log gave, for addresses with
// and without the network prefix.
func TestExactEffectsMatchTransferLog(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	addr := func() tron.Address {
		var a tron.Address
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		if r.IntN(2) == 0 {
			a[0] = tron.AddressPrefix
		}
		return a
	}
	for range 2000 {
		owner, to, amount := addr(), addr(), r.Uint64()
		moves, logs := exactEffects(owner, to, amount)
		wantMoves := []tron.Transfer{{Contract: tron.USDTContract, From: owner, To: to, Amount: amount}}
		wantLogs := []tron.Log{tron.TransferLog(tron.USDTContract, owner, to, amount)}
		if !reflect.DeepEqual(moves, wantMoves) || !reflect.DeepEqual(logs, wantLogs) {
			t.Fatalf("exactEffects(%v, %v, %d) = %v %v, want %v %v", owner, to, amount, moves, logs, wantMoves, wantLogs)
		}
		m := tron.Transfer{Contract: addr(), From: owner, To: to, Amount: amount}
		want, ok := tron.ParseTransferLog(tron.TransferLog(m.Contract, m.From, m.To, m.Amount))
		if got := loggedTransfer(m); !ok || got != want {
			t.Fatalf("loggedTransfer(%v) = %v, want %v (parsed %v)", m, got, want, ok)
		}
	}
}

// Goal: a timeout's error says what fmt.Errorf said and is tron.ErrTimeout
// to errors.Is.
func TestTimeoutErrorText(t *testing.T) {
	id := tron.Txid{0xab, 0xcd, 0x01, 0x02, 0x03}
	for _, worker := range []string{"w1", `odd "worker"` + "\n"} {
		tests := []struct {
			err  error
			want string
		}{
			{&timeoutError{call: "lookup", worker: worker, txid: id, hasTxid: true}, fmt.Sprintf("mocknode: lookup %s by %q: %v", id.Short(), worker, tron.ErrTimeout)},
			{&timeoutError{call: "broadcast", worker: worker, txid: id, hasTxid: true}, fmt.Sprintf("mocknode: broadcast %s by %q: %v", id.Short(), worker, tron.ErrTimeout)},
			{&timeoutError{call: "head block", worker: worker}, fmt.Sprintf("mocknode: head block by %q: %v", worker, tron.ErrTimeout)},
			{&timeoutError{call: "solid block", worker: worker}, fmt.Sprintf("mocknode: solid block by %q: %v", worker, tron.ErrTimeout)},
		}
		for _, tt := range tests {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if !errors.Is(tt.err, tron.ErrTimeout) {
				t.Errorf("%v is not tron.ErrTimeout", tt.err)
			}
			if wrapped := fmt.Errorf("pipeline: %w", tt.err); !errors.Is(wrapped, tron.ErrTimeout) {
				t.Errorf("%v wrapped is not tron.ErrTimeout", tt.err)
			}
		}
	}
}

// Goal: cloneTx is a deep copy whose three slices cannot grow into each
// other: the pool keeps it while the sender reuses its own buffers, and an
// append to the clone's signature or memo must leave the transfer (and so
// the txid) as it was. A nil slice stays nil.
func TestCloneTxIsDeepAndSeparate(t *testing.T) {
	src := tron.Transaction{
		Raw:       tron.RawData{Expiration: 3, Memo: []byte("sluice:op:1"), Contract: tron.TriggerSmartContract{Data: tron.EncodeTransfer(tron.USDTContract, 7)}},
		Signature: bytes.Repeat([]byte{0x5a}, 65),
	}
	txid := src.Txid()
	c := cloneTx(src)
	want := tron.Transaction{Raw: src.Raw, Signature: bytes.Clone(src.Signature)}
	want.Raw.Memo = bytes.Clone(src.Raw.Memo)
	want.Raw.Contract.Data = bytes.Clone(src.Raw.Contract.Data)
	for _, b := range [][]byte{src.Signature, src.Raw.Memo, src.Raw.Contract.Data} {
		clear(b)
	}
	_ = append(c.Signature, 0xee, 0xee, 0xee) // within the shared buffer's room
	_ = append(c.Raw.Memo, 0xee, 0xee, 0xee)
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("clone after the source was cleared and the clone's signature and memo appended to:\n%+v\nwant\n%+v", c, want)
	}
	if c.Txid() != txid {
		t.Fatalf("clone's txid %s, want %s", c.Txid(), txid)
	}
	if n := cloneTx(tron.Transaction{}); n.Signature != nil || n.Raw.Memo != nil || n.Raw.Contract.Data != nil {
		t.Fatalf("clone of an empty transaction has non-nil slices: %+v", n)
	}
}
