package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Fault is one row of the worlds' fault menu: what it is, the choice kinds
// it asks the tape, the tally kinds that count it, how to turn it off, and
// whether exhaustive search explores it. Calm, ForExhaustive, the shrink
// edits, the tally's list of kinds, what counts as a fault-free run and
// exhaustive search's classification of choices are all derived from this
// table: adding a fault is one row here plus its injection site.
type Fault struct {
	Name string
	Doc  string
	// Choices are the choice kinds its injection site asks (Choose or
	// Chance): each must be classified here or exhaustive search would
	// silently never branch on it (TestEveryChoiceKindIsClassified).
	Choices []string
	// Tally are the tally kinds that count it (the node's lies and chain
	// events are counted by the mock node under node-* and chain-*).
	Tally []string
	// NodeTally names what the mock node counts for it, for the README
	// (the node keeps those tallies itself).
	NodeTally string
	// Benign faults are no fault to the processor (clients that read, post
	// twice, reuse an id or send garbage): a run in which only these fired
	// is fault-free, and must confirm every valid withdrawal.
	Benign bool
	// Off turns the fault off in a world; nil for a consequence of other
	// faults (client retries and timeouts follow stalls).
	Off func(*Config)
	// Exhaustive: exhaustive search keeps it and branches on its choices
	// within the bounds; otherwise ForExhaustive turns it off.
	Exhaustive bool
}

