package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"sluicesim/model"
	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// ModelVersion fingerprints how the worlds model sluice. Bump it whenever a
// change makes old traces ask different questions, so that replaying one says
// so up front instead of diverging mysteriously.
const ModelVersion = "worlds/1"

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Result is one run's outcome.
type Result struct {
	Seed       uint64
	Violations []model.Violation
	Tally      []model.Tally
	Steps      int
	Virtual    time.Duration // virtual time the run covered
	Failure    string        // a panic or divergence, also reported as a violation
	Trace      *sim.Trace    // only when tracing
}

// Failed reports whether any invariant was violated.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// Run runs one seed of the world with the random strategy.
func Run(cfg Config, seed uint64, tracing bool) *Result {
	return run(cfg, seed, sim.NewRandom(seed), "random", tracing)
}

// Replay re-runs a trace and compares the events it produces with the
// recorded ones. The error names the first divergence.
func Replay(t *sim.Trace) (*Result, error) {
	if t.Header.Model != ModelVersion {
		return nil, fmt.Errorf("trace was recorded by model %q, this build is %q", t.Header.Model, ModelVersion)
	}
	cfg, err := World(t.Header.World)
	if err != nil {
		return nil, err
	}
	if err := strictJSON(t.Header.Config, &cfg); err != nil {
		return nil, fmt.Errorf("trace config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("trace config: %w", err)
	}
	res := run(cfg, t.Header.Seed, sim.NewReplay(t.Tape), t.Header.Strategy, true)
	got := res.Trace.Events
	for i := range max(len(got), len(t.Events)) {
		switch {
		case i >= len(got):
			return res, fmt.Errorf("replay diverged at event %d: the trace has %q, the run ended", i, t.Events[i].Describe())
		case i >= len(t.Events):
			return res, fmt.Errorf("replay diverged at event %d: the run has %q, the trace ended", i, got[i].Describe())
		case got[i] != t.Events[i]:
			return res, fmt.Errorf("replay diverged at event %d:\n  trace: %s\n  run:   %s", i, t.Events[i].Describe(), got[i].Describe())
		}
	}
	if len(res.Trace.Tape) != len(t.Tape) {
		return res, fmt.Errorf("replay used %d of the trace's %d choices", len(res.Trace.Tape), len(t.Tape))
	}
	return res, nil
}

// world is one run's state.
type world struct {
	cfg   Config
	s     *sim.Sim
	data  *rand.Rand // data stream: amounts, ids; never a scheduling decision
	ctx   context.Context
	store *store.Memory
	node  *mocknode.Node
	sign  *tron.HMACSigner
	hot   tron.Address

	healAt  time.Time
	names   map[sluice.OperationID]string
	tally   map[string]int
	intake  []model.IntakeRecord
	clients int // clients still to answer
	seen    map[tron.Txid]bool
	gen     map[int]int // incarnations per worker slot
}

func run(cfg Config, seed uint64, strategy sim.Strategy, strategyName string, tracing bool) *Result {
	s := sim.New(strategy, sim.Options{Start: epoch, StepsMax: cfg.StepsMax, Tracing: tracing})
	signer := tron.NewHMACSigner([]byte("sluicesim hot wallet"))
	w := &world{
		cfg:    cfg,
		s:      s,
		data:   rand.New(rand.NewPCG(seed, 0xda7a_da7a)),
		ctx:    context.Background(),
		sign:   signer,
		hot:    tron.AddressFromBytes20([20]byte{0x40, 0x7e, 0x11}),
		healAt: epoch.Add(cfg.HealAt.D()),
		names:  map[sluice.OperationID]string{},
		tally:  map[string]int{},
		seen:   map[tron.Txid]bool{},
		gen:    map[int]int{},
	}
	w.store = store.NewMemory(s, cfg.Lease.D())
	w.node = mocknode.New(s, mocknode.Config{
		Genesis:    epoch.Add(-10 * time.Minute),
		HotWallet:  w.hot,
		HotBalance: uint64(cfg.Withdrawals+1) * uint64(amountMax),
		Verifier:   signer,
	})
	w.node.SetFaults(w.nodeFault)

	w.spawnClients()
	for slot := range cfg.Workers {
		w.spawnWorker(slot, 0)
	}
	if cfg.ChainEvents {
		s.Spawn("chain", w.chainLoop)
	}
	s.Spawn("conductor", w.conduct)

	err := s.Run()
	res := &Result{Seed: seed, Steps: s.Steps(), Virtual: s.Elapsed()}
	snap := w.snapshot(errors.Is(err, sim.ErrBudget))
	res.Violations = model.Check(snap)
	if err != nil && !errors.Is(err, sim.ErrBudget) {
		res.Failure = err.Error()
		res.Violations = append(res.Violations, model.Violation{Invariant: "panic", Message: err.Error()})
	}
	res.Tally = w.faultTally()
	if tracing {
		cfgJSON, _ := json.Marshal(cfg)
		verdict, _ := json.Marshal(res.Violations)
		res.Trace = &sim.Trace{
			Header: sim.Header{World: cfg.Name, Config: cfgJSON, Seed: seed, Strategy: strategyName, Model: ModelVersion},
			Tape:   s.Tape(), Events: s.Events(), Verdict: verdict,
		}
	}
	return res
}

func (w *world) faulty() bool { return w.s.Now().Before(w.healAt) }

// name is a short, stable name for an operation in traces.
func (w *world) name(id sluice.OperationID) string {
	if n, ok := w.names[id]; ok {
		return n
	}
	return string(id)
}

// spawnClients creates the withdrawals and their clients: duplicates posted
// concurrently, conflicting payloads under used ids, invalid requests.
func (w *world) spawnClients() {
	cfg := w.cfg
	for i := range cfg.Withdrawals {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", w.data.Uint32(), i+1)
		w.names[sluice.OperationID(id)] = fmt.Sprintf("op%d", i+1)
		amount := money.Amount(1 + w.data.Int64N(int64(amountMax)))
		to := tron.AddressFromBytes20([20]byte{0xc0, byte(i), byte(i >> 8), byte(w.data.Uint32())})
		sub := intake.Submission{OperationID: id, ToAddress: to.String(), Amount: amount.String(), Asset: sluice.Asset}
		n := i + 1
		switch {
		case cfg.InvalidEvery > 0 && n%cfg.InvalidEvery == 0:
			// A JSON-number-looking amount: refused at the door.
			bad := sub
			bad.Amount = "1e6"
			w.spawnClient(fmt.Sprintf("c%d", n), bad, 0)
			w.tally["client-invalid"]++
			continue
		case cfg.DuplicateEvery > 0 && n%cfg.DuplicateEvery == 0:
			// Posted twice at the same instant; the twin writes the amount
			// differently but means the same instruction.
			twin := sub
			twin.Amount = amount.String() + pad(amount)
			w.spawnClient(fmt.Sprintf("c%d", n), sub, 0)
			w.spawnClient(fmt.Sprintf("c%d'", n), twin, 0)
			w.tally["client-duplicate"]++
			continue
		case cfg.ConflictEvery > 0 && n%cfg.ConflictEvery == 0:
			other := sub
			other.Amount = (amount%amountMax + 1).String()
			w.spawnClient(fmt.Sprintf("c%d", n), sub, 0)
			w.spawnClient(fmt.Sprintf("c%d*", n), other, 1)
			w.tally["client-conflict"]++
			continue
		}
		w.spawnClient(fmt.Sprintf("c%d", n), sub, 0)
	}
}

// pad returns trailing zeros that keep amount's meaning ("1.5" -> "1.50").
func pad(a money.Amount) string {
	s := a.String()
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			if len(s)-i-1 < money.Decimals {
				return "0"
			}
			return ""
		}
	}
	return ".0"
}

