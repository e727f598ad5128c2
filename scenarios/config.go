package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"sluicesim/scenarios/hostile"
	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron/mocknode"
)

// amountMax bounds the amounts the worlds withdraw (1,000 USDT), so that the
// hot wallet can fund every run.
const amountMax money.Amount = 1_000 * 1_000_000

// The thin customer (Config.ThinCustomer) and what it is funded with: about
// two withdrawals' worth.
const (
	thinCustomer sluice.CustomerID = "cust-thin"
	thinFunding                    = 2 * amountMax
)

// Duration is a time.Duration written as "30s" in JSON (trace headers).
type Duration time.Duration

// D is the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalText writes the Go duration syntax.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads the Go duration syntax.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Config is a world: how many withdrawals, workers and clients, which
// faults and how often, and the phases. It is written whole into every trace
// header, so a trace replays on its own.
type Config struct {
	Name string

	Withdrawals    int // client requests, each a fresh operation id
	DuplicateEvery int // every Nth is posted twice at the same instant (0: never)
	ConflictEvery  int // every Nth id is reused later with another payload
	InvalidEvery   int // every Nth request is invalid
	// RejectEvery: every Nth request is well formed but to the hot wallet
	// itself, which only the pipeline refuses (rejected, hold released).
	RejectEvery int `json:",omitempty"`
	// ThinCustomer adds a fourth customer funded for about two
	// withdrawals: its balance runs out during the run, so intake answers
	// it 402 for new ids while its earlier ones replay, are retried and
	// settle or release.
	ThinCustomer bool `json:",omitempty"`
	// SameRecipientEvery: every Nth withdrawal pays the address the one N
	// before it paid (every 2Nth the same amount too), as customers pay an
	// exchange's deposit address again and again (0: every recipient is
	// the withdrawal's own).
	SameRecipientEvery int `json:",omitempty"`
	// HostileEvery: every Nth request comes from the hostile-client
	// generator (package hostile), drawn from the Hostile categories (all
	// of them when empty); the model decides which are valid.
	HostileEvery  int      `json:",omitempty"`
	Hostile       []string `json:",omitempty"`
	ArrivalSpread Duration // clients arrive over this much virtual time

	// Clients talk to the real HTTP handler. One that has no answer within
	// ClientTimeout gives up on the request (the server may still finish
	// it) and retries with the same id, up to ClientRetries times.
	ClientTimeout      Duration
	ClientRetries      int
	ClientRetryBackoff Duration
	ClientGetP         float64    // after an answer, a client reads its operation back
	Reads              int        // GETs of random ids by a reader while clients post
	ServerStallP       float64    // per server yield point before the heal: a slow database
	ServerStalls       []Duration // how long a stall lasts

	Workers       int
	IdlePoll      Duration   // a worker with nothing to claim sleeps this long
	Lease         Duration   // the store's lease
	RestartDelays []Duration // a crashed worker comes back after one of these
	Pauses        []Duration // a paused worker sleeps one of these (a zombie if > Lease)
	Skews         []Duration // a worker's wall clock is off by one of these
	ClockJumps    []Duration // and may jump by one of these

	// Fault rates before the heal point (chosen on the tape).
	WorkerFaultP float64 // per worker yield point: crash, pause or clock jump
	// FaultsAtWork limits worker faults to yield points where the worker
	// holds claimed work (from a claim that took rows to its next claim).
	// A fault on an idle worker only shifts when it next polls; exhaustive
	// search sets this so its fault budget is spent where faults matter.
	FaultsAtWork bool `json:",omitempty"`
	// PauseBeforeWriteP is the chance of a pause right before a CAS.
	PauseBeforeWriteP float64
	BroadcastLieP     float64 // per broadcast: one of the node's lies
	QueryLieP         float64 // per query: a timeout
	ReceiptFailP      float64 // per new txid: REVERT or OUT_OF_ENERGY if included
	ChainEvents       bool    // node restarts, evictions, missed slots
	ChainGaps         []Duration
	// SlowCallP is the chance, per worker call before the heal point, that
	// its answer comes back late (by one of SlowCalls, each shorter than
	// the lease): two reads of one step can then straddle a block.
	SlowCallP float64
	SlowCalls []Duration `json:",omitempty"`
	// SignerFailP is the chance, per signing before the heal point, that
	// the signer fails (a KMS timeout).
	SignerFailP float64
	// SignerOutageP is the chance, per signing before the heal point while
	// the signer is up, that it goes down (a KMS outage) for one of
	// SignerOutages: every signing fails until it is back or the heal point
	// comes. Rows then park in signing long enough to go to review past
	// the park bounds, or for an operator to cancel them once their
	// envelope, never sent, is proven dead.
	SignerOutageP float64    `json:",omitempty"`
	SignerOutages []Duration `json:",omitempty"`
	// StoreFaultP is the chance, per store call before the heal point, that
	// the store fails it: before the effect (nothing happened), after it
	// (it happened, the caller hears it failed), or by stalling for one of
	// StoreStalls first.
	StoreFaultP float64    `json:",omitempty"`
	StoreStalls []Duration `json:",omitempty"`
	// Nodes is how many full nodes serve the chain (0 or 1: one). With more,
	// each worker reaches them through a balancer that picks a node per
	// call on the tape (Route "per-call"), keeps one per worker ("sticky")
	// or moves on after an error ("failover"); nodes other than the
	// producer may lag by one of NodeLags blocks, changed with LagP every
	// chain gap; gossip between pools is lost with GossipLossP.
	Nodes    int    `json:",omitempty"`
	Route    string `json:",omitempty"`
	NodeLags []int  `json:",omitempty"`
	// SilentSolidNode: the last of Nodes leaves its own solid block number
	// out of its lookups (an older gateway): its "unknown" proves nothing,
	// however far the chain's solid block is past the expiration.
	SilentSolidNode bool    `json:",omitempty"`
	LagP            float64 `json:",omitempty"`
	GossipLossP     float64 `json:",omitempty"`
	// ReorgP is the chance, every chain gap before the heal point, that the
	// last 1 to ReorgDepthMax blocks (above the solid block) are orphaned;
	// each orphaned transaction returns to the pools, is re-included or
	// vanishes, on the tape.
	ReorgP float64 `json:",omitempty"`
	// StaleForkP is the chance, at a reorg, that each node other than the
	// producer that had an orphaned block stays on the old fork (stalled
	// there, showing the orphaned blocks and their inclusions) until a lag
	// change picks it, the next reorg, or the heal point: a real node that
	// missed the switch. Needs several Nodes.
	StaleForkP    float64 `json:",omitempty"`
	ReorgDepthMax int     `json:",omitempty"`
	// OddExecutionP is the chance, per USDT transfer about to succeed
	// before the heal point, that it does not do exactly what was asked,
	// or the node does not report it as it was (one of oddExecutions: a
	// fee-on-transfer, no transfer, another amount or recipient, a log of
	// another token, a node that reports no log or a log twice), or that
	// another contract adds a log beside an exact transfer.
	OddExecutionP float64 `json:",omitempty"`
	// WideLogs adds two lies to that menu: nothing moves, and the node
	// reports the exact payment's Transfer log with its 32-byte value
	// 2^128 above the amount (lie-wide-value: a log a reader of only its
	// low bytes takes for the payment), or with a second data word after
	// the value (lie-long-data: a reader of only the first word takes it
	// for the payment). A world without it keeps the menu, and the tapes,
	// it was measured with.
	WideLogs bool `json:",omitempty"`
	// OtherReceipts: a failed receipt drawn as REVERT is, on the tape,
	// REVERT or one of the other failure receipts TRON gives (OUT_OF_TIME,
	// TRANSFER_FAILED, ...: otherReceipts).
	OtherReceipts bool `json:",omitempty"`
	// Wire puts production's node stack between the core and the node:
	// each worker and the operator call the metrics wrapper around
	// nodehttp's client, whose requests reach nodehttp's server in front of
	// the node through an in-process transport (wire.go). Without it they
	// call the node directly, and neither half of the wire is in reach.
	Wire bool `json:",omitempty"`
	// MiddleboxP is the chance, per lookup over a wire before the heal
	// point, that a proxy in front of the node answers it instead
	// (middlebox.go): a canned unknown naming no txid, the answer it
	// cached for another txid, or the node's answer cut short. Each proves
	// nothing about the txid asked, and the client must refuse it.
	MiddleboxP float64 `json:",omitempty"`
	// ThinAnswerP is the chance, per lookup or block read over a wire
	// before the heal point, that the proxy in front of the node drops
	// from the node's answer a field the client must insist on (an
	// included lookup's block_number, block_time or receipt; a block's
	// number, block_id or timestamp), as a gateway that re-encodes
	// answers with its own idea of what is optional does. The client must
	// refuse the answer (the pipeline waits), never fill in a zero: a
	// receipt read as "" fails a paid withdrawal, a block id read as zeros
	// references no block.
	ThinAnswerP float64 `json:",omitempty"`
	// LostRouteP is the chance, per lookup over a wire before the heal
	// point, that the proxy in front of the node no longer routes the
	// lookup (an upgrade renamed it, a rule stopped matching) and answers
	// 404 with its own plain-text page. A 404 from a box says nothing about
	// the txid: the client must refuse it, never read "unknown" from it (a
	// paid withdrawal would never confirm, and a proof of death built on it
	// rebuilds a payment that may be in a block).
	LostRouteP float64 `json:",omitempty"`
	// NoUpstreamP is the chance, per lookup or block read over a wire
	// before the heal point, that the proxy in front of the node has no
	// healthy backend and answers 503 itself ("no healthy upstream"). The
	// node was not asked: the client must report a failure, and the
	// metrics must count it as an error, not a timeout (a slow node and a
	// missing one send the person on call different ways).
	NoUpstreamP float64 `json:",omitempty"`
	// WatchReviews: before the operator cancels or resolves a review, the
	// customer's GET of that operation is under way (a support page open on
	// it), so that the scheduler may put the operator's write between the
	// GET's reads of the row and of its log. In the other worlds clients
	// read an operation only while they post, and a review's last move is
	// never raced.
	WatchReviews bool `json:",omitempty"`
	// GracefulStopP is the chance, per worker node call before the heal
	// point, that the worker is stopped as a deploy stops it (SIGTERM):
	// its context is cancelled under the call, and it restarts later.
	GracefulStopP float64 `json:",omitempty"`
	// CensusFaultP is the chance, per scrape of a wire world's metrics
	// before the heal point, that the store fails the scrape's census (a
	// read timing out under load): the scrape must leave the census
	// gauges out and count sluice_census_errors_total, never show the
	// last census as now.
	CensusFaultP float64 `json:",omitempty"`
	// RelayP is the chance, every chain gap before the heal point, that a
	// transaction some node lost (a lost send, an evicted or restarted
	// pool entry) reaches the chain anyway through a peer.
	RelayP float64
	// ShortageP is the chance, every chain gap before the heal point, that
	// the hot wallet runs short for one of Shortages: of TRX for bandwidth
	// (every node refuses its broadcasts with BANDWITH_ERROR) or of energy
	// (a transaction first sent meanwhile executes OUT_OF_ENERGY). The
	// treasury tops it up when the spell ends, and at the heal point.
	ShortageP float64    `json:",omitempty"`
	Shortages []Duration `json:",omitempty"`
	// EnergyPrice, if set, is what a unit of energy costs the hot wallet,
	// in sun of TRX burnt (it stakes none): every transfer buys its energy
	// up to its fee limit, and one whose limit cannot buy it runs out of
	// energy on chain and burns the whole limit
	// (mocknode.Network.SetEnergyPrice). 0 models no energy price: the
	// fee limit then never decides a receipt.
	EnergyPrice int64 `json:",omitempty"`
	// EnergySpikeP is the chance, every chain gap before the heal point,
	// that the price jumps to one of EnergySpikes for one of EnergySpells
	// (the USDT contract's dynamic energy factor rising under load, or a
	// price change by proposal). It falls back to EnergyPrice when the
	// spell is over, at the first chain gap after it, and at the heal
	// point.
	EnergySpikeP float64    `json:",omitempty"`
	EnergySpikes []int64    `json:",omitempty"`
	EnergySpells []Duration `json:",omitempty"`
	// OperatorEvery, if set, runs an operator process that reads the
	// queue (review and parked operations) this often and acts on it
	// through the real operator service: retry, cancel, resolve as paid.
	OperatorEvery Duration `json:",omitempty"`
	// CustomerCancelP is the chance, per operator round before the heal
	// point, that a customer asks to stop a withdrawal not yet built: the
	// operator lists the requested and validated rows and cancels one
	// (nothing was ever built, so nothing needs proof). Without an
	// operator (OperatorEvery 0) no customer is heard.
	CustomerCancelP float64 `json:",omitempty"`
	// DepositEvery, if set, adds a customer funded only while the
	// processes run (its id has capitals): a depositor process credits it
	// this often until the clients have all arrived, through the operator
	// service, or its HTTP API in a wire world (deposits.go).
	DepositEvery Duration `json:",omitempty"`

	// Deploy, if set, rolls a new release of the workers out once in the
	// run, as a rolling deploy does (deploy.go): from a moment chosen on
	// the tape every worker started runs the new release's settings, and
	// the running ones are stopped one by one to make way for it, so that
	// rows built under one release are picked up under the other.
	Deploy *Deploy `json:",omitempty"`

	HealAt         Duration // faults stop here
	LivenessBudget Duration // then every accepted operation must settle within this
	ConductorPoll  Duration
	StepsMax       int

	Sluice sluice.Config

	// Only, if set, keeps just these withdrawals (numbered from 1); the
	// others are drawn but never posted. Shrinking sets it.
	Only []int `json:",omitempty"`

	// Mutant names a deliberately broken variant to run instead of the real
	// core ("" for the real one); see Mutants.
	Mutant string `json:",omitempty"`

	// Swarm: each seed first draws its own variant of this world from the
	// tape (swarm.go). SwarmDraw is what a run drew, written by the run
	// into its trace header for people to read; a run ignores it on input
	// and draws again from the tape, which gives the same world.
	Swarm     bool       `json:",omitempty"`
	SwarmDraw *SwarmDraw `json:",omitempty"`
	// SwarmSettings: a swarm seed also draws the pipeline's own settings
	// (sluice.Config: MinValidity, SafetyMargin, the stuck policy, the park
	// bounds, the claim's batch and steps, the retry intervals) within
	// what sluice.Config.Validate accepts, so that the core runs at the
	// settings an operator may choose, not only at the worlds' own.
	SwarmSettings bool `json:",omitempty"`
}

