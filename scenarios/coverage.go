package scenarios

import (
	"slices"
	"strings"
	"time"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/tron/mocknode"
)

// Coverage is sometimes-assertions in the style of Antithesis: named
// conditions the worlds should reach at least once in a run of many seeds.
// A green run of a world that never crashed a worker between its
// write-ahead and its send proves nothing about that crash; the catalog
// names such moments so that a run can show which it reached (Result.
// Coverage, per seed; explore sums the seeds that reached each) and
// -require-coverage can fail a run that never reached one.
//
// Conditions are read where the world already sees them: most from the
// run's snapshot, its fault tally and its own records after the run; a few
// (a crash between two particular calls, a write that took effect with its
// answer lost) from counters the wrappers bump on the spot, an array
// increment on a path that already branched there, never an allocation.
// None of it asks the tape or records a fact: counting changes no run.

// A Condition is one entry of the coverage catalog.
type Condition struct {
	Name string
	Doc  string
	// Expect says whether a world can reach it, from its Config alone (a
	// world without store faults cannot lose a store call's answer); nil
	// for every world. A condition expected of a world and never reached
	// over a run's seeds is what -require-coverage reports.
	Expect func(Config) bool
	// Unreachable, when set, says why no world can reach it: an edge in the
	// core's table that no code of the core (or the operator service, as
	// the worlds drive it) takes. It is never expected.
	Unreachable string
	// Rare, when set, says where a world reached it, too seldom to require
	// of a run: it is not expected (ExpectedCoverage), and a test re-runs
	// the seed of the world where it was seen to show it reachable.
	Rare      string
	rareWorld string
	rareSeed  uint64
	// Seldom, when set, says which worlds besides Expect's can reach it,
	// too seldom to require of a run (SeldomWhy says how): reaching it
	// there is no error, and a run that misses it is not short.
	Seldom    func(Config) bool
	SeldomWhy string

	// edge is the state-machine edge the condition counts (edge conditions
	// only); hook is the world's counter for a hooked one (covNone if not).
	edge   [2]sluice.State
	isEdge bool
	hook   int
}

// The conditions the wrappers count as they happen (world.cov), because
// no record after the run shows them.
const (
	covNone = iota
	covCrashAfterWriteAhead
	covCrashAfterSend
	covFencedWrite
	covPausedPastLease
	covStoreCASLost
	covStoreInsertLost
	covStoreClaimLost
	covDeployRebuild
	covDeployLimits
	covDeployOverBudget
	covDeployOverParks
	covHooks // how many counters a world keeps
)

// covCounts are the hooked conditions' counters of one run.
type covCounts [covHooks]int32

// Coverage is the catalog, in a fixed order: the state machine's edges
// (sluice.Transitions, then sluice.OperatorTransitions), then the
// conditions at the dangerous points, grouped by where they happen.
var Coverage = buildCoverage()

// CoverageNames lists the catalog's names, in order.
func CoverageNames() []string {
	out := make([]string, len(Coverage))
	for i, c := range Coverage {
		out[i] = c.Name
	}
	return out
}

// ExpectedCoverage lists, in catalog order, the conditions a world of cfg
// is expected to reach in a run of many seeds.
func ExpectedCoverage(cfg Config) []string {
	var out []string
	for _, c := range Coverage {
		if c.expected(cfg) {
			out = append(out, c.Name)
		}
	}
	return out
}

// MissingCoverage lists, in catalog order, the conditions a world of cfg is
// expected to reach that seeds (condition -> how many seeds reached it,
// summed over a run) shows no seed reaching: what -require-coverage fails
// on. Nil when nothing is missing.
func MissingCoverage(cfg Config, seeds map[string]int) []string {
	var out []string
	for _, name := range ExpectedCoverage(cfg) {
		if seeds[name] == 0 {
			out = append(out, name)
		}
	}
	return out
}

