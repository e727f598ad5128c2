package sluice

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"sluicesim/sluice/tron"
)

// Config holds the pipeline's and worker's limits. Durations are virtual or
// real depending on who drives the worker; the core cannot tell.
type Config struct {
	// ExpirationWindow is how far past the head block's time an envelope
	// expires. TRON's default is 60 s; the node refuses less than 3 s.
	ExpirationWindow time.Duration
	// MinValidity: an envelope with less than this left before expiration,
	// judged against head chain time, is stale before its first send and is
	// rebuilt rather than sent. Only a never-sent envelope may be rebuilt so.
	MinValidity time.Duration
	// SafetyMargin is added to the expiration before solid chain time counts
	// as proof of death.
	SafetyMargin time.Duration
	// Stuck decides, once a sent txid is proven dead, between rebuilding,
	// cancelling and review; its Rebuilds bounds the envelopes an operation
	// may build (Rebuilds + 1).
	Stuck StuckPolicy
	// FeeLimit is raw_data.fee_limit in sun. A rebuild after an
	// OUT_OF_ENERGY receipt doubles the failed envelope's limit, up to
	// FeeLimitMax; any other rebuild keeps the old envelope's. Every
	// envelope is built between FeeLimit and FeeLimitMax as they are when
	// it is built, whatever they were when the row's earlier ones were.
	FeeLimit    int64
	FeeLimitMax int64

	// Parking: an operational error (a refusal for bandwidth or energy, a
	// failed receipt, an unreachable signer) parks the operation
	// for RetryAmbiguous doubled per park of the current spell, at most
	// ParkBackoffMax, plus jitter. After ParkLimit parks in its life, or ParkFor parked
	// without a transition, it goes to review instead: never to failed,
	// since the trouble is ours, not the customer's.
	ParkLimit      int
	ParkFor        time.Duration
	ParkBackoffMax time.Duration

	// ClaimBatch is how many operations one Tick claims.
	ClaimBatch int
	// StepsPerClaimMax bounds the handler steps one claim may take on one
	// operation, so a worker never spins on a row.
	StepsPerClaimMax int

	// Waits before the next look at an operation, each with up to half
	// again of random jitter so that workers do not march in step.
	RetryNotTaken  time.Duration // busy, no connection
	RetryAmbiguous time.Duration // timeouts, ambiguous answers, re-sends
	PollPending    time.Duration // accepted, not yet in a block
	BlockInterval  time.Duration // TRON's slot; used to wait out solidity
}

// DefaultConfig is what the service runs with.
func DefaultConfig() Config {
	return Config{
		ExpirationWindow: 60 * time.Second,
		MinValidity:      15 * time.Second,
		SafetyMargin:     30 * time.Second,
		Stuck:            StuckPolicy{RebuildAfter: time.Minute, CancelAfter: 2 * time.Hour, Rebuilds: 4},
		FeeLimit:         30_000_000,
		FeeLimitMax:      240_000_000,
		ParkLimit:        30,
		ParkFor:          time.Hour,
		ParkBackoffMax:   5 * time.Minute,
		ClaimBatch:       8,
		StepsPerClaimMax: 12,
		RetryNotTaken:    3 * time.Second,
		RetryAmbiguous:   6 * time.Second,
		PollPending:      6 * time.Second,
		BlockInterval:    3 * time.Second,
	}
}