// Validate refuses a world that cannot run.
func (c Config) Validate() error {
	switch {
	case c.Name == "":
		return errors.New("world has no name")
	case c.Withdrawals < 1 || c.Workers < 1:
		return fmt.Errorf("world %s: needs at least one withdrawal and one worker", c.Name)
	case c.ArrivalSpread < Duration(time.Second) || c.IdlePoll <= 0 || c.Lease <= 0 || c.ConductorPoll <= 0:
		return fmt.Errorf("world %s: arrival spread, idle poll, lease and conductor poll must be positive", c.Name)
	case len(c.RestartDelays) == 0 || len(c.Pauses) == 0 || len(c.Skews) == 0 || len(c.ClockJumps) == 0 || len(c.ChainGaps) == 0:
		return fmt.Errorf("world %s: every fault menu needs at least one entry", c.Name)
	case c.StepsMax < 1:
		return fmt.Errorf("world %s: StepsMax must be positive", c.Name)
	case c.ClientTimeout <= 0 || c.ClientRetries < 0 || c.ClientRetryBackoff < 0 || c.Reads < 0 || len(c.ServerStalls) == 0:
		return fmt.Errorf("world %s: client timeout must be positive, retries, backoff and reads not negative, and the stall menu non-empty", c.Name)
	}
	if c.HostileEvery < 0 {
		return fmt.Errorf("world %s: HostileEvery %d is negative", c.Name, c.HostileEvery)
	}
	if c.SameRecipientEvery < 0 {
		return fmt.Errorf("world %s: SameRecipientEvery %d is negative", c.Name, c.SameRecipientEvery)
	}
	for _, h := range c.Hostile {
		if _, ok := hostile.Lookup(h); !ok {
			return fmt.Errorf("world %s: unknown hostile category %q (known: %s)", c.Name, h, strings.Join(hostile.Names(), ", "))
		}
	}
	for _, n := range c.Only {
		if n < 1 || n > c.Withdrawals {
			return fmt.Errorf("world %s: Only names withdrawal %d of %d", c.Name, n, c.Withdrawals)
		}
	}
	if c.Mutant != "" {
		if _, ok := mutant(c.Mutant); !ok {
			return fmt.Errorf("world %s: unknown mutant %q (known: %s)", c.Name, c.Mutant, strings.Join(MutantNames(), ", "))
		}
	}
	if c.SlowCallP > 0 && len(c.SlowCalls) == 0 {
		return fmt.Errorf("world %s: SlowCallP %v needs a SlowCalls menu", c.Name, c.SlowCallP)
	}
	for _, d := range c.SlowCalls {
		if d <= 0 || d >= c.Lease {
			return fmt.Errorf("world %s: slow call %s must be positive and shorter than the lease %s", c.Name, d.D(), c.Lease.D())
		}
	}
	switch {
	case c.Nodes < 0 || c.Nodes > 8:
		return fmt.Errorf("world %s: Nodes %d outside 0..8", c.Name, c.Nodes)
	case c.Nodes > 1 && c.Route != "per-call" && c.Route != "sticky" && c.Route != "failover":
		return fmt.Errorf("world %s: Route %q: want per-call, sticky or failover", c.Name, c.Route)
	case c.LagP > 0 && (c.Nodes < 2 || len(c.NodeLags) == 0):
		return fmt.Errorf("world %s: LagP %v needs several Nodes and a NodeLags menu", c.Name, c.LagP)
	case c.SilentSolidNode && c.Nodes < 2:
		return fmt.Errorf("world %s: SilentSolidNode needs several Nodes (%d)", c.Name, c.Nodes)
	case c.StaleForkP > 0 && (c.Nodes < 2 || c.ReorgP == 0):
		return fmt.Errorf("world %s: StaleForkP %v needs several Nodes and reorgs", c.Name, c.StaleForkP)
	case c.ReorgP > 0 && (c.ReorgDepthMax < 1 || c.ReorgDepthMax >= mocknode.DefaultSolidLag):
		return fmt.Errorf("world %s: ReorgDepthMax %d must be 1 to %d, below the solid lag", c.Name, c.ReorgDepthMax, mocknode.DefaultSolidLag-1)
	}
	for _, l := range c.NodeLags {
		if l < 0 {
			return fmt.Errorf("world %s: negative node lag %d", c.Name, l)
		}
	}
	if c.OperatorEvery < 0 {
		return fmt.Errorf("world %s: OperatorEvery %s is negative", c.Name, c.OperatorEvery.D())
	}
	if c.DepositEvery < 0 {
		return fmt.Errorf("world %s: DepositEvery %s is negative", c.Name, c.DepositEvery.D())
	}
	if c.ShortageP > 0 && len(c.Shortages) == 0 {
		return fmt.Errorf("world %s: ShortageP %v needs a Shortages menu", c.Name, c.ShortageP)
	}
	if c.EnergyPrice < 0 {
		return fmt.Errorf("world %s: EnergyPrice %d is negative", c.Name, c.EnergyPrice)
	}
	if c.EnergySpikeP > 0 {
		switch {
		case c.EnergyPrice == 0:
			return fmt.Errorf("world %s: EnergySpikeP %v needs an EnergyPrice to fall back to", c.Name, c.EnergySpikeP)
		case len(c.EnergySpikes) == 0 || len(c.EnergySpells) == 0:
			return fmt.Errorf("world %s: EnergySpikeP %v needs EnergySpikes and EnergySpells menus", c.Name, c.EnergySpikeP)
		}
		for _, p := range c.EnergySpikes {
			if p <= 0 {
				return fmt.Errorf("world %s: energy spike price %d is not positive", c.Name, p)
			}
		}
	}
	if c.SignerOutageP > 0 && len(c.SignerOutages) == 0 {
		return fmt.Errorf("world %s: SignerOutageP %v needs a SignerOutages menu", c.Name, c.SignerOutageP)
	}
	if c.StoreFaultP > 0 && len(c.StoreStalls) == 0 {
		return fmt.Errorf("world %s: StoreFaultP %v needs a StoreStalls menu", c.Name, c.StoreFaultP)
	}
	for _, p := range []float64{c.WorkerFaultP, c.PauseBeforeWriteP, c.BroadcastLieP, c.QueryLieP, c.ReceiptFailP, c.ClientGetP, c.ServerStallP, c.SlowCallP, c.RelayP, c.SignerFailP, c.StoreFaultP, c.LagP, c.GossipLossP, c.ReorgP, c.OddExecutionP, c.ShortageP, c.SignerOutageP, c.CustomerCancelP, c.MiddleboxP, c.ThinAnswerP, c.LostRouteP, c.NoUpstreamP, c.StaleForkP, c.GracefulStopP, c.CensusFaultP, c.EnergySpikeP} {
		if p < 0 || p >= 1 {
			return fmt.Errorf("world %s: probability %v outside [0, 1)", c.Name, p)
		}
	}
	if err := c.Deploy.validate(c.Name); err != nil {
		return err
	}
	return c.Sluice.Validate()
}

