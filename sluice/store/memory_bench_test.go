package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
)

// benchStore is a store holding n operations as a long run leaves them: the
// oldest three quarters terminal (rejected), and of the newest quarter every
// other one leased by "setup" with a live lease, the rest claimable.
func benchStore(b *testing.B, n int) *store.Memory {
	b.Helper()
	ctx := context.Background()
	m := store.NewMemory(&storetest.Clock{}, time.Minute)
	if _, _, err := m.Credit(ctx, sluice.Credit{Ref: "bench", Customer: payer, Amount: money.MaxAmount}); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if _, _, err := m.Insert(ctx, newOp(i)); err != nil {
			b.Fatal(err)
		}
	}
	ops, err := m.Claim(ctx, "setup", n)
	if err != nil || len(ops) != n {
		b.Fatalf("setup claim: %d rows, %v", len(ops), err)
	}
	for i, op := range ops {
		switch {
		case i < 3*n/4:
			if _, err := m.CAS(ctx, sluice.Change{ID: op.ID, Token: op.Token, Worker: "setup", From: sluice.Requested, To: sluice.Rejected, Reason: "bench", Hold: sluice.HoldRelease}); err != nil {
				b.Fatal(err)
			}
		case i%2 == 0:
			if err := m.Release(ctx, op.ID, op.Token, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	return m
}

// BenchmarkMemoryClaim is one Claim of 4 rows, and the Releases that hand
// them back, in a store of n rows (see benchStore).
func BenchmarkMemoryClaim(b *testing.B) {
	for _, n := range []int{60, 1000, 10000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			m := benchStore(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				ops, err := m.Claim(ctx, "w", 4)
				if err != nil || len(ops) != 4 {
					b.Fatalf("Claim = %d rows, %v", len(ops), err)
				}
				for _, op := range ops {
					if err := m.Release(ctx, op.ID, op.Token, 0); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkMemoryList is one page of the operator's queue kind: the first
// 50 rows of a state, by id, in a store of n rows (see benchStore) of
// which three quarters match.
func BenchmarkMemoryList(b *testing.B) {
	for _, n := range []int{60, 1000, 10000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			m := benchStore(b, n)
			ctx := context.Background()
			f := sluice.ListFilter{States: []sluice.State{sluice.Rejected}, Limit: 50}
			want := min(50, 3*n/4)
			b.ReportAllocs()
			for b.Loop() {
				ops, err := m.List(ctx, f)
				if err != nil || len(ops) != want {
					b.Fatalf("List = %d rows, %v; want %d", len(ops), err, want)
				}
			}
		})
	}
}

// BenchmarkMemoryClaimNone is a Claim that finds nothing claimable (every
// open row leased), the common case of an idle worker's tick.
func BenchmarkMemoryClaimNone(b *testing.B) {
	for _, n := range []int{60, 1000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			m := benchStore(b, n)
			ctx := context.Background()
			if _, err := m.Claim(ctx, "hog", n); err != nil { // every free row
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				ops, err := m.Claim(ctx, "w", 4)
				if err != nil || len(ops) != 0 {
					b.Fatalf("Claim = %d rows, %v", len(ops), err)
				}
			}
		})
	}
}

// BenchmarkMemoryLifecycle is one operation's life as the pipeline writes
// it: insert, claim, five CASes (one with an envelope), the events read
// back, in a store that keeps growing.
func BenchmarkMemoryLifecycle(b *testing.B) {
	ctx := context.Background()
	clock := &storetest.Clock{}
	m := store.NewMemory(clock, time.Minute)
	if _, _, err := m.Credit(ctx, sluice.Credit{Ref: "bench", Customer: payer, Amount: money.MaxAmount}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, _, err := m.Insert(ctx, newOp(i)); err != nil {
			b.Fatal(err)
		}
		ops, err := m.Claim(ctx, "w", 1)
		if err != nil || len(ops) != 1 {
			b.Fatalf("Claim = %v, %v", ops, err)
		}
		op := ops[0]
		env := envelope(fmt.Sprint(i))
		env.Signature = []byte("signature")
		steps := []sluice.Change{
			{From: sluice.Requested, To: sluice.Validated},
			{From: sluice.Validated, To: sluice.Signing, Envelope: &env, Builds: 1},
			{From: sluice.Signing, To: sluice.Signed},
			{From: sluice.Signed, To: sluice.Broadcasting, FirstSend: true},
			{From: sluice.Broadcasting, To: sluice.Broadcast},
			{From: sluice.Broadcast, To: sluice.Confirmed, Hold: sluice.HoldSettle},
		}
		for _, c := range steps {
			c.ID, c.Token, c.Worker = op.ID, op.Token, "w"
			if _, err := m.CAS(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
		if evs, err := m.Events(ctx, op.ID); err != nil || len(evs) != 7 {
			b.Fatalf("Events = %d, %v", len(evs), err)
		}
	}
}

// BenchmarkMemorySnapshot is a Snapshot of a store of 60 settled
// operations, as the end of a calm run takes.
func BenchmarkMemorySnapshot(b *testing.B) {
	ctx := context.Background()
	clock := &storetest.Clock{}
	m := store.NewMemory(clock, time.Minute)
	if _, _, err := m.Credit(ctx, sluice.Credit{Ref: "bench", Customer: payer, Amount: money.MaxAmount}); err != nil {
		b.Fatal(err)
	}
	for i := range 60 {
		if _, _, err := m.Insert(ctx, newOp(i)); err != nil {
			b.Fatal(err)
		}
		ops, _ := m.Claim(ctx, "w", 1)
		op := ops[0]
		env := envelope(fmt.Sprint(i))
		if _, err := m.CAS(ctx, sluice.Change{ID: op.ID, Token: op.Token, From: sluice.Requested, To: sluice.Validated}); err != nil {
			b.Fatal(err)
		}
		if _, err := m.CAS(ctx, sluice.Change{ID: op.ID, Token: op.Token, From: sluice.Validated, To: sluice.Signing, Envelope: &env, Builds: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if s := m.Snapshot(); len(s.Operations) != 60 {
			b.Fatal(len(s.Operations))
		}
	}
}