// spawnClient posts sub after an arrival delay chosen on the tape; later
// (>0) clients wait for the first wave so that they post to a used id.
func (w *world) spawnClient(name string, sub intake.Submission, wave int) {
	w.clients++
	arrive := time.Duration(w.data.Int64N(int64(w.cfg.ArrivalSpread.D()/time.Second)+1)) * time.Second
	arrive += time.Duration(wave) * w.cfg.ArrivalSpread.D()
	w.s.Spawn(name, func(p *sim.Proc) {
		a := &actor{w: w, p: p}
		p.Sleep(arrive)
		svc := &intake.Service{Store: storeView{a}}
		rec := model.IntakeRecord{Client: name, ID: sub.OperationID, Call: int64(w.s.Steps())}
		if op, err := intake.Normalize(sub); err == nil {
			rec.RequestHash = op.RequestHash
		}
		res, err := svc.Submit(w.ctx, sub)
		rec.Return = int64(w.s.Steps())
		switch {
		case err == nil && res.Created:
			rec.Outcome, rec.Returned, rec.State = model.Created, res.Operation.RequestHash, res.Operation.State
		case err == nil:
			rec.Outcome, rec.Returned, rec.State = model.Replayed, res.Operation.RequestHash, res.Operation.State
		case errors.Is(err, sluice.ErrPayloadMismatch):
			rec.Outcome = model.Conflict
		case errors.Is(err, intake.ErrInvalid):
			rec.Outcome = model.Invalid
		default:
			rec.Outcome = model.Failed
		}
		a.event("client %s -> %s", sub.OperationID[:8], rec.Outcome)
		w.intake = append(w.intake, rec)
		w.clients--
	})
}