func durations(ds ...time.Duration) []Duration {
	out := make([]Duration, len(ds))
	for i, d := range ds {
		out[i] = Duration(d)
	}
	return out
}

// Chaos is the default world: 60 withdrawals from clients arriving over a
// minute, every 7th posted twice concurrently, some ids reused with another
// payload, some invalid; 6 workers that crash, restart, pause into zombies
// and have skewed, jumping wall clocks; a node that tells every lie in the
// menu, restarts, evicts and misses slots. Faults stop at the heal point;
// the liveness phase follows.
func Chaos() Config {
	return Config{
		Name:           "chaos",
		Withdrawals:    60,
		DuplicateEvery: 7,
		ConflictEvery:  11,
		InvalidEvery:   13,
		RejectEvery:    17,
		HostileEvery:   5,
		ArrivalSpread:  Duration(60 * time.Second),

		ClientTimeout:      Duration(5 * time.Second),
		ClientRetries:      2,
		ClientRetryBackoff: Duration(2 * time.Second),
		ClientGetP:         0.3,
		Reads:              12,
		ServerStallP:       0.03,
		ServerStalls:       durations(time.Second, 8*time.Second),

		Workers:       6,
		IdlePoll:      Duration(2 * time.Second),
		Lease:         Duration(30 * time.Second),
		RestartDelays: durations(time.Second, 10*time.Second, 45*time.Second),
		Pauses:        durations(5*time.Second, 40*time.Second, 2*time.Minute),
		Skews:         durations(0, 3*time.Second, -2*time.Minute, 365*24*time.Hour, -time.Hour),
		ClockJumps:    durations(time.Minute, -time.Minute, 24*time.Hour),

		WorkerFaultP:      0.004,
		PauseBeforeWriteP: 0.01,
		BroadcastLieP:     0.25,
		QueryLieP:         0.05,
		ReceiptFailP:      0.03,
		ChainEvents:       true,
		ChainGaps:         durations(15*time.Second, 40*time.Second, 90*time.Second),
		SlowCallP:         0.01,
		SlowCalls:         durations(2*time.Second, 5*time.Second, 12*time.Second),
		RelayP:            0.5,
		SignerFailP:       0.02,

		// The hostile world at low rates; each kind has a world of its own
		// at full strength (nodes, reorgs, logs, storefaults). Three nodes
		// behind a failover balancer, two of which fall behind now and
		// then; gossip that loses a hop; short reorgs; a store that fails
		// one call in 200; one transfer in 50 that does not do or say
		// what was asked.
		Nodes:         3,
		Route:         "failover",
		NodeLags:      []int{0, 5, 25, 40},
		LagP:          0.1,
		GossipLossP:   0.05,
		ReorgP:        0.05,
		ReorgDepthMax: 6,
		StoreFaultP:   0.005,
		StoreStalls:   durations(500*time.Millisecond, 3*time.Second),
		OddExecutionP: 0.02,
		// The hot wallet runs dry now and then, for up to three minutes.
		ShortageP: 0.1,
		Shortages: durations(30*time.Second, 90*time.Second, 3*time.Minute),
		// Someone is on call.
		OperatorEvery: Duration(45 * time.Second),
		// The signer goes down for a spell now and then, and customers
		// ask to stop withdrawals not yet built: without them no chaos
		// seed in 10,000 cancelled a row before its first build
		// (requested or validated -> failed), and 1 cancelled one the
		// signer had parked (signing -> failed). Chaos alone has them:
		// the worlds built on it keep the runs, and the mutants' kill
		// seeds, they were measured with (chaosBase).
		SignerOutageP:   0.005,
		SignerOutages:   durations(time.Minute, 3*time.Minute),
		CustomerCancelP: 0.25,

		HealAt:         Duration(4 * time.Minute),
		LivenessBudget: Duration(20 * time.Minute),
		ConductorPoll:  Duration(5 * time.Second),
		StepsMax:       2_000_000,

		Sluice: worldSluice(),
	}
}