// Validate reports a configuration that would make the safety argument or the
// loops meaningless.
func (c Config) Validate() error {
	switch {
	case c.ExpirationWindow < 3*time.Second:
		return fmt.Errorf("config: ExpirationWindow %s is below the node's 3s minimum", c.ExpirationWindow)
	case c.MinValidity <= 0 || c.MinValidity >= c.ExpirationWindow:
		return fmt.Errorf("config: MinValidity %s must be in (0, ExpirationWindow %s)", c.MinValidity, c.ExpirationWindow)
	case c.SafetyMargin < 0:
		return fmt.Errorf("config: SafetyMargin %s is negative", c.SafetyMargin)
	case c.FeeLimit <= 0 || c.FeeLimitMax < c.FeeLimit:
		return fmt.Errorf("config: FeeLimit %d must be positive and at most FeeLimitMax %d", c.FeeLimit, c.FeeLimitMax)
	case c.Stuck.CancelAfter > 0 && c.Stuck.CancelAfter <= c.ExpirationWindow+c.SafetyMargin:
		// The first proof of death comes after expiration + margin: with
		// CancelAfter already past by then, no rebuild could ever happen.
		return fmt.Errorf("config: stuck policy CancelAfter %s must exceed ExpirationWindow %s + SafetyMargin %s, or no rebuild can ever happen",
			c.Stuck.CancelAfter, c.ExpirationWindow, c.SafetyMargin)
	case c.ParkLimit < 1 || c.ParkFor <= 0 || c.ParkBackoffMax <= 0:
		return fmt.Errorf("config: ParkLimit %d, ParkFor %s and ParkBackoffMax %s must be positive", c.ParkLimit, c.ParkFor, c.ParkBackoffMax)
	case c.ClaimBatch < 1 || c.StepsPerClaimMax < 1:
		return fmt.Errorf("config: ClaimBatch %d and StepsPerClaimMax %d must be at least 1", c.ClaimBatch, c.StepsPerClaimMax)
	case c.RetryNotTaken <= 0 || c.RetryAmbiguous <= 0 || c.PollPending <= 0 || c.BlockInterval <= 0:
		return fmt.Errorf("config: retry and poll intervals must be positive")
	}
	return c.Stuck.Validate()
}

// Pipeline holds the handlers, one per non-terminal state. Each handler is
// also that state's recovery procedure: a reclaimed operation is handled
// exactly like a fresh one, so there is no separate recovery mode to get
// wrong.
type Pipeline struct {
	Store     Store
	Node      tron.Node
	Signer    tron.Signer
	Clock     Clock // the worker's wall clock: raw_data timestamps only
	HotWallet tron.Address
	Config    Config

	// Txids, if not nil, is where the pipeline remembers txids, shared
	// with the other pipelines of the process (tron.NewTxidCache): an
	// operation goes from worker to worker (it is released to wait, or its
	// lease lapses) and the next one finds its envelope's txid there rather
	// than hashing it again. Nil: the pipeline remembers a few of its own.
	Txids *tron.TxidCache

	// txids remembers the txids of the last few envelopes when Txids is
	// nil: every step checks its envelope's txid against its raw_data,
	// and the same envelope comes by step after step. A Pipeline must not
	// be copied.
	txids tron.TxidCache
}

// txid is raw's txid, by the pipeline's cache.
func (p *Pipeline) txid(raw *tron.RawData) tron.Txid {
	if p.Txids != nil {
		return p.Txids.Txid(raw)
	}
	return p.txids.Txid(raw)
}

// Outcome is what one handler step decided.
type Outcome struct {
	// Op is the row after the step (after its CAS, if it made one).
	Op Operation
	// Wait > 0: nothing more to do now; look again after Wait.
	Wait time.Duration
	// Why says what the step saw, for logs and traces.
	Why string
	// Park != "": an operational error (the reason); the worker parks the
	// operation with backoff (Pipeline.Park) instead of a plain wait.
	Park string
	// Decision is the stuck policy's, when the step asked it.
	Decision *Decision
}

// Step runs the handler for op's current state once. It returns ErrFenced
// (wrapped) as soon as a write matches nothing: the caller must stop touching
// op at once. Node and signer failures never come back as errors: they are
// operating conditions, answered with a Wait.
func (p *Pipeline) Step(ctx context.Context, w WorkerID, op Operation) (Outcome, error) {
	switch op.State {
	case Requested:
		return p.validate(ctx, w, op)
	case Validated:
		return p.build(ctx, w, op)
	case Signing:
		return p.sign(ctx, w, op)
	case Signed:
		return p.send(ctx, w, op)
	case Broadcasting:
		return p.reconcile(ctx, w, op)
	case Broadcast:
		return p.await(ctx, w, op)
	}
	panic(fmt.Sprintf("sluice: Step on %s in terminal or unknown state %s", op.ID, op.State))
}

