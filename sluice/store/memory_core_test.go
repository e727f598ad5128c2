package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

type fixedClock struct{}

func (fixedClock) Now() time.Time { return time.Unix(0, 0) }

// Goal: the lazily formatted not-found error reads exactly as the wrapped
// fmt.Errorf pair it replaced, and still matches sluice.ErrNotFound.
func TestNotFoundErrorText(t *testing.T) {
	for _, id := range []sluice.OperationID{"", "0b0e4c1e-8f7a-4a55-9d8f-2a8f5d5a6f01", `quo"te`, "tab\there", "ünï", "\xff"} {
		for _, op := range []string{"get", "cas", "park", "resolve", "events"} {
			err := notFound(op, id)
			want := fmt.Errorf("%s: %w", op, fmt.Errorf("operation %q: %w", id, sluice.ErrNotFound))
			if err.Error() != want.Error() {
				t.Errorf("notFound(%q, %q) = %q, want %q", op, id, err, want)
			}
			if !errors.Is(err, sluice.ErrNotFound) {
				t.Errorf("notFound(%q, %q) does not match ErrNotFound", op, id)
			}
		}
	}
	m := NewMemory(fixedClock{}, time.Minute)
	for _, err := range []error{
		func() error { _, err := m.Get(context.Background(), "nope"); return err }(),
		func() error { _, err := m.Events(context.Background(), "nope"); return err }(),
	} {
		if !errors.Is(err, sluice.ErrNotFound) || err.Error() != `get: operation "nope": operation not found` && err.Error() != `events: operation "nope": operation not found` {
			t.Errorf("a read of a missing id: %v", err)
		}
	}
}

// Goal: the two copies of a new envelope CAS makes from one allocation (the
// row's and the caller's) share nothing: writing through the returned row
// changes neither the store nor another read of it.
func TestCASEnvelopeCopiesAreSeparate(t *testing.T) {
	a, b := copyEnvelopeTwice(sluice.Envelope{Signature: []byte{1, 2}, Raw: tron.RawData{Memo: []byte("m"),
		Contract: tron.TriggerSmartContract{Data: []byte{1, 2, 3}}}})
	a.Signature[0], a.Raw.Memo[0], a.Raw.Contract.Data[0] = 9, 9, 9
	if b.Signature[0] == 9 || b.Raw.Memo[0] == 9 || b.Raw.Contract.Data[0] == 9 {
		t.Fatalf("copies share memory: %+v", b)
	}
	for _, s := range [][]byte{a.Signature, a.Raw.Memo, a.Raw.Contract.Data, b.Signature, b.Raw.Memo, b.Raw.Contract.Data} {
		if len(s) != cap(s) {
			t.Errorf("copy of len %d has cap %d: an append would write into its neighbour", len(s), cap(s))
		}
	}
}

