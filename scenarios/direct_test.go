package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

type manualClock struct{ now time.Time }

func (c *manualClock) Now() time.Time { return c.now }

// runDirect does the calm world's work with direct calls: the same 60
// withdrawals through intake, 6 workers ticking round-robin, one second of
// manual time whenever nobody had work. No scheduler, no yields, no tape.
func runDirect(seed uint64) int {
	cfg := Calm()
	ctx := context.Background()
	clk := &manualClock{now: epoch}
	data := rand.New(rand.NewPCG(seed, 0xda7a_da7a))
	signer := tron.NewHMACSigner([]byte("sluicesim hot wallet"))
	hot := tron.AddressFromBytes20([20]byte{0x40, 0x7e, 0x11})
	db := store.NewMemory(clk, cfg.Lease.D())
	node := mocknode.New(clk, mocknode.Config{Genesis: epoch.Add(-10 * time.Minute), HotWallet: hot,
		HotBalance: uint64(cfg.Withdrawals+1) * uint64(amountMax), Verifier: signer})
	svc := &intake.Service{Store: db}
	// Funded as the world funds its customers (fund), before any post.
	const customer = "cust-0"
	if _, _, err := db.Credit(ctx, sluice.Credit{Ref: "deposit-0", Customer: customer,
		Amount: money.Amount(cfg.Withdrawals+1) * amountMax}); err != nil {
		panic(err)
	}
	for i := range cfg.Withdrawals {
		to := tron.AddressFromBytes20([20]byte{0xc0, byte(i), byte(i >> 8), byte(data.Uint32())})
		amount := money.Amount(1 + data.Int64N(int64(amountMax)))
		sub := intake.Submission{OperationID: fmt.Sprintf("%08x-0000-4000-8000-%012x", data.Uint32(), i+1), Customer: customer,
			ToAddress: to.String(), Amount: amount.String(), Asset: sluice.Asset}
		if _, err := svc.Submit(ctx, sub); err != nil {
			panic(err)
		}
	}
	var workers []*sluice.Worker
	for k := range cfg.Workers {
		name := fmt.Sprintf("w%d", k+1)
		workers = append(workers, &sluice.Worker{ID: sluice.WorkerID(name),
			Pipeline: &sluice.Pipeline{Store: db, Node: node.Client(name), Signer: signer, Clock: clk, HotWallet: hot, Config: cfg.Sluice},
			Rand:     rand.New(rand.NewPCG(seed, uint64(k)))})
	}
	ticks := 0
	for db.Open() > 0 {
		claimed := 0
		for _, w := range workers {
			rep, err := w.Tick(ctx)
			if err != nil {
				panic(err)
			}
			claimed += rep.Claimed
			ticks++
		}
		if claimed == 0 {
			clk.now = clk.now.Add(time.Second)
		}
	}
	return ticks
}

func TestDirectBaselineSettles(t *testing.T) {
	if n := runDirect(1); n == 0 {
		t.Fatal("direct run did no work")
	}
	res := Run(Calm(), 1, Options{})
	if len(res.Violations) > 0 {
		t.Fatalf("calm world: %v", res.Violations)
	}
	for _, k := range res.Tally {
		if k.Count != 0 {
			t.Errorf("calm world fired %s %d times, want 0", k.Kind, k.Count)
		}
	}
}

// BenchmarkCalmDirect and BenchmarkCalmSimulated do the same work, without
// and with the scheduler (coroutines, yield points, tape): their ratio is the
// simulator's overhead.
func BenchmarkCalmDirect(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		runDirect(uint64(i + 1))
	}
}

func BenchmarkCalmSimulated(b *testing.B) {
	cfg := Calm()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Run(cfg, uint64(i+1), Options{})
	}
}