// validate re-checks the request before any money-moving work. Intake already
// refused malformed input at the door; this guards rows written by anyone.
func (p *Pipeline) validate(ctx context.Context, w WorkerID, op Operation) (Outcome, error) {
	reason := ""
	switch r := op.Request; {
	case r.Asset != Asset:
		reason = fmt.Sprintf("asset %q is not %s", r.Asset, Asset)
	case r.Amount == 0:
		reason = "amount is zero"
	case r.To[0] != tron.AddressPrefix:
		reason = "recipient is not a TRON address"
	case r.To == tron.USDTContract:
		reason = "recipient is the USDT contract itself"
	case r.To == p.HotWallet:
		reason = "recipient is the hot wallet itself"
	}
	if reason != "" {
		return p.cas(ctx, w, op, Change{To: Rejected, Reason: reason, Hold: HoldRelease, Note: "rejected: " + reason})
	}
	return p.cas(ctx, w, op, Change{To: Validated, Note: "validated"})
}

// build makes the first envelope and stores its txid before anything is
// signed: from here on, recovery can always ask the chain about a txid it
// already knows.
func (p *Pipeline) build(ctx context.Context, w WorkerID, op Operation) (Outcome, error) {
	env, why := p.newEnvelope(ctx, op, 1, p.Config.FeeLimit)
	if why != "" {
		return p.unavailable(op, why), nil
	}
	return p.cas(ctx, w, op, Change{
		To: Signing, Envelope: env, Builds: 1,
		Note: builtNote(env.Txid, env.Raw.Expiration),
	})
}

// sign signs the stored envelope. Re-signing after a crash is safe: the
// txid excludes the signature, and the envelope was never sent (nothing is
// sent before the write-ahead to broadcasting).
func (p *Pipeline) sign(ctx context.Context, w WorkerID, op Operation) (Outcome, error) {
	p.mustHaveEnvelope(op)
	sig, err := p.Signer.Sign(ctx, op.Envelope.Raw)
	if err != nil {
		return p.parked(op, "signer: "+err.Error()), nil
	}
	env := op.Envelope
	env.Signature = sig
	return p.cas(ctx, w, op, Change{To: Signed, Envelope: &env, Note: txidNote("signed txid=", env.Txid)})
}

// send is the first send of an envelope. It commits the intent (state
// broadcasting) before the network call: a crash between the two leaves a
// row that says "someone may have sent txid T", which reconcile resolves by
// asking the chain. Sending first and recording after would open a window in
// which the bytes are out but the row says signed, and a stale-envelope
// rebuild from signed would then make a second, live txid.
func (p *Pipeline) send(ctx context.Context, w WorkerID, op Operation) (Outcome, error) {
	p.mustHaveEnvelope(op)
	head, err := p.Node.HeadBlock(ctx)
	if err != nil {
		return p.unavailable(op, "head block: "+err.Error()), nil
	}
	if left := msTime(op.Envelope.Raw.Expiration).Sub(head.Time); left < p.Config.MinValidity {
		// Never sent (we are before the write-ahead), so a new txid cannot
		// race the old one: no proof of death is needed.
		why := fmt.Sprintf("stale before first send: %s left at head #%d", left, head.Number)
		if op.Builds-1 >= p.Config.Stuck.Rebuilds {
			// Our own slowness (signing, a lagging clock), not the
			// customer's: an operator looks, nothing was ever sent.
			reason := fmt.Sprintf("%s, and %d rebuilds spent", why, op.Builds-1)
			return p.cas(ctx, w, op, Change{To: Review, Reason: reason, Note: "review: " + reason})
		}
		return p.rebuild(ctx, w, op, nil, nil, why)
	}
	out, err := p.cas(ctx, w, op, Change{To: Broadcasting, FirstSend: true, Note: txidNote("write-ahead: sending txid=", op.Envelope.Txid)})
	if err != nil {
		return out, err
	}
	op = out.Op
	res, err := p.Node.Broadcast(ctx, transaction(op))
	if err != nil {
		return Outcome{Op: op, Wait: p.Config.RetryAmbiguous, Why: "first send: " + err.Error()}, nil
	}
	switch tron.Read(res.Code) {
	case tron.Accepted:
		return p.cas(ctx, w, op, Change{To: Broadcast, Note: codeNote(acceptedPrefix, res.Code)})
	case tron.HardReject:
		if tron.Intrinsic(res.Code) {
			// Bytes no node will ever accept (a bad signature, too big)
			// went out for the first time and were refused: no copy of
			// them can be alive anywhere.
			reason := codeNote(firstSendRejectedPrefix, res.Code)
			return p.cas(ctx, w, op, Change{To: Failed, Reason: reason, Hold: HoldRelease, Note: reason})
		}
		// A refusal from the answering node's own state (bandwidth,
		// energy, the contract) speaks for that node only. Behind a
		// balancer that retries a failed call elsewhere, an earlier
		// attempt of this very send may sit in another node's pool and
		// land: failing now would report a payment as failed. Let the
		// chain decide: reconcile re-sends the same bytes, and only proof
		// of death rebuilds. Meanwhile the shortage is ours: park.
		return p.parked(op, codeNote(firstSendRefusedPrefix, res.Code)), nil
	case tron.NotTaken:
		return Outcome{Op: op, Wait: p.Config.RetryNotTaken, Why: codeNote(firstSendNotTakenPrefix, res.Code)}, nil
	}
	// Ambiguous, or an expiration/TAPoS answer (never proof): reconcile.
	return Outcome{Op: op, Wait: p.Config.RetryAmbiguous, Why: codeNote(firstSendUnclearPrefix, res.Code)}, nil
}

