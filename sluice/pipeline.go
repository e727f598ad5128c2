package sluice

import (
	"context"
	"fmt"
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
	// BuildsMax is how many envelopes an operation may build before a
	// proven death fails it instead of rebuilding.
	BuildsMax int
	// FeeLimit is raw_data.fee_limit in sun.
	FeeLimit int64

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
		BuildsMax:        5,
		FeeLimit:         30_000_000,
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
	case c.BuildsMax < 1:
		return fmt.Errorf("config: BuildsMax %d is below 1", c.BuildsMax)
	case c.ClaimBatch < 1 || c.StepsPerClaimMax < 1:
		return fmt.Errorf("config: ClaimBatch %d and StepsPerClaimMax %d must be at least 1", c.ClaimBatch, c.StepsPerClaimMax)
	case c.RetryNotTaken <= 0 || c.RetryAmbiguous <= 0 || c.PollPending <= 0 || c.BlockInterval <= 0:
		return fmt.Errorf("config: retry and poll intervals must be positive")
	}
	return nil
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
}

// Outcome is what one handler step decided.
type Outcome struct {
	// Op is the row after the step (after its CAS, if it made one).
	Op Operation
	// Wait > 0: nothing more to do now; look again after Wait.
	Wait time.Duration
	// Why says what the step saw, for logs and traces.
	Why string
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
		return p.cas(ctx, w, op, Change{To: Rejected, Reason: reason, Note: "rejected: " + reason})
	}
	return p.cas(ctx, w, op, Change{To: Validated, Note: "validated"})
}

// build makes the first envelope and stores its txid before anything is
// signed: from here on, recovery can always ask the chain about a txid it
// already knows.
func (p *Pipeline) build(ctx context.Context, w WorkerID, op Operation) (Outcome, error) {
	env, wait, why := p.newEnvelope(ctx, op, 1)
	if wait > 0 {
		return Outcome{Op: op, Wait: wait, Why: why}, nil
	}
	return p.cas(ctx, w, op, Change{
		To: Signing, Envelope: &env, Builds: 1,
		Note: fmt.Sprintf("built txid=%s expiration=%s", env.Txid.Short(), msTime(env.Raw.Expiration).Format(time.RFC3339)),
	})
}

// sign signs the stored envelope. Re-signing after a crash is safe: the
// txid excludes the signature, and the envelope was never sent (nothing is
// sent before the write-ahead to broadcasting).
func (p *Pipeline) sign(ctx context.Context, w WorkerID, op Operation) (Outcome, error) {
	mustHaveEnvelope(op)
	sig, err := p.Signer.Sign(ctx, op.Envelope.Raw)
	if err != nil {
		return Outcome{Op: op, Wait: p.Config.RetryAmbiguous, Why: "signer: " + err.Error()}, nil
	}
	env := op.Envelope
	env.Signature = sig
	return p.cas(ctx, w, op, Change{To: Signed, Envelope: &env, Note: "signed txid=" + env.Txid.Short()})
}

// send is the first send of an envelope. It commits the intent (state
// broadcasting) before the network call: a crash between the two leaves a
// row that says "someone may have sent txid T", which reconcile resolves by
// asking the chain. Sending first and recording after would open a window in
// which the bytes are out but the row says signed, and a stale-envelope
// rebuild from signed would then make a second, live txid.
func (p *Pipeline) send(ctx context.Context, w WorkerID, op Operation) (Outcome, error) {
	mustHaveEnvelope(op)
	head, err := p.Node.HeadBlock(ctx)
	if err != nil {
		return Outcome{Op: op, Wait: p.Config.RetryAmbiguous, Why: "head block: " + err.Error()}, nil
	}
	if left := msTime(op.Envelope.Raw.Expiration).Sub(head.Time); left < p.Config.MinValidity {
		// Never sent (we are before the write-ahead), so a new txid cannot
		// race the old one: no proof of death is needed.
		return p.rebuild(ctx, w, op, nil, fmt.Sprintf("stale before first send: %s left at head #%d", left, head.Number))
	}
	out, err := p.cas(ctx, w, op, Change{To: Broadcasting, Note: "write-ahead: sending txid=" + op.Envelope.Txid.Short()})
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
		return p.cas(ctx, w, op, Change{To: Broadcast, Note: "accepted: " + string(res.Code)})
	case tron.HardReject:
		if tron.Intrinsic(res.Code) {
			// Bytes no node will ever accept (a bad signature, too big)
			// went out for the first time and were refused: no copy of
			// them can be alive anywhere.
			reason := "first send rejected: " + string(res.Code)
			return p.cas(ctx, w, op, Change{To: Failed, Reason: reason, Note: reason})
		}
		// A refusal from the answering node's own state (bandwidth,
		// energy, the contract) speaks for that node only. Behind a
		// balancer that retries a failed call elsewhere, an earlier
		// attempt of this very send may sit in another node's pool and
		// land: failing now would report a payment as failed. Let the
		// chain decide: reconcile re-sends the same bytes, and only proof
		// of death rebuilds or fails.
		return Outcome{Op: op, Wait: p.Config.RetryAmbiguous, Why: "first send refused by the node: " + string(res.Code)}, nil
	case tron.NotTaken:
		return Outcome{Op: op, Wait: p.Config.RetryNotTaken, Why: "first send not taken: " + string(res.Code)}, nil
	}
	// Ambiguous, or an expiration/TAPoS answer (never proof): reconcile.
	return Outcome{Op: op, Wait: p.Config.RetryAmbiguous, Why: "first send unclear: " + string(res.Code)}, nil
}