// chaosBase is chaos as the worlds built on it start from: without the
// signer's outages and the customers' cancels that chaos gained with the
// coverage catalog.
func chaosBase() Config {
	c := Chaos()
	c.SignerOutageP, c.SignerOutages, c.CustomerCancelP = 0, nil, 0
	return c
}

// worldSluice is the service's configuration scaled to the worlds' few
// minutes: the stuck policy and the park bounds act within a run, so that
// cancels, escalations and reviews by parking are explored, not only
// configured.
func worldSluice() sluice.Config {
	c := sluice.DefaultConfig()
	c.Stuck = sluice.StuckPolicy{RebuildAfter: 20 * time.Second, CancelAfter: 5 * time.Minute, Rebuilds: 2}
	c.ParkLimit = 8
	c.ParkFor = 5 * time.Minute
	c.ParkBackoffMax = time.Minute
	return c
}

// Pair is the small world for debugging and exhaustive search: one
// withdrawal, two workers, the same fault menu, a short fault phase. Its
// times are scaled down so that short fault sequences reach deep states: a
// 20 s lease and a 30 s expiration window mean a worker that takes over
// after one crash finds the envelope too close to expiry to send and
// rebuilds it, so one crash, or a crash and a pause, is enough to show the
// write-ahead and fencing rules at work (exhaustive search counts faults).
func Pair() Config {
	c := chaosBase()
	c.Name = "pair"
	// One node: pair is where exhaustive search is measured, and the
	// network is pairnodes' subject.
	c.Nodes, c.Route, c.NodeLags, c.LagP, c.GossipLossP = 0, "", nil, 0, 0
	c.Lease = Duration(20 * time.Second)
	c.Sluice.ExpirationWindow = 30 * time.Second
	c.Withdrawals = 1
	c.DuplicateEvery, c.ConflictEvery, c.InvalidEvery, c.HostileEvery = 0, 0, 0, 0
	c.ArrivalSpread = Duration(time.Second)
	c.Reads = 2
	c.Workers = 2
	c.WorkerFaultP = 0.02
	c.HealAt = Duration(2 * time.Minute)
	c.LivenessBudget = Duration(15 * time.Minute)
	c.StepsMax = 200_000
	return c
}