// CoverageLine is one condition of the catalog for a world, with the seeds
// that reached it: a row of a summary's or a report's coverage table (it
// has reports.CoverageRow's fields, so the one converts to the other).
type CoverageLine struct {
	Name, Doc string
	Seeds     int
	Expected  bool   // ExpectedCoverage lists it
	Note      string // why it is never expected, when so
}

// CoverageTable is the whole catalog for a world of cfg, in catalog order,
// with seeds (condition -> seeds that reached it, summed over a run).
func CoverageTable(cfg Config, seeds map[string]int) []CoverageLine {
	out := make([]CoverageLine, len(Coverage))
	for i, c := range Coverage {
		out[i] = CoverageLine{Name: c.Name, Doc: c.Doc, Seeds: seeds[c.Name], Expected: c.expected(cfg)}
		switch {
		case c.Unreachable != "":
			out[i].Note = "unreachable: " + c.Unreachable
		case c.Rare != "":
			out[i].Note = "too rare to require: " + c.Rare
		case c.seldom(cfg):
			out[i].Note = "too rare to require here: " + c.SeldomWhy
		}
	}
	return out
}

// CoverageDoc is the named condition's one-line doc ("" if unknown), for
// summaries and reports.
func CoverageDoc(name string) string {
	for _, c := range Coverage {
		if c.Name == name {
			return c.Doc
		}
	}
	return ""
}

// canReach says whether a world of cfg can reach the condition at all.
func (c *Condition) canReach(cfg Config) bool {
	return c.Unreachable == "" && (c.Expect == nil || c.Expect(cfg) || c.Seldom != nil && c.Seldom(cfg))
}

// expected says whether a run of many seeds of a world of cfg must reach
// the condition (ExpectedCoverage).
func (c *Condition) expected(cfg Config) bool {
	return c.Rare == "" && c.Unreachable == "" && (c.Expect == nil || c.Expect(cfg))
}

// seldom says whether a world of cfg can reach the condition only seldom
// (Seldom, and not Expect).
func (c *Condition) seldom(cfg Config) bool {
	return c.canReach(cfg) && !c.expected(cfg) && c.Rare == ""
}

// EdgeName is the coverage name of a state-machine edge.
func EdgeName(from, to sluice.State) string { return "edge:" + from.String() + "->" + to.String() }

// every says whether a world that makes every nth request special (n > 0)
// makes any at all in its withdrawals.
func every(n, withdrawals int) bool { return n > 0 && n <= withdrawals }

// Predicates on a world's configuration, shared by several conditions.
func workerFaults(c Config) bool { return c.WorkerFaultP > 0 || c.PauseBeforeWriteP > 0 }
func pausesPastLease(c Config) bool {
	return workerFaults(c) && slices.ContainsFunc(c.Pauses, func(d Duration) bool { return d > c.Lease })
}
func slowWorkers(c Config) bool {
	return workerFaults(c) || c.SignerFailP > 0 || c.SlowCallP > 0
}
func lostSends(c Config) bool { return c.BroadcastLieP > 0 || c.ChainEvents || c.ReorgP > 0 }
func storeFaults(c Config) bool {
	return c.StoreFaultP > 0
}
func reviews(c Config) bool {
	return c.OddExecutionP > 0 || c.BroadcastLieP > 0 || c.ShortageP > 0
}
func operatorOnCall(c Config) bool  { return c.OperatorEvery > 0 }
func customerCancels(c Config) bool { return operatorOnCall(c) && c.CustomerCancelP > 0 }

// clientRetries: a client may give up on a slow answer and post again.
func clientRetries(c Config) bool {
	return c.ClientRetries > 0 && (c.ServerStallP > 0 || storeFaults(c))
}

