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

// directTxids is the direct baseline's workers' shared txid cache, kept
// from run to run as the simulated world keeps its own (records).
var directTxids = tron.NewTxidCache(txidSlots)

func (c *manualClock) Now() time.Time { return c.now }

// runDirect does the calm world's work with direct calls, event by event
// as the simulated world does it: the same 60 withdrawals, with the same
// payloads and the same arrival times (drawn from the same data stream in
// the same order), posted through the same HTTP handler with the same
// requests, for the same three customers; the same three-node network,
// each worker calling through a balancer that fails over as the world's
// does, and all of them sharing one txid cache (node included), as the
// world's do; 6 workers that tick, and sleep the idle poll after a tick
// that claimed nothing, as the world's workers do; a conductor that every 5 s
// ends the run once every post was answered and no row is open. Only what
// the simulator adds is missing: events due at one instant run one after
// another in the order they were scheduled, each tick whole, with no
// yields, no tape, no choices, no wrappers counting faults and coverage,
// no checking. It returns how many ticks the workers made, and the rows.
func runDirect(seed uint64) (int, []sluice.Operation) {
	cfg := Calm()
	ctx := context.Background()
	clk := &manualClock{now: epoch}
	data := rand.New(rand.NewPCG(seed, 0xda7a_da7a))
	signer := tron.NewHMACSigner([]byte("sluicesim hot wallet"))
	hot := tron.AddressFromBytes20([20]byte{0x40, 0x7e, 0x11})
	db := store.NewMemory(clk, cfg.Lease.D())
	net := mocknode.NewNetwork(clk, mocknode.Config{Genesis: epoch.Add(-10 * time.Minute), HotWallet: hot,
		HotBalance: uint64(cfg.Withdrawals+1) * uint64(amountMax), Verifier: signer, Txids: directTxids}, cfg.Nodes)
	handler := intake.NewHandler(&intake.Service{Store: db})
	var funded []sluice.CustomerID
	for i, customer := range customers {
		c := sluice.Credit{Ref: fmt.Sprintf("deposit-%d", i), Customer: customer,
			Amount: money.Amount(cfg.Withdrawals+1) * amountMax}
		if _, _, err := db.Credit(ctx, c); err != nil {
			panic(err)
		}
		funded = append(funded, c.Customer)
	}
	var q directQueue
	posts := make([]clientPost, cfg.Withdrawals)
	for i := range cfg.Withdrawals {
		// spawnClients's and spawnPost's draws, in their order.
		id := clientOperationID(data.Uint32(), i+1)
		amount := money.Amount(1 + data.Int64N(int64(amountMax)))
		to := tron.AddressFromBytes20([20]byte{0xc0, byte(i), byte(i >> 8), byte(data.Uint32())})
		customer := funded[data.IntN(len(funded))]
		posts[i] = tidyPost(intake.Submission{OperationID: id, Customer: string(customer), ToAddress: to.String(), Amount: amount.String(), Asset: sluice.Asset})
		arrive := time.Duration(data.Int64N(int64(cfg.ArrivalSpread.D()/time.Second)+1)) * time.Second
		q.at(arrive, directPost, i)
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
			Pipeline: &sluice.Pipeline{Store: db, Node: node, Signer: signer, Clock: clk, HotWallet: hot, Config: cfg.Sluice,
				Txids: directTxids},
			Rand: rand.New(rand.NewPCG(data.Uint64(), uint64(k)))})
		q.at(0, directTick, k)
	}
	q.at(cfg.ConductorPoll.D(), directConduct, 0)
	ticks, answered := 0, 0
	for {
		e := q.pop()
		clk.now = epoch.Add(e.at)
		switch e.kind {
		case directPost:
			p := posts[e.i]
			rec := recorder{code: http.StatusOK}
			handler.ServeHTTP(&rec, serverRequest(ctx, http.MethodPost, "/v1/withdrawals", p.body, p.contentType))
			if rec.code != http.StatusCreated {
				panic(fmt.Sprintf("post %d: %d %s", e.i, rec.code, rec.body))
			}
			answered++
		case directTick:
			rep, err := workers[e.i].Tick(ctx)
			if err != nil {
				panic(err)
			}
			ticks++
			next := e.at
			if rep.Claimed == 0 {
				next += cfg.IdlePoll.D()
			}
			q.at(next, directTick, e.i)
		case directConduct:
			if answered == len(posts) && db.Open() == 0 {
				return ticks, db.Snapshot().Operations
			}
			q.at(e.at+cfg.ConductorPoll.D(), directConduct, 0)
		}
	}
}