// Calm is chaos without a single fault: the same withdrawals, clients and
// workers. It is the baseline for measuring what the scheduler costs, and a
// world whose fault tally must read all zeros.
func Calm() Config {
	c := withoutFaults(Chaos(), func(Fault) bool { return false }) // every row of the fault table off
	c.Name = "calm"
	return c
}

// Zombies is a small world built to wake zombies at the worst moment: a few
// withdrawals, three workers that often pause just past the lease right
// before a write, and a node that loses many sends so that rebuilds happen
// while the zombies sleep. It is the natural catcher of weak fencing.
func Zombies() Config {
	c := chaosBase()
	c.Name = "zombies"
	c.Withdrawals = 8
	c.DuplicateEvery, c.ConflictEvery, c.InvalidEvery, c.HostileEvery = 0, 0, 0, 0
	c.ArrivalSpread = Duration(10 * time.Second)
	c.Reads = 0
	c.Workers = 3
	c.PauseBeforeWriteP = 0.15
	c.Pauses = durations(35*time.Second, 45*time.Second, 70*time.Second)
	c.BroadcastLieP = 0.4
	c.SlowCallP = 0.03 // slow answers inside live leases, beside the zombies
	c.HealAt = Duration(5 * time.Minute)
	c.StepsMax = 500_000
	return c
}