// edgeExpect says which worlds are expected to take each edge of the
// core's state machine, and edgeUnreachable why the core never takes some.
// An edge not listed is the happy path, expected of every world.
var (
	edgeExpect = map[[2]sluice.State]func(Config) bool{
		{sluice.Requested, sluice.Rejected}: func(c Config) bool { return every(c.RejectEvery, c.Withdrawals) },
		// Stale before the first send: something slowed the worker.
		{sluice.Signed, sluice.Signing}: slowWorkers,
		// Rebuilds with proof of death, and first sends refused, need sends
		// that went astray or a chain that loses them.
		{sluice.Broadcasting, sluice.Signing}: lostSends,
		{sluice.Broadcast, sluice.Signing}:    lostSends,
		{sluice.Broadcasting, sluice.Failed}:  lostSends,
		{sluice.Broadcast, sluice.Failed}:     func(c Config) bool { return c.ReceiptFailP > 0 || c.ShortageP > 0 },
		{sluice.Broadcast, sluice.Review}:     func(c Config) bool { return c.OddExecutionP > 0 },
		// Parked past its bounds: the signer, or sends refused.
		{sluice.Signing, sluice.Review}:      func(c Config) bool { return c.SignerFailP > 0 || c.SignerOutageP > 0 },
		{sluice.Signed, sluice.Review}:       slowWorkers,
		{sluice.Broadcasting, sluice.Review}: func(c Config) bool { return c.BroadcastLieP > 0 || c.ShortageP > 0 },
		// An operator's cancel of a row the signer parked, once its unsent
		// envelope is proven dead: it needs the row parked in signing for
		// long, as a signer down for a spell does, or, with a signer that
		// only fails now and then, a lease of minutes (laggy: 4 of its
		// first 120 seeds; chaos without outages took it once in 10,000).
		{sluice.Signing, sluice.Failed}: func(c Config) bool {
			return operatorOnCall(c) && (c.SignerOutageP > 0 || c.SignerFailP > 0 && c.Lease.D() >= 5*time.Minute)
		},
		// A customer's cancel of a row not yet built, through the operator.
		{sluice.Requested, sluice.Failed}: customerCancels,
		{sluice.Validated, sluice.Failed}: customerCancels,
		// The operator settles reviews.
		{sluice.Review, sluice.Failed}:    func(c Config) bool { return operatorOnCall(c) && reviews(c) },
		{sluice.Review, sluice.Confirmed}: func(c Config) bool { return operatorOnCall(c) && reviews(c) },
	}
	edgeUnreachable = map[[2]sluice.State]string{
		{sluice.Validated, sluice.Rejected}: "the pipeline validates a request in requested; from validated it only builds (no code takes this edge)",
		{sluice.Signed, sluice.Failed}: "a first send's hard reject comes after the write-ahead (broadcasting), and an operator cancels only a parked row, " +
			"which signed never is (the signer parks in signing, refused sends in broadcasting)",
		{sluice.Validated, sluice.Review}: "review by parking needs a park, and validated never parks: a node that does not answer the build is waited for, not parked",
	}
	// edgeRare: edges a world reaches, too seldom to require of a run.
	edgeRare = map[[2]sluice.State]struct {
		why, world string
		seed       uint64
	}{}
)