// reconcile handles broadcasting: "someone committed to sending txid T". It
// asks the chain; if T is known, the send happened. If not, T is either
// provably dead (rebuild) or possibly in flight (re-send the same bytes:
// the network deduplicates on the txid, so this is always safe).
func (p *Pipeline) reconcile(ctx context.Context, w WorkerID, op Operation) (Outcome, error) {
	p.mustHaveEnvelope(op)
	solid, info, why := p.observe(ctx, op)
	if why != "" {
		return p.unavailable(op, why), nil
	}
	switch info.Status {
	case tron.Pending, tron.Included:
		return p.cas(ctx, w, op, Change{To: Broadcast, Note: reconciledNote(info.Status)})
	}
	return p.stuck(ctx, w, op, p.evidence(op, solid, info))
}

// stuck asks the stuck policy about a txid the chain does not know, and
// acts on its decision. Without proof of death the answer is always wait,
// which means re-sending the same bytes (the network deduplicates on the
// txid, so that is always safe).
func (p *Pipeline) stuck(ctx context.Context, w WorkerID, op Operation, ev Evidence) (Outcome, error) {
	d := p.Config.Stuck.Decide(op, ev, ev.SolidTime)
	// The evidence is copied where it is filed, so that the common answer,
	// wait, does not move it to the heap.
	switch d.Action {
	case Rebuild:
		e := ev
		return p.rebuild(ctx, w, op, &e, &d, "proof of death")
	case Cancel:
		e := ev
		reason := "cancelled by the stuck policy: " + d.Reason
		return p.cas(ctx, w, op, Change{To: Failed, Reason: reason, RetiredTxid: op.Envelope.Txid,
			Evidence: &e, Decision: &d, Hold: HoldRelease, Note: reason})
	case Escalate:
		e := ev
		reason := "stuck, to review: " + d.Reason
		return p.cas(ctx, w, op, Change{To: Review, Reason: reason, Evidence: &e, Decision: &d, Note: "review: " + reason})
	}
	if ev.Proves() {
		// Dead, but patience has not run out: nothing to re-send.
		return Outcome{Op: op, Wait: max(p.Config.Stuck.RebuildAfter-d.Waited, p.Config.RetryAmbiguous), Why: d.Reason, Decision: &d}, nil
	}
	out, err := p.resend(ctx, w, op)
	out.Decision = &d
	return out, err
}

