package model

import (
	"fmt"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// Snapshot is everything the checkers look at after a run. Pure data: the
// checkers only read it.
//
// Three kinds of truth meet here, and the checkers weigh them differently:
// what the clients meant (Intake[].Sent, their own strings), what really
// happened outside the code under test (the mock node's wire, acceptances,
// inclusions and blocks; who claimed and wrote what, as the world saw it),
// and what the code under test recorded (the store's rows and event log,
// the answers it gave). The last is judged against the first two, never the
// other way round.
type Snapshot struct {
	Operations  []sluice.Operation     // store rows, insertion order
	Events      []sluice.Event         // the store's event log, Seq order
	Wire        []mocknode.WireAttempt // every broadcast attempt
	Accepted    []mocknode.Acceptance  // every txid the node ever accepted
	Inclusions  []mocknode.Inclusion   // chain order
	Blocks      []tron.Block           // the whole chain, by number
	SolidNumber int64                  // solid head at the end
	HotWallet   tron.Address
	Intake      []IntakeRecord // every client post and its answer
	Reads       []ReadRecord   // every client GET and its answer

	// Who did what, as the world saw it (never as the store says): every
	// claim that took a row, every write that landed, every release.
	// Nil Claims means the world did not watch (one-writer then checks
	// nothing).
	Claims   []ClaimRecord
	Writes   []WriteRecord
	Releases []ReleaseRecord
	// ClaimCalls is every worker's claim call that answered (nil: not
	// recorded, and nothing is judged of them).
	ClaimCalls []ClaimCall
	// Fenced is every worker's write the store refused as fenced (a CAS
	// or a park): one-writer holds each to a claim that took the row
	// after the writer's own.
	Fenced []FencedRecord
	// StoreFailures is every store call of a worker's the world failed
	// (a fault it injected): one-writer excuses a batch a failure cut
	// short from being handed back.
	StoreFailures []StoreFailure
	// Parks is every park that landed (its lease given up is also in
	// Releases): the operational trouble the world saw the core admit to.
	Parks []ReleaseRecord
	// SignerFailures is every signing the world failed (a KMS timeout or
	// outage): with the node's refusals and the chain's failed receipts,
	// the operational trouble a park may answer.
	SignerFailures []SignerFailure
	// Envelopes is every envelope a write stored, in the order first
	// stored: the raw data a retired txid stood for, from which audit-log
	// re-derives a rebuild's expiration.
	Envelopes []sluice.Envelope

	// The configuration the oracle judges with, as the world set it (not
	// as the core read it): the store's lease, the safety margin proof of
	// death needs, and how many envelopes an operation may build.
	Lease        time.Duration
	SafetyMargin time.Duration
	BuildsMax    int
	Stuck        sluice.StuckPolicy
	ParkLimit    int
	// ParkFor: a spell of parks (no transition between them) that has
	// lasted this long sends the operation to review, as ParkLimit parks
	// in its life do. Zero: the park bounds are not judged.
	ParkFor time.Duration
	// The park backoff: a spell's first park waits ParkRetry (the core's
	// RetryAmbiguous), each later one as long as the spell has lasted,
	// capped by ParkBackoffMax, plus jitter. Zero: not judged.
	ParkRetry, ParkBackoffMax time.Duration
	// MinValidity is the least an envelope must have left before its
	// expiration, by the head the node gave, when its write-ahead lands;
	// zero: not judged.
	MinValidity time.Duration
	// ExpirationWindow is how far past the head block's time a new
	// envelope may expire (the core's, as the world set it); zero: the
	// envelopes' expirations are not judged.
	ExpirationWindow time.Duration
	// FeeLimitMax is the most the owner agreed to burn on one transfer's
	// energy (the core's FeeLimitMax as the world set it, the highest of
	// its releases' where a deploy rolled another out); zero: the cap is
	// not judged.
	FeeLimitMax int64
	// Deployed, in a world that rolls a new release of the workers out
	// mid-run, is that release: the workers that ran it and the settings it
	// changed. The checks that judge a worker's own decision (a rebuild
	// past the budget, a park past the limit, a failure or review on a
	// spent budget) judge it by the settings of the release its writer
	// ran. Nil where every worker runs the settings above.
	Deployed *Deployment

	// The ledger. Deposits is the world's own record of every credit it
	// made (ground truth: what the customers put in). Accounts and Holds
	// are what the store keeps at the end; LedgerBreaks, what the world saw
	// wrong in the store's accounts after any write during the run (an
	// account whose numbers did not add up), first ones only.
	Deposits []sluice.Credit
	// LateDeposits are the credits the world made while the processes ran
	// (a deposit pipeline crediting through the operator API), each where
	// it took effect: Deposits holds only those made before any process.
	LateDeposits []LateDeposit
	Accounts     []sluice.Account
	Holds        []sluice.Hold
	LedgerBreaks []string
	// LedgerReadings are the store's accounts as the world read them right
	// after each write that moved one (an insert's hold, a close), each
	// with the Seq of the store's newest event then: funds holds every one
	// to the model's own books at that point of the log.
	LedgerReadings []LedgerReading

	// Waits are the stuck policy's waits the world saw a worker decide on a
	// txid a lookup did not find, with the solid block at or past the
	// txid's expiration plus the margin: a wait writes nothing, so the log
	// cannot show one that should have been a rebuild, a cancel or a
	// review. audit-log judges each by the model's own reading of the
	// policy.
	Waits []WaitRecord

	// Lookups is every lookup of a txid a worker made, as the world saw
	// the call (answered or not), in the order made. paced-polling holds
	// each to the same process's previous lookup of that txid: a step that
	// asked the chain and wrote nothing must wait before asking again.
	// PollFloor is the shortest such wait the world configured the core
	// with (the least of PollPending, BlockInterval, RetryAmbiguous and
	// RetryNotTaken); zero: not judged.
	Lookups   []LookupRecord
	PollFloor time.Duration
	// Sends is every broadcast a worker made, with the answer the worker
	// got, in the order made. paced-polling holds the next send after a
	// shortage of ours (an operational refusal, a failed signing, a
	// rebuild for a failed receipt) to the park's first wait.
	Sends []SendRecord

	// FaultFree: no fault of any kind fired in the run (no worker, node,
	// chain, server or client fault). progress then demands that every
	// valid withdrawal confirms.
	FaultFree bool

	// Liveness: Healed is when faults stopped; End is when the run ended;
	// LivenessBudget is how long after Healed every accepted operation had
	// to become terminal (an operation created after Healed gets the budget
	// from its creation). BudgetExhausted is set when the simulator's step
	// budget ran out before the run settled. Failed is set when a process
	// failed (a panic, a divergence from a replayed tape) and the run
	// stopped there: the world reports that failure itself, and the checks
	// that ask for a settled run excuse what was in flight, as for the
	// budget, so that one bug does not read as three.
	//
	// Healed, End and the store's clock (Event.At, Operation.CreatedAt) must
	// be the same timeline: simulation time.
	Healed, End     time.Time
	LivenessBudget  time.Duration
	BudgetExhausted bool
	Failed          bool

	memo *memo // the checkers' own, on their copy only (withMemo)
}

// cutShort reports whether the run stopped before it settled: its step
// budget ran out, or a process failed. Money may then be in flight (sent
// and paid, not yet confirmed) without anything being wrong.
func (s *Snapshot) cutShort() bool { return s.BudgetExhausted || s.Failed }

// WaitRecord is one wait the stuck policy decided, with what the worker's
// step read from the chain (the world's record of the node's answers, not
// the evidence the core built); the rebuilds spent are the log's.
type WaitRecord struct {
	Op   sluice.OperationID
	Proc string
	Txid tron.Txid // the row's current txid, the one looked up
	// The solid block the step fetched, and the lookup's answer after it:
	// Unknown, from a node whose own solid head was LookupSolid.
	SolidNumber int64
	SolidTime   time.Time
	LookupSolid int64
	Reason      string // the core's, for the message
	// Settled, when not 0: not a stuck policy's wait, but a step on a
	// broadcast row that got the txid included in this block, which the
	// node called solid, with a SUCCESS receipt, and tried no write.
	Settled int64
	// Taken: not a stuck policy's wait, but a step on a broadcasting row
	// that sent its txid, got it answered as taken by a node (SUCCESS or
	// DUP_TRANSACTION_ERROR), and tried no write.
	Taken bool
}

// LookupRecord is one lookup a worker made: of which txid (and so of
// which operation, by the world's record of the write that stored it), by
// which process, when; and how many claims, writes, releases and parks the
// world had seen by then (len of Claims, Writes, Releases and Parks), which
// orders the lookup exactly against them, as times alone cannot at one
// virtual instant.
type LookupRecord struct {
	Op                              sluice.OperationID
	Txid                            tron.Txid
	Proc                            string
	At                              time.Time
	Claims, Writes, Releases, Parks int
}

// LedgerReading is a customer's account as the store showed it just after
// the event Seq, when the first LateDeposits of the snapshot's late deposits
// had been made (a deposit makes no event: the count places it).
type LedgerReading struct {
	Seq          int64
	LateDeposits int
	Account      sluice.Account
}

// LateDeposit is a credit the world made while the processes ran, as the
// world meant it (the customer, amount and ref its depositor asked for,
// never what the store or a handler made of them), and where it took
// effect: just after the store's event AfterSeq (its newest then), at Tick
// on the logical clock of the intake records' Call and Return. A credit
// retried with its ref after a lost answer is one deposit, placed where
// the world's store call first carried it out.
type LateDeposit struct {
	Credit   sluice.Credit
	AfterSeq int64
	Tick     int64
}

// depositedBefore is what the late deposits gave c before they numbered n
// (n: a reading's LateDeposits).
func (s *Snapshot) depositedBefore(c sluice.CustomerID, n int) int64 {
	var sum int64
	for _, d := range s.LateDeposits[:min(n, len(s.LateDeposits))] {
		if d.Credit.Customer == c {
			sum += int64(d.Credit.Amount)
		}
	}
	return sum
}

// depositedByTick is what the late deposits gave c before the logical
// clock's tick (an intake call's): money that was certainly there when the
// call began.
func (s *Snapshot) depositedByTick(c sluice.CustomerID, tick int64) uint64 {
	var sum uint64
	for _, d := range s.LateDeposits {
		if d.Credit.Customer == c && d.Tick < tick {
			sum = addSat(sum, uint64(d.Credit.Amount))
		}
	}
	return sum
}

// IntakeRecord is one client request and what it was told.
type IntakeRecord struct {
	Client string // the client process name
	// ID is the operation id as sent (may be malformed). Records are matched
	// to rows by the model's own canonical reading of it (refOperationID),
	// or, when that refuses it, by its lowercase form.
	ID string
	// Sent is the payload the client sent, its own strings: the intent the
	// oracle judges intake against.
	Sent Payload
	// Raw, when set, is the whole request as sent (media type and body
	// bytes): a hostile client's. The model then reads the payload from it
	// with ReadPost, and Sent is ignored.
	Raw     *RawPost
	Outcome Outcome // Created, Replayed, Conflict, Invalid, Failed (store error / crashed)
	// Answer is, for Created/Replayed, the payload the answer's body
	// carried (what the client was told the server holds).
	Answer Payload
	State  sluice.State // for Created/Replayed: the state returned
	// Txid is, for Created/Replayed, the txid the answer named (hex), ""
	// if none.
	Txid string
	// Call and Return are the step indexes of the call and of its return
	// (for linearizability).
	Call, Return int64
	// Bounded: the world read the Seq of the store's newest event at the
	// call (SeqAtCall) and when the answer was made (SeqAtReturn), so the
	// store's funds check happened between those two points of the log.
	// An Unfunded answer is then judged against the model's own books over
	// that stretch; without bounds (a live system), only against every
	// amount the customer's rows ever took.
	Bounded                bool
	SeqAtCall, SeqAtReturn int64
	// Status is, for a Failed answer the world saw, its HTTP status (0: no
	// answer, or none recorded: a live system's), and StoreFailed whether
	// the world failed one of the request's store calls. A status the
	// API gives only when its store fails, with no store failure to blame,
	// is a client told "unknown" where it could have been told the truth.
	Status      int
	StoreFailed bool
	// Field is, for an Invalid answer, the field its body named ("field"
	// of a 422: one of the API's, "body", or an unknown key); "" when it
	// named none or the world did not read it.
	Field string
}

// ClaimRecord is one claim that took a row: the incarnation (process) that
// made the call and the token the store granted it.
type ClaimRecord struct {
	Op    sluice.OperationID
	Token sluice.FencingToken
	Proc  string
	At    time.Time
	// Operator: an operator's resolution, which takes the row whatever
	// lease is on it (the token moves, so the holder is fenced).
	Operator bool
	// First marks the first row of a worker's claim call: the rows from
	// it to the next First of the same process are one batch, which
	// one-writer requires handed back before the process's next batch.
	First bool
	// Seq is the store's newest event Seq when it landed, which orders it
	// against the writes (a claim appends no event).
	Seq int64
}

// ClaimCall is one claim call of a worker's that reached the store and
// answered (whether or not it took a row): how many rows it could take and
// took, when, and its place among the world's other records (how many
// claims and releases it had recorded before it, the store's newest event
// Seq). one-writer holds a call that took fewer than its limit to having
// taken every row the world's records say was due.
type ClaimCall struct {
	Proc             string
	At               time.Time
	Limit, Took      int
	Claims, Releases int
	Seq              int64
}

// WriteRecord is one write that landed, as the world saw it: the event it
// appended (Seq), the token the row carries after it, the incarnation that
// made the call, and when.
type WriteRecord struct {
	Seq      int64
	Op       sluice.OperationID
	Token    sluice.FencingToken
	Proc     string
	At       time.Time
	Terminal bool // the write made the row terminal (and so dropped its lease)
	// SolidSeen, on a write into confirmed, is the chain's solid head
	// number when it landed, read from the mock network's truth (never a
	// node's answer); 0 on other writes. audit-log requires the confirmed
	// txid's block to be at or below it.
	SolidSeen int64
	// Review, on a worker's write into review, is why the world saw it
	// sent there, read from the write and the node's answers in the
	// worker's step (never from the core's report): ReviewDecision,
	// ReviewLogs, ReviewStale or ReviewParked. "" on other writes.
	Review string
	// Ahead marks a worker's write-ahead (signed->broadcasting); AheadHead
	// is then the time of the head block the node answered the worker in
	// that step, zero when it answered none. audit-log requires the
	// envelope to have had MinValidity left by it: the first send is the
	// last moment a stale envelope can be replaced for free.
	Ahead     bool
	AheadHead time.Time
	// Built marks a worker's write that stored an envelope the world had
	// not seen stored before (a build or a rebuild); BuiltHead is then the
	// time of the head block the node answered the worker in that step,
	// zero when it answered none. audit-log holds the envelope's expiration
	// to it: the expiration counts from head chain time, never from a
	// worker's own clock.
	Built     bool
	BuiltHead time.Time
	// BuiltSolid, on a Built write, is the chain's solid head number when
	// it landed, read from the mock network's truth (never a node's
	// answer): audit-log requires the envelope's TAPoS reference to name a
	// block at or below it (TRON.md: sluice references the solid block).
	BuiltSolid int64
	// Claims and Sends, on a Built write, are how many claims and sends
	// the world had seen when it landed, which orders it exactly against
	// them: paced-polling holds the next send after a rebuild for a failed
	// receipt to a park's wait unless another claim came between.
	Claims, Sends int
	// FeeLimit, on a Built write, is the stored envelope's fee limit;
	// FeeFloor and FeeCeiling are the limits of the release the writing
	// worker ran, as the world configured it (never as the core read its
	// configuration): fee-limits holds the envelope between them.
	FeeLimit, FeeFloor, FeeCeiling int64
	// Txid, on a Built write, is the stored envelope's txid.
	Txid tron.Txid
}

// Why a worker sent an operation to review, as the world read its step
// (WriteRecord.Review).
const (
	ReviewDecision = "stuck"  // the write carries the stuck policy's decision
	ReviewLogs     = "logs"   // from broadcast, after the node answered the row's txid SUCCESS in a solid block
	ReviewStale    = "stale"  // from signed, after the node answered the head block (stale before the first send)
	ReviewParked   = "parked" // anything else: only the park bounds send a row there
)

// FencedRecord is one worker's write the store refused as fenced, as the
// world saw it: the call (cas or park), the state it wrote from, the
// token it wrote under, and how many claims the world had seen (of any
// operation) when it was refused, which orders it against them exactly
// (times alone cannot: a claim and a write can share a virtual instant).
type FencedRecord struct {
	Op     sluice.OperationID
	Token  sluice.FencingToken
	Proc   string
	At     time.Time
	Call   string
	From   sluice.State // a CAS's From; None for a park
	Claims int
}

// ReleaseRecord is one release or park the store took: its holder gave up
// the lease held under Token. A release naming a lease already gone (a
// later claim took the row, or its holder had let it go) is recorded too,
// though the store changed nothing; claimWaits tells them apart.
type ReleaseRecord struct {
	Op    sluice.OperationID
	Token sluice.FencingToken
	Proc  string
	At    time.Time
	// The wait it asked for (Park.After, or a release's after), and the
	// store's newest event Seq when it landed, which orders it against the
	// writes (a transition between two parks ends a spell; times alone
	// cannot order a write and a park made at one virtual instant).
	After time.Duration
	Seq   int64
	// Claims is how many claims the world had recorded when it landed,
	// which orders it against them (a release names a lease that a later
	// claim may already have replaced). Zero on a live audit's parks.
	Claims int
	// Park marks a park (its twin is in Parks); else a release.
	Park bool
}

// SignerFailure is one signing the world failed: which process asked, for
// which txid's raw data (of which operation, by the world's record of the
// write that stored it), when; and how many claims and sends the world had
// seen, which orders it exactly against them.
type SignerFailure struct {
	Proc          string
	Txid          tron.Txid
	Op            sluice.OperationID
	At            time.Time
	Claims, Sends int
}

// StoreFailure is one store call of a worker's the world failed: which
// process, which call, when, and how many claims the world had seen, which
// orders it exactly against them.
type StoreFailure struct {
	Proc   string
	Call   string
	At     time.Time
	Claims int
}

// SendRecord is one broadcast a worker made: of which txid (and so of which
// operation, by the world's record of the write that stored it), by which
// process, when, with the answer the worker got (a code, or the error's
// text; over a wire, what reached it), and how many claims the world had
// seen when the call began.
type SendRecord struct {
	Op     sluice.OperationID
	Txid   tron.Txid
	Proc   string
	At     time.Time
	Answer string
	Claims int
	// Lookups, Writes, Releases, Parks: how many of each the world had
	// seen when the call ended (which orders it exactly against the
	// lookups, and, as a LookupRecord's counts do, against the rest).
	Lookups, Writes, Releases, Parks int
}

// Outcome is what intake told a client.
type Outcome int

// The outcomes. The zero value is no outcome, so a record nobody filled in
// is noticed rather than read as Created.
const (
	// Created: this request inserted the row.
	Created Outcome = iota + 1
	// Replayed: the id existed with the same payload; the row was returned.
	Replayed
	// Conflict: the id existed with another payload; refused.
	Conflict
	// Invalid: refused at the door; nothing was stored.
	Invalid
	// Failed: a store error, or the client or intake crashed: the answer is
	// unknown, and the insert may or may not have committed.
	Failed
	// Unfunded: the customer's balance did not cover the amount; nothing
	// was stored.
	Unfunded
)

func (o Outcome) String() string {
	switch o {
	case Created:
		return "created"
	case Replayed:
		return "replayed"
	case Conflict:
		return "conflict"
	case Invalid:
		return "invalid"
	case Failed:
		return "failed"
	case Unfunded:
		return "unfunded"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// Violation is one broken invariant.
type Violation struct {
	Invariant string             // one of the names in Invariants
	Operation sluice.OperationID // "" when not about one operation
	Message   string             // names the operation and the evidence; one line, deterministic
}

// String is "invariant: message".
func (v Violation) String() string { return v.Invariant + ": " + v.Message }

// Deployment is a release rolled out mid-run (Snapshot.Deployed).
type Deployment struct {
	// Procs names the workers that ran it: their process names, which are
	// also the WorkerIDs their writes and events carry.
	Procs map[string]bool
	// Rebuilds and ParkLimit are its stuck policy's rebuild budget and its
	// park limit; 0 where it kept the world's.
	Rebuilds, ParkLimit int
}

// rebuildsBy is the rebuild budget of the release worker w ran.
func (s *Snapshot) rebuildsBy(w string) int {
	if d := s.Deployed; d != nil && d.Rebuilds > 0 && d.Procs[w] {
		return d.Rebuilds
	}
	return s.Stuck.Rebuilds
}

// buildsMaxBy is the number of envelopes the release worker w ran lets an
// operation build (0: not judged).
func (s *Snapshot) buildsMaxBy(w string) int {
	if d := s.Deployed; s.BuildsMax > 0 && d != nil && d.Rebuilds > 0 && d.Procs[w] {
		return d.Rebuilds + 1
	}
	return s.BuildsMax
}

// parkLimitBy is the park limit of the release worker w ran.
func (s *Snapshot) parkLimitBy(w string) int {
	if d := s.Deployed; d != nil && d.ParkLimit > 0 && d.Procs[w] {
		return d.ParkLimit
	}
	return s.ParkLimit
}