func buildCoverage() []Condition {
	var out []Condition
	// The edges are the model's, not sluice.Transitions(): a core that
	// lost an edge must not also lose the condition that asks for it.
	for _, t := range model.Edges() {
		k := [2]sluice.State{t.From, t.To}
		rare := edgeRare[k]
		out = append(out, Condition{Name: EdgeName(t.From, t.To), Doc: t.Doc, Expect: edgeExpect[k],
			Unreachable: edgeUnreachable[k], Rare: rare.why, rareWorld: rare.world, rareSeed: rare.seed, edge: k, isEdge: true})
	}
	cond := func(name, doc string, expect func(Config) bool, hook int) {
		out = append(out, Condition{Name: name, Doc: doc, Expect: expect, hook: hook})
	}
	// Workers.
	cond("worker:crash-after-write-ahead", "a worker crashes after committing broadcasting and before its send", func(c Config) bool { return c.WorkerFaultP > 0 }, covCrashAfterWriteAhead)
	cond("worker:crash-after-send", "a worker crashes after a send and before its next write: the bytes may be out, the row does not say how it went", func(c Config) bool { return c.WorkerFaultP > 0 }, covCrashAfterSend)
	cond("worker:paused-past-lease", "a worker holding work pauses longer than its lease: a zombie in the making", pausesPastLease, covPausedPastLease)
	cond("worker:stopped-mid-call", "a worker is stopped (its context cancelled) under a node call, as a deploy stops it", func(c Config) bool { return c.GracefulStopP > 0 }, covNone)
	cond("deploy:rebuild-across", "a worker of a deployed release rebuilds a row whose envelope the old release built", func(c Config) bool { return c.Deploy != nil }, covDeployRebuild)
	cond("deploy:rebuild-meets-new-limits", "a worker of a deployed release rebuilds an envelope the old release built with a fee limit outside the new release's limits (below its FeeLimit or above its FeeLimitMax)", func(c Config) bool { return c.Deploy != nil }, covDeployLimits)
	cond("deploy:row-past-new-budget", "a worker of a deployed release with a smaller rebuild budget writes to a row the old release rebuilt past it", func(c Config) bool { return deploysSome(c, func(r Release) bool { return r.Rebuilds > 0 }) }, covDeployOverBudget)
	cond("deploy:row-past-new-park-limit", "a worker of a deployed release with a lower park limit writes to a row the old release parked past it", func(c Config) bool { return deploysSome(c, func(r Release) bool { return r.ParkLimit > 0 }) }, covDeployOverParks)
	cond("metrics:census-failed", "a metrics scrape whose census the store failed: its gauges left out, the error counted", func(c Config) bool { return c.CensusFaultP > 0 && c.Wire }, covNone)
	cond("node:call-cancelled", "a node call over the wire ends cancelled (the worker was stopped under it): the metrics' canceled label", func(c Config) bool { return c.GracefulStopP > 0 && c.Wire }, covNone)
	cond("worker:write-fenced", "a zombie's write (CAS, release, park) is refused with ErrFenced: another worker took the lease", workerFaults, covFencedWrite)
	cond("lease:takeover", "a claim takes a row whose holder never let go of it (its lease lapsed)", func(c Config) bool { return workerFaults(c) || storeFaults(c) }, covNone)
	cond("lease:takeover-mid-broadcast", "a lease lapses with the row in broadcasting and another worker takes it: the send may or may not have happened", func(c Config) bool { return c.WorkerFaultP > 0 }, covNone)
	// The node and the chain.
	cond("node:accept-then-timeout", "the node accepts a broadcast and its answer is lost", func(c Config) bool { return c.BroadcastLieP > 0 }, covNone)
	cond("node:lost-request", "a broadcast never reaches the node", func(c Config) bool { return c.BroadcastLieP > 0 }, covNone)
	cond("node:error-after-accept", "the node takes a transaction and answers an error (its relay failed)", func(c Config) bool { return c.BroadcastLieP > 0 }, covNone)
	cond("node:lies-about-txid", "the node answers an expiration or TAPoS error for a transaction it holds or has included", func(c Config) bool { return c.BroadcastLieP > 0 }, covNone)
	cond("node:resend-same-txid", "a worker sends a txid it (or another) already sent: the network must deduplicate", func(c Config) bool { return lostSends(c) || c.QueryLieP > 0 }, covNone)
	cond("rebuild:after-accepted-send-lost", "a rebuild with proof of death retires a txid a node had accepted: the send was taken, then lost", func(c Config) bool { return c.ChainEvents || c.ReorgP > 0 }, covNone)
	cond("chain:reorg-orphaned-inclusion", "a reorg takes an included withdrawal off the chain", func(c Config) bool { return c.ReorgP > 0 }, covNone)
	cond("chain:stale-fork", "at a reorg a node behind the balancer stays on the old fork for a while", func(c Config) bool { return c.StaleForkP > 0 }, covNone)
	cond("chain:relay-resent-lost", "a send a node lost reaches the chain through a peer", func(c Config) bool { return c.RelayP > 0 && lostSends(c) }, covNone)
	cond("chain:gossip-lost", "a transaction one node accepted never reaches another's pool", func(c Config) bool { return c.Nodes > 1 && c.GossipLossP > 0 }, covNone)
	cond("chain:odd-execution", "a transfer succeeds other than as asked, or is reported otherwise", func(c Config) bool { return c.OddExecutionP > 0 }, covNone)
	cond("wallet:short-of-trx", "a broadcast is refused because the hot wallet has no TRX for bandwidth", func(c Config) bool { return c.ShortageP > 0 }, covNone)
	cond("wallet:short-of-energy", "a transaction is first sent while the hot wallet has no energy: it runs out of energy on chain", func(c Config) bool { return c.ShortageP > 0 }, covNone)
	cond("chain:priced-out-of-energy", "a transaction's fee limit cannot buy its energy at its block's price: it runs out of energy on chain and burns the whole limit", func(c Config) bool { return c.EnergySpikeP > 0 }, covNone)
	cond("fees:raised-limit-paid", "a transfer pays with a fee limit above the starting one: raised after running out of energy (priced, or forced by a shortage or a failed receipt)", func(c Config) bool { return c.EnergySpikeP > 0 || c.ShortageP > 0 || c.ReceiptFailP > 0 }, covNone)
	cond("fees:paid-at-ceiling", "a transfer pays with its fee limit at FeeLimitMax: raised to the ceiling, not past it", func(c Config) bool { return c.EnergySpikeP > 0 }, covNone)
	cond("worker:parked", "a worker parks an operation after operational trouble", parks, covNone)
	// The two park bounds, each where a world's spells reach it first: a
	// ParkFor of a minute (laggy) comes before ParkLimit parks, one of five
	// minutes after them.
	cond("worker:review-park-limit", "the park bounds send a withdrawal to review after ParkLimit parks in its life", func(c Config) bool {
		return parks(c) && c.Withdrawals >= 8 && c.Sluice.ParkFor > time.Minute
	}, covNone)
	out[len(out)-1].Seldom, out[len(out)-1].SeldomWhy = parks, "a withdrawal parked ParkLimit times, which few withdrawals or a short ParkFor leave rare"
	cond("worker:review-park-for", "the park bounds send a withdrawal to review before ParkLimit parks: its spell of parks (a release's wait included) reached ParkFor", func(c Config) bool {
		return parks(c) && c.Sluice.ParkFor <= time.Minute
	}, covNone)
	out[len(out)-1].Seldom, out[len(out)-1].SeldomWhy = parks, "a spell of parks as long as ParkFor, which backoff capped at ParkBackoffMax reaches only after several parks"
	// The store.
	cond("store:failed-before-effect", "a store call fails before it reaches the store: nothing happened", storeFaults, covNone)
	cond("store:cas-answer-lost", "a CAS takes effect and its answer is lost: the worker hears it failed", storeFaults, covStoreCASLost)
	cond("store:insert-answer-lost", "an insert creates the row and its answer is lost: the client hears it failed", storeFaults, covStoreInsertLost)
	cond("store:claim-answer-lost", "a claim takes rows and its answer is lost: they wait for their leases to lapse", storeFaults, covStoreClaimLost)
	// Intake.
	cond("intake:replayed", "a POST of an id already stored with the same payload is answered from the stored operation", func(c Config) bool {
		return every(c.DuplicateEvery, c.Withdrawals) || clientRetries(c)
	}, covNone)
	cond("intake:conflict-refused", "a POST reusing an id with another payload is refused", func(c Config) bool { return every(c.ConflictEvery, c.Withdrawals) }, covNone)
	cond("intake:invalid-refused", "a POST invalid at the door is refused, nothing stored", func(c Config) bool {
		return every(c.InvalidEvery, c.Withdrawals) || every(c.HostileEvery, c.Withdrawals)
	}, covNone)
	cond("intake:unfunded-refused", "a POST the customer's balance does not cover is refused, nothing stored", func(c Config) bool { return c.ThinCustomer || c.DepositEvery > 0 }, covNone)
	out[len(out)-1].Seldom = func(c Config) bool { return every(c.HostileEvery, c.Withdrawals) }
	out[len(out)-1].SeldomWhy = "a hostile client's damaged amount that reads as a valid one above its customer's funds (a point dropped: 631.696875 becomes 631696875)"
	// Money arriving.
	cond("ledger:balance-drained", "a hold takes a customer's balance to exactly zero (the balance covers an amount equal to it)", func(c Config) bool { return c.ThinCustomer }, covNone)
	cond("ledger:late-deposit-held", "a withdrawal is held against money deposited while the run went on", func(c Config) bool { return c.DepositEvery > 0 }, covNone)
	cond("ledger:deposit-repeated", "a deposit's ref is credited again and answered as a replay, crediting nothing", func(c Config) bool { return c.DepositEvery > 0 }, covNone)
	cond("ledger:deposit-conflict-refused", "a deposit's ref is sent again with another amount and refused, crediting nothing", func(c Config) bool { return c.DepositEvery > 0 }, covNone)
	cond("intake:answer-unknown", "a POST fails with its outcome unknown (a store error, a client that gave up): the insert may have committed", func(c Config) bool {
		return storeFaults(c) || c.ServerStallP > 0
	}, covNone)
	cond("client:retried", "a client gives up waiting for an answer and retries with the same id", clientRetries, covNone)
	// The operator.
	cond("operator:refused", "the operator service refuses an operator's act (no proof of death, a worker got there first)", func(c Config) bool { return operatorOnCall(c) && reviews(c) }, covNone)
	cond("operator:colleague-refused", "a second person on call acts (resolve, cancel, retry) on an operation the first has just made final, and is refused", func(c Config) bool { return operatorOnCall(c) && reviews(c) }, covNone)
	cond("operator:looked", "the person on call opens an operation's page before acting on it, and the page shows the row and its log as they are", func(c Config) bool { return operatorOnCall(c) && reviews(c) }, covNone)
	cond("operator:slip-refused", "a request the person on call got wrong (a name with a space, a form for JSON, a txid a digit short) is answered 415 or 422 and counted invalid", func(c Config) bool { return c.Wire && operatorOnCall(c) }, covNone)
	cond("operator:wrong-txid-refused", "a resolution by a txid not the operation's own (another's, or one it retired) is refused", func(c Config) bool { return c.Wire && operatorOnCall(c) && reviews(c) }, covNone)
	return out
}