// await handles broadcast: accepted, waiting for a solid block. Only a solid
// block with a SUCCESS receipt and the expected Transfer log confirms.
func (p *Pipeline) await(ctx context.Context, w WorkerID, op Operation) (Outcome, error) {
	p.mustHaveEnvelope(op)
	solid, info, why := p.observe(ctx, op)
	if why != "" {
		return p.unavailable(op, why), nil
	}
	switch info.Status {
	case tron.Pending:
		return Outcome{Op: op, Wait: p.Config.PollPending, Why: "pending"}, nil
	case tron.Included:
		if !info.Solid {
			// Wait out the blocks until solidity instead of polling the
			// node every few seconds.
			blocks := max(info.BlockNumber-solid.Number, 1)
			return Outcome{Op: op, Wait: time.Duration(blocks) * p.Config.BlockInterval,
				Why: includedWhy(info.BlockNumber, solid.Number)}, nil
		}
		if info.Receipt != tron.ReceiptSuccess {
			return p.failedReceipt(ctx, w, op, p.evidence(op, solid, info))
		}
		if why := p.transferMismatch(op, info.Logs); why != "" {
			// The contract ran and said SUCCESS, so tokens may have moved,
			// just not as asked (a fee taken on the way, another token or
			// recipient, a node that reports logs wrongly). Confirming
			// would tell the customer they were paid; failing would let
			// them withdraw again. Only a person can settle it.
			reason := fmt.Sprintf("receipt SUCCESS in solid block #%d, but %s", info.BlockNumber, why)
			return p.cas(ctx, w, op, Change{To: Review, Reason: reason, Note: "review: " + reason})
		}
		return p.cas(ctx, w, op, Change{To: Confirmed, Hold: HoldSettle,
			Note: confirmedNote(op.Envelope.Txid, info.BlockNumber)})
	}
	// Accepted once, now unknown: dropped from the pool (eviction, node
	// restart). It stays valid until it expires, so re-send the same bytes
	// until it lands or its death is proven.
	return p.stuck(ctx, w, op, p.evidence(op, solid, info))
}

// failedReceipt handles a txid on chain, solid, with a receipt other than
// SUCCESS (OUT_OF_ENERGY, REVERT): the contract did not run to the end and
// no tokens moved. That is our shortage (energy, a fee limit too low, the
// hot wallet's own USDT), never the customer's fault, and the failed
// transaction is proof of its own death: rebuild (with a higher fee limit
// after OUT_OF_ENERGY) and park so that the shortage has time to end. With
// the rebuild budget spent, review, never failed.
func (p *Pipeline) failedReceipt(ctx context.Context, w WorkerID, op Operation, ev Evidence) (Outcome, error) {
	if !ev.Proves() {
		// The node that answered the lookup calls the block solid, but
		// the solid block fetched first (from a node behind it, as behind
		// a balancer) is below it: evidence citing that block proves
		// nothing. Wait for it to catch up rather than file a rebuild
		// nobody can verify.
		blocks := max(ev.BlockNumber-ev.SolidNumber, 1)
		return Outcome{Op: op, Wait: time.Duration(blocks) * p.Config.BlockInterval,
			Why: "receipt " + ev.Receipt + " in #" + strconv.FormatInt(ev.BlockNumber, 10) +
				", above the solid head #" + strconv.FormatInt(ev.SolidNumber, 10) + " seen"}, nil
	}
	why := "receipt " + ev.Receipt + " in solid block #" + strconv.FormatInt(ev.BlockNumber, 10) + ": no tokens moved"
	e := ev // filed below: a copy, so that the wait above keeps ev off the heap
	d := Decision{Rebuilds: max(op.Builds-1, 0), Reason: why}
	if !op.FirstSentAt.IsZero() {
		d.Waited = max(ev.SolidTime.Sub(op.FirstSentAt), 0)
	}
	if d.Rebuilds >= p.Config.Stuck.Rebuilds {
		d.Action = Escalate
		d.Reason = fmt.Sprintf("%s; rebuilt %d times, the policy allows %d", why, d.Rebuilds, p.Config.Stuck.Rebuilds)
		reason := "failed on chain for operational reasons, to review: " + d.Reason
		return p.cas(ctx, w, op, Change{To: Review, Reason: reason, Evidence: &e, Decision: &d, Note: "review: " + reason})
	}
	d.Action = Rebuild
	out, err := p.rebuild(ctx, w, op, &e, &d, why)
	if err != nil || out.Wait > 0 || out.Park != "" {
		return out, err
	}
	out.Park = why
	return out, nil
}

