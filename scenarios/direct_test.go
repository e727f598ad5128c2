package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
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
// withdrawals, drawn from the same data stream, posted through the same
// HTTP handler with the same requests, for the same three customers; the
// same three-node network with each worker calling through a balancer; 6
// workers ticking round-robin, one second of manual time whenever nobody
// had work. No scheduler, no yields, no tape, no checking: what the
// simulator's overhead is measured against.
func runDirect(seed uint64) int {
	cfg := Calm()
	ctx := context.Background()
	clk := &manualClock{now: epoch}
	data := rand.New(rand.NewPCG(seed, 0xda7a_da7a))
	signer := tron.NewHMACSigner([]byte("sluicesim hot wallet"))
	hot := tron.AddressFromBytes20([20]byte{0x40, 0x7e, 0x11})
	db := store.NewMemory(clk, cfg.Lease.D())
	net := mocknode.NewNetwork(clk, mocknode.Config{Genesis: epoch.Add(-10 * time.Minute), HotWallet: hot,
		HotBalance: uint64(cfg.Withdrawals+1) * uint64(amountMax), Verifier: signer}, cfg.Nodes)
	handler := intake.NewHandler(&intake.Service{Store: db})
	var customers []sluice.CustomerID
	for i := range customersN {
		c := sluice.Credit{Ref: fmt.Sprintf("deposit-%d", i), Customer: sluice.CustomerID(fmt.Sprintf("cust-%d", i)),
			Amount: money.Amount(cfg.Withdrawals+1) * amountMax}
		if _, _, err := db.Credit(ctx, c); err != nil {
			panic(err)
		}
		customers = append(customers, c.Customer)
	}
	for i := range cfg.Withdrawals {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", data.Uint32(), i+1)
		amount := money.Amount(1 + data.Int64N(int64(amountMax)))
		to := tron.AddressFromBytes20([20]byte{0xc0, byte(i), byte(i >> 8), byte(data.Uint32())})
		customer := customers[data.IntN(len(customers))]
		post := tidyPost(intake.Submission{OperationID: id, Customer: string(customer), ToAddress: to.String(), Amount: amount.String(), Asset: sluice.Asset})
		rec := recorder{code: http.StatusOK}
		handler.ServeHTTP(&rec, serverRequest(ctx, http.MethodPost, "/v1/withdrawals", post.body, post.contentType))
		if rec.code != http.StatusCreated {
			panic(fmt.Sprintf("post %d: %d %s", i, rec.code, rec.body))
		}
	}
	var workers []*sluice.Worker
	for k := range cfg.Workers {
		name := fmt.Sprintf("w%d", k+1)
		home := k % cfg.Nodes
		node := net.Balancer(name, func(r mocknode.Route) int {
			if r.Attempt > 0 {
				if r.Attempt >= cfg.Nodes {
					return mocknode.Stop
				}
				home = (r.Prev + 1) % cfg.Nodes
			}
			return home
		})
		workers = append(workers, &sluice.Worker{ID: sluice.WorkerID(name),
			Pipeline: &sluice.Pipeline{Store: db, Node: node, Signer: signer, Clock: clk, HotWallet: hot, Config: cfg.Sluice},
			Rand:     rand.New(rand.NewPCG(data.Uint64(), uint64(k)))})
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
// simulator's overhead. The simulated run is also judged (every invariant
// and the linearizability check), which the direct one is not: it reports
// that part as check-ns/op and the rest as run-ns/op, and run-ns/op over
// CalmDirect's ns/op is the scheduler's own overhead.
func BenchmarkCalmDirect(b *testing.B) {
	defer benchGC()()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		runDirect(uint64(i + 1))
	}
}

func BenchmarkCalmSimulated(b *testing.B) {
	defer benchGC()()
	cfg := Calm()
	b.ReportAllocs()
	var check time.Duration
	for i := 0; b.Loop(); i++ {
		check += Run(cfg, uint64(i+1), Options{Now: time.Now}).CheckTime
	}
	reportCheckShare(b, check)
}

// reportCheckShare splits a benchmark's time per run into the model's
// judging (check-ns/op) and everything else (run-ns/op).
func reportCheckShare(b *testing.B, check time.Duration) {
	n := float64(b.N)
	b.ReportMetric(float64(check.Nanoseconds())/n, "check-ns/op")
	b.ReportMetric(float64((b.Elapsed()-check).Nanoseconds())/n, "run-ns/op")
}