// coverage is what the run reached: condition -> how many times, for the
// conditions reached at least once. It reads the snapshot, the tally and
// the world's records after the run, never the tape.
func (w *world) coverage(snap *model.Snapshot, tally []model.Tally, st *model.Stats) map[string]int {
	out := make(map[string]int, 48)
	add := func(name string, n int) {
		if n > 0 {
			out[name] += n
		}
	}
	tallied := func(kinds ...string) int {
		n := 0
		for _, t := range tally {
			if slices.Contains(kinds, t.Kind) {
				n += t.Count
			}
		}
		return n
	}
	for _, c := range Coverage {
		switch {
		case c.isEdge:
			add(c.Name, st.Transitions[c.edge[0]][c.edge[1]])
		case c.hook != covNone:
			add(c.Name, int(w.cov[c.hook]))
		}
	}
	takeovers, midBroadcast := w.takeovers(snap)
	add("lease:takeover", takeovers)
	add("lease:takeover-mid-broadcast", midBroadcast)
	add("node:accept-then-timeout", tallied("node-accept-then-timeout"))
	add("node:lost-request", tallied("node-lose-request"))
	add("node:error-after-accept", tallied("node-relay-fail-after-accept", "node-other-error-after-accept"))
	add("node:lies-about-txid", tallied("node-expiration-lie", "node-tapos-lie"))
	add("node:resend-same-txid", w.resends(snap.Wire))
	add("rebuild:after-accepted-send-lost", rebuildsOfAccepted(snap))
	add("chain:reorg-orphaned-inclusion", tallied("chain-tx-orphaned"))
	add("chain:stale-fork", tallied("chain-stale-fork"))
	add("chain:relay-resent-lost", tallied("relay"))
	add("chain:gossip-lost", tallied("chain-gossip-lost"))
	for _, t := range tally {
		if strings.HasPrefix(t.Kind, "odd-execution-") {
			add("chain:odd-execution", t.Count)
		}
	}
	add("wallet:short-of-trx", tallied("wallet-short-trx-refusal"))
	add("wallet:short-of-energy", tallied("wallet-short-energy-tx"))
	add("chain:priced-out-of-energy", tallied("chain-priced-out-of-energy"))
	raised, ceiling := 0, 0
	for _, in := range snap.Inclusions {
		if in.TransferOK && in.FeeLimit > w.cfg.Sluice.FeeLimit {
			raised++
			if in.FeeLimit == w.cfg.Sluice.FeeLimitMax {
				ceiling++
			}
		}
	}
	add("fees:raised-limit-paid", raised)
	add("fees:paid-at-ceiling", ceiling)
	add("worker:parked", len(snap.Parks))
	byLimit, byFor := parkReviews(snap, w.cfg.Sluice.ParkLimit)
	add("worker:review-park-limit", byLimit)
	add("worker:review-park-for", byFor)
	add("worker:stopped-mid-call", tallied("worker-stop"))
	cancelled := 0
	for _, call := range wireCalls {
		cancelled += w.wt.fails[call+"/canceled"]
	}
	add("node:call-cancelled", cancelled)
	add("metrics:census-failed", tallied("census-fault"))
	add("store:failed-before-effect", tallied("store-error-before"))
	var replayed, conflict, invalid, unfunded, unknown int
	for _, r := range snap.Intake {
		switch r.Outcome {
		case model.Replayed:
			replayed++
		case model.Conflict:
			conflict++
		case model.Invalid:
			invalid++
		case model.Unfunded:
			unfunded++
		case model.Failed:
			unknown++
		}
	}
	add("intake:replayed", replayed)
	add("intake:conflict-refused", conflict)
	add("intake:invalid-refused", invalid)
	add("intake:unfunded-refused", unfunded)
	add("intake:answer-unknown", unknown)
	if len(snap.LateDeposits) > 0 {
		held := 0
		for i := range snap.Operations {
			if snap.Operations[i].Request.Customer == lateCustomer {
				held++
			}
		}
		add("ledger:late-deposit-held", held)
	}
	drained := 0
	for _, r := range snap.LedgerReadings {
		if r.Account.Balance == 0 && r.Account.Held > 0 {
			drained++
		}
	}
	add("ledger:balance-drained", drained)
	add("ledger:deposit-repeated", tallied("deposit-repeat"))
	add("ledger:deposit-conflict-refused", tallied("deposit-conflict-refused"))
	add("client:retried", tallied("client-retry"))
	add("operator:refused", tallied("operator-retry-refused", "operator-cancel-refused", "operator-resolve-refused"))
	add("operator:colleague-refused", tallied("operator-colleague-refused"))
	add("operator:looked", tallied("operator-look"))
	add("operator:slip-refused", tallied("operator-slip"))
	add("operator:wrong-txid-refused", tallied("operator-wrong-txid-refused"))
	return out
}