// Faults is the fault table, in a fixed order.
var Faults = []Fault{
	{
		Name: "worker-fault", Doc: "a worker crashes (and restarts after a delay), pauses into a zombie, or its wall clock jumps",
		Choices: []string{"fault", "fault-kind", "pause-len", "jump-len", "restart-delay"},
		Tally:   []string{"worker-crash", "worker-pause", "clock-jump", "worker-restart"},
		Off:     func(c *Config) { c.WorkerFaultP = 0 }, Exhaustive: true,
	},
	{
		Name: "pause-before-write", Doc: "a worker pauses right before a CAS: the zombie maker",
		Choices: []string{"pause-before-write"},
		Tally:   []string{"worker-pause-before-write"},
		Off:     func(c *Config) { c.PauseBeforeWriteP = 0 }, Exhaustive: true,
	},
	{
		Name: "broadcast-lie", Doc: "the node loses, refuses or lies about a broadcast (the mock node's menu)",
		Choices: []string{"lie", "lie-kind"}, NodeTally: "node-* (one kind per lie)",
		Off: func(c *Config) { c.BroadcastLieP = 0 }, Exhaustive: true,
	},
	{
		Name: "query-timeout", Doc: "a query to the node times out",
		Choices: []string{"query-lie"}, NodeTally: "node-query-timeout",
		Off: func(c *Config) { c.QueryLieP = 0 },
	},
	{
		Name: "receipt-fail", Doc: "a transaction reverts, runs out of energy or (OtherReceipts) fails another way on chain",
		Choices: []string{"receipt-fail", "receipt", "receipt-other"}, NodeTally: "chain-override-receipt",
		Off: func(c *Config) { c.ReceiptFailP = 0 },
	},
	{
		Name: "chain-events", Doc: "a node restarts (losing its pool), evicts a pool entry, producers miss slots",
		Choices: []string{"chain-event", "chain-event-node", "evict", "skip-slots"}, NodeTally: "chain-pool-restart, chain-pool-evict, chain-missed-slot",
		Off: func(c *Config) { c.ChainEvents = false },
	},
	{
		Name: "node-lag", Doc: "a node behind the balancer falls behind the producer by some blocks (or catches up), and answers from its own height",
		Choices: []string{"lag", "lag-node", "lag-len"},
		Tally:   []string{"node-lag"},
		Off:     func(c *Config) { c.LagP = 0 }, Exhaustive: true,
	},
	{
		Name: "gossip-loss", Doc: "a transaction accepted by one node never reaches another's pool",
		Choices: []string{"gossip-loss"}, NodeTally: "chain-gossip-lost",
		Off: func(c *Config) { c.GossipLossP = 0 }, Exhaustive: true,
	},
	{
		Name: "reorg", Doc: "the last blocks above the solid block are orphaned; each transaction in them returns to the pools, is re-included or vanishes",
		Choices: []string{"reorg", "reorg-depth", "reorg-fate"}, NodeTally: "chain-reorged, chain-tx-orphaned",
		Off: func(c *Config) { c.ReorgP = 0 },
	},
	{
		Name: "stale-fork", Doc: "at a reorg, a node behind the balancer that had an orphaned block stays on the old fork (stalled, showing the orphaned blocks and their inclusions) until a lag change, the next reorg or the heal",
		Choices: []string{"stale-fork"}, NodeTally: "chain-stale-fork",
		Off: func(c *Config) { c.StaleForkP = 0 },
	},
	{
		Name: "odd-execution", Doc: "a USDT transfer succeeds other than as asked (fee on transfer, nothing moved, another amount or recipient, a foreign token's log) or the node reports its logs wrongly",
		Choices: []string{"odd-execution", "odd-execution-kind"}, Tally: oddExecutionTallies(),
		Off: func(c *Config) { c.OddExecutionP = 0 },
	},
	{
		Name: "slow-call", Doc: "a worker's call answers late, inside its lease",
		Choices: []string{"slow-call", "slow-len"},
		Tally:   []string{"slow-call"},
		Off:     func(c *Config) { c.SlowCallP = 0 },
	},
	{
		Name: "relay", Doc: "a send the node lost reaches the chain through a peer",
		Choices: []string{"relay-gap", "relay", "relay-pick"},
		Tally:   []string{"relay"},
		Off:     func(c *Config) { c.RelayP = 0 },
	},
	{
		Name: "wire-middlebox", Doc: "in a wire world, a proxy in front of the node answers a lookup itself: a canned unknown naming no txid, its cached answer about another txid (as is, or with the txid dropped), or the node's answer cut short (the client must refuse each)",
		Choices: []string{"middlebox", "middlebox-kind"},
		Tally:   []string{"wire-middlebox-canned", "wire-middlebox-cached", "wire-middlebox-stripped", "wire-middlebox-cut"},
		Off:     func(c *Config) { c.MiddleboxP = 0 },
	},
	{
		Name: "thin-answer", Doc: "in the proxies world, the proxy in front of the node drops from its answer to a lookup or a block read a field the client must insist on (an included lookup's block_number, block_time or receipt; a block's number, block_id or timestamp): the client must refuse the answer, never fill in a zero",
		Choices: []string{"thin-answer", "thin-field"},
		Tally:   []string{"wire-thin-block_number", "wire-thin-block_time", "wire-thin-receipt", "wire-thin-number", "wire-thin-block_id", "wire-thin-timestamp"},
		Off:     func(c *Config) { c.ThinAnswerP = 0 },
	},
	{
		Name: "lost-route", Doc: "in the proxies world, the proxy in front of the node has lost the lookup route and answers a lookup 404 with its own plain-text page: the client must refuse it, never read \"unknown\" from it",
		Choices: []string{"lost-route"},
		Tally:   []string{"wire-lost-route"},
		Off:     func(c *Config) { c.LostRouteP = 0 },
	},
	{
		Name: "no-upstream", Doc: "in the proxies world, the proxy in front of the node has no healthy backend and answers a lookup or a block read 503 itself: the client must report a failure, and the metrics count it as an error, not a timeout",
		Choices: []string{"no-upstream"},
		Tally:   []string{"wire-no-upstream"},
		Off:     func(c *Config) { c.NoUpstreamP = 0 },
	},
	{
		Name: "review-watch", Doc: "in the proxies world, a customer's GET of an operation is under way whenever the operator cancels or resolves its review: the answer must be one instant of the log, before the operator's move or after it",
		Tally:  []string{"client-watch"},
		Benign: true,
		Off:    func(c *Config) { c.WatchReviews = false },
	},
	{
		Name: "graceful-stop", Doc: "a worker is stopped as a deploy stops it (SIGTERM): its context is cancelled under a node call, its step ends in errors, and it restarts later; its lease stays until it expires",
		Choices: []string{"graceful-stop"},
		Tally:   []string{"worker-stop"},
		Off:     func(c *Config) { c.GracefulStopP = 0 },
	},
	{
		Name: "deploy", Doc: "in the deploys world, a new release of the workers rolls out once: workers started from then on run its fee limits, and the old release's workers are stopped one by one (as a rolling update's SIGTERM stops them) and restart under it",
		Choices: []string{"deploy-at", "deploy-release", "deploy-gap"},
		Tally:   []string{"deploy", "deploy-stop"},
		Off:     func(c *Config) { c.Deploy = nil },
	},
	{
		Name: "census-fault", Doc: "in a wire world, the store fails a metrics scrape's census (a read timing out under load): the scrape must leave the census gauges out and count the error, not show the last census as now",
		Choices: []string{"census-fault"},
		Tally:   []string{"census-fault"},
		Off:     func(c *Config) { c.CensusFaultP = 0 },
	},
	{
		Name: "signer-fail", Doc: "the signer fails (a KMS timeout)",
		Choices: []string{"signer-fail"},
		Tally:   []string{"signer-fail"},
		Off:     func(c *Config) { c.SignerFailP = 0 },
	},
	{
		Name: "signer-outage", Doc: "the signer goes down for a spell (a KMS outage): every signing fails until it is back",
		Choices: []string{"signer-outage", "signer-outage-len"},
		Tally:   []string{"signer-outage"},
		Off:     func(c *Config) { c.SignerOutageP, c.SignerOutages = 0, nil },
	},
	{
		Name: "wallet-shortage", Doc: "the hot wallet runs short of TRX (every broadcast refused for bandwidth) or energy (transactions first sent meanwhile run out of energy on chain) for a spell, then is topped up",
		Choices: []string{"shortage", "shortage-kind", "shortage-len"},
		Tally:   []string{"wallet-short-trx", "wallet-short-energy", "wallet-short-trx-refusal", "wallet-short-energy-tx"},
		Off:     func(c *Config) { c.ShortageP = 0 },
	},
	{
		Name: "energy-price", Doc: "the energy price spikes for a spell (the USDT contract's dynamic energy factor, a price proposal): a transaction whose fee limit cannot buy its energy runs out of energy on chain and burns the whole limit",
		Choices: []string{"energy-spike", "energy-spike-price", "energy-spike-len"},
		Tally:   []string{"energy-spike"}, NodeTally: "chain-priced-out-of-energy",
		Off: func(c *Config) { c.EnergySpikeP = 0 },
	},
	{
		Name: "operator", Doc: "an operator on call acts on the queue (review and parked operations): retry, cancel, resolve as paid, each after a look at the operation's page that must show the row and its log (in wire, now and then by the wrong txid, and each action and credit after a slip the API must refuse for its input, and each action after a request to a route no action has: 404 or 405, nothing changed), or nothing; after a cancel or a resolution lands, a colleague acting from the same page (resolve, cancel, retry) must be refused each time; when all have finished, support opens the page of a finished withdrawal of each kind (not paid, paid after a rebuild, paid after a park)",
		Choices: []string{"operator-act", "operator-txid"},
		Tally:   []string{"operator-retry", "operator-cancel", "operator-resolve", "operator-retry-refused", "operator-cancel-refused", "operator-resolve-refused", "operator-wrong-txid-refused", "operator-colleague-refused", "operator-unavailable", "operator-slip", "operator-route-slip", "operator-look", "support-look"},
		Benign:  true,
		Off:     func(c *Config) { c.OperatorEvery = 0 },
	},
	{
		Name: "late-deposits", Doc: "a customer funded only while the run goes on: a depositor credits it through the operator, sends an unanswered deposit again, replays an answered one, and now and then reuses a ref with another amount (refused)",
		Choices: []string{"deposit-repeat", "deposit-repeat-pick", "deposit-repeat-kind"},
		Tally:   []string{"deposit", "deposit-repeat", "deposit-conflict-refused", "deposit-unavailable"},
		Benign:  true,
		Off:     func(c *Config) { c.DepositEvery = 0 },
	},
	{
		// Not benign: a withdrawal its customer stopped fails, and a
		// fault-free run must confirm every valid one.
		Name: "customer-cancel", Doc: "a customer asks to stop a withdrawal not yet built, and the operator cancels it",
		Choices: []string{"customer-cancel", "customer-cancel-pick"},
		Tally:   []string{"customer-cancel", "customer-cancel-refused"},
		Off:     func(c *Config) { c.CustomerCancelP = 0 },
	},
	{
		Name: "store-fault", Doc: "a store call fails before its effect, fails after it (the answer lost: an ambiguous commit), or stalls",
		Choices: []string{"store-fault", "store-fault-kind", "store-stall-len"},
		Tally:   []string{"store-error-before", "store-error-after", "store-stall"},
		Off:     func(c *Config) { c.StoreFaultP = 0 },
	},
	{
		Name: "server-stall", Doc: "an intake server stalls like a slow database",
		Choices: []string{"server-stall", "stall-len"},
		Tally:   []string{"server-stall"},
		Off:     func(c *Config) { c.ServerStallP = 0 },
	},
	{
		Name: "clock-skew", Doc: "a worker's wall clock is off from the start",
		Choices: []string{"skew"},
		Tally:   []string{"clock-skew"},
		Off:     func(c *Config) { c.Skews = durations(0) },
	},
	{
		Name: "client-timeout", Doc: "a client gives up waiting and retries (a consequence of stalls)",
		Tally: []string{"client-retry", "client-timeout"},
	},
	{
		Name: "reads", Doc: "clients read their withdrawal back; a reader GETs ids at random",
		Choices: []string{"client-get", "read-gap", "read-id"},
		Tally:   []string{"client-read"}, Benign: true,
		Off: func(c *Config) { c.Reads, c.ClientGetP = 0, 0 },
	},
	{
		Name: "duplicate-posts", Doc: "a request posted twice at the same instant",
		Tally: []string{"client-duplicate"}, Benign: true,
		Off: func(c *Config) { c.DuplicateEvery = 0 }, Exhaustive: true,
	},
	{
		Name: "conflicting-posts", Doc: "an id reused with another payload",
		Tally: []string{"client-conflict"}, Benign: true,
		Off: func(c *Config) { c.ConflictEvery = 0 }, Exhaustive: true,
	},
	{
		Name: "invalid-posts", Doc: "a request invalid in one field, near the edge",
		Tally: []string{"client-invalid"}, Benign: true,
		Off: func(c *Config) { c.InvalidEvery = 0 }, Exhaustive: true,
	},
	{
		Name: "to-hot-wallet", Doc: "a well-formed withdrawal to the hot wallet itself: intake takes it (and holds its amount), the pipeline rejects it and releases the hold",
		Tally: []string{"client-to-hot-wallet"}, Benign: true,
		Off: func(c *Config) { c.RejectEvery = 0 },
	},
	{
		Name: "hostile-posts", Doc: "a request from the hostile-client generator, after a lie about its length (a Content-Length of 2^62 over a short body cut short, answered 400)",
		Tally: []string{"client-hostile", "client-length-lie"}, Benign: true,
		Off: func(c *Config) { c.HostileEvery = 0 }, Exhaustive: true,
	},
}