// observe fetches the solid block and then looks the txid up, in that order.
// The order is the proof: once a solid block S is past expiration + margin,
// every block that could still include the txid is at or below S and
// irreversible, so a lookup made after fetching S sees all of them. Looking
// up first would let an inclusion slip in between the two calls.
func (p *Pipeline) observe(ctx context.Context, op Operation) (tron.Block, tron.TxInfo, string) {
	solid, err := p.Node.SolidBlock(ctx)
	if err != nil {
		return solid, tron.TxInfo{}, "solid block: " + err.Error()
	}
	info, err := p.Node.Lookup(ctx, op.Envelope.Txid)
	if err != nil {
		return solid, info, "lookup: " + err.Error()
	}
	return solid, info, ""
}

// evidence records what the chain said, whether or not it proves death.
func (p *Pipeline) evidence(op Operation, solid tron.Block, info tron.TxInfo) Evidence {
	ev := Evidence{
		Txid:        op.Envelope.Txid,
		Expiration:  msTime(op.Envelope.Raw.Expiration),
		Margin:      p.Config.SafetyMargin,
		SolidNumber: solid.Number,
		SolidTime:   solid.Time,
		Lookup:      info.Status,
		LookupSolid: info.NodeSolid,
	}
	if info.Status == tron.Included {
		ev.Receipt, ev.BlockNumber, ev.SeenSolid = info.Receipt, info.BlockNumber, info.Solid
	}
	return ev
}

// resend sends the same bytes again. A hard reject or an expiration answer
// here is not terminal: an earlier send of these bytes may be in another
// pool or already in a block.
func (p *Pipeline) resend(ctx context.Context, w WorkerID, op Operation) (Outcome, error) {
	res, err := p.Node.Broadcast(ctx, transaction(op))
	if err != nil {
		return Outcome{Op: op, Wait: p.Config.RetryAmbiguous, Why: "re-send: " + err.Error()}, nil
	}
	switch tron.Read(res.Code) {
	case tron.Accepted:
		if op.State == Broadcasting {
			return p.cas(ctx, w, op, Change{To: Broadcast, Note: codeNote(resentAcceptedPrefix, res.Code)})
		}
		return Outcome{Op: op, Wait: p.Config.PollPending, Why: codeNote(resentAcceptedPrefix, res.Code)}, nil
	case tron.NotTaken:
		return Outcome{Op: op, Wait: p.Config.RetryNotTaken, Why: codeNote(resendNotTakenPrefix, res.Code)}, nil
	case tron.HardReject:
		if !tron.Intrinsic(res.Code) {
			// Not terminal (an earlier copy may live elsewhere), but a
			// shortage of ours: park rather than hammer the node.
			return p.parked(op, codeNote(resendRefusedPrefix, res.Code)), nil
		}
	}
	return Outcome{Op: op, Wait: p.Config.RetryAmbiguous, Why: codeNote(resentPrefix, res.Code)}, nil
}

// rebuild replaces the envelope with a fresh one (new timestamp, new txid).
// ev is the proof of death; it may be nil only for an envelope that was never
// sent (state signed). The caller has checked the rebuild budget.
func (p *Pipeline) rebuild(ctx context.Context, w WorkerID, op Operation, ev *Evidence, d *Decision, why string) (Outcome, error) {
	if ev == nil && op.State != Signed {
		panic(fmt.Sprintf("sluice: rebuild of %s from %s without proof of death", op.ID, op.State))
	}
	old := op.Envelope.Txid
	fee := op.Envelope.Raw.FeeLimit
	if ev != nil && ev.Receipt == tron.ReceiptOutOfEnergy {
		fee = min(2*fee, p.Config.FeeLimitMax)
	}
	// Within today's limits, whatever release built the old envelope: a
	// deploy may have raised FeeLimit above it or lowered FeeLimitMax
	// below it since (Validate keeps FeeLimit <= FeeLimitMax).
	fee = min(max(fee, p.Config.FeeLimit), p.Config.FeeLimitMax)
	env, werr := p.newEnvelope(ctx, op, op.Builds+1, fee)
	if werr != "" {
		return p.unavailable(op, werr), nil
	}
	return p.cas(ctx, w, op, Change{
		To: Signing, Envelope: env, Builds: op.Builds + 1, RetiredTxid: old, Evidence: ev, Decision: d,
		Note: rebuildNote(op.Builds+1, why, old, env.Txid),
	})
}