// spawnWorker starts incarnation gen of worker slot. Its wall clock gets a
// skew chosen on the tape; its jitter comes from the data stream.
func (w *world) spawnWorker(slot, gen int) {
	name := fmt.Sprintf("w%d", slot+1)
	if gen > 0 {
		name = fmt.Sprintf("w%d.%d", slot+1, gen)
	}
	w.s.Spawn(name, func(p *sim.Proc) {
		a := &actor{w: w, p: p, worker: true}
		if w.faulty() {
			a.skew = w.cfg.Skews[w.s.Choose("skew", len(w.cfg.Skews))].D()
			if a.skew != 0 {
				w.tally["clock-skew"]++
			}
		}
		worker := &sluice.Worker{
			ID: sluice.WorkerID(name),
			Pipeline: &sluice.Pipeline{
				Store: storeView{a}, Node: node{a: a, inner: w.node.Client(name)}, Signer: signer{a: a, inner: w.sign},
				Clock: clock{a}, HotWallet: w.hot, Config: w.cfg.Sluice,
			},
			Rand: rand.New(rand.NewPCG(w.data.Uint64(), uint64(slot))),
		}
		for {
			rep, err := worker.Tick(w.ctx)
			if err != nil {
				// Fencing is handled inside Tick; anything else is a bug in
				// the core or the store, and a failure of the run.
				panic(fmt.Sprintf("%s: Tick: %v", name, err))
			}
			if rep.Fenced {
				a.event("fenced: stops")
			}
			if rep.Claimed == 0 {
				p.Sleep(w.cfg.IdlePoll.D())
			}
		}
	})
}

// restartLater brings a crashed worker back as a fresh incarnation after a
// delay chosen on the tape. Its lease stays until it expires.
func (w *world) restartLater(a *actor) {
	var slot int
	fmt.Sscanf(a.p.Name(), "w%d", &slot)
	slot--
	delay := w.cfg.RestartDelays[w.s.Choose("restart-delay", len(w.cfg.RestartDelays))].D()
	w.gen[slot]++
	gen := w.gen[slot]
	w.s.Spawn(fmt.Sprintf("restart-w%d", slot+1), func(p *sim.Proc) {
		p.Sleep(delay)
		w.tally["worker-restart"]++
		w.spawnWorker(slot, gen)
	})
}