// reconcile handles broadcasting: "someone committed to sending txid T". It
// asks the chain; if T is known, the send happened. If not, T is either
// provably dead (rebuild) or possibly in flight (re-send the same bytes:
// the network deduplicates on the txid, so this is always safe).
func (p *Pipeline) reconcile(ctx context.Context, w WorkerID, op Operation) (Outcome, error) {
	mustHaveEnvelope(op)
	solid, info, wait, why := p.observe(ctx, op)
	if wait > 0 {
		return Outcome{Op: op, Wait: wait, Why: why}, nil
	}
	switch info.Status {
	case tron.Pending, tron.Included:
		return p.cas(ctx, w, op, Change{To: Broadcast, Note: "reconciled: txid " + info.Status.String()})
	}
	if ev := p.evidence(op, solid, info); ev.Proves() {
		return p.rebuild(ctx, w, op, &ev, "proof of death")
	}
	return p.resend(ctx, w, op)
}

// await handles broadcast: accepted, waiting for a solid block. Only a solid
// block with a SUCCESS receipt and the expected Transfer log confirms.
func (p *Pipeline) await(ctx context.Context, w WorkerID, op Operation) (Outcome, error) {
	mustHaveEnvelope(op)
	solid, info, wait, why := p.observe(ctx, op)
	if wait > 0 {
		return Outcome{Op: op, Wait: wait, Why: why}, nil
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
				Why: fmt.Sprintf("included in #%d, solid head #%d", info.BlockNumber, solid.Number)}, nil
		}
		if info.Receipt != tron.ReceiptSuccess {
			reason := fmt.Sprintf("on chain with receipt %s in block #%d: no tokens moved", info.Receipt, info.BlockNumber)
			return p.cas(ctx, w, op, Change{To: Failed, Reason: reason, Note: reason})
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
		return p.cas(ctx, w, op, Change{To: Confirmed,
			Note: fmt.Sprintf("confirmed txid=%s in solid block #%d", op.Envelope.Txid.Short(), info.BlockNumber)})
	}
	// Accepted once, now unknown: dropped from the pool (eviction, node
	// restart). It stays valid until it expires, so re-send the same bytes
	// until it lands or its death is proven.
	if ev := p.evidence(op, solid, info); ev.Proves() {
		return p.rebuild(ctx, w, op, &ev, "proof of death after acceptance")
	}
	return p.resend(ctx, w, op)
}

// observe fetches the solid block and then looks the txid up, in that order.
// The order is the proof: once a solid block S is past expiration + margin,
// every block that could still include the txid is at or below S and
// irreversible, so a lookup made after fetching S sees all of them. Looking
// up first would let an inclusion slip in between the two calls.
func (p *Pipeline) observe(ctx context.Context, op Operation) (tron.Block, tron.TxInfo, time.Duration, string) {
	solid, err := p.Node.SolidBlock(ctx)
	if err != nil {
		return solid, tron.TxInfo{}, p.Config.RetryAmbiguous, "solid block: " + err.Error()
	}
	info, err := p.Node.Lookup(ctx, op.Envelope.Txid)
	if err != nil {
		return solid, info, p.Config.RetryAmbiguous, "lookup: " + err.Error()
	}
	return solid, info, 0, ""
}

// evidence records what the chain said, whether or not it proves death.
func (p *Pipeline) evidence(op Operation, solid tron.Block, info tron.TxInfo) Evidence {
	return Evidence{
		Txid:        op.Envelope.Txid,
		Expiration:  msTime(op.Envelope.Raw.Expiration),
		Margin:      p.Config.SafetyMargin,
		SolidNumber: solid.Number,
		SolidTime:   solid.Time,
		Lookup:      info.Status,
		LookupSolid: info.NodeSolid,
	}
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
			return p.cas(ctx, w, op, Change{To: Broadcast, Note: "re-sent, accepted: " + string(res.Code)})
		}
		return Outcome{Op: op, Wait: p.Config.PollPending, Why: "re-sent, accepted: " + string(res.Code)}, nil
	case tron.NotTaken:
		return Outcome{Op: op, Wait: p.Config.RetryNotTaken, Why: "re-send not taken: " + string(res.Code)}, nil
	}
	return Outcome{Op: op, Wait: p.Config.RetryAmbiguous, Why: "re-sent: " + string(res.Code)}, nil
}