// directQueue is runDirect's events by time, then by the order they were
// scheduled: a binary heap, typed so that no event is boxed (the baseline
// must not pay for what the simulator does not).
type directQueue struct {
	events []directEvent
	seq    int
}

type directEvent struct {
	at      time.Duration // after the start
	seq     int
	kind, i int
}

const (
	directPost = iota
	directTick
	directConduct
)

func (x directEvent) before(y directEvent) bool {
	return x.at < y.at || (x.at == y.at && x.seq < y.seq)
}

func (q *directQueue) at(at time.Duration, kind, i int) {
	q.seq++
	q.events = append(q.events, directEvent{at: at, seq: q.seq, kind: kind, i: i})
	for c := len(q.events) - 1; c > 0; {
		p := (c - 1) / 2
		if !q.events[c].before(q.events[p]) {
			break
		}
		q.events[c], q.events[p] = q.events[p], q.events[c]
		c = p
	}
}

func (q *directQueue) pop() directEvent {
	top := q.events[0]
	last := len(q.events) - 1
	q.events[0] = q.events[last]
	q.events = q.events[:last]
	for p := 0; ; {
		c := 2*p + 1
		if c >= last {
			break
		}
		if c+1 < last && q.events[c+1].before(q.events[c]) {
			c++
		}
		if !q.events[c].before(q.events[p]) {
			break
		}
		q.events[c], q.events[p] = q.events[p], q.events[c]
		p = c
	}
	return top
}

// Goal: the direct baseline does the simulated calm run's work: the same
// rows (ids and payloads, in the same order of arrival up to ties), every
// one confirmed in both, and about as many worker ticks (within a tenth:
// events at one instant run in another order, so a tick may find claimed a
// row that another worker's tick, interleaved in the simulation, had not
// yet taken). And the calm world fires no fault.
func TestDirectDoesTheSimulatedWork(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		ticks, rows := runDirect(seed)
		res := Run(Calm(), seed, Options{keepSnapshot: true})
		if len(res.Violations) > 0 {
			t.Fatalf("calm seed %d: %v", seed, res.Violations)
		}
		for _, k := range res.Tally {
			if k.Count != 0 {
				t.Errorf("calm seed %d fired %s %d times, want 0", seed, k.Kind, k.Count)
			}
		}
		sim := map[sluice.OperationID]sluice.Operation{}
		for _, op := range res.Snapshot.Operations {
			sim[op.ID] = op
		}
		if len(rows) != len(sim) || len(rows) != Calm().Withdrawals {
			t.Fatalf("calm seed %d: direct made %d rows, simulated %d, want %d", seed, len(rows), len(sim), Calm().Withdrawals)
		}
		for _, op := range rows {
			s, ok := sim[op.ID]
			switch {
			case !ok:
				t.Fatalf("calm seed %d: direct row %s is not among the simulated run's", seed, op.ID)
			case s.Request != op.Request:
				t.Fatalf("calm seed %d: row %s: direct request %+v, simulated %+v", seed, op.ID, op.Request, s.Request)
			case op.State != sluice.Confirmed || s.State != sluice.Confirmed:
				t.Fatalf("calm seed %d: row %s ended %s direct, %s simulated; want both confirmed", seed, op.ID, op.State, s.State)
			}
		}
		if d := ticks - res.ticks; d*10 > res.ticks || -d*10 > res.ticks {
			t.Errorf("calm seed %d: direct made %d ticks, simulated %d: more than a tenth apart", seed, ticks, res.ticks)
		}
		t.Logf("calm seed %d: %d ticks direct, %d simulated", seed, ticks, res.ticks)
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