// newEnvelope builds raw_data for build number n: TAPoS reference to the
// solid block (irreversible, so the reference can never be orphaned),
// expiration from head chain time, and a memo naming the operation and the
// build so that no two builds anywhere share a txid.
func (p *Pipeline) newEnvelope(ctx context.Context, op Operation, n int, feeLimit int64) (*Envelope, string) {
	head, err := p.Node.HeadBlock(ctx)
	if err != nil {
		return nil, "head block: " + err.Error()
	}
	solid, err := p.Node.SolidBlock(ctx)
	if err != nil {
		return nil, "solid block: " + err.Error()
	}
	refBytes, refHash := solid.Ref()
	// The envelope, its memo and its call data share one allocation (the
	// memo and the data each capped at its length, so that neither can grow
	// into the other): the envelope goes to the store by pointer anyway.
	// A memo too long for the room (an unusually long id) spills to the
	// heap.
	e := new(struct {
		env Envelope
		buf [96 + tron.TransferSize]byte
	})
	buf := appendMemo(e.buf[:0], op.ID, n)
	memo := len(buf)
	e.env.Raw = tron.RawData{
		RefBlockBytes: refBytes,
		RefBlockHash:  refHash,
		Expiration:    head.Time.Add(p.Config.ExpirationWindow).UnixMilli(),
		Timestamp:     p.Clock.Now().UnixMilli(),
		FeeLimit:      feeLimit,
		Memo:          buf[:memo:memo],
		Contract: tron.TriggerSmartContract{
			Owner:    p.HotWallet,
			Contract: tron.USDTContract,
			Data:     tron.AppendTransfer(buf[memo:], op.Request.To, uint64(op.Request.Amount)),
		},
	}
	e.env.Txid = p.txid(&e.env.Raw)
	return &e.env, ""
}

// unavailable answers a node that did not answer: wait and look again.
// It is not a park: an unreachable node says nothing about this operation
// or our funds, and counting it as operational trouble of the operation's
// own would keep a withdrawal that once saw a timeout from ever being
// cancelled by the stuck policy.
func (p *Pipeline) unavailable(op Operation, why string) Outcome {
	return Outcome{Op: op, Wait: p.Config.RetryAmbiguous, Why: why}
}

// parked answers an operational error: the worker parks op (Park).
func (p *Pipeline) parked(op Operation, why string) Outcome {
	return Outcome{Op: op, Wait: p.Config.RetryAmbiguous, Why: why, Park: why}
}

// Park parks op after an operational error, or, past the bounds (ParkLimit
// parks in its life, or ParkFor parked without a transition), sends it to
// review: never to failed. The wait doubles with each earlier park, up to
// ParkBackoffMax; jitter (from the worker's Rand) is added by the caller's
// spread function.
func (p *Pipeline) Park(ctx context.Context, w WorkerID, op Operation, why string, spread func(time.Duration) time.Duration) (Outcome, error) {
	c := p.Config
	over := ""
	switch {
	case op.Parks+1 > c.ParkLimit:
		over = fmt.Sprintf("parked %d times, the limit is %d", op.Parks+1, c.ParkLimit)
	case !op.ParkedSince.IsZero() && op.NotBefore.Sub(op.ParkedSince) >= c.ParkFor:
		// ParkedSince is the store's time, and so is NotBefore: the row
		// became claimable again then, at or before the claim that brought
		// it here. The worker's own clock may run ahead of or behind the
		// store's, so measuring the spell with it would send a row to
		// review seconds into a spell, or never; NotBefore measures it
		// from below on the one clock.
		over = fmt.Sprintf("parked since %s, at or past ParkFor %s", op.ParkedSince.UTC().Format(time.RFC3339), c.ParkFor)
	}
	if over != "" && CanTransition(op.State, Review) {
		reason := fmt.Sprintf("%s (last: %s)", over, why)
		out, err := p.cas(ctx, w, op, Change{To: Review, Reason: reason, Note: "review: " + reason})
		// Still the answer to an operational error: the worker and its
		// Observer must hear why, as for any other park.
		out.Park = why
		return out, err
	}
	// Exponential backoff within a spell: the spell so far (store clock,
	// NotBefore - ParkedSince) is about the sum of its earlier waits, so
	// waiting as long again doubles the wait each park. A transition ends
	// the spell, and the next trouble starts again from RetryAmbiguous: one
	// timeout long ago does not slow a healthy operation down.
	wait := c.RetryAmbiguous
	if !op.ParkedSince.IsZero() {
		wait = max(wait, op.NotBefore.Sub(op.ParkedSince))
	}
	wait = min(wait, c.ParkBackoffMax)
	if spread != nil {
		wait = spread(wait)
	}
	next, err := p.Store.Park(ctx, Park{ID: op.ID, Token: op.Token, Worker: w, After: wait, Reason: why})
	if err != nil {
		return Outcome{Op: op}, fmt.Errorf("%s park token=%d: %w", op.ID, op.Token, err)
	}
	return Outcome{Op: next, Wait: wait, Why: "parked: " + why, Park: why}, nil
}

