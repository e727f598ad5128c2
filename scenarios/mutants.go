package scenarios

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/intake"
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

	configure   func(*Config)
	intakeStore func(w *world, s sluice.Store) sluice.Store
	workerStore func(a *actor, s sluice.Store) sluice.Store
	workerNode  func(a *actor, n tron.Node) tron.Node
	workerSign  func(s tron.Signer) tron.Signer
	rawBody     bool // requests carry their raw body's hash in the context
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
		Name:       "confirm-before-solid",
		Breaks:     "confirmed on inclusion, without waiting for the block to be solid",
		workerNode: func(a *actor, n tron.Node) tron.Node { return lookupRewrite{n, a, markSolid} },
		Uncaught: "the mock node has no reorgs: a block above the solid head is never replaced, so confirming early is " +
			"never wrong here. A mock with reorgs of unsolidified blocks (TRON.md allows them) would catch it.",
	},
	{
		Name:       "confirm-ignores-receipt",
		Breaks:     "confirmed without checking the receipt: a REVERT or OUT_OF_ENERGY counts as paid",
		workerNode: func(a *actor, n tron.Node) tron.Node { return lookupRewrite{n, a, forgeSuccess} },
	},
	{
		Name:   "confirm-ignores-transfer-log",
		Breaks: "confirmed without checking the Transfer log's contract, recipient and amount",
		Uncaught: "the mock's USDT contract always emits exactly the expected Transfer log with a SUCCESS receipt, so the " +
			"check never decides anything here; a node fault that drops or alters logs (or a fee-on-transfer token) would catch it.",
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
		Name:        "carry-on-after-fence",
		Breaks:      "the worker carries on after a fenced write as if it had landed",
		workerStore: func(a *actor, s sluice.Store) sluice.Store { return carryOn{s, a} },
	},
}

// OnStore reports whether the mutant breaks the store a worker or intake
// sees (the CAS, the claim, the insert, the log): the mutants that say
// something about a store, and so are run against PostgreSQL too.
func (m Mutant) OnStore() bool { return m.workerStore != nil || m.intakeStore != nil }

func mutant(name string) (Mutant, bool) {
	for _, m := range Mutants {
		if m.Name == name {
			return m, true
		}
	}
	return Mutant{}, false
}

// MutantByName returns the named mutant.
func MutantByName(name string) (Mutant, bool) { return mutant(name) }

// MutantNames lists the catalog's names in order.
func MutantNames() []string {
	names := make([]string, len(Mutants))
	for i, m := range Mutants {
		names[i] = m.Name
	}
	return names
}

// --- store-side mutants ---

// casRewrite edits each Change against the row as it really is (read
// without a yield point, as the broken SQL would see it) before the CAS.
type casRewrite struct {
	sluice.Store
	a    *actor
	edit func(row sluice.Operation, c *sluice.Change)
}

func (m casRewrite) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	if row, err := m.a.w.store.Get(ctx, c.ID); err == nil {
		m.edit(row, &c)
	}
	return m.Store.CAS(ctx, c)
}

// leaseBreaker drops every live lease on claimable rows before claiming, so
// the claim takes rows that another worker holds.
type leaseBreaker struct {
	sluice.Store
	a *actor
}

func (m leaseBreaker) Claim(ctx context.Context, worker sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	now := m.a.w.s.Now()
	for _, row := range m.a.w.store.Snapshot().Operations {
		if !row.State.Terminal() && row.ClaimedBy != "" && row.LeaseUntil.After(now) && !row.NotBefore.After(now) {
			m.a.w.store.Release(ctx, row.ID, row.Token, 0)
		}
	}
	return m.Store.Claim(ctx, worker, limit)
}

// sendFirst sends the envelope before the write-ahead CAS: a crash between
// the two leaves bytes on the wire and a row that says signed.
type sendFirst struct {
	sluice.Store
	a *actor
}

func (m sendFirst) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	if c.To == sluice.Broadcasting {
		if row, err := m.a.w.store.Get(ctx, c.ID); err == nil && row.Token == c.Token && row.State == c.From {
			m.a.node.Broadcast(ctx, tron.Transaction{Raw: row.Envelope.Raw, Signature: row.Envelope.Signature})
		}
	}
	return m.Store.CAS(ctx, c)
}

// carryOn turns a fenced write into a pretended success: the worker goes on
// with its stale view, its state advanced as if the write had landed.
type carryOn struct {
	sluice.Store
	a *actor
}

func (m carryOn) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	op, err := m.Store.CAS(ctx, c)
	if !errors.Is(err, sluice.ErrFenced) {
		return op, err
	}
	row, gerr := m.a.w.store.Get(ctx, c.ID)
	if gerr != nil {
		return op, err
	}
	row.State, row.Token = c.To, c.Token
	if c.Envelope != nil {
		row.Envelope = *c.Envelope
	}
	return row, nil
}