// takeovers counts the claims that took a row whose previous holder never
// let go of it (no release, park or terminal write under its token by the
// time of the claim), and of those the ones that found the row in
// broadcasting. An operator's resolution ends a holder's claim too.
func (w *world) takeovers(snap *model.Snapshot) (all, midBroadcast int) {
	type key struct {
		op    sluice.OperationID
		token sluice.FencingToken
	}
	// Sized up front: growing these maps was most of what counting cost.
	ends := len(w.releases)
	for _, r := range w.writes {
		if r.Terminal {
			ends++
		}
	}
	ended := make(map[key]time.Time, ends)
	end := func(k key, at time.Time) {
		if t, ok := ended[k]; !ok || at.Before(t) {
			ended[k] = at
		}
	}
	for _, r := range w.releases {
		end(key{r.Op, r.Token}, r.At)
	}
	for _, r := range w.writes {
		if r.Terminal {
			end(key{r.Op, r.Token}, r.At)
		}
	}
	held := make(map[sluice.OperationID]model.ClaimRecord, len(w.names))
	var taken []takeover
	for _, c := range w.claims {
		prev, ok := held[c.Op]
		if c.Operator {
			delete(held, c.Op)
			continue
		}
		held[c.Op] = c
		if !ok {
			continue
		}
		if t, ok := ended[key{prev.Op, prev.Token}]; ok && !t.After(c.At) {
			continue
		}
		taken = append(taken, takeover{op: c.Op, at: c.At})
	}
	statesAt(snap.Events, taken)
	for _, t := range taken {
		if t.state == sluice.Broadcasting {
			midBroadcast++
		}
	}
	return len(taken), midBroadcast
}