// transferMismatch is TransferMismatch for the pipeline's hot wallet.
func (p *Pipeline) transferMismatch(op Operation, logs []tron.Log) string {
	return TransferMismatch(p.HotWallet, op.Request, logs)
}

// TransferMismatch says why the logs are not exactly one USDT Transfer log
// from the hot wallet to the recipient for exactly the amount, or "" when
// they are (an operator's "resolve as paid" is checked with it too). A SUCCESS receipt alone is not enough, and neither is "some
// matching log": a second USDT Transfer log (a fee-on-transfer, a second
// payment inside one call) means more moved than was asked. Logs of other
// contracts are not USDT and are ignored, whatever they claim.
func TransferMismatch(hot tron.Address, req Request, logs []tron.Log) string {
	// Only the count and the first matter: no list of them is kept.
	var t tron.Transfer
	n := 0
	for _, l := range logs {
		if l.Address != tron.USDTContract.Bytes20() {
			continue
		}
		if u, ok := tron.ParseTransferLog(l); ok {
			if n == 0 {
				t = u
			}
			n++
		}
	}
	switch {
	case n == 0:
		return "no USDT Transfer log"
	case n > 1:
		return fmt.Sprintf("%d USDT Transfer logs, want exactly one", n)
	}
	var bad []string
	if t.From != hot {
		bad = append(bad, "from "+t.From.String())
	}
	if t.To != req.To {
		bad = append(bad, "to "+t.To.String())
	}
	if t.Amount != uint64(req.Amount) {
		bad = append(bad, fmt.Sprintf("for %d units", t.Amount))
	}
	if len(bad) > 0 {
		return fmt.Sprintf("the USDT Transfer log is %s, not %d units from %s to %s",
			strings.Join(bad, " and "), uint64(req.Amount), hot, req.To)
	}
	return ""
}

// cas applies a fenced transition from op's current state and token.
func (p *Pipeline) cas(ctx context.Context, w WorkerID, op Operation, c Change) (Outcome, error) {
	c.ID, c.Token, c.Worker, c.From = op.ID, op.Token, w, op.State
	next, err := p.Store.CAS(ctx, c)
	if err != nil {
		return Outcome{Op: op}, &casError{id: op.ID, from: c.From, to: c.To, token: c.Token, err: err}
	}
	return Outcome{Op: next, Why: c.Note, Decision: c.Decision}, nil
}

func transaction(op Operation) tron.Transaction {
	return tron.Transaction{Raw: op.Envelope.Raw, Signature: op.Envelope.Signature}
}

func (p *Pipeline) mustHaveEnvelope(op Operation) {
	if op.Envelope.Txid.IsZero() || op.Envelope.Txid != p.txid(&op.Envelope.Raw) {
		panic(fmt.Sprintf("sluice: %s in %s without a consistent envelope (txid %s)", op.ID, op.State, op.Envelope.Txid))
	}
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