// rebuild replaces the envelope with a fresh one (new timestamp, new txid).
// ev is the proof of death; it may be nil only for an envelope that was never
// sent (state signed). With the build budget spent, the operation fails
// instead, which the same proof makes safe: the old txid can never land.
func (p *Pipeline) rebuild(ctx context.Context, w WorkerID, op Operation, ev *Evidence, why string) (Outcome, error) {
	if ev == nil && op.State != Signed {
		panic(fmt.Sprintf("sluice: rebuild of %s from %s without proof of death", op.ID, op.State))
	}
	old := op.Envelope.Txid
	if op.Builds >= p.Config.BuildsMax {
		reason := fmt.Sprintf("gave up after %d builds (%s)", op.Builds, why)
		return p.cas(ctx, w, op, Change{To: Failed, Reason: reason, RetiredTxid: old, Evidence: ev, Note: reason})
	}
	env, wait, werr := p.newEnvelope(ctx, op, op.Builds+1)
	if wait > 0 {
		return Outcome{Op: op, Wait: wait, Why: werr}, nil
	}
	return p.cas(ctx, w, op, Change{
		To: Signing, Envelope: &env, Builds: op.Builds + 1, RetiredTxid: old, Evidence: ev,
		Note: fmt.Sprintf("rebuild #%d: %s; retired %s, new txid=%s", op.Builds+1, why, old.Short(), env.Txid.Short()),
	})
}

// newEnvelope builds raw_data for build number n: TAPoS reference to the
// solid block (irreversible, so the reference can never be orphaned),
// expiration from head chain time, and a memo naming the operation and the
// build so that no two builds anywhere share a txid.
func (p *Pipeline) newEnvelope(ctx context.Context, op Operation, n int) (Envelope, time.Duration, string) {
	head, err := p.Node.HeadBlock(ctx)
	if err != nil {
		return Envelope{}, p.Config.RetryAmbiguous, "head block: " + err.Error()
	}
	solid, err := p.Node.SolidBlock(ctx)
	if err != nil {
		return Envelope{}, p.Config.RetryAmbiguous, "solid block: " + err.Error()
	}
	refBytes, refHash := solid.Ref()
	raw := tron.RawData{
		RefBlockBytes: refBytes,
		RefBlockHash:  refHash,
		Expiration:    head.Time.Add(p.Config.ExpirationWindow).UnixMilli(),
		Timestamp:     p.Clock.Now().UnixMilli(),
		FeeLimit:      p.Config.FeeLimit,
		Memo:          fmt.Appendf(nil, "sluice:%s:%d", op.ID, n),
		Contract: tron.TriggerSmartContract{
			Owner:    p.HotWallet,
			Contract: tron.USDTContract,
			Data:     tron.EncodeTransfer(op.Request.To, uint64(op.Request.Amount)),
		},
	}
	return Envelope{Txid: raw.Txid(), Raw: raw}, 0, ""
}

// transferMismatch says why the logs are not exactly one USDT Transfer log
// from the hot wallet to the recipient for exactly the amount, or "" when
// they are. A SUCCESS receipt alone is not enough, and neither is "some
// matching log": a second USDT Transfer log (a fee-on-transfer, a second
// payment inside one call) means more moved than was asked. Logs of other
// contracts are not USDT and are ignored, whatever they claim.
func (p *Pipeline) transferMismatch(op Operation, logs []tron.Log) string {
	var usdt []tron.Transfer
	for _, l := range logs {
		if l.Address != tron.USDTContract.Bytes20() {
			continue
		}
		if t, ok := tron.ParseTransferLog(l); ok {
			usdt = append(usdt, t)
		}
	}
	switch {
	case len(usdt) == 0:
		return "no USDT Transfer log"
	case len(usdt) > 1:
		return fmt.Sprintf("%d USDT Transfer logs, want exactly one", len(usdt))
	}
	t := usdt[0]
	var bad []string
	if t.From != p.HotWallet {
		bad = append(bad, "from "+t.From.String())
	}
	if t.To != op.Request.To {
		bad = append(bad, "to "+t.To.String())
	}
	if t.Amount != uint64(op.Request.Amount) {
		bad = append(bad, fmt.Sprintf("for %d units", t.Amount))
	}
	if len(bad) > 0 {
		return fmt.Sprintf("the USDT Transfer log is %s, not %d units from %s to %s",
			strings.Join(bad, " and "), uint64(op.Request.Amount), p.HotWallet, op.Request.To)
	}
	return ""
}

// cas applies a fenced transition from op's current state and token.
func (p *Pipeline) cas(ctx context.Context, w WorkerID, op Operation, c Change) (Outcome, error) {
	c.ID, c.Token, c.Worker, c.From = op.ID, op.Token, w, op.State
	next, err := p.Store.CAS(ctx, c)
	if err != nil {
		return Outcome{Op: op}, fmt.Errorf("%s %s->%s token=%d: %w", op.ID, c.From, c.To, c.Token, err)
	}
	return Outcome{Op: next, Why: c.Note}, nil
}

func transaction(op Operation) tron.Transaction {
	return tron.Transaction{Raw: op.Envelope.Raw, Signature: op.Envelope.Signature}
}

func mustHaveEnvelope(op Operation) {
	if op.Envelope.Txid.IsZero() || op.Envelope.Txid != op.Envelope.Raw.Txid() {
		panic(fmt.Sprintf("sluice: %s in %s without a consistent envelope (txid %s)", op.ID, op.State, op.Envelope.Txid))
	}
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