// takeover is a claim that took a row from a holder who never let go, and
// the state the row was in at that moment.
type takeover struct {
	op    sluice.OperationID
	at    time.Time
	state sluice.State
}

// statesAt fills in each takeover's state by the store's event log: the
// state its row's last event at or before its time entered. One pass over
// the log, each event of a row taken over checked against that row's
// takeovers only: a chaos run has a few dozen takeovers, and checking each
// event against all of them was half of what counting them cost.
func statesAt(events []sluice.Event, taken []takeover) {
	if len(taken) == 0 {
		return
	}
	// order is taken's positions grouped by row; span is each row's group.
	order := make([]int32, len(taken))
	for k := range order {
		order[k] = int32(k)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(string(taken[a].op), string(taken[b].op)) })
	span := make(map[sluice.OperationID][2]int32, len(taken))
	for i := 0; i < len(order); {
		j, op := i+1, taken[order[i]].op
		for j < len(order) && taken[order[j]].op == op {
			j++
		}
		span[op] = [2]int32{int32(i), int32(j)}
		i = j
	}
	for i := range events {
		e := &events[i]
		sp, ok := span[e.OperationID]
		if !ok {
			continue
		}
		for _, k := range order[sp[0]:sp[1]] {
			if t := &taken[k]; !e.At.After(t.at) {
				t.state = e.To
			}
		}
	}
}

