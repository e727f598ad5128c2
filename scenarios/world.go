package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"sluicesim/model"
	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/metrics"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// ModelVersion fingerprints how the worlds model sluice. Bump it whenever a
// change makes old traces ask different questions, so that replaying one says
// so up front instead of diverging mysteriously.
const ModelVersion = "worlds/9"

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

	// Swarm is the world a swarm seed drew (nil without Config.Swarm).
	Swarm *SwarmDraw
	// TapeDigest is a hash of the whole choice tape (Options.TapeDigest).
	TapeDigest uint64

	// Pruned: exhaustive search cut the run short as redundant; it was
	// not checked.
	Pruned bool
	tape   []sim.Choice
	ticks  int // worker ticks made (tests)
	// diverged: a replay's run stopped because the code asked another
	// question than the tape holds (Replay reports it first).
	diverged *sim.Divergence

	// Stats are what the run did, for reports: always filled.
	Stats model.Stats
	// Outcomes say how the run's withdrawals ended and why (model's
	// reading): always filled.
	Outcomes model.Outcomes
	// Coverage is what the run reached of the coverage catalog (Coverage):
	// condition -> times reached, reached conditions only. Always filled.
	Coverage map[string]int

	// Snapshot is what the checkers looked at (only when tracing).
	Snapshot *model.Snapshot

	// Linearizability is the intake check's report (only when tracing),
	// for drawing porcupine's visualization.
	Linearizability *model.LinearizabilityReport

	// Wall-clock costs, measured only when Options.Now is set: the whole
	// run, and the checkers within it.
	Elapsed, CheckTime time.Duration
}

// Failed reports whether any invariant was violated.
func (r *Result) Failed() bool { return len(r.Violations) > 0 }

// Options are how to run, as opposed to what (the Config).
type Options struct {
	// Tracing records events and keeps the trace in the Result.
	Tracing bool
	// Now, if set, is a real clock used only to report how long the run
	// and its checks took. Simulated code never sees it.
	Now func() time.Time
	// PCTDepth > 0 schedules by PCT with that depth instead of at random.
	PCTDepth int

	// Stores makes each run's store (nil: store.Memory). The store is how
	// a world runs, not what it is: the same seed gives the same trace on
	// every store, so it is not in the trace header.
	Stores StoreFactory

	// TapeDigest sets Result.TapeDigest: explore's determinism re-check
	// (-recheck) compares two runs of a seed by it without keeping tapes.
	TapeDigest bool

	observer     sim.Observer // exhaustive search's footprint observer
	keepSnapshot bool         // keep Result.Snapshot without tracing
	keepTape     bool         // keep Result.tape without tracing or an observer
	// extraChoice, for tests, is a choice kind a probe process asks once:
	// a fault whose injection site has no row in the fault table.
	extraChoice string
	// wireHandler, for tests, wraps the node server of each wire in a wire
	// world (Config.Wire): to count what crosses it, or to mangle it.
	wireHandler func(http.Handler) http.Handler
	// wrapHandler, for tests, wraps the run's intake handler: a handler
	// whose answers a test rewrites (made cacheable, say).
	wrapHandler func(http.Handler) http.Handler
	// operatorWrap, for tests, wraps the operator API's handler a wire
	// world's operator talks to (operator_http.go).
	operatorWrap func(http.Handler) http.Handler
	// colleagueWrap, for tests, wraps the handler a wire world's second
	// person on call acts through (operator_colleague.go).
	colleagueWrap func(http.Handler) http.Handler
	// noSlips, for tests, has the wire world's person on call make no
	// slips (operator_slips.go).
	noSlips bool
	// noLengthLie, for tests, has hostile clients skip their lie about a
	// body's length (length_probe.go).
	noLengthLie bool
	// noLooks, for tests, has the wire world's person on call act without
	// opening the operation's page first (operator_look.go).
	noLooks bool
	// pages, for tests, is handed every page the looks open.
	pages func(body []byte)
	// lookWrap, for tests, wraps the looks' handler (operator_look.go).
	lookWrap func(http.Handler) http.Handler
	// noSupport, for tests, leaves out support's look at the finished
	// withdrawals (lookAtTheFinished).
	noSupport bool
}

// pctSteps is about how many scheduling decisions a chaos run makes; PCT
// spreads its priority change points over that many.
const pctSteps = 5000

// LinCheckTimeout bounds porcupine's search; running out is reported as a
// violation (unknown is not a pass).
const LinCheckTimeout = 10 * time.Second

