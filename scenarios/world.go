package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"sluicesim/model"
	"sluicesim/scenarios/hostile"
	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// ModelVersion fingerprints how the worlds model sluice. Bump it whenever a
// change makes old traces ask different questions, so that replaying one says
// so up front instead of diverging mysteriously.
const ModelVersion = "worlds/6"

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

	// Pruned: exhaustive search cut the run short as redundant; it was
	// not checked.
	Pruned bool
	tape   []sim.Choice

	// Stats are what the run did, for reports: always filled.
	Stats Stats
	// Outcomes say how the run's withdrawals ended and why (model's
	// reading): always filled.
	Outcomes model.Outcomes

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

	observer     sim.Observer // exhaustive search's footprint observer
	keepSnapshot bool         // keep Result.Snapshot without tracing
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
	res := run(cfg, t.Header.Seed, sim.NewReplay(t.Tape), t.Header.Strategy, Options{Tracing: true})
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
	store Store
	node  *mocknode.Node
	sign  *tron.HMACSigner
	hot   tron.Address

	healAt  time.Time
	names   map[sluice.OperationID]string
	tally   map[string]int
	intake  []model.IntakeRecord
	handler http.Handler
	rawBody bool
	keep    bool // the withdrawal being set up is part of this world
	reads   []model.ReadRecord
	lclock  int64
	ids     []string
	clients int // clients still to answer
	seen    map[tron.Txid]bool
	gen     map[int]int // incarnations per worker slot

	// The world's own record of who did what (never the store's), for
	// one-writer and audit-log.
	claims    []model.ClaimRecord
	writes    []model.WriteRecord
	releases  []model.ReleaseRecord
	envelopes []sluice.Envelope
	stored    map[tron.Txid]bool // txids in envelopes

	// Transactions the chain may still hear of by another path: sends a
	// node lost, and pool entries it dropped. The relay process re-sends
	// them as a peer would.
	sent      map[tron.Txid]tron.Transaction // every transaction a worker broadcast
	lostTxid  tron.Txid                      // the broadcast the node is losing right now
	relayable []tron.Transaction
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
	s := sim.New(strategy, sim.Options{Start: epoch, StepsMax: cfg.StepsMax, Tracing: tracing, Observer: o.observer})
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
		stored: map[tron.Txid]bool{},
		sent:   map[tron.Txid]tron.Transaction{},
	}
	stores := o.Stores
	if stores == nil {
		stores = MemoryStores
	}
	st, dispose, serr := stores(s, cfg.Lease.D())
	if serr != nil {
		return &Result{Seed: seed, Failure: serr.Error(), Violations: []model.Violation{{Invariant: "store", Message: serr.Error()}}}
	}
	defer dispose()
	w.store = st
	w.node = mocknode.New(s, mocknode.Config{
		Genesis:    epoch.Add(-10 * time.Minute),
		HotWallet:  w.hot,
		HotBalance: uint64(cfg.Withdrawals+1) * uint64(amountMax),
		Verifier:   signer,
	})
	w.node.SetFaults(w.nodeFault)
	w.handler = w.newHandler()
	w.rawBody = m.rawBody

	w.spawnClients()
	if cfg.Reads > 0 {
		s.Spawn("reader", w.readerLoop(w.ids))
	}
	for slot := range cfg.Workers {
		w.spawnWorker(slot, 0)
	}
	if cfg.ChainEvents {
		s.Spawn("chain", w.chainLoop)
	}
	if cfg.RelayP > 0 {
		s.Spawn("relay", w.relayLoop)
	}
	s.Spawn("conductor", w.conduct)

	err := s.Run()
	res := &Result{Seed: seed, Steps: s.Steps(), Virtual: s.Elapsed(), tape: s.Tape()}
	if errors.Is(err, sim.ErrPruned) {
		res.Pruned = true
		return res
	}
	res.Tally = w.faultTally()
	snap := w.snapshot(errors.Is(err, sim.ErrBudget), header, res.Tally)
	var checkBegan time.Time
	if o.Now != nil {
		checkBegan = o.Now()
	}
	verdict := model.Judge(snap, LinCheckTimeout)
	if o.Now != nil {
		res.CheckTime = o.Now().Sub(checkBegan)
	}
	res.Violations, res.Outcomes = verdict.Violations, verdict.Outcomes
	linRep := verdict.Linearizability
	res.Stats = statsOf(snap)
	if tracing {
		res.Linearizability = linRep
	}
	if tracing || o.keepSnapshot {
		res.Snapshot = snap
	}
	if err != nil && !errors.Is(err, sim.ErrBudget) {
		res.Failure = err.Error()
		res.Violations = append(res.Violations, model.Violation{Invariant: "panic", Message: err.Error()})
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

func (w *world) faulty() bool { return w.s.Now().Before(w.healAt) }

// name is a short, stable name for an operation in traces.
func (w *world) name(id sluice.OperationID) string {
	if n, ok := w.names[id]; ok {
		return n
	}
	// Not one of the world's ids: a malformed one a client sent, which may
	// hold spaces or newlines that must not break a trace line.
	return strconv.Quote(string(id))
}

// spawnClients creates the withdrawals and their clients: duplicates posted
// concurrently, conflicting payloads under used ids, invalid requests.
func (w *world) spawnClients() {
	cfg := w.cfg
	for i := range cfg.Withdrawals {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", w.data.Uint32(), i+1)
		w.names[sluice.OperationID(id)] = fmt.Sprintf("op%d", i+1)
		w.ids = append(w.ids, id)
		amount := money.Amount(1 + w.data.Int64N(int64(amountMax)))
		to := tron.AddressFromBytes20([20]byte{0xc0, byte(i), byte(i >> 8), byte(w.data.Uint32())})
		sub := intake.Submission{OperationID: id, ToAddress: to.String(), Amount: amount.String(), Asset: sluice.Asset}
		n := i + 1
		// A shrunk world keeps only some withdrawals; the others still
		// draw their data, so the kept ones look exactly as before.
		w.keep = len(cfg.Only) == 0 || slices.Contains(cfg.Only, n)
		switch {
		case cfg.InvalidEvery > 0 && n%cfg.InvalidEvery == 0:
			// Refused at the door, each in its own way.
			w.spawnClient(fmt.Sprintf("c%d", n), invalidInputs[w.data.IntN(len(invalidInputs))](sub), 0)
			w.count("client-invalid")
			continue
		case cfg.DuplicateEvery > 0 && n%cfg.DuplicateEvery == 0:
			// Posted twice at the same instant; the twin writes the amount
			// differently but means the same instruction.
			twin := sub
			twin.Amount = amount.String() + pad(amount)
			w.spawnClient(fmt.Sprintf("c%d", n), sub, 0)
			w.spawnClient(fmt.Sprintf("c%d'", n), twin, 0)
			w.count("client-duplicate")
			continue
		case cfg.ConflictEvery > 0 && n%cfg.ConflictEvery == 0:
			other := w.conflicting(sub, amount)
			w.spawnClient(fmt.Sprintf("c%d", n), sub, 0)
			w.spawnClient(fmt.Sprintf("c%d*", n), other, 1)
			w.count("client-conflict")
			continue
		case cfg.HostileEvery > 0 && n%cfg.HostileEvery == 0:
			h := hostile.Draw(w.data, cfg.Hostile, hostile.Fields{ID: id, To: sub.ToAddress, Amount: sub.Amount, Asset: sub.Asset})
			w.spawnPost(fmt.Sprintf("c%d", n), hostilePost(h), 0)
			// Half the time the client then posts the tidy request under
			// the same id: it must replay what a valid hostile request
			// created (or be refused if that meant another instruction),
			// and create what an invalid one did not.
			if w.data.IntN(2) == 0 {
				w.spawnClient(fmt.Sprintf("c%d~", n), sub, 1)
			}
			w.count("client-hostile")
			continue
		}
		w.spawnClient(fmt.Sprintf("c%d", n), sub, 0)
	}
}

// invalidInputs spoil a valid submission in one field, near the edge of
// what intake accepts: what a client with a serializer bug, a wrong scale
// or another network's address sends. Intake must refuse each (the oracle
// reads them with its own code), and must not store a thing.
var invalidInputs = []func(intake.Submission) intake.Submission{
	func(s intake.Submission) intake.Submission { s.Amount = "1e6"; return s },                   // a JSON number's habit
	func(s intake.Submission) intake.Submission { s.Amount = "18446744078709.551616"; return s }, // wraps a uint64 to 5000 USDT
	func(s intake.Submission) intake.Submission { s.Amount = "1000000000.000001"; return s },     // one unit over the maximum
	func(s intake.Submission) intake.Submission { s.Amount = "1.0000001"; return s },             // a seventh decimal
	func(s intake.Submission) intake.Submission { s.Amount = "0"; return s },
	func(s intake.Submission) intake.Submission { s.Amount = "01.5"; return s },
	func(s intake.Submission) intake.Submission { s.Amount = "-5"; return s },
	func(s intake.Submission) intake.Submission {
		// Another network's prefix with a valid checksum.
		a, _ := tron.ParseAddress(s.ToAddress)
		a[0] = 0xa0
		s.ToAddress = a.String()
		return s
	},
	func(s intake.Submission) intake.Submission { s.ToAddress = tron.USDTContract.String(); return s },
	func(s intake.Submission) intake.Submission {
		s.ToAddress = tron.AddressFromBytes20([20]byte{}).String()
		return s
	},
	func(s intake.Submission) intake.Submission {
		s.OperationID = "00000000-0000-0000-0000-000000000000"
		return s
	},
	func(s intake.Submission) intake.Submission { s.OperationID = "{" + s.OperationID + "}"; return s },
	func(s intake.Submission) intake.Submission { s.Asset = "TRX"; return s },
}

// conflicting is a later post under sub's id that changes one thing, drawn
// from the data stream: the recipient, the amount, the asset, or the id's
// letter case, alone (the same instruction, to be replayed) or together
// with the recipient. An intake that compares payloads with a field left
// out, or ids by their spelling, answers one of these wrongly.
func (w *world) conflicting(sub intake.Submission, amount money.Amount) intake.Submission {
	other := sub
	elsewhere := tron.AddressFromBytes20([20]byte{0xd0, byte(w.data.Uint32()), byte(w.data.Uint32()), 0x42})
	switch w.data.IntN(5) {
	case 0:
		other.ToAddress = elsewhere.String()
	case 1:
		other.Amount = (amount%amountMax + 1).String()
	case 2:
		other.Asset = strings.ToLower(sub.Asset) // not the asset: refused at the door
	case 3:
		other.OperationID = strings.ToUpper(sub.OperationID) // the same instruction
	case 4:
		other.OperationID = strings.ToUpper(sub.OperationID)
		other.ToAddress = elsewhere.String()
	}
	return other
}

// count tallies a client fault of a kept withdrawal.
func (w *world) count(kind string) {
	if w.keep {
		w.tally[kind]++
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

// clientPost is one request a client sends, and what the oracle is told it
// meant: a tidy client's own strings (sent), or a hostile client's whole
// request (raw), which the model reads itself.
type clientPost struct {
	id          string // the operation id as spelled in the request
	body        []byte
	contentType string // "" sends no Content-Type
	sent        model.Payload
	raw         *model.RawPost
	label       string // for traces: the hostile category and case
}

// tidyPost is sub as a well-behaved client sends it.
func tidyPost(sub intake.Submission) clientPost {
	body, _ := json.Marshal(map[string]string{
		"operation_id": sub.OperationID, "to_address": sub.ToAddress, "amount": sub.Amount, "asset": sub.Asset,
	})
	return clientPost{
		id: sub.OperationID, body: body, contentType: "application/json",
		sent: model.Payload{ID: sub.OperationID, To: sub.ToAddress, Amount: sub.Amount, Asset: sub.Asset},
	}
}

// hostilePost is a request from the hostile-client generator. Which of them
// are valid is for the model to say (model.ReadPost, model.ReadIntent).
func hostilePost(h hostile.Post) clientPost {
	return clientPost{
		id: h.ID, body: h.Body, contentType: h.ContentType,
		raw:   &model.RawPost{ContentType: h.ContentType, Body: h.Body},
		label: " (hostile " + h.Category + "/" + h.Case + ")",
	}
}

// spawnClient posts sub through the real HTTP handler after an arrival
// delay; later waves (>0) wait for the first so that they post to a used id.
// A client that gets no answer within ClientTimeout gives up on that request
// (the server may still finish it) and retries with the same id. After an
// answer it may read the operation back.
func (w *world) spawnClient(name string, sub intake.Submission, wave int) {
	w.spawnPost(name, tidyPost(sub), wave)
}

// spawnPost is spawnClient for any request.
func (w *world) spawnPost(name string, post clientPost, wave int) {
	arrive := time.Duration(w.data.Int64N(int64(w.cfg.ArrivalSpread.D()/time.Second)+1)) * time.Second
	arrive += time.Duration(wave) * w.cfg.ArrivalSpread.D()
	if !w.keep {
		return
	}
	w.clients++
	w.s.Spawn(name, func(p *sim.Proc) {
		defer func() {
			w.s.Touch("clients", true)
			w.clients--
		}()
		p.Sleep(arrive)
		answered := false
		for attempt := 0; attempt <= w.cfg.ClientRetries && !answered; attempt++ {
			if attempt > 0 {
				w.tally["client-retry"]++
				p.Sleep(w.cfg.ClientRetryBackoff.D())
			}
			rec := model.IntakeRecord{Client: name, ID: post.id, Sent: post.sent, Raw: post.raw, Call: w.tick()}
			resp, ok := w.request(p, fmt.Sprintf("%s.%d", name, attempt), http.MethodPost, "/v1/withdrawals", post.body, post.contentType, "")
			if ok {
				rec.Return = resp.ret
				rec.Outcome, rec.Answer, rec.State = classifyPost(resp)
				answered = rec.Outcome != model.Failed
				if rec.Outcome == model.Failed {
					rec.Return = 0 // a 5xx says nothing about whether the insert committed
				}
			} else {
				rec.Outcome = model.Failed // timed out: open-ended
				w.tally["client-timeout"]++
			}
			w.intake = append(w.intake, rec)
			if w.s.Tracing() {
				w.s.Event(fmt.Sprintf("client %s POST%s -> %s", w.name(sluice.OperationID(strings.ToLower(post.id))), post.label, rec.Outcome))
			}
		}
		if answered && w.s.Chance("client-get", w.cfg.ClientGetP) {
			w.read(p, name+".get", post.id)
		}
	})
}

// response is what a server process handed back.
type response struct {
	code   int
	replay bool
	body   []byte
	ret    int64
	retLog int // the events of the operation asked for at ret (logOf)
}

// request runs one HTTP request through the real handler in a server
// process of its own, so that the client can give up on it while it goes
// on. ok is false if no answer came within ClientTimeout. With logOf set,
// the answer also counts that operation's events at the moment of return.
func (w *world) request(client *sim.Proc, name, method, path string, body []byte, contentType, logOf string) (resp response, ok bool) {
	waiting, done := true, false
	w.s.Spawn("srv-"+name, func(p *sim.Proc) {
		p.Local = &actor{w: w, p: p, server: true}
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		// A server-side request built directly: httptest.NewRequest parses
		// a whole HTTP request from text, a tenth of the run in profiles.
		req, err := http.NewRequestWithContext(w.ctx, method, path, rd)
		if err != nil {
			panic(fmt.Sprintf("building %s %s: %v", method, path, err))
		}
		req.RequestURI = path
		if w.rawBody {
			req = req.WithContext(context.WithValue(w.ctx, rawBodyKey{}, bodyDigest(body)))
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		rec := httptest.NewRecorder()
		w.handler.ServeHTTP(rec, req)
		resp = response{code: rec.Code, replay: rec.Header().Get("X-Idempotent-Replay") == "true", body: rec.Body.Bytes(), ret: w.tick()}
		if logOf != "" {
			resp.retLog = w.logLen(logOf)
		}
		done = true
		if waiting {
			client.Wake()
		}
	})
	client.Wait(w.cfg.ClientTimeout.D())
	waiting = false
	return resp, done
}

// classifyPost reads an answer as the client would: the status, the replay
// header, and the payload in the body.
func classifyPost(r response) (model.Outcome, model.Payload, sluice.State) {
	switch {
	case r.code == http.StatusCreated:
		p, st, _, _ := model.ReadAnswer(r.body)
		return model.Created, p, st
	case r.code == http.StatusOK && r.replay:
		p, st, _, _ := model.ReadAnswer(r.body)
		return model.Replayed, p, st
	case r.code == http.StatusConflict:
		return model.Conflict, model.Payload{}, sluice.None
	case r.code == http.StatusUnprocessableEntity, r.code == http.StatusUnsupportedMediaType:
		return model.Invalid, model.Payload{}, sluice.None
	}
	return model.Failed, model.Payload{}, sluice.None
}

// logLen counts an operation's events now, read straight from the store
// (no yield point: the world looking, not a process acting).
func (w *world) logLen(id string) int {
	evs, err := w.store.Events(w.ctx, sluice.OperationID(strings.ToLower(id)))
	if err != nil {
		return 0
	}
	return len(evs)
}

// read GETs an operation and records what it saw, with the length of the
// operation's log at the call and at the return: the window of instants the
// answer must come from. A read that gets no answer tells nothing and is
// not recorded.
func (w *world) read(p *sim.Proc, name, id string) {
	rec := model.ReadRecord{Client: name, ID: id, Call: w.tick(), Bounded: true, LogAtCall: w.logLen(id)}
	// A hostile client's id may hold spaces or worse: the path carries it
	// escaped, and the server reads it back unescaped.
	resp, ok := w.request(p, name, http.MethodGet, "/v1/withdrawals/"+url.PathEscape(id), nil, "", id)
	if !ok {
		return
	}
	rec.Return, rec.LogAtReturn, rec.Status = resp.ret, resp.retLog, resp.code
	if resp.code == http.StatusOK {
		rec.Present = true
		rec.Answer, rec.State, rec.History, _ = model.ReadAnswer(resp.body)
	}
	w.reads = append(w.reads, rec)
	w.tally["client-read"]++
}

// readerLoop reads operations at random while clients are posting: some
// before they exist, some while they are being created.
func (w *world) readerLoop(ids []string) func(p *sim.Proc) {
	return func(p *sim.Proc) {
		for i := range w.cfg.Reads {
			p.Sleep(time.Duration(1+w.s.Choose("read-gap", 10)) * time.Second)
			w.read(p, fmt.Sprintf("reader.%d", i), ids[w.s.Choose("read-id", len(ids))])
		}
	}
}

// tick is the logical clock of calls and returns: one total order over
// every call and return point of the run, which is what linearizability
// compares.
func (w *world) tick() int64 {
	w.s.Touch("lclock", true)
	w.lclock++
	return w.lclock
}

// newHandler builds the one HTTP handler of the run. Its store routes each
// call to the view of the server process making it (several requests are in
// flight at once, each in its own process); an intake mutant breaks it here.
func (w *world) newHandler() http.Handler {
	var st sluice.Store = serverStore{w}
	m, _ := mutant(w.cfg.Mutant)
	if m.intakeStore != nil {
		st = m.intakeStore(w, st)
	}
	h := intake.NewHandler(&intake.Service{Store: st})
	if m.handler != nil {
		h = m.handler(h)
	}
	return h
}

// serverStore is the store seen by intake: each call goes through the
// calling server process's own view, with its yield points.
type serverStore struct{ w *world }

func (s serverStore) view() storeView { return storeView{s.w.s.Current().Local.(*actor)} }

func (s serverStore) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	return s.view().Insert(ctx, op)
}
func (s serverStore) Get(ctx context.Context, id sluice.OperationID) (sluice.Operation, error) {
	return s.view().Get(ctx, id)
}
func (s serverStore) Claim(ctx context.Context, worker sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	return s.view().Claim(ctx, worker, limit)
}
func (s serverStore) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	return s.view().CAS(ctx, c)
}
func (s serverStore) Release(ctx context.Context, id sluice.OperationID, token sluice.FencingToken, after time.Duration) error {
	return s.view().Release(ctx, id, token, after)
}
func (s serverStore) Events(ctx context.Context, id sluice.OperationID) ([]sluice.Event, error) {
	return s.view().Events(ctx, id)
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
		// The worker's random stream is drawn from the world's data stream
		// here, in the worker's first step, so the order in which workers
		// start decides who gets which draw: the step touches the stream.
		w.s.Touch("data", true)
		var st sluice.Store = storeView{a}
		a.node = node{a: a, inner: w.node.Client(name)}
		if m, ok := mutant(w.cfg.Mutant); ok {
			if m.workerStore != nil {
				st = m.workerStore(a, st)
			}
			if m.workerNode != nil {
				a.node = m.workerNode(a, a.node)
			}
		}
		var sign tron.Signer = signer{a: a, inner: w.sign}
		if m, ok := mutant(w.cfg.Mutant); ok && m.workerSign != nil {
			sign = m.workerSign(sign)
		}
		worker := &sluice.Worker{
			ID: sluice.WorkerID(name),
			Pipeline: &sluice.Pipeline{
				Store: st, Node: a.node, Signer: sign,
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
	if !w.faulty() || c.Worker == relayName {
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
		f := broadcastLies[w.s.Choose("lie-kind", len(broadcastLies))]
		if f == mocknode.LoseRequest {
			w.lostTxid = c.Txid // the node wrapper keeps the bytes for a relay
		}
		return f
	}
	return mocknode.None
}

// relayName is the node client of the relay: a peer that re-sends what
// some node lost. The node's faults never touch it.
const relayName = "relay"

// relayLoop, until the heal point, now and then hands the chain a
// transaction some node lost (a send that never arrived, a pool entry
// dropped by an eviction or a restart), as a peer's pool or a relay would:
// the send a worker believes lost can still land, while its envelope is
// valid. Proof of death must hold against that.
func (w *world) relayLoop(p *sim.Proc) {
	for {
		p.Sleep(w.cfg.ChainGaps[w.s.Choose("relay-gap", len(w.cfg.ChainGaps))].D())
		if !w.faulty() {
			return
		}
		if len(w.relayable) == 0 || !w.s.Chance("relay", w.cfg.RelayP) {
			continue
		}
		k := w.s.Choose("relay-pick", len(w.relayable))
		tx := w.relayable[k]
		w.relayable = slices.Delete(w.relayable, k, k+1)
		res, err := w.node.Client(relayName).Broadcast(w.ctx, tx)
		w.s.Touch("chain", true)
		w.tally["relay"]++
		if w.s.Tracing() {
			answer := string(res.Code)
			if err != nil {
				answer = err.Error()
			}
			w.s.Event(fmt.Sprintf("relay re-sends %s -> %s", tx.Txid().Short(), answer))
		}
	}
}

// dropped makes a transaction the node just dropped from its pool
// relayable.
func (w *world) dropped(id tron.Txid) {
	if tx, ok := w.sent[id]; ok && w.cfg.RelayP > 0 {
		w.relayable = append(w.relayable, tx)
	}
}

var broadcastLies = []mocknode.Fault{
	mocknode.LoseRequest, mocknode.AcceptThenTimeout, mocknode.Busy, mocknode.NoConnection,
	mocknode.UnknownCode, mocknode.RelayFailAfterAccept, mocknode.OtherErrorAfterAccept,
	mocknode.ExpirationLie, mocknode.TaposLie, mocknode.BandwidthExhausted,
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
			for _, id := range w.node.Pool() {
				w.dropped(id)
			}
			w.node.Restart()
			w.s.Event("node restarts: pending pool lost")
		case 1:
			if pool := w.node.Pool(); len(pool) > 0 {
				id := pool[w.s.Choose("evict", len(pool))]
				w.dropped(id)
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
		w.s.Touch("clients", false)
		w.s.Touch("row:*", false)
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

// snapshot is what the checkers see. The configuration they judge with is
// the world's as named (header), not as a mutant rewrote it for the core:
// a core that ignores its configured margin must be caught against it.
func (w *world) snapshot(budgetExhausted bool, header Config, tally []model.Tally) *model.Snapshot {
	ss := w.store.Snapshot()
	faultFree := true
	for _, t := range tally {
		if t.Count > 0 && !benignKinds[t.Kind] {
			faultFree = false
		}
	}
	return &model.Snapshot{
		Claims:       w.claims,
		Writes:       w.writes,
		Releases:     w.releases,
		Envelopes:    w.envelopes,
		Lease:        header.Lease.D(),
		SafetyMargin: header.Sluice.SafetyMargin,
		BuildsMax:    header.Sluice.BuildsMax,
		FaultFree:    faultFree,

		Operations:      ss.Operations,
		Events:          ss.Events,
		Wire:            w.node.Wire(),
		Accepted:        w.node.Accepted(),
		Inclusions:      w.node.Inclusions(),
		Blocks:          w.node.Blocks(),
		SolidNumber:     w.node.Solid().Number,
		HotWallet:       w.hot,
		Intake:          w.intake,
		Reads:           w.reads,
		Healed:          w.healAt,
		End:             w.s.Now(),
		LivenessBudget:  w.cfg.LivenessBudget.D(),
		BudgetExhausted: budgetExhausted,
	}
}

// benignKinds are tally kinds that are no fault to the processor: clients
// that read, post twice, reuse an id or send garbage. A run in which only
// these fired is fault-free, and must confirm every valid withdrawal.
var benignKinds = map[string]bool{"client-read": true, "client-duplicate": true, "client-conflict": true, "client-invalid": true, "client-hostile": true}

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

// Stats summarize one run for reports.
type Stats struct {
	// Transitions counts the event log's edges: [from][to].
	Transitions [sluice.Rejected + 1][sluice.Rejected + 1]int
	// ConfirmTimes is, per confirmed operation, the virtual time from its
	// creation to its confirmation, in creation order.
	ConfirmTimes []time.Duration
	// Rebuilds is, per operation, how many envelopes it retired.
	Rebuilds []int
}

func statsOf(snap *model.Snapshot) Stats {
	var st Stats
	created := map[sluice.OperationID]time.Time{}
	rebuilds := map[sluice.OperationID]int{}
	for _, e := range snap.Events {
		st.Transitions[e.From][e.To]++
		if e.From == sluice.None {
			created[e.OperationID] = e.At
		}
		if !e.RetiredTxid.IsZero() {
			rebuilds[e.OperationID]++
		}
	}
	for _, op := range snap.Operations {
		st.Rebuilds = append(st.Rebuilds, rebuilds[op.ID])
		if op.State == sluice.Confirmed {
			st.ConfirmTimes = append(st.ConfirmTimes, op.UpdatedAt.Sub(created[op.ID]))
		}
	}
	return st
}