// worldChoices are the choice kinds that are not faults: the scheduler's
// own, the world's timing, which exhaustive search does not branch on, the
// balancer's routing, which it does (see exhaustiveCost), and a swarm
// seed's draw of its world (which exhaustive search, taking one world,
// never asks).
var worldChoices = append([]string{"sched", "chain-gap", "route"}, swarmChoices...)

// exhaustiveClass says, for a fault's choice kind, which budget a pick
// spends ("" for none) in exhaustive search. Choices not listed here but
// in an Exhaustive fault are explored without a budget (lengths, delays).
func exhaustiveClass(kind string, pick int) string {
	switch kind {
	case "fault":
		return "fault"
	case "fault-kind":
		return []string{"crash", "pause", "jump"}[pick]
	case "pause-before-write":
		return "pause"
	case "lie":
		return "lie"
	case "lag":
		return "lag"
	case "gossip-loss":
		return "gossip"
	}
	return ""
}

// choiceIndex maps every classified choice kind to its fault (nil for
// worldChoices).
var choiceIndex = func() map[string]*Fault {
	m := map[string]*Fault{}
	for _, k := range worldChoices {
		m[k] = nil
	}
	for i := range Faults {
		for _, k := range Faults[i].Choices {
			if _, dup := m[k]; dup {
				panic("scenarios: choice kind " + k + " classified twice")
			}
			m[k] = &Faults[i]
		}
	}
	return m
}()

