package scenarios

import (
	"net/http"
	"strings"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// Mutant is a deliberately broken variant of the core, used to measure what
// the checkers catch.
//
// Mutants are injected through the interfaces the world already wraps (the
// Store and Node a worker or intake sees, and the configuration), never by
// branches in sluice itself: the production build contains no mutant code
// at all, so no flag or build mistake can weaken it. The price is that a
// guard deep inside the pipeline is broken by making its inputs lie in
// exactly the way the broken guard would misread them (for instance, "proof
// from head time" is a SolidBlock that answers with the head); each
// mutant's doc says how.
//
// A wrapper runs inside the steps of the process it wraps, so what it reads
// or writes of the world's store directly (not through the view it wraps,
// whose calls name their own) is that step's doing, and the step names it
// in its footprint as the world's own wrappers do (readRow, wroteRow,
// touchedAccount, readRows in wrap.go; nothing without an observer): else
// exhaustive search takes the step for commuting with steps it does not
// commute with, and a run diverges from its path or an outcome goes
// missing (TestMutantsKeepTheReductionExact).
type Mutant struct {
	Name   string
	Breaks string // the guard it removes, in one line
	// World is the mutant's natural catcher ("" for chaos).
	World string
	// Uncaught explains, for a mutant that no world here can catch, why,
	// and what would catch it. Such a mutant is still run and reported.
	Uncaught string
	// Category, for an intake-edge mutant, is the hostile-client category
	// (package hostile) that alone catches it.
	Category string

	configure func(*Config)
	// store wraps the run's store itself, beneath the world's watch: a
	// broken store whose answers the world records as the store's.
	store       func(s Store) Store
	intakeStore func(w *world, s sluice.Store) sluice.Store
	workerStore func(a *actor, s sluice.Store) sluice.Store
	workerNode  func(a *actor, n tron.Node) tron.Node
	workerSign  func(s tron.Signer) tron.Signer
	// operatorNode wraps the node the operator service reads.
	operatorNode func(n tron.Node) tron.Node
	rawBody      bool // requests carry their raw body's hash in the context
	// handler wraps the intake HTTP handler: a lenient reading of requests.
	handler func(http.Handler) http.Handler
}

// Mutants is the catalog, in a fixed order: the core's, then intake's edges.
var Mutants = append(coreMutants, intakeMutants...)

var coreMutants = []Mutant{
	{
		Name:   "cas-ignores-token",
		Breaks: "the CAS is not fenced on the token: a zombie's write lands when the state still matches",
		World:  "zombies",
		workerStore: func(a *actor, s sluice.Store) sluice.Store {
			return casRewrite{s, a, func(row sluice.Operation, c *sluice.Change) {
				if row.State == c.From {
					c.Token = row.Token
				}
			}}
		},
	},
	{
		Name:   "cas-ignores-state",
		Breaks: "the CAS ignores the from-state: a write applies to whatever state the row is in",
		World:  "zombies",
		Uncaught: "masked by the token: with token fencing intact only the claim holder can write, and a sequential " +
			"worker always knows the state it left the row in. It would show together with cas-ignores-token, or with a " +
			"worker that ran two steps of one operation concurrently.",
		workerStore: func(a *actor, s sluice.Store) sluice.Store {
			return casRewrite{s, a, func(row sluice.Operation, c *sluice.Change) {
				if row.Token == c.Token {
					c.From = row.State
				}
			}}
		},
	},
	{
		Name:   "claim-ignores-lease",
		Breaks: "a claim takes rows whose lease is still live",
		World:  "zombies",
		// The stolen claim bumps the token, so the previous holder is fenced
		// at its next write and no money moves twice; one-writer catches it
		// anyway, by watching the lease the world saw granted and renewed.
		workerStore: func(a *actor, s sluice.Store) sluice.Store { return leaseBreaker{s, a} },
	},
	{
		Name:        "send-before-write-ahead",
		Breaks:      "no write-ahead: the bytes are sent before broadcasting is recorded",
		workerStore: func(a *actor, s sluice.Store) sluice.Store { return sendFirst{s, a} },
	},
	{
		Name:       "proof-from-wall-clock",
		Breaks:     "proof of death judged by the worker's wall clock instead of solid chain time",
		workerNode: func(a *actor, n tron.Node) tron.Node { return solidTime{n, a, wallClock} },
	},
	{
		Name:       "proof-from-node-word",
		Breaks:     "an expiration or TAPoS answer from the node is taken as proof of death",
		workerNode: func(a *actor, n tron.Node) tron.Node { return &believer{Node: n, a: a, onCode: true} },
	},
	{
		Name:       "proof-from-head-time",
		Breaks:     "proof of death judged by head block time instead of solid block time",
		workerNode: func(a *actor, n tron.Node) tron.Node { return solidTime{n, a, headTime} },
		// Without reorgs in the mock the rebuild itself does no harm, but its
		// evidence cites a block that is not solid, and audit-log checks
		// every citation against the chain.
	},
	{
		Name:      "proof-without-margin",
		Breaks:    "proof of death without the safety margin (solid time >= expiration)",
		configure: func(c *Config) { c.Sluice.SafetyMargin = 0 },
		// The mock applies the validity rule exactly, so a proof without the
		// margin does no harm here; audit-log catches it by re-deriving the
		// evidence's margin from the configuration.
	},
	{
		Name:       "rebuild-after-timeout",
		Breaks:     "a broadcast timeout is followed by a rebuild (new txid) before any proof of death",
		workerNode: func(a *actor, n tron.Node) tron.Node { return &believer{Node: n, a: a, onTimeout: true} },
	},
	{
		Name:       "timeout-is-failure",
		Breaks:     "a broadcast timeout is read as a refusal, and the operation fails",
		workerNode: func(a *actor, n tron.Node) tron.Node { return timeoutRefuses{n} },
	},
	{
		Name:   "resend-reject-is-terminal",
		Breaks: "a hard reject of a re-send fails the operation",
		workerNode: func(a *actor, n tron.Node) tron.Node {
			return &resendRejectFails{Node: n, a: a, sent: map[tron.Txid]bool{}}
		},
		// With one node no copy of a refused re-send is alive, so no money
		// moves twice; progress catches it: the failure has no justification
		// (the txid's first send was accepted, not refused).
	},
	{
		Name:   "node-refusal-is-terminal",
		Breaks: "a first send refused for the node's own state (bandwidth, the contract) fails the operation, as the core did before chaos had a failover balancer",
		workerNode: func(a *actor, n tron.Node) tron.Node {
			return &firstRefusalFails{Node: n, sent: map[tron.Txid]bool{}}
		},
		// Behind a balancer that retries a failed call on the next node,
		// the first attempt may have been accepted (and gossiped) while
		// the retry is refused: the withdrawal fails and is paid.
	},
	{
		Name:       "confirm-before-solid",
		Breaks:     "confirmed on inclusion, without waiting for the block to be solid",
		World:      "reorgs",
		workerNode: func(a *actor, n tron.Node) tron.Node { return lookupRewrite{n, a, markSolid} },
		// Reorgs orphan the early confirmation's block: the transaction
		// returns to a pool (and is paid again by a rebuild) or vanishes
		// while its operation reads confirmed.
	},
	{
		Name:       "confirm-ignores-receipt",
		Breaks:     "confirmed without checking the receipt: a REVERT or OUT_OF_ENERGY counts as paid",
		workerNode: func(a *actor, n tron.Node) tron.Node { return lookupRewrite{n, a, forgeSuccess} },
	},
	{
		Name:       "confirm-ignores-transfer-log",
		Breaks:     "confirmed on a SUCCESS receipt without reading the Transfer logs",
		World:      "logs",
		workerNode: func(a *actor, n tron.Node) tron.Node { return lookupRewrite{n, a, logsAsAsked} },
		// A SUCCESS that moved nothing, half, or to another account
		// confirms: conservation and at-most-once see the ledger.
	},
	{
		Name:   "mismatch-fails",
		Breaks: "a SUCCESS whose Transfer logs are not the payment asked fails the operation instead of sending it to review",
		World:  "logs",
		workerStore: func(a *actor, s sluice.Store) sluice.Store {
			return casRewrite{s, a, func(_ sluice.Operation, c *sluice.Change) {
				if c.To == sluice.Review && strings.Contains(c.Reason, "Transfer log") {
					c.To, c.Hold = sluice.Failed, sluice.HoldRelease
				}
			}}
		},
		// The customer is told the withdrawal failed while tokens may
		// have moved: at-most-once (a failed operation that paid) and
		// progress (a failure with a SUCCESS on chain) see it.
	},
	{
		Name:       "log-ignores-contract",
		Breaks:     "the Transfer log check does not look at which contract emitted the log: another token's log counts as USDT",
		World:      "logs",
		workerNode: func(a *actor, n tron.Node) tron.Node { return lookupRewrite{n, a, anyContractIsUSDT} },
	},
	{
		Name:       "log-ignores-amount",
		Breaks:     "the Transfer log check does not compare the amount",
		World:      "logs",
		workerNode: func(a *actor, n tron.Node) tron.Node { return lookupRewrite{n, a, anyAmountIsAsked} },
	},
	{
		Name:        "raw-bytes-hash",
		Breaks:      "the request hash is taken over the raw body, not the normalized payload (\"1.5\" and \"1.50\" differ)",
		intakeStore: func(w *world, s sluice.Store) sluice.Store { return rawHash{s} },
		rawBody:     true,
	},
	{
		Name:        "no-payload-comparison",
		Breaks:      "intake does not compare payloads: another payload under a used id is replayed",
		intakeStore: func(w *world, s sluice.Store) sluice.Store { return noCompare{s} },
	},
	{
		Name:        "check-then-insert",
		Breaks:      "intake looks the id up, then inserts, as two store calls, and believes it created the row",
		intakeStore: func(w *world, s sluice.Store) sluice.Store { return checkThenInsert{s} },
	},
	{
		Name:   "txid-not-unique",
		Breaks: "the store does not enforce that a txid belongs to one operation",
		Uncaught: "the core writes the operation id and build number into every raw_data memo, so no two envelopes ever " +
			"share a txid and the store's check never fires; a core without the memo (two equal withdrawals built in one " +
			"millisecond) would expose it, and the store conformance suite tests the check directly.",
	},
	{
		Name:   "rebuild-without-evidence",
		Breaks: "a rebuild files no proof of death in the event log",
		workerStore: func(a *actor, s sluice.Store) sluice.Store {
			return casRewrite{s, a, func(_ sluice.Operation, c *sluice.Change) {
				if !c.RetiredTxid.IsZero() {
					c.Evidence = nil
				}
			}}
		},
	},
	{
		Name:       "unusable-envelope",
		Breaks:     "every envelope is signed wrongly: each first send is refused, and every withdrawal fails",
		World:      "calm",
		workerSign: func(s tron.Signer) tron.Signer { return badSignature{s} },
	},
	{
		Name:        "amount-scale",
		Breaks:      "the amount parser has the wrong scale (7 decimals): ten times the amount is stored, paid and confirmed, consistently",
		intakeStore: func(w *world, s sluice.Store) sluice.Store { return scaled{s} },
	},
	{
		Name:        "hash-ignores-recipient",
		Breaks:      "the request hash leaves out the recipient: another recipient under a used id is replayed, not refused",
		intakeStore: func(w *world, s sluice.Store) sluice.Store { return noRecipientHash{s} },
	},
	{
		Name:        "history-of-another",
		Breaks:      "a GET shows the event history of another operation",
		intakeStore: func(w *world, s sluice.Store) sluice.Store { return otherHistory{s, w} },
	},
	{
		Name:        "adopts-holder-token",
		Breaks:      "a fenced worker re-reads the row and retries its write under the current holder's token",
		workerStore: func(a *actor, s sluice.Store) sluice.Store { return adoptToken{s, a} },
	},
	{
		Name:   "stale-lookup",
		Breaks: "a txid's lookup is answered from a cache of its last answer: the proof of death pairs a fresh solid block with an older lookup",
		World:  "laggy",
		Uncaught: "no longer a bug: since the cross-node fix a proof of death needs the answering node's own solid " +
			"height (TxInfo.NodeSolid) to reach the cited solid block, and a cached answer carries the height it was " +
			"given at, so the core never rests a proof on it (it was killed on laggy at seed 24 before the fix).",
		workerNode: func(a *actor, n tron.Node) tron.Node {
			return &cachedLookup{Node: n, a: a, seen: map[tron.Txid]tron.TxInfo{}}
		},
	},
	{
		Name:   "lease-not-renewed",
		Breaks: "a CAS does not renew the lease",
		Uncaught: "safety never rests on the lease, only on the token: a lease that lapses mid-work lets another worker " +
			"claim the row, and the first is fenced at its next write. It costs only extra fenced writes, which an " +
			"efficiency metric (fenced writes per operation) would catch, not an invariant.",
	},
	{
		Name:   "terminal-writable",
		Breaks: "terminal rows accept writes",
		Uncaught: "the core never writes a terminal row: every path to one is fenced by token or state first. The guard " +
			"is defence in depth against other writers (a person with psql); the PostgreSQL trigger matrix test covers it.",
	},
	{
		Name:       "proof-from-lagging-node",
		Breaks:     "a lookup's unknown proves death whatever node gave it: a node behind the solid block's says unknown for an included txid",
		World:      "nodes",
		workerNode: func(a *actor, n tron.Node) tron.Node { return anyNodeProves{n} },
	},
	{
		Name:        "store-error-is-success",
		Breaks:      "a store error on a write is read as success: the worker carries on as if the write landed",
		World:       "storefaults",
		workerStore: func(a *actor, s sluice.Store) sluice.Store { return carryOn{s, a, errStoreDown} },
	},
	{
		Name:        "release-hold-twice",
		Breaks:      "a hold's release does not check that it is still held: a retried release credits the customer twice",
		workerStore: func(a *actor, s sluice.Store) sluice.Store { return releaseTwice{s, a} },
	},
	{
		Name:   "settle-without-confirmation",
		Breaks: "the failure path settles the hold instead of releasing it: the customer pays for a withdrawal that never moved",
		workerStore: func(a *actor, s sluice.Store) sluice.Store {
			return casRewrite{s, a, func(_ sluice.Operation, c *sluice.Change) {
				if c.To == sluice.Failed || c.To == sluice.Rejected {
					c.Hold = sluice.HoldSettle
				}
			}}
		},
	},
	{
		Name:        "cancel-without-proof",
		Breaks:      "the stuck policy cancels a sent withdrawal that has waited long, without proof that its txid is dead",
		workerStore: func(a *actor, s sluice.Store) sluice.Store { return impatientCancel{s, a} },
	},
	{
		Name:         "operator-cancel-skips-proof",
		Breaks:       "an operator's cancel goes through without proof of death: whatever the node says is taken as proof",
		operatorNode: func(n tron.Node) tron.Node { return proofBeliever{n} },
	},
	{
		Name:        "park-is-failure",
		Breaks:      "an operational error (bandwidth, energy, a failed receipt, an unreachable node) fails the withdrawal instead of parking it",
		workerStore: func(a *actor, s sluice.Store) sluice.Store { return parkFails{s, a} },
	},
	{
		Name:        "carry-on-after-fence",
		Breaks:      "the worker carries on after a fenced write as if it had landed",
		workerStore: func(a *actor, s sluice.Store) sluice.Store { return carryOn{s, a, sluice.ErrFenced} },
	},
	{
		Name:        "park-updates-nothing",
		Breaks:      "the store's park matches no row and says nothing of it (an UPDATE whose count of rows is never read): the row stays leased to a worker that has moved on, idle until the lease lapses, and no park is counted toward the bounds",
		workerStore: func(a *actor, s sluice.Store) sluice.Store { return parkNoop{s, a} },
	},
	{
		Name:   "park-limit-late",
		Breaks: "the park bounds count one park too many: a withdrawal past ParkLimit parks once more instead of going to review",
		// The core's limit is one above the world's; no-operational-failure
		// judges each park by the world's own ParkLimit.
		configure: func(c *Config) { c.Sluice.ParkLimit++ },
	},
	{
		Name:   "never-accepted-cancelled",
		Breaks: "the stuck policy cancels a spent withdrawal no node was ever heard accepting (still broadcasting, never parked) instead of sending it to review",
		World:  "laggy",
		workerStore: func(a *actor, s sluice.Store) sluice.Store {
			return casRewrite{s, a, func(row sluice.Operation, c *sluice.Change) {
				if c.To == sluice.Review && c.Decision != nil && c.Decision.Action == sluice.Escalate && row.State == sluice.Broadcasting && row.Parks == 0 {
					d := *c.Decision
					d.Action = sluice.Cancel
					c.To, c.Hold, c.Decision = sluice.Failed, sluice.HoldRelease, &d
				}
			}}
		},
	},
	{
		Name:        "release-wait-shortened",
		Breaks:      "the store hands a row back after a quarter of the wait the step asked for: the next claim looks the txid up again too soon, and the node is asked four times as often",
		workerStore: func(a *actor, s sluice.Store) sluice.Store { return shortWait{s} },
	},
	{
		Name:   "claim-one-at-a-time",
		Breaks: "the store's claim takes one row a call whatever the limit: a worker handed a short batch idles while other due rows wait",
		store:  func(s Store) Store { return oneAtATime{s} },
	},
	{
		Name:   "fee-limit-never-raised",
		Breaks: "a rebuild after OUT_OF_ENERGY keeps the fee limit that ran out: the doubling is lost",
		World:  "fees",
		// The core's ceiling is its starting limit, so min(2*limit, max)
		// never raises it; fee-limits judges with the world's own ceiling.
		configure: func(c *Config) { c.Sluice.FeeLimitMax = c.Sluice.FeeLimit },
	},
	{
		Name:   "fee-limit-cap-ignored",
		Breaks: "a rebuild after OUT_OF_ENERGY doubles the fee limit past FeeLimitMax",
		World:  "fees",
		// The core's ceiling is ten times the world's: fees' third raise
		// goes to 320 TRX where the world's ceiling stops it at 240.
		configure: func(c *Config) { c.Sluice.FeeLimitMax *= 10 },
	},
}

// OnStore reports whether the mutant breaks the store a worker or intake
// sees (the CAS, the claim, the insert, the log): the mutants that say
// something about a store, and so are run against PostgreSQL too.
func (m Mutant) OnStore() bool { return m.workerStore != nil || m.intakeStore != nil || m.store != nil }

func mutant(name string) (Mutant, bool) {
	for _, m := range Mutants {
		if m.Name == name {
			return m, true
		}
	}
	return Mutant{}, false
}

// MutantNames lists the catalog's names in order.
func MutantNames() []string {
	names := make([]string, len(Mutants))
	for i, m := range Mutants {
		names[i] = m.Name
	}
	return names
}