// Run runs one seed of the world with the random strategy, or PCT.
func Run(cfg Config, seed uint64, o Options) *Result {
	if o.PCTDepth > 0 {
		return run(cfg, seed, sim.NewPCT(seed, o.PCTDepth, pctSteps), fmt.Sprintf("pct/%d", o.PCTDepth), o)
	}
	return run(cfg, seed, sim.NewRandom(seed), "random", o)
}

// Replay re-runs a trace and compares the events it produces with the
// recorded ones. The error names the first divergence.
func Replay(t *sim.Trace) (*Result, error) {
	if t.Header.Model != ModelVersion {
		return nil, fmt.Errorf("trace was recorded by model %q, this build is %q", t.Header.Model, ModelVersion)
	}
	if _, err := World(t.Header.World); err != nil {
		return nil, err
	}
	// The header holds the whole configuration. Decode it onto a zero
	// Config, never onto the world's defaults: a field left out because it
	// was zero (omitempty) must stay zero, not take today's default.
	var cfg Config
	if err := strictJSON(t.Header.Config, &cfg); err != nil {
		return nil, fmt.Errorf("trace config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("trace config: %w", err)
	}
	if t.Header.World != cfg.Name {
		return nil, fmt.Errorf("the trace header names world %q, but its configuration is world %q's", t.Header.World, cfg.Name)
	}
	pctDepth, seeded, err := ParseStrategy(t.Header.Strategy)
	if err != nil {
		return nil, err
	}
	res := run(cfg, t.Header.Seed, sim.NewReplay(t.Tape), t.Header.Strategy, Options{Tracing: true})
	// The run stops where the code first asks something the tape does
	// not hold: that question is the divergence, and the events and the
	// verdict that follow from the stop only obscure it.
	if res.diverged != nil {
		return res, res.diverged
	}
	got := res.Trace.Events
	for i := range max(len(got), len(t.Events)) {
		switch {
		case i >= len(got):
			return res, fmt.Errorf("replay diverged at event %d: the trace has %q, the run ended", i, t.Events[i].Describe())
		case i >= len(t.Events):
			return res, fmt.Errorf("replay diverged at event %d: the run has %q, the trace ended", i, got[i].Describe())
		case !got[i].Same(t.Events[i]):
			return res, fmt.Errorf("replay diverged at event %d:\n  trace: %s\n  run:   %s", i, t.Events[i].Describe(), got[i].Describe())
		}
	}
	if cfg.Swarm && !reflect.DeepEqual(cfg.SwarmDraw, res.Swarm) {
		return res, fmt.Errorf("the trace header's swarm draw (%v) is not what its tape draws (%v)", cfg.SwarmDraw, res.Swarm)
	}
	if len(res.Trace.Tape) != len(t.Tape) {
		return res, fmt.Errorf("replay used %d of the trace's %d choices", len(res.Trace.Tape), len(t.Tape))
	}
	// The same model judged the same events: the same verdict, unless the
	// footer was edited.
	if !bytes.Equal(res.Trace.Verdict, t.Verdict) {
		return res, fmt.Errorf("the trace's verdict is not the replay's: %s", verdictDiff(t.Verdict, res.Trace.Verdict))
	}
	// A seeded run's tape is what its seed and strategy draw, and the
	// re-run command printed for it rests on that: an edited seed or
	// strategy would replay (the tape decides) under a false label.
	if seeded {
		if again := Run(cfg, t.Header.Seed, Options{PCTDepth: pctDepth, keepTape: true}); !slices.Equal(again.tape, t.Tape) {
			return res, fmt.Errorf("the trace's tape is not what seed %d draws with strategy %s: the header's seed or strategy is not its run's", t.Header.Seed, t.Header.Strategy)
		}
	}
	return res, nil
}

// ParseStrategy reads a trace header's strategy: random and pct/N are
// seeded (the seed and strategy draw the tape again; pctDepth is N),
// exhaustive is not (only its tape reproduces it). Anything else, a depth
// written otherwise than this build writes it included, is an error.
func ParseStrategy(name string) (pctDepth int, seeded bool, err error) {
	switch {
	case name == "random":
		return 0, true, nil
	case name == "exhaustive":
		return 0, false, nil
	}
	if d, ok := strings.CutPrefix(name, "pct/"); ok {
		if n, err := strconv.Atoi(d); err == nil && n > 0 && strconv.Itoa(n) == d {
			return n, true, nil
		}
	}
	return 0, false, fmt.Errorf("the trace header's strategy %q is none this build writes (random, pct/N, exhaustive)", name)
}

// verdictDiff says how a trace's recorded verdict and a replay's (JSON
// lists of violations) differ: the first violation not in both, in short,
// rather than two whole lists.
func verdictDiff(recorded, replayed []byte) string {
	var rec, rep []model.Violation
	if json.Unmarshal(recorded, &rec) != nil {
		return fmt.Sprintf("the trace's is unreadable (%.80q)", recorded)
	}
	if json.Unmarshal(replayed, &rep) != nil {
		return fmt.Sprintf("the replay's is unreadable (%.80q)", replayed)
	}
	for i := range max(len(rec), len(rep)) {
		switch {
		case i >= len(rec):
			return fmt.Sprintf("the trace lists %d violations, the replay %d more, the first %s", len(rec), len(rep)-len(rec), shortViolation(rep[i]))
		case i >= len(rep):
			return fmt.Sprintf("the replay finds %d violations, the trace lists %d more, the first %s", len(rep), len(rec)-len(rep), shortViolation(rec[i]))
		case rec[i] != rep[i]:
			return fmt.Sprintf("violation %d of %d: the trace has %s, the replay %s", i+1, len(rec), shortViolation(rec[i]), shortViolation(rep[i]))
		}
	}
	return "they differ in their bytes alone"
}

func shortViolation(v model.Violation) string {
	return fmt.Sprintf("%s: %.200q", v.Invariant, v.Message)
}

// world is one run's state.
type world struct {
	cfg   Config
	s     *sim.Sim
	data  *rand.Rand // data stream: amounts, ids; never a scheduling decision
	ctx   context.Context
	store Store
	node  *mocknode.Node    // the producer (node 0): the one node of a single-node world
	net   *mocknode.Network // every node, and the chain's truth
	sign  *tron.HMACSigner
	hot   tron.Address
	// txids is the workers' shared txid cache, as the workers of one
	// process share one (cmd/sluice serve).
	txids *tron.TxidCache
	// meter is the metrics wrapper's instruments in a wire world (nil
	// until its first node is made).
	meter *metrics.Metrics
	// censusFailed: the census of the scrape being checked failed
	// (censusStore); reset by each check.
	censusFailed bool
	// wireHandler, operatorWrap and colleagueWrap are Options'.
	wireHandler, operatorWrap, colleagueWrap func(http.Handler) http.Handler
	// boxCache is the wire middlebox's last lookup answer passed on, and
	// the txid it was about (middlebox.go).
	boxCache struct {
		txid tron.Txid
		body []byte
	}
	// wt counts what crossed the wires; metricsBreaks are the scrapes'
	// disagreements with it (wire_metrics.go).
	wt            wireTally
	metricsBreaks []model.Violation
	// asked is the node call under way over a wire, as its caller handed
	// it to the client (wire_contract.go).
	asked wireAsked
	// served: what the node behind a wire's server did with the call
	// under way (wire.go's crossed).
	served served
	// creditAcct is the account the store returned to the latest credit
	// (the depositor holds the API's answer to it).
	creditAcct sluice.Account
	// steps counts the workers' reported steps' writes (step_metrics.go).
	steps stepTally
	// refusedActs and failedActs count the operator API's 409 and 503
	// answers to actions, by the action's metric label (wire_metrics.go).
	// invalidActs counts its 415, 422 and 404 answers to them, slips
	// among them (operator_slips.go), and slipsMade the slips made.
	refusedActs, failedActs, invalidActs [len(actionLabels)]int
	slipsMade                            int
	routeSlips                           int  // operator_slips.go's routeSlip
	noSlips, noLengthLie, noLooks        bool // Options'
	pages                                func([]byte)
	lookWrap                             func(http.Handler) http.Handler
	noSupport                            bool

	healAt  time.Time
	names   map[sluice.OperationID]string
	tally   map[string]int
	intake  []model.IntakeRecord
	handler http.Handler
	gw      gateway        // the shared cache in front of handler (gateway.go)
	pooled  *pooledHandler // handler's pooled parts, given back when the run is over
	looks   []*lookHandler // the looks' handlers (operator_look.go), given back with it
	support *looker        // the first person on call's look, for support's (lookAtTheFinished)
	ticks   int            // worker ticks made (for the direct baseline's test)
	rawBody bool
	calls   []*serverCall // finished requests' calls, for later requests
	keep    bool          // the withdrawal being set up is part of this world
	reads   []model.ReadRecord
	lclock  int64
	ids     []string
	clients int // clients still to answer
	seen    map[tron.Txid]bool
	gen     map[int]int // incarnations per worker slot
	// rollout is the releases the workers run: 0 the world's own, 1 a
	// deploy's once it began (deploy.go). incarnation is each worker
	// slot's latest actor, kept only in a world that deploys.
	rollout     [2]release
	incarnation []*actor
	// builtUnder is, in a world that deploys, the release each envelope
	// was built under and its fee limit, for coverage (wrap.go's landed).
	builtUnder map[tron.Txid]builtUnder
	// deployed is the deployed release for the checkers, once the deploy
	// began: the workers that run it, and what it changed.
	deployed *model.Deployment

	// The world's own record of who did what (never the store's), for
	// one-writer and audit-log.
	claims     []model.ClaimRecord
	claimCalls []model.ClaimCall
	writes     []model.WriteRecord
	releases   []model.ReleaseRecord
	parks      []model.ReleaseRecord
	envelopes  []sluice.Envelope
	// fenced: the workers' writes the store refused as fenced; rare (a few
	// a run), so not kept between runs.
	fenced []model.FencedRecord
	// signerFailures: rare (a few a run), so not kept between runs.
	signerFailures []model.SignerFailure
	// storeFailures: a worker's store calls the world failed; rare, so
	// not kept between runs either.
	storeFailures []model.StoreFailure
	// stored: the txids in envelopes, each with the operation whose write
	// stored it (the world's record: a worker's lookup is judged as of it).
	stored map[tron.Txid]sluice.OperationID
	// views: each row's state and txid as the world saw its accepted
	// writes set them (a CAS's To and envelope, a resolution's To): the
	// world's own view of a row, never read back from the store.
	views map[sluice.OperationID]rowView

	// Transactions the chain may still hear of by another path: sends a
	// node lost, and pool entries it dropped. The relay process re-sends
	// them as a peer would.
	// The customers the clients withdraw for, and the world's own record
	// of every deposit it credited them (ground truth for funds).
	// The hot wallet's current shortage (chain.go) and when it is topped up.
	shortKind  int
	shortUntil time.Time
	// The energy price's spike (EnergySpikeP), while spiked, lasts until
	// energyUntil.
	energySpiked bool
	energyUntil  time.Time
	// The signer's outage (SignerOutageP) lasts until signerBack.
	signerBack time.Time

	customers []sluice.CustomerID
	// recipients: each withdrawal's payee, in order (SameRecipientEvery).
	recipients []payee
	deposits   []sluice.Credit
	// The late deposits (deposits.go): made, with where they took effect;
	// the refs the depositor minted, and those carried out; the credit in
	// flight, and whether its store call carried it out first.
	lateDeposits []model.LateDeposit
	lateRefs     []string
	lateDone     map[string]bool
	depositing   *sluice.Credit
	depositTook  bool
	ledgerBreaks []string
	// ledgerReadings: every account checkLedger read (see model.LedgerReading).
	ledgerReadings []model.LedgerReading
	// waits: the stuck policy's waits on a txid the chain may prove dead
	// (waits.go).
	waits []model.WaitRecord
	// lookups: every lookup a worker made (model.LookupRecord).
	lookups []model.LookupRecord
	// sends: every broadcast a worker made (model.SendRecord).
	sends []model.SendRecord

	sent map[tron.Txid]int // every transaction a worker broadcast: its index in sentTxs
	// resending: by worker, whether its broadcast in progress sends bytes
	// an earlier call already sent (see node.Broadcast).
	resending map[string]bool
	sentTxs   []tron.Transaction
	lostTxid  tron.Txid // the broadcast the node is losing right now
	relayable []tron.Transaction

	cov covCounts // the hooked coverage conditions reached (coverage.go)
}

func run(cfg Config, seed uint64, strategy sim.Strategy, strategyName string, o Options) *Result {
	var began time.Time
	if o.Now != nil {
		began = o.Now()
	}
	tracing := o.Tracing
	header := cfg // the trace records the world as named, the mutant by name
	m, _ := mutant(cfg.Mutant)
	if m.configure != nil {
		m.configure(&cfg)
	}
	// The tape's storage is reused from run to run unless someone keeps it
	// (a trace, a test): a chaos tape is about 300 KB. Exhaustive search
	// needs only a failing run's tape, which is copied out below.
	// keepTape also builds the run's HTTP handler afresh instead of taking
	// a pooled one: a run with a fresh tape and handler is what
	// TestRunsDoNotDependOnEarlierRuns compares pooled runs with.
	keepTape := tracing || o.keepTape
	var tapeBuf []sim.Choice
	if !keepTape {
		if b, ok := tapes.Get().(*[]sim.Choice); ok {
			tapeBuf = *b
		}
	}
	s := sim.New(strategy, sim.Options{Start: epoch, StepsMax: cfg.StepsMax, Tracing: tracing, Observer: o.observer, Tape: tapeBuf})
	// The checkers judge against the world as named (oracle), never as a
	// mutant rewrote it for the core; a swarm seed draws its world from
	// the named one and the mutant applies to the drawn world.
	cfg.SwarmDraw, header.SwarmDraw = nil, nil
	oracle := header
	var swarm *SwarmDraw
	if cfg.Swarm {
		oracle, swarm = drawSwarm(s, header)
		header.SwarmDraw = swarm
		cfg = oracle
		if m.configure != nil {
			m.configure(&cfg)
		}
		if tracing {
			s.Event("swarm: " + swarm.String())
		}
	}
	signer := tron.NewHMACSigner([]byte("sluicesim hot wallet"))
	w := &world{
		cfg:       cfg,
		s:         s,
		data:      rand.New(rand.NewPCG(seed, 0xda7a_da7a)),
		ctx:       context.Background(),
		sign:      signer,
		hot:       tron.AddressFromBytes20([20]byte{0x40, 0x7e, 0x11}),
		healAt:    epoch.Add(cfg.HealAt.D()),
		names:     map[sluice.OperationID]string{},
		tally:     map[string]int{},
		seen:      map[tron.Txid]bool{},
		gen:       map[int]int{},
		stored:    map[tron.Txid]sluice.OperationID{},
		views:     map[sluice.OperationID]rowView{},
		sent:      map[tron.Txid]int{},
		resending: map[string]bool{},
	}
	// A run that keeps neither tape nor snapshot leaves nothing behind that
	// holds the world's records or the node's: their storage serves the
	// next run (see records, and mocknode's Network.Release).
	pooled := !keepTape && !o.keepSnapshot
	if pooled {
		rec, _ := recordPool.Get().(*records)
		if rec == nil {
			rec = &records{}
		}
		rec.lend(w)
		defer rec.keep(w)
	} else {
		w.txids = tron.NewTxidCache(txidSlots)
	}
	stores := o.Stores
	if stores == nil {
		stores = MemoryStores
	}
	st, dispose, serr := stores(s, cfg.Lease.D())
	if serr != nil {
		return &Result{Seed: seed, Failure: serr.Error(), Violations: []model.Violation{{Invariant: StoreInvariant, Message: serr.Error()}}}
	}
	defer dispose()
	if m, ok := mutant(cfg.Mutant); ok && m.store != nil {
		st = m.store(st)
	}
	w.store = st
	w.colleagueWrap = o.colleagueWrap
	w.wireHandler, w.operatorWrap, w.noSlips, w.noLengthLie, w.noLooks, w.pages, w.lookWrap, w.noSupport = o.wireHandler, o.operatorWrap, o.noSlips, o.noLengthLie, o.noLooks, o.pages, o.lookWrap, o.noSupport
	if err := w.fund(); err != nil {
		return &Result{Seed: seed, Failure: err.Error(), Violations: []model.Violation{{Invariant: StoreInvariant, Message: err.Error()}}}
	}
	var storage *mocknode.Storage
	if pooled {
		storage, _ = nodeStorage.Get().(*mocknode.Storage)
	}
	w.net = mocknode.NewNetwork(s, mocknode.Config{
		Genesis:    epoch.Add(-10 * time.Minute),
		HotWallet:  w.hot,
		HotBalance: uint64(cfg.Withdrawals+1) * uint64(amountMax),
		Verifier:   signer,
		Storage:    storage,
		// Exhaustive search runs one world over and over, producing the
		// same blocks each time; a seed's blocks never come again.
		RememberBlockIDs: o.observer != nil,
		Txids:            w.txids,
	}, max(cfg.Nodes, 1))
	if pooled {
		defer func() { nodeStorage.Put(w.net.Release()) }()
	}
	w.node = w.net.Node(0)
	for _, n := range w.net.Nodes() {
		n.SetFaults(w.nodeFault)
	}
	if cfg.SilentSolidNode {
		w.net.Node(cfg.Nodes - 1).OmitSolid()
	}
	if cfg.Nodes > 1 {
		w.net.SetGossip(w.gossip)
	}
	if cfg.OddExecutionP > 0 {
		w.net.SetExecution(w.execution)
	}
	if cfg.EnergyPrice > 0 {
		w.net.SetEnergyPrice(cfg.EnergyPrice)
	}
	w.handler = w.newHandler(!keepTape)
	if o.wrapHandler != nil {
		w.handler = o.wrapHandler(w.handler)
	}
	w.rawBody = m.rawBody

	w.rollout[0] = release{conf: cfg.Sluice, floor: oracle.Sluice.FeeLimit, ceil: oracle.Sluice.FeeLimitMax}
	if cfg.Deploy != nil {
		w.incarnation = make([]*actor, cfg.Workers)
		w.builtUnder = map[tron.Txid]builtUnder{}
	}
	w.spawnClients()
	if cfg.Reads > 0 {
		s.Spawn("reader", w.readerLoop(w.ids))
	}
	for slot := range cfg.Workers {
		w.spawnWorker(slot, 0)
	}
	if cfg.ChainEvents || cfg.LagP > 0 || cfg.ReorgP > 0 || cfg.ShortageP > 0 || cfg.EnergySpikeP > 0 {
		s.Spawn("chain", w.chainLoop)
	}
	if cfg.RelayP > 0 {
		s.Spawn("relay", w.relayLoop)
	}
	if cfg.OperatorEvery > 0 {
		s.Spawn(operatorName, w.operatorLoop)
	}
	if cfg.DepositEvery > 0 {
		s.Spawn(depositorName, w.depositLoop)
	}
	if cfg.Deploy != nil {
		s.Spawn("deploy", w.deployLoop)
	}
	s.Spawn("conductor", w.conduct)
	if o.extraChoice != "" {
		s.Spawn("probe", func(*sim.Proc) { s.Choose(o.extraChoice, 2) })
	}

	err := s.Run()
	w.releaseHandler()
	res := &Result{Seed: seed, Steps: s.Steps(), Virtual: s.Elapsed(), Swarm: swarm, ticks: w.ticks}
	errors.As(err, &res.diverged)
	if o.TapeDigest {
		res.TapeDigest = sim.TapeDigest(s.Tape())
	}
	if keepTape {
		res.tape = s.Tape()
	} else {
		defer func() {
			t := s.Tape()[:0]
			tapes.Put(&t)
		}()
	}
	if errors.Is(err, sim.ErrPruned) {
		res.Pruned = true
		return res
	}
	res.Tally = w.faultTally()
	snap := w.snapshot(err, oracle, res.Tally)
	var checkBegan time.Time
	if o.Now != nil {
		checkBegan = o.Now()
	}
	verdict := model.Judge(snap, LinCheckTimeout)
	if o.Now != nil {
		res.CheckTime = o.Now().Sub(checkBegan)
	}
	res.Violations, res.Outcomes = verdict.Violations, verdict.Outcomes
	if w.meter != nil {
		w.checkMetrics("at the end", snap.Operations)
		res.Violations = append(res.Violations, w.metricsBreaks...)
	}
	linRep := verdict.Linearizability
	res.Stats = model.StatsOf(snap)
	res.Coverage = w.coverage(snap, res.Tally, &res.Stats)
	if tracing {
		res.Linearizability = linRep
	}
	if tracing || o.keepSnapshot {
		res.Snapshot = snap
	}
	if err != nil && !errors.Is(err, sim.ErrBudget) {
		res.Failure = err.Error()
		res.Violations = append(res.Violations, model.Violation{Invariant: PanicInvariant, Message: err.Error()})
	}
	if res.tape == nil && o.observer != nil && len(res.Violations) > 0 {
		res.tape = slices.Clone(s.Tape())
	}
	if tracing {
		cfgJSON, _ := json.Marshal(header)
		verdict, _ := json.Marshal(res.Violations)
		res.Trace = &sim.Trace{
			Header: sim.Header{World: cfg.Name, Config: cfgJSON, Seed: seed, Strategy: strategyName, Model: ModelVersion},
			Tape:   s.Tape(), Events: s.Events(), Verdict: verdict,
		}
	}
	if o.Now != nil {
		res.Elapsed = o.Now().Sub(began)
	}
	return res
}

// sentTx is the transaction a worker broadcast under id, if one did. The
// map holds indexes rather than the transactions: a map stores a value
// this large out of line, one allocation an entry.
func (w *world) sentTx(id tron.Txid) (tron.Transaction, bool) {
	i, ok := w.sent[id]
	if !ok {
		return tron.Transaction{}, false
	}
	return w.sentTxs[i], true
}

// sentTxOrZero is sentTx's transaction, zero if none was sent.
func (w *world) sentTxOrZero(id tron.Txid) tron.Transaction {
	tx, _ := w.sentTx(id)
	return tx
}

// tapes holds tape storage between runs that do not keep their tapes.
var tapes sync.Pool

// records is the storage of a world's own records of who did what, kept
// between runs that keep neither their tape nor their snapshot (which
// holds the records): a chaos run appends some hundreds of each, and
// growing them afresh was a tenth of a seed's allocation. A record holds
// only values and strings, so a run that reuses the storage overwrites
// what it reads; TestRunsDoNotDependOnEarlierRuns compares such runs with
// runs on fresh storage.
type records struct {
	claims          []model.ClaimRecord
	claimCalls      []model.ClaimCall
	writes          []model.WriteRecord
	releases, parks []model.ReleaseRecord
	envelopes       []sluice.Envelope
	lookups         []model.LookupRecord
	sends           []model.SendRecord
	reads           []model.ReadRecord
	intake          []model.IntakeRecord
	// The workers' txid cache: what it holds changes no answer (a hit
	// needs the very bytes the txid was computed from), only how fast
	// it comes.
	txids *tron.TxidCache
}

// txidSlots is the room in a world's shared txid cache: a chaos seed's
// workers hash some 400 envelopes, of which 226 missed in caches of their
// own (four each, and an operation goes from worker to worker); 75 miss in
// one of 256 shared.
const txidSlots = 256

var recordPool sync.Pool

// nodeStorage holds the storage of the node's records between such runs
// (mocknode.Storage).
var nodeStorage sync.Pool

// lend gives w the storage, empty.
func (r *records) lend(w *world) {
	w.claims, w.writes, w.releases, w.parks = r.claims[:0], r.writes[:0], r.releases[:0], r.parks[:0]
	w.claimCalls = r.claimCalls[:0]
	w.envelopes, w.reads, w.intake = r.envelopes[:0], r.reads[:0], r.intake[:0]
	w.lookups, w.sends = r.lookups[:0], r.sends[:0]
	if r.txids == nil {
		r.txids = tron.NewTxidCache(txidSlots)
	}
	w.txids = r.txids
}

// keep takes the storage back from w, as it grew, for the next run.
func (r *records) keep(w *world) {
	r.claims, r.writes, r.releases, r.parks = w.claims, w.writes, w.releases, w.parks
	r.claimCalls = w.claimCalls
	r.envelopes, r.reads, r.intake = w.envelopes, w.reads, w.intake
	r.lookups, r.sends = w.lookups, w.sends
	r.txids = w.txids
	recordPool.Put(r)
}

func (w *world) faulty() bool { return w.s.Now().Before(w.healAt) }

// customers are the ones a world's clients withdraw for. The last differs
// from the one before it only in letter case: customer ids are
// case-sensitive (the API's contract), so they are two customers with two
// accounts, and a store or handler that folds case pays one from the
// other's balance (blind bugs 274 and 276: every world's ids were lower
// case, and passed them).
var customers = [...]sluice.CustomerID{"cust-0", "cust-1", "Cust-1"}

// fund credits every customer, before any process runs, with enough for
// every withdrawal the world could make: the worlds explore what happens to
// money in flight, not refusals for want of it (intake's and the stores'
// tests cover those).
func (w *world) fund() error {
	for i, customer := range customers {
		c := sluice.Credit{
			Ref:      fmt.Sprintf("deposit-%d", i),
			Customer: customer,
			Amount:   money.Amount(w.cfg.Withdrawals+1) * amountMax,
		}
		if _, _, err := w.store.Credit(w.ctx, c); err != nil {
			return fmt.Errorf("funding %s: %w", c.Customer, err)
		}
		w.customers = append(w.customers, c.Customer)
		w.deposits = append(w.deposits, c)
	}
	if w.cfg.DepositEvery > 0 {
		// Funded only while the processes run (deposits.go).
		w.customers = append(w.customers, lateCustomer)
	}
	if w.cfg.ThinCustomer {
		c := sluice.Credit{Ref: "deposit-thin", Customer: thinCustomer, Amount: thinFunding}
		if _, _, err := w.store.Credit(w.ctx, c); err != nil {
			return fmt.Errorf("funding %s: %w", c.Customer, err)
		}
		w.customers = append(w.customers, c.Customer)
		w.deposits = append(w.deposits, c)
	}
	return nil
}

// name is a short, stable name for an operation in traces.
func (w *world) name(id sluice.OperationID) string {
	if n, ok := w.names[id]; ok {
		return n
	}
	// Not one of the world's ids: a malformed one a client sent, which may
	// hold spaces or newlines that must not break a trace line.
	return strconv.Quote(string(id))
}

// tick is the logical clock of calls and returns: one total order over
// every call and return point of the run, which is what linearizability
// compares.
func (w *world) tick() int64 {
	w.s.Touch("lclock", true)
	w.lclock++
	return w.lclock
}

// conduct ends the run once every client has its answer and every
// operation is terminal, or when the liveness budget after the heal point
// is spent (the liveness invariant then names what is stuck).
func (w *world) conduct(p *sim.Proc) {
	deadline := w.healAt.Add(w.cfg.LivenessBudget.D())
	for {
		p.Sleep(w.cfg.ConductorPoll.D())
		w.s.Touch("clients", false)
		w.s.Touch("row:*", false)
		if w.clients == 0 && w.store.Open() == 0 {
			w.lookAtTheFinished()
			w.s.Stop()
			return
		}
		if !w.s.Now().Before(deadline) {
			w.fact(model.Fact{Kind: model.FactLivenessBudget})
			w.s.Stop()
			return
		}
	}
}

// snapshot is what the checkers see. The configuration they judge with is
// the world's as named (oracle), not as a mutant rewrote it for the core:
// a core that ignores its configured margin must be caught against it.
// err is how the simulator's run ended (nil when it settled).
func (w *world) snapshot(err error, oracle Config, tally []model.Tally) *model.Snapshot {
	ss := w.store.Snapshot()
	faultFree := true
	for _, t := range tally {
		if t.Count > 0 && !benignKinds[t.Kind] {
			faultFree = false
		}
	}
	return &model.Snapshot{
		Claims:           w.claims,
		ClaimCalls:       w.claimCalls,
		Writes:           w.writes,
		Releases:         w.releases,
		Fenced:           w.fenced,
		Parks:            w.parks,
		SignerFailures:   w.signerFailures,
		StoreFailures:    w.storeFailures,
		Envelopes:        w.envelopes,
		Lease:            oracle.Lease.D(),
		SafetyMargin:     oracle.Sluice.SafetyMargin,
		BuildsMax:        oracle.Sluice.Stuck.Rebuilds + 1,
		Stuck:            oracle.Sluice.Stuck,
		ParkLimit:        oracle.Sluice.ParkLimit,
		ParkFor:          oracle.Sluice.ParkFor,
		ParkRetry:        oracle.Sluice.RetryAmbiguous,
		ParkBackoffMax:   oracle.Sluice.ParkBackoffMax,
		FeeLimitMax:      max(oracle.Sluice.FeeLimitMax, w.rollout[1].ceil),
		Deployed:         w.deployed,
		MinValidity:      oracle.Sluice.MinValidity,
		ExpirationWindow: oracle.Sluice.ExpirationWindow,
		Deposits:         w.deposits,
		LateDeposits:     w.lateDeposits,
		Accounts:         ss.Accounts,
		Holds:            ss.Holds,
		LedgerBreaks:     w.ledgerBreaks,
		LedgerReadings:   w.ledgerReadings,
		Waits:            w.waits,
		Lookups:          w.lookups,
		Sends:            w.sends,
		PollFloor:        min(oracle.Sluice.PollPending, oracle.Sluice.BlockInterval, oracle.Sluice.RetryAmbiguous, oracle.Sluice.RetryNotTaken),
		FaultFree:        faultFree,

		Operations:      ss.Operations,
		Events:          ss.Events,
		Wire:            w.net.Wire(),
		Accepted:        w.net.Accepted(),
		Inclusions:      w.net.Inclusions(),
		Blocks:          w.net.Blocks(),
		SolidNumber:     w.net.Solid().Number,
		HotWallet:       w.hot,
		Intake:          w.intake,
		Reads:           w.reads,
		Healed:          w.healAt,
		End:             w.s.Now(),
		LivenessBudget:  w.cfg.LivenessBudget.D(),
		BudgetExhausted: errors.Is(err, sim.ErrBudget),
		Failed:          err != nil && !errors.Is(err, sim.ErrBudget),
	}
}
