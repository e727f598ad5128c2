package model

import (
	"fmt"
	"strings"
	"time"
)

// The invariants' stable names, used in reports, exit codes and JSON.
const (
	Liveness             = "liveness"
	Progress             = "progress"
	TxidOwnership        = "txid-ownership"
	AtMostOnce           = "at-most-once"
	Conservation         = "conservation"
	Funds                = "funds"
	NoOperationalFailure = "no-operational-failure"
	FeeLimits            = "fee-limits"
	PacedPolling         = "paced-polling"
	IntakeUniqueness     = "intake-uniqueness"
	AuditLog             = "audit-log"
	OneWriter            = "one-writer"
	LinearizableIntake   = "linearizable-intake"
)

// Invariant is one row of the table every consumer ranges over: the
// summary, the JSON, the reports and the README's table.
type Invariant struct {
	Name string
	// Doc is one line: what holds when the invariant holds.
	Doc   string
	check func(s *Snapshot, c *checking) []Violation
}

// checking carries what one Check needs beyond the snapshot.
type checking struct {
	linTimeout time.Duration
	linReport  *LinearizabilityReport
}

// Invariants is the table, in the order Check runs it and reports list it.
var Invariants = []Invariant{
	{Liveness, "after heal, every accepted operation reaches a terminal state within the liveness budget",
		func(s *Snapshot, _ *checking) []Violation { return CheckLiveness(s) }},
	{Progress, "a fault-free run confirms every valid withdrawal; under faults every operation that fails, is rejected or goes to review has a justification the chain (or the client's payload) bears out",
		func(s *Snapshot, _ *checking) []Violation { return CheckProgress(s) }},
	{TxidOwnership, "every txid the node ever saw belongs to exactly one operation's history",
		func(s *Snapshot, _ *checking) []Violation { return CheckTxidOwnership(s) }},
	{AtMostOnce, "at most one of an operation's txids is ever included; confirmed has exactly one successful transfer, review at most one, every other state none",
		func(s *Snapshot, _ *checking) []Violation { return CheckAtMostOnce(s) }},
	{Conservation, "what really left the hot wallet (the ledger, not the logs) equals what the clients asked for on confirmed operations plus what moved under review; a confirmed operation moved exactly its intent (recipient and amount, by the model's own reading); no withdrawal to the hot wallet itself confirms",
		func(s *Snapshot, _ *checking) []Violation { return CheckConservation(s) }},
	{Funds, "for every customer, balance + held + paid out = what was deposited, at every point and at the end (the model's own books from states and intents); every hold carries its client's numbers, closes once, settled exactly on confirmation and released exactly on failure or rejection",
		func(s *Snapshot, _ *checking) []Violation { return CheckFunds(s) }},
	{NoOperationalFailure, "no operation fails for a shortage of ours (a refusal for bandwidth, energy or the contract's state, a failed receipt, a park): such operations park and, past their bounds, go to review (and only past them: ParkLimit parks in its life or a spell of ParkFor (to when the row came free for the claim, a release's wait included), by the world's records of the parks and releases, for every review the world read in the worker's step as the park bounds'; and no park where the bounds send it to review); failed means an operator's cancel, bytes refused for themselves, or the stuck policy's cancel of a transaction some node accepted and the chain never took; and nothing parks but for such a shortage, seen by the parking worker since its claim (a busy or unreachable node only delays), and each park waits as the policy says (doubling within a spell from RetryAmbiguous, capped at ParkBackoffMax, jitter at most as much again)",
		func(s *Snapshot, _ *checking) []Violation { return CheckNoOperationalFailure(s) }},
	{FeeLimits, "no transaction lands with a fee limit above FeeLimitMax, and no withdrawal runs out of energy at a fee limit at or below one it already ran out of energy at (below FeeLimitMax): a limit that could not buy the energy, sent again, burns TRX for nothing (by the fee limits and receipts on chain)",
		func(s *Snapshot, _ *checking) []Violation { return CheckFeeLimits(s) }},
	{PacedPolling, "no worker asks the node about a txid again sooner than the core's shortest configured wait without a write or park of its own on that operation in between (by the world's record of its lookups), nor sooner than that after its own send of the txid that the node did not take: nothing polls the node in a loop; and no worker sends an operation's transaction again sooner than the park's first wait after a shortage of ours it met (a send refused for bandwidth, energy or the contract's state, a failed signing, a rebuild after a failed receipt) unless another claim came between",
		func(s *Snapshot, _ *checking) []Violation { return CheckPacedPolling(s) }},
	{IntakeUniqueness, "one row per operation id holding its creator's payload; replays return it, another payload under a used id is refused and changes nothing; a refusal that names a field names one at fault",
		func(s *Snapshot, _ *checking) []Violation { return CheckIntakeUniqueness(s) }},
	{AuditLog, "every event is a legal transition (the model's own table), the log replays to the row, tokens never go back, every rebuild's evidence is re-derived and holds against the chain, every rebuild keeps the stuck policy (a txid proven dead by a lookup only once RebuildAfter has passed since the first write-ahead and before CancelAfter, by the cited solid block's time; never more rebuilds than the policy allows; and no wait the world saw where the policy rebuilds, cancels or reviews; and no step that got its row's txid in a block the node calls solid, with a SUCCESS receipt, left without a write, nor one that got its broadcasting row's txid answered as taken by a node (SUCCESS or DUP)), every txid went on the wire after its write-ahead (the store's clock against the node's), every worker's write-ahead was made with at least MinValidity left before the envelope's expiration by the head block the node answered in that step, and every envelope a worker built expires between MinValidity and ExpirationWindow after the head the node answered in its build step and references (TAPoS) a block at or below the solid head, every confirmation landed with its block already solid",
		func(s *Snapshot, _ *checking) []Violation { return CheckAuditLog(s) }},
	{OneWriter, "every write under an (operation, token) comes from the incarnation that claimed it, no claim takes a row whose lease is live or before the wait its last park or release asked for, no claim short of its limit passes over a row due by the world's records, no write is refused as fenced without a rival's claim, and every row a worker claimed is released, parked or finished by it before its next claim (unless a fence or a store failure of its own cut the batch short, or another claim took the row)",
		func(s *Snapshot, _ *checking) []Violation { return CheckOneWriter(s) }},
	{LinearizableIntake, "posts and reads (states and histories) are linearizable: each answer fits the operation's log within the call's interval",
		func(s *Snapshot, c *checking) []Violation {
			vs, rep := CheckLinearizable(s, c.linTimeout)
			c.linReport = rep
			return vs
		}},
}