// exhaustiveCost says which picks cost which fault budget, and which kinds
// the search branches on. A kind the fault table does not classify is a
// programming error: exhaustive search would silently never explore it.
func exhaustiveCost(kind string, pick int) (class string, explore bool) {
	f, ok := choiceIndex[kind]
	if !ok {
		panic(fmt.Sprintf("scenarios: choice kind %q is in no row of the fault table (scenarios/faults.go)", kind))
	}
	if kind == "route" {
		// Which node a call reaches is no fault, but a world of several
		// nodes has its bugs there: a solid block from one node and a
		// lookup on another, a re-send to the node that never heard of the
		// transaction. Pick 0 (node 0, the producer) is free; sending a
		// call elsewhere costs a route, so a one-node world's search is
		// unchanged and a two-node world's stays small.
		return "route", true
	}
	if f == nil || !f.Exhaustive {
		return "", false
	}
	return exhaustiveClass(kind, pick), true
}

// Unclassified returns the choice kinds in kinds that the fault table does
// not classify, sorted.
func Unclassified(kinds []string) []string {
	var out []string
	for _, k := range kinds {
		if _, ok := choiceIndex[k]; !ok && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// TallyKinds are the world's own fault kinds, listed even when they did not
// fire; the node's lies and chain events are added from the node's own lists.
var TallyKinds = func() []string {
	var out []string
	for _, f := range Faults {
		out = append(out, f.Tally...)
	}
	sort.Strings(out)
	return out
}()

// benignKinds are the tally kinds of the benign faults.
var benignKinds = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range Faults {
		if f.Benign {
			for _, k := range f.Tally {
				m[k] = true
			}
		}
	}
	return m
}()

// withoutFaults turns off every fault of c for which keep is false.
func withoutFaults(c Config, keep func(Fault) bool) Config {
	c.Skews = slices.Clone(c.Skews)
	for _, f := range Faults {
		if f.Off != nil && !keep(f) {
			f.Off(&c)
		}
	}
	return c
}

// FaultTableMarkdown is the README's table of faults.
func FaultTableMarkdown() string {
	var sb strings.Builder
	sb.WriteString("| fault | what happens | choice kinds | tally | exhaustive |\n| --- | --- | --- | --- | --- |\n")
	for _, f := range Faults {
		ex := ""
		if f.Exhaustive {
			ex = "yes"
		}
		if f.Benign {
			ex = strings.TrimPrefix(ex+", benign", ", ")
		}
		tally := strings.Join(append(slices.Clone(f.Tally), f.NodeTally), ", ")
		fmt.Fprintf(&sb, "| %s | %s | %s | %s | %s |\n", f.Name, f.Doc, strings.Join(f.Choices, ", "), strings.Trim(tally, ", "), ex)
	}
	return sb.String()
}