// rawHash keys the payload comparison on the raw request body's hash.
type rawHash struct{ sluice.Store }

type rawBodyKey struct{}

func (m rawHash) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	raw, _ := ctx.Value(rawBodyKey{}).(string)
	normalized := op.RequestHash
	op.RequestHash = raw
	row, created, err := m.Store.Insert(ctx, op)
	if err == nil && !created && row.RequestHash == raw {
		row.RequestHash = normalized // same bytes: the service sees a match
	}
	return row, created, err
}

func bodyDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// noCompare makes every existing row look like the caller's payload.
type noCompare struct{ sluice.Store }

func (m noCompare) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	row, created, err := m.Store.Insert(ctx, op)
	if err == nil && !created {
		row.RequestHash = op.RequestHash
	}
	return row, created, err
}

// checkThenInsert is the classic intake race: a lookup, then an insert, as
// two separate store calls. Between them another request for the same id can
// insert first; the loser never learns, and tells its client "created".
type checkThenInsert struct{ sluice.Store }

func (c checkThenInsert) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	row, err := c.Store.Get(ctx, op.ID)
	if err == nil {
		return row, false, nil
	}
	if !errors.Is(err, sluice.ErrNotFound) {
		return row, false, err
	}
	row, _, err = c.Store.Insert(ctx, op)
	return row, err == nil, err
}

// --- node-side mutants ---

type timeSource int

const (
	wallClock timeSource = iota
	headTime
)

// solidTime answers SolidBlock with another notion of "now": the wall clock
// or the head block's time, which is what a proof judged by them sees.
type solidTime struct {
	tron.Node
	a   *actor
	src timeSource
}

func (m solidTime) SolidBlock(ctx context.Context) (tron.Block, error) {
	b, err := m.Node.SolidBlock(ctx)
	if err != nil {
		return b, err
	}
	switch m.src {
	case wallClock:
		b.Time = m.a.w.s.Now().Add(m.a.skew)
	case headTime:
		return m.Node.HeadBlock(ctx)
	}
	return b, nil
}

// believer takes a word from the node (an expiration or TAPoS answer, or a
// timeout) as proof of death: the next observation of that txid reports it
// unknown under a solid block far past its deadline.
type believer struct {
	tron.Node
	a         *actor
	onCode    bool
	onTimeout bool
	dead      map[tron.Txid]bool
	pending   bool
}

func (m *believer) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	res, err := m.Node.Broadcast(ctx, tx)
	if (m.onTimeout && err != nil) || (m.onCode && err == nil && tron.Read(res.Code) == tron.NotProof) {
		if m.dead == nil {
			m.dead = map[tron.Txid]bool{}
		}
		m.dead[tx.Txid()] = true
		m.pending = true
	}
	return res, err
}

func (m *believer) SolidBlock(ctx context.Context) (tron.Block, error) {
	b, err := m.Node.SolidBlock(ctx)
	if err == nil && m.pending {
		b.Time = b.Time.Add(48 * time.Hour)
	}
	return b, err
}

func (m *believer) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	if m.dead[id] {
		delete(m.dead, id)
		m.pending = len(m.dead) > 0
		return tron.TxInfo{Txid: id, Status: tron.Unknown}, nil
	}
	return m.Node.Lookup(ctx, id)
}

// timeoutRefuses turns a broadcast timeout into a hard reject, which a first
// send reads as a refusal for good.
type timeoutRefuses struct{ tron.Node }

func (m timeoutRefuses) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	res, err := m.Node.Broadcast(ctx, tx)
	if err != nil {
		return tron.BroadcastResult{Code: tron.CodeSigError, Message: "timeout read as refusal (mutant)"}, nil
	}
	return res, err
}

// resendRejectFails fails the operation when a re-send is hard-rejected, as
// a core that made such a reject terminal would.
type resendRejectFails struct {
	tron.Node
	a    *actor
	sent map[tron.Txid]bool
}

func (m *resendRejectFails) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	id := tx.Txid()
	res, err := m.Node.Broadcast(ctx, tx)
	if err == nil && m.sent[id] && tron.Read(res.Code) == tron.HardReject {
		if owner, ok := m.a.w.store.TxidOwner(id); ok {
			if row, gerr := m.a.w.store.Get(ctx, owner); gerr == nil {
				// Through the worker's own store view, as the core's write would be.
				storeView{m.a}.CAS(ctx, sluice.Change{ID: row.ID, Token: row.Token, Worker: sluice.WorkerID(m.a.p.Name()),
					From: row.State, To: sluice.Failed, Reason: "re-send rejected (mutant)", Note: "re-send rejected (mutant)"})
			}
		}
	}
	m.sent[id] = true
	return res, err
}