// InvariantNames lists the names in table order.
func InvariantNames() []string {
	names := make([]string, len(Invariants))
	for i, inv := range Invariants {
		names[i] = inv.Name
	}
	return names
}

// DefaultLinTimeout bounds porcupine's search when Check is not told
// otherwise; running out is a violation (unknown is not a pass).
const DefaultLinTimeout = 10 * time.Second

// Check runs every invariant in table order and returns their violations
// in that order (each checker's own sorted by Operation, then Message). Nil
// means the run kept every invariant.
func Check(s *Snapshot) []Violation {
	vs, _ := CheckAll(s, DefaultLinTimeout)
	return vs
}

// CheckAll is Check with the linearizability search bounded by linTimeout,
// returning porcupine's report too (for drawing it).
func CheckAll(s *Snapshot, linTimeout time.Duration) ([]Violation, *LinearizabilityReport) {
	v := Judge(s, linTimeout)
	return v.Violations, v.Linearizability
}

// Verdict is everything the model says about one run.
type Verdict struct {
	Violations      []Violation
	Linearizability *LinearizabilityReport
	Outcomes        Outcomes
}

// Judge runs every invariant (as CheckAll) and counts the outcomes, sharing
// one memo of what the checkers derive from the snapshot.
func Judge(s *Snapshot, linTimeout time.Duration) Verdict {
	c := &checking{linTimeout: linTimeout}
	m := withMemo(s)
	var v Verdict
	for _, inv := range Invariants {
		v.Violations = append(v.Violations, inv.check(m, c)...)
	}
	v.Linearizability = c.linReport
	v.Outcomes = CountOutcomes(m)
	return v
}

// MarkdownTable renders the table as the README shows it.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| invariant | holds when |\n| --- | --- |\n")
	for _, inv := range Invariants {
		fmt.Fprintf(&b, "| `%s` | %s |\n", inv.Name, inv.Doc)
	}
	return b.String()
}