// Goal: sameRaw is equality of the canonical serialization, so CAS may
// reuse the row's txid exactly when hashing would give it. Method: random
// pairs that differ in one field, or in none; and a guard that fails when
// RawData gains a field sameRaw does not compare.
func TestSameRawIsSerializationEquality(t *testing.T) {
	if n := reflect.TypeFor[tron.RawData]().NumField(); n != 7 {
		t.Fatalf("tron.RawData has %d fields; sameRaw compares 7: update it", n)
	}
	if n := reflect.TypeFor[tron.TriggerSmartContract]().NumField(); n != 3 {
		t.Fatalf("tron.TriggerSmartContract has %d fields; sameRaw compares 3: update it", n)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		a := tron.RawData{RefBlockBytes: [2]byte{1, 2}, RefBlockHash: [8]byte{3}, Expiration: 5, Timestamp: 6, FeeLimit: 7,
			Memo: []byte("sluice:x:1"), Contract: tron.TriggerSmartContract{Owner: tron.Address{0x41, 1}, Contract: tron.Address{0x41, 2}, Data: []byte{9, 9}}}
		b := a
		b.Memo, b.Contract.Data = bytes.Clone(a.Memo), bytes.Clone(a.Contract.Data)
		switch r.IntN(12) {
		case 0:
			b.RefBlockBytes[r.IntN(2)]++
		case 1:
			b.RefBlockHash[r.IntN(8)]++
		case 2:
			b.Expiration++
		case 3:
			b.Timestamp--
		case 4:
			b.FeeLimit *= 2
		case 5:
			b.Memo[r.IntN(len(b.Memo))]++
		case 6:
			b.Memo = b.Memo[:r.IntN(len(b.Memo))]
		case 7:
			b.Contract.Owner[1+r.IntN(20)]++
		case 8:
			b.Contract.Contract[r.IntN(21)]++
		case 9:
			b.Contract.Data = append(b.Contract.Data, 0)
		case 10:
			a.Memo, b.Memo = nil, []byte{}
		}
		if got, want := sameRaw(&a, &b), bytes.Equal(a.Marshal(), b.Marshal()); got != want {
			t.Fatalf("case %d: sameRaw = %v, serializations equal = %v\na %+v\nb %+v", i, got, want, a, b)
		}
		row := sluice.Envelope{Txid: a.Txid(), Raw: a}
		if got, want := envelopeTxid(&row, &sluice.Envelope{Raw: b}), b.Txid(); got != want {
			t.Fatalf("case %d: envelopeTxid = %s, want %s", i, got, want)
		}
	}
}

// Goal: EventCount is len(Events) for every id, and false for a missing one.
func TestEventCountMatchesEvents(t *testing.T) {
	m := NewMemory(fixedClock{}, time.Minute)
	ctx := context.Background()
	if n, ok := m.EventCount("nope"); n != 0 || ok {
		t.Errorf("EventCount of a missing id = %d, %v", n, ok)
	}
	if _, _, err := m.Credit(ctx, sluice.Credit{Ref: "r", Customer: "c1", Amount: 100}); err != nil {
		t.Fatal(err)
	}
	id := sluice.OperationID("0b0e4c1e-8f7a-4a55-9d8f-2a8f5d5a6f01")
	req := sluice.Request{Customer: "c1", To: tron.USDTContract, Amount: 1, Asset: sluice.Asset}
	req.To[1] ^= 1
	if _, _, err := m.Insert(ctx, sluice.NewOperation{ID: id, Request: req, RequestHash: "h"}); err != nil {
		t.Fatal(err)
	}
	ops, err := m.Claim(ctx, "w", 1)
	if err != nil || len(ops) != 1 {
		t.Fatal(ops, err)
	}
	if _, err := m.CAS(ctx, sluice.Change{ID: id, Token: ops[0].Token, Worker: "w", From: sluice.Requested, To: sluice.Validated}); err != nil {
		t.Fatal(err)
	}
	evs, err := m.Events(ctx, id)
	if n, ok := m.EventCount(id); err != nil || !ok || n != len(evs) || n != 2 {
		t.Errorf("EventCount = %d, %v; Events has %d (%v)", n, ok, len(evs), err)
	}
}

// Goal: the lazily formatted fenced error reads as the fmt.Errorf it
// replaced and matches ErrFenced.
func TestCASFencedErrorText(t *testing.T) {
	for _, id := range []sluice.OperationID{"", "0b0e4c1e-8f7a-4a55-9d8f-2a8f5d5a6f01"} {
		for s := sluice.None; s <= sluice.Review+2; s++ {
			e := &casFencedError{id: id, from: s, to: sluice.Review, token: 3, rowState: sluice.Signed, rowToken: 1 << 40}
			want := fmt.Errorf("cas %s %s->%s token=%d: row is %s token=%d: %w", id, s, sluice.Review, 3, sluice.Signed, 1<<40, sluice.ErrFenced)
			if e.Error() != want.Error() || !errors.Is(e, sluice.ErrFenced) {
				t.Fatalf("got %q, want %q", e.Error(), want.Error())
			}
		}
	}
}