// Laggy is a world of slow answers inside long leases: a 5-minute lease
// (a service configured for a slow signer or a congested node) and worker
// calls that answer up to 3 minutes late while their holder keeps its
// claim. Two reads of one step can then straddle not just a block but the
// whole window a proof of death rests on (expiration + margin + the solid
// lag), which is where the order of those reads decides whether a rebuild
// pays twice. Intake is slow too, to patient clients: a GET's two reads (the
// row, then its log) can straddle a whole rebuild, which is where an answer
// that mixes two instants shows. A relay hands the chain the sends a node
// lost. Its ParkFor is a minute, so that withdrawals parked through a
// shortage go to review by the length of their spell (before ParkLimit
// parks, which the other worlds reach first), and releases for busy nodes
// within a spell count in its length.
func Laggy() Config {
	c := chaosBase()
	c.Name = "laggy"
	c.Withdrawals = 12
	c.DuplicateEvery, c.ConflictEvery, c.InvalidEvery, c.HostileEvery = 0, 0, 0, 0
	c.ArrivalSpread = Duration(20 * time.Second)
	c.Reads = 4
	c.Workers = 3
	c.Lease = Duration(5 * time.Minute)
	c.SlowCallP = 0.08
	c.SlowCalls = durations(20*time.Second, 90*time.Second, 3*time.Minute)
	c.ServerStalls = durations(time.Second, 90*time.Second, 4*time.Minute)
	c.ServerStallP = 0.05
	c.ClientTimeout = Duration(5 * time.Minute)
	c.BroadcastLieP = 0.4
	c.RelayP = 0.8
	c.ChainGaps = durations(5*time.Second, 15*time.Second, 40*time.Second)
	c.HealAt = Duration(8 * time.Minute)
	c.LivenessBudget = Duration(30 * time.Minute)
	c.StepsMax = 500_000
	c.Sluice.ParkFor = time.Minute
	return c
}