// resends counts the worker broadcasts of a txid already on the wire (the
// relay's re-sends are a peer's, not a worker's): every attempt but the
// first of each txid a worker sent (w.sent holds those, one each).
func (w *world) resends(wire []mocknode.WireAttempt) int {
	n := 0
	for _, a := range wire {
		if a.Worker != relayName {
			n++
		}
	}
	return n - len(w.sent)
}

// parks reports whether a world has the operational trouble a worker
// parks for.
func parks(c Config) bool { return c.SignerFailP > 0 || c.BroadcastLieP > 0 || c.ShortageP > 0 }

// parkReviews counts the workers' reviews the world read as the park
// bounds' (never the core's reason): by the world's records of the parks,
// those after limit parks in the operation's life, and those before it,
// which only a spell of ParkFor sends (no-operational-failure holds each
// to that).
func parkReviews(snap *model.Snapshot, limit int) (byLimit, byFor int) {
	for _, w := range snap.Writes {
		if w.Review != model.ReviewParked {
			continue
		}
		n := 0
		for _, p := range snap.Parks {
			if p.Op == w.Op && p.Seq < w.Seq {
				n++
			}
		}
		if n >= limit {
			byLimit++
		} else {
			byFor++
		}
	}
	return byLimit, byFor
}

// rebuildsOfAccepted counts the rebuilds that retired a txid some node had
// accepted.
func rebuildsOfAccepted(snap *model.Snapshot) int {
	n := 0
	for _, e := range snap.Events {
		if e.RetiredTxid.IsZero() || e.To != sluice.Signing {
			continue
		}
		for _, a := range snap.Accepted {
			if a.Txid == e.RetiredTxid {
				n++
				break
			}
		}
	}
	return n
}