// nodeFault is the mock node's fault hook: every lie in the menu, chosen on
// the tape, until the heal point.
func (w *world) nodeFault(c mocknode.Call) mocknode.Fault {
	if !w.faulty() {
		return mocknode.None
	}
	if c.Kind != mocknode.Broadcast {
		if w.s.Chance("query-lie", w.cfg.QueryLieP) {
			return mocknode.QueryTimeout
		}
		return mocknode.None
	}
	if !w.seen[c.Txid] {
		w.seen[c.Txid] = true
		if w.s.Chance("receipt-fail", w.cfg.ReceiptFailP) {
			r := []string{tron.ReceiptRevert, tron.ReceiptOutOfEnergy}[w.s.Choose("receipt", 2)]
			w.node.SetOutcome(c.Txid, r)
		}
	}
	if w.s.Chance("lie", w.cfg.BroadcastLieP) {
		return broadcastLies[w.s.Choose("lie-kind", len(broadcastLies))]
	}
	return mocknode.None
}

var broadcastLies = []mocknode.Fault{
	mocknode.LoseRequest, mocknode.AcceptThenTimeout, mocknode.Busy, mocknode.NoConnection,
	mocknode.UnknownCode, mocknode.RelayFailAfterAccept, mocknode.OtherErrorAfterAccept,
	mocknode.ExpirationLie, mocknode.TaposLie,
}

// chainLoop injects chain and pool events until the heal point: node
// restarts (pool lost), evictions, missed slots.
func (w *world) chainLoop(p *sim.Proc) {
	for {
		p.Sleep(w.cfg.ChainGaps[w.s.Choose("chain-gap", len(w.cfg.ChainGaps))].D())
		if !w.faulty() {
			return
		}
		switch w.s.Choose("chain-event", 3) {
		case 0:
			w.node.Restart()
			w.s.Event("node restarts: pending pool lost")
		case 1:
			if pool := w.node.Pool(); len(pool) > 0 {
				id := pool[w.s.Choose("evict", len(pool))]
				w.node.Evict(id)
				w.s.Event("node evicts " + id.Short())
			}
		case 2:
			k := 1 + w.s.Choose("skip-slots", 3)
			w.node.SkipSlots(k)
			w.s.Event(fmt.Sprintf("producers miss %d slots", k))
		}
	}
}

// conduct ends the run once every client has its answer and every
// operation is terminal, or when the liveness budget after the heal point
// is spent (the liveness invariant then names what is stuck).
func (w *world) conduct(p *sim.Proc) {
	deadline := w.healAt.Add(w.cfg.LivenessBudget.D())
	for {
		p.Sleep(w.cfg.ConductorPoll.D())
		if w.clients == 0 && w.store.Open() == 0 {
			w.s.Stop()
			return
		}
		if !w.s.Now().Before(deadline) {
			w.s.Event("liveness budget spent")
			w.s.Stop()
			return
		}
	}
}

func (w *world) snapshot(budgetExhausted bool) *model.Snapshot {
	ss := w.store.Snapshot()
	return &model.Snapshot{
		Operations:      ss.Operations,
		Events:          ss.Events,
		Wire:            w.node.Wire(),
		Accepted:        w.node.Accepted(),
		Inclusions:      w.node.Inclusions(),
		Blocks:          w.node.Blocks(),
		SolidNumber:     w.node.Solid().Number,
		HotWallet:       w.hot,
		Intake:          w.intake,
		Healed:          w.healAt,
		End:             w.s.Now(),
		LivenessBudget:  w.cfg.LivenessBudget.D(),
		BudgetExhausted: budgetExhausted,
	}
}

// faultTally counts what actually fired this run: worker faults, node lies,
// chain events and hostile clients, every known kind listed.
func (w *world) faultTally() []model.Tally {
	counts := map[string]int{}
	for _, k := range TallyKinds {
		counts[k] = 0
	}
	for k, v := range w.tally {
		counts[k] += v
	}
	for _, f := range w.node.FaultsFired() {
		counts["node-"+f.Fault.String()] += f.Count
	}
	for _, e := range w.node.Events() {
		// Only the chain events the world injects are faults; a pool
		// entry aging out or an insufficient balance is just the chain.
		switch e.Event {
		case mocknode.MissedSlot, mocknode.PoolRestart, mocknode.PoolEvict, mocknode.OverrideReceipt:
			counts["chain-"+e.Event.String()] += e.Count
		}
	}
	out := make([]model.Tally, 0, len(counts))
	for k, v := range counts {
		out = append(out, model.Tally{Kind: k, Count: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}