// StoreFaults is chaos whose store fails: a store call may fail before its
// effect (nothing happened), after it (it happened, the caller hears it
// failed: the ambiguous commit) or stall. The core must read every store
// error as "unknown" and recover by re-reading, never by redoing a side
// effect; the world never panics on an injected error. Chaos will gain
// these faults at a low rate together with the other hostile-world faults
// (several nodes, reorgs), in one change of its seeds.
func StoreFaults() Config {
	c := chaosBase()
	c.Name = "storefaults"
	c.Withdrawals = 30
	c.StoreFaultP = 0.03
	c.StoreStalls = durations(500*time.Millisecond, 3*time.Second)
	return c
}

// Nodes is chaos behind a pool of three full nodes: each worker's calls
// go to a node chosen per call (a load balancer without stickiness), the
// two nodes other than the producer fall behind by up to a minute and
// a half of blocks and catch up, and gossip between pools loses some
// transactions. Two reads of one step (the solid block, then the txid's
// lookup) can then reach two nodes: the world where a proof of death
// could rest on a lagging node's "unknown".
func Nodes() Config {
	c := chaosBase()
	c.Name = "nodes"
	c.Withdrawals = 30
	c.Nodes, c.Route = 3, "per-call"
	c.NodeLags = []int{0, 5, 25, 40}
	c.LagP = 0.5
	c.GossipLossP = 0.2
	c.StaleForkP = 0.5
	c.SilentSolidNode = true
	return c
}

// Reorgs is chaos whose chain reorganises above the solid block: now and
// then the last 1 to 12 blocks are orphaned, their transactions returned
// to the pools, re-included or lost. A confirmation must wait for the
// solid block; everything above it may still change.
func Reorgs() Config {
	c := chaosBase()
	c.Name = "reorgs"
	c.Withdrawals = 30
	c.ReorgP = 0.4
	c.ReorgDepthMax = 12
	return c
}

// Logs is chaos whose transfers do not always do what was asked, or are not
// reported as they were: a fee taken on the way, nothing moved under a
// SUCCESS receipt, half the amount, another recipient, only a foreign
// token's log, no log or the log twice from the node, and (harmless) a
// foreign token's log beside an exact transfer. Only exactly one matching
// USDT Transfer log may confirm; money that moved otherwise goes to review.
func Logs() Config {
	c := chaosBase()
	c.Name = "logs"
	c.Withdrawals = 30
	c.OddExecutionP = 0.15
	c.WideLogs = true
	return c
}

// Wire is logs behind the production node stack (Config.Wire): every
// answer, the odd logs among them, crosses nodehttp's server and client as
// JSON, and every call goes through the metrics wrapper, as in cmd/sluice;
// its failed receipts include TRON's rarer ones (Config.OtherReceipts); and
// a customer is funded only while it runs, through the operator API's
// credits (Config.DepositEvery).
// The other worlds call the mock node directly, which skips how logs,
// receipts, blocks and errors are encoded and decoded.
func Wire() Config {
	c := Logs()
	c.Name = "wire"
	// The menu of odd executions wire's kill rows were measured with.
	c.WideLogs = false
	c.Wire = true
	c.OtherReceipts = true
	c.DepositEvery = Duration(8 * time.Second)
	c.SameRecipientEvery = 4
	// The signer's outages, as chaos has them: parks in signing that
	// outlast the park bounds go to review, and the operator's API has
	// them to act on (without them, signing -> review came in 3 wire
	// seeds of 2,000).
	c.SignerOutageP, c.SignerOutages = Chaos().SignerOutageP, Chaos().SignerOutages
	c.MiddleboxP = 0.03
	c.GracefulStopP = 0.003
	c.CensusFaultP = 0.2
	return c
}

// Proxies is wire whose node sits behind a proxy that now and then drops
// a field from the node's answer that the client must not do without
// (Config.ThinAnswerP): the world where a decoder "tolerant" of a missing
// receipt or block id is seen for what it does to money. The same proxy
// now and then has lost the lookup route and answers 404 itself
// (Config.LostRouteP) or no healthy backend and answers 503 itself
// (Config.NoUpstreamP), and a customer's GET is under way whenever the
// operator acts on a review (Config.WatchReviews). Its balancer picks a
// node per call, and nodes fall behind more often: an operator's solid
// block and lookup may come from two nodes, one ahead of the other (a
// resolution as paid must hold the lookup to the solid block, not to its
// node's word). Wire itself keeps its tape (its kill rows were measured
// with it).
func Proxies() Config {
	c := Wire()
	c.Name = "proxies"
	c.ThinAnswerP = 0.05
	c.LostRouteP = 0.02
	c.NoUpstreamP = 0.01
	c.WatchReviews = true
	c.Route, c.LagP = "per-call", 0.3
	return c
}