// lookupRewrite edits lookup answers as a broken confirmation check would
// misread them.
type lookupRewrite struct {
	tron.Node
	a    *actor
	edit func(a *actor, info *tron.TxInfo)
}

func (m lookupRewrite) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	info, err := m.Node.Lookup(ctx, id)
	if err == nil && info.Status == tron.Included {
		m.edit(m.a, &info)
	}
	return info, err
}

func markSolid(_ *actor, info *tron.TxInfo) { info.Solid = true }

// forgeSuccess reads any receipt as SUCCESS with the expected Transfer log.
func forgeSuccess(a *actor, info *tron.TxInfo) {
	if info.Receipt == tron.ReceiptSuccess {
		return
	}
	owner, ok := a.w.store.TxidOwner(info.Txid)
	if !ok {
		return
	}
	row, err := a.w.store.Get(context.Background(), owner)
	if err != nil {
		return
	}
	info.Receipt = tron.ReceiptSuccess
	info.Logs = []tron.Log{tron.TransferLog(tron.USDTContract, a.w.hot, row.Request.To, uint64(row.Request.Amount))}
}

// --- mutants of the oracle's issue: self-consistent bugs ---

// badSignature signs, then spoils the signature, as a signer with the wrong
// key or a core that signs the wrong bytes would.
type badSignature struct{ tron.Signer }

func (m badSignature) Sign(ctx context.Context, raw tron.RawData) ([]byte, error) {
	sig, err := m.Signer.Sign(ctx, raw)
	if err == nil && len(sig) > 0 {
		sig = append([]byte(nil), sig...)
		sig[0] ^= 0xff
	}
	return sig, err
}

// scaled stores ten times the amount with the request hash of that amount,
// as intake would with a parser that reads "1.5" as 15 USDT: everything
// downstream (hash, replays, envelope, confirmation) agrees with itself.
type scaled struct{ sluice.Store }

func (m scaled) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	honest := op.RequestHash
	op.Request.Amount *= 10
	op.RequestHash = intake.RequestHash(op.ID, op.Request)
	row, created, err := m.Store.Insert(ctx, op)
	if err == nil && !created && row.RequestHash == op.RequestHash {
		row.RequestHash = honest // the same (misread) payload: the service sees a match
	}
	return row, created, err
}

// noRecipientHash keys the payload comparison on a hash without the
// recipient.
type noRecipientHash struct{ sluice.Store }

func hashWithoutRecipient(op sluice.NewOperation) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s|%d|%s", op.ID, op.Request.Amount, op.Request.Asset))
	return hex.EncodeToString(sum[:])
}

func (m noRecipientHash) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	honest := op.RequestHash
	op.RequestHash = hashWithoutRecipient(op)
	row, created, err := m.Store.Insert(ctx, op)
	if err == nil && !created && row.RequestHash == op.RequestHash {
		row.RequestHash = honest
	}
	return row, created, err
}

// otherHistory answers a log read with the log of the operation created just
// before (or after, for the first one), as a query with a wrong join would.
type otherHistory struct {
	sluice.Store
	w *world
}

func (m otherHistory) Events(ctx context.Context, id sluice.OperationID) ([]sluice.Event, error) {
	ops := m.w.store.Snapshot().Operations
	for i, op := range ops {
		if op.ID != id || len(ops) < 2 {
			continue
		}
		other := ops[max(i-1, 0)]
		if i == 0 {
			other = ops[1]
		}
		return m.Store.Events(ctx, other.ID)
	}
	return m.Store.Events(ctx, id)
}

// adoptToken retries a fenced write under whatever token the row now
// carries, when the row is still in the state the worker expects: fencing
// bypassed by "helpful" retry code.
type adoptToken struct {
	sluice.Store
	a *actor
}

func (m adoptToken) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	op, err := m.Store.CAS(ctx, c)
	if !errors.Is(err, sluice.ErrFenced) {
		return op, err
	}
	row, gerr := m.a.w.store.Get(ctx, c.ID)
	if gerr != nil || row.State != c.From || row.Token == c.Token || row.State.Terminal() {
		return op, err
	}
	c.Token = row.Token
	return m.Store.CAS(ctx, c)
}

// cachedLookup answers a lookup of a txid last found unknown with that old
// answer, as a client-side cache with a generous lifetime would. A proof of
// death then rests on a lookup made before the solid block it cites: the
// order observe exists to keep.
type cachedLookup struct {
	tron.Node
	a    *actor
	seen map[tron.Txid]tron.TxInfo
}

func (m *cachedLookup) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	if info, ok := m.seen[id]; ok {
		delete(m.seen, id)
		return info, nil
	}
	info, err := m.Node.Lookup(ctx, id)
	if err == nil && info.Status == tron.Unknown {
		m.seen[id] = info
	}
	return info, err
}