// Fees is chaos whose hot wallet buys its energy with TRX, at a price that
// spikes: now and then, for one to five minutes, a transfer costs more than
// the starting fee limit. A transaction whose fee limit cannot buy the
// energy runs out of energy on chain and burns its whole limit; the rebuild
// must raise the limit (doubling it, up to FeeLimitMax) and never send again
// a limit that already ran out. In the other worlds a receipt never depends
// on the fee limit (they force OUT_OF_ENERGY on a transaction, whatever its
// limit), so nothing there reads a fee limit at all.
func Fees() Config {
	c := chaosBase()
	c.Name = "fees"
	c.Withdrawals = 30
	// 210 sun a unit (TRON's price in 2024): a transfer costs 13.65 TRX,
	// under the starting limit of 40. Three rebuilds double it to 80 and
	// 160, then reach the 240 ceiling (not 320): the spikes below need
	// one raise, two, the ceiling itself, or more than it allows.
	c.EnergyPrice = 210
	c.Sluice.FeeLimit = 40_000_000
	c.Sluice.Stuck.Rebuilds = 3
	c.EnergySpikeP = 0.25
	// 65, 130, 227.5 and 325 TRX a transfer.
	c.EnergySpikes = []int64{1_000, 2_000, 3_500, 5_000}
	c.EnergySpells = durations(time.Minute, 3*time.Minute, 5*time.Minute)
	return c
}

// Pair2 is pair with two withdrawals: the smallest world where two
// operations' steps interleave.
func Pair2() Config {
	c := Pair()
	c.Name = "pair2"
	c.Withdrawals = 2
	return c
}

// Ledger is chaos with a customer whose balance runs out: intake must
// refuse its new withdrawals for want of funds (nothing stored) while
// replaying, to the letter, the ones it already holds, and a release must
// make the money available again.
func Ledger() Config {
	c := chaosBase()
	c.Name = "ledger"
	c.Withdrawals = 30
	c.ThinCustomer = true
	return c
}

// Settings is chaos whose swarm draws the pipeline's settings too (every
// seed its own MinValidity, safety margin, stuck policy, park bounds, claim
// batch and retry intervals, each legal by sluice.Config.Validate): a bug
// that bites only at a setting no other world runs (a margin of zero, a
// park limit of one, a claim of one row a step) has a world to fail in.
// Chaos itself keeps its settings, so that its tapes, and the kill rows
// and mutant budgets measured with them, stay as they are.
func Settings() Config {
	c := Chaos()
	c.Name = "settings"
	// A swarm by definition (explore's -swarm=false turns the draw off, and
	// what is left is chaos under another name).
	c.Swarm, c.SwarmSettings = true, true
	return c
}

// Deploys is fees with a rolling deploy of a new release between its
// first minute and its fourth (Config.Deploy): the new release raises the
// starting fee limit, raises it and the ceiling, lowers both below limits
// the old release's rebuilds already reached, lowers the rebuild budget or
// lowers the park limit. Every worker's decisions are judged by the
// settings of its own release, whichever release built or parked the row
// before: a rebuild under the new release starts from at least its
// FeeLimit and never above its FeeLimitMax, and a row past its rebuild
// budget or park limit is not rebuilt or parked again. The other worlds
// run one release from start to end.
func Deploys() Config {
	c := Fees()
	c.Name = "deploys"
	c.Deploy = &Deploy{
		At:   durations(time.Minute, 2*time.Minute, 4*time.Minute),
		Gaps: durations(5*time.Second, 30*time.Second),
		Releases: []Release{
			{FeeLimit: 60_000_000, FeeLimitMax: 240_000_000},
			{FeeLimit: 100_000_000, FeeLimitMax: 320_000_000},
			{FeeLimit: 20_000_000, FeeLimitMax: 120_000_000},
			// The world's fee limits, a smaller budget of rebuilds
			// (3 to 1), or a lower park limit (8 to 2): rows the old
			// release rebuilt or parked past them are met by the new.
			{FeeLimit: 40_000_000, FeeLimitMax: 240_000_000, Rebuilds: 1},
			{FeeLimit: 40_000_000, FeeLimitMax: 240_000_000, ParkLimit: 2},
		},
	}
	return c
}

var worlds = map[string]func() Config{"deploys": Deploys, "settings": Settings, "ledger": Ledger, "chaos": Chaos, "pair": Pair, "pair2": Pair2, "calm": Calm, "zombies": Zombies, "laggy": Laggy, "storefaults": StoreFaults, "nodes": Nodes, "reorgs": Reorgs, "logs": Logs, "pairnodes": PairNodes, "wire": Wire, "fees": Fees, "proxies": Proxies}

// World returns the named world's configuration.
func World(name string) (Config, error) {
	f, ok := worlds[name]
	if !ok {
		return Config{}, fmt.Errorf("unknown world %q (known: %v)", name, WorldNames())
	}
	return f(), nil
}

// WorldNames lists the worlds, sorted.
func WorldNames() []string {
	names := make([]string, 0, len(worlds))
	for n := range worlds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func strictJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}
