package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// Service is the operator's API over the store and the chain. It holds no
// state of its own: every decision rests on a fresh read of the row and of
// the node, and every write is the store's atomic Resolve or Credit.
type Service struct {
	Store     sluice.Store
	Node      tron.Node
	HotWallet tron.Address
	// Clock is only read for the queue's "waited" (time since the first
	// send, on the workers' clock); no decision rests on it.
	Clock sluice.Clock
	// Config gives the safety margin a cancel's proof of death needs, the
	// same one the pipeline's rebuilds use.
	Config sluice.Config
	// Observer, if set, hears every action, landed or refused (logs,
	// metrics). It is called synchronously and must not block.
	Observer Observer
}

// Act says who takes an action and why; both are recorded in the event.
type Act struct {
	Operator string
	Why      string
}

// Limits of what an operator writes into the log.
const (
	OperatorMax = 64  // bytes of an operator's name (sluice.CheckResolution's bound)
	WhyMax      = 500 // bytes of a reason: a sentence, not a document
)

// Check refuses an Act that would make an unreadable or forged record: the
// name is 1 to OperatorMax bytes of letters, digits and ". _ : @ -"; the
// reason 1 to WhyMax bytes of printable text (a newline in it would forge a
// line in the text log).
func (a Act) Check() error {
	switch {
	case a.Operator == "":
		return &InputError{Field: FieldOperator, Reason: "missing: every action names who took it"}
	case len(a.Operator) > OperatorMax:
		return &InputError{Field: FieldOperator, Reason: fmt.Sprintf("longer than %d bytes", OperatorMax)}
	}
	for i := 0; i < len(a.Operator); i++ {
		switch b := a.Operator[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case b == '.' || b == '_' || b == ':' || b == '@' || b == '-':
		default:
			return &InputError{Field: FieldOperator, Reason: fmt.Sprintf("byte %d (%s) is not a letter, digit or one of . _ : @ -", i, sluice.CharAt(a.Operator, i))}
		}
	}
	switch {
	case strings.TrimSpace(a.Why) == "":
		return &InputError{Field: FieldWhy, Reason: "missing: every action says why"}
	case len(a.Why) > WhyMax:
		return &InputError{Field: FieldWhy, Reason: fmt.Sprintf("longer than %d bytes", WhyMax)}
	}
	for _, r := range a.Why {
		// Graphic: letters, marks, numbers, punctuation, symbols and
		// spaces of any script. Not: controls (C0, DEL and C1, NEL among
		// them), the line and paragraph separators, and format characters
		// (bidi overrides, zero widths), which a log viewer may honour as
		// a line break or a reversal: a forged log line.
		if !unicode.IsGraphic(r) || r == '\uFFFD' {
			return &InputError{Field: FieldWhy, Reason: fmt.Sprintf("contains %q: printable UTF-8 text only", r)}
		}
	}
	return nil
}

// Retry hands a non-terminal operation back to the workers at once: its
// park spell ends, its backoff is cleared, and whoever holds its lease is
// fenced (the token is bumped). Nothing about the chain is assumed, so no
// proof is needed: the next worker's handler reads the chain afresh, as it
// would after a crash.
func (s *Service) Retry(ctx context.Context, id sluice.OperationID, a Act) (sluice.Operation, error) {
	act := Action{Kind: Retry, Operator: a.Operator, Why: a.Why, ID: id}
	op, err := s.retry(ctx, id, a, &act)
	return s.done(act, op, err)
}

func (s *Service) retry(ctx context.Context, id sluice.OperationID, a Act, act *Action) (sluice.Operation, error) {
	if err := a.Check(); err != nil {
		return sluice.Operation{}, err
	}
	row, err := s.Store.Get(ctx, id)
	if err != nil {
		return sluice.Operation{}, fmt.Errorf("retry %s: %w", id, err)
	}
	act.Before = row
	switch {
	case row.State == sluice.Review:
		return sluice.Operation{}, refuse(Retry, id, "review is final for the automation: cancel it (with proof of death) or resolve it as paid")
	case row.State.Terminal():
		return sluice.Operation{}, refuse(Retry, id, "it is already "+row.State.String())
	}
	return s.resolve(ctx, sluice.Resolution{ID: id, From: row.State, To: row.State, Operator: a.Operator, Why: a.Why})
}

// Cancel fails an operation and releases its hold, only with proof that
// nothing can still pay it: an operation that never had an envelope
// (requested, validated, or a review reached before the first build) needs
// none; any other needs its current txid proven dead now (see the package
// doc). Retired txids were each proven dead when they were retired (the
// rebuild's evidence is in the event log).
func (s *Service) Cancel(ctx context.Context, id sluice.OperationID, a Act) (sluice.Operation, error) {
	act := Action{Kind: Cancel, Operator: a.Operator, Why: a.Why, ID: id}
	op, err := s.cancel(ctx, id, a, &act)
	return s.done(act, op, err)
}

func (s *Service) cancel(ctx context.Context, id sluice.OperationID, a Act, act *Action) (sluice.Operation, error) {
	if err := a.Check(); err != nil {
		return sluice.Operation{}, err
	}
	row, err := s.Store.Get(ctx, id)
	if err != nil {
		return sluice.Operation{}, fmt.Errorf("cancel %s: %w", id, err)
	}
	act.Before = row
	switch {
	case row.State.Terminal() && row.State != sluice.Review:
		return sluice.Operation{}, refuse(Cancel, id, "it is already "+row.State.String())
	case !sluice.OperatorCanTransition(row.State, sluice.Failed):
		return sluice.Operation{}, refuse(Cancel, id, "an operator may not move it from "+row.State.String()+" to failed")
	}
	r := sluice.Resolution{ID: id, From: row.State, To: sluice.Failed, Operator: a.Operator, Why: a.Why, Hold: sluice.HoldRelease}
	txid := row.Envelope.Txid
	if txid.IsZero() {
		// Never built, so never signed or sent: nothing of it can be on
		// any chain. A worker that is validating or building it right now
		// is fenced by the resolution's token bump, and a build it had
		// already landed would have moved the row out of From.
		return s.resolve(ctx, r)
	}
	if !row.State.Terminal() && !row.Parked() {
		// A worker may hold the lease or claim it at any moment, and one
		// claim can rebuild (a new txid) between our proof and our write:
		// the proof would then be about a txid the row no longer has.
		return sluice.Operation{}, refuse(Cancel, id, fmt.Sprintf(
			"it is %s and not parked: a worker may be driving it; wait until it parks or reaches review", row.State))
	}
	ev, err := s.proof(ctx, row)
	if err != nil {
		return sluice.Operation{}, fmt.Errorf("cancel %s: %w", id, err)
	}
	act.Evidence = &ev
	if why := noProof(ev); why != "" {
		return sluice.Operation{}, refuse(Cancel, id, why)
	}
	if !row.State.Terminal() {
		// Narrow the window the store cannot close for us (Resolve compares
		// the state only): any claim since the first read bumped the token,
		// any rebuild changed the txid.
		now, err := s.Store.Get(ctx, id)
		if err != nil {
			return sluice.Operation{}, fmt.Errorf("cancel %s: %w", id, err)
		}
		if now.State != row.State || now.Token != row.Token || now.Envelope.Txid != txid {
			return sluice.Operation{}, refuse(Cancel, id, fmt.Sprintf(
				"it moved on while the chain was asked (%s token=%d txid=%s, now %s token=%d txid=%s): read it again",
				row.State, row.Token, txid.Short(), now.State, now.Token, now.Envelope.Txid.Short()))
		}
	}
	// The txid proven dead goes with the write: both stores refuse a
	// resolution naming a txid that is not the row's current one, which
	// closes, in the write's own atomic step, the window between the read
	// above and it (a rebuild there would leave the state as it was, with
	// a new, live txid).
	r.Evidence, r.Txid = &ev, txid
	op, err := s.resolve(ctx, r)
	if errors.Is(err, sluice.ErrIllegalTransition) {
		return sluice.Operation{}, refuse(Cancel, id, fmt.Sprintf(
			"its txid is no longer %s (rebuilt while the chain was asked): read it again", txid.Short()))
	}
	return op, err
}

// proof asks the chain about the row's current txid exactly as the
// pipeline does: the solid block first, then the lookup. Looking up first
// would let an inclusion slip in between the two calls and be missed.
func (s *Service) proof(ctx context.Context, row sluice.Operation) (sluice.Evidence, error) {
	solid, err := s.Node.SolidBlock(ctx)
	if err != nil {
		return sluice.Evidence{}, fmt.Errorf("solid block: %w: %w", err, ErrNodeUnavailable)
	}
	info, err := s.Node.Lookup(ctx, row.Envelope.Txid)
	if err != nil {
		return sluice.Evidence{}, fmt.Errorf("lookup %s: %w: %w", row.Envelope.Txid.Short(), err, ErrNodeUnavailable)
	}
	ev := sluice.Evidence{
		Txid:        row.Envelope.Txid,
		Expiration:  time.UnixMilli(row.Envelope.Raw.Expiration).UTC(),
		Margin:      s.Config.SafetyMargin,
		SolidNumber: solid.Number,
		SolidTime:   solid.Time,
		Lookup:      info.Status,
		LookupSolid: info.NodeSolid,
	}
	if info.Status == tron.Included {
		ev.Receipt, ev.BlockNumber, ev.SeenSolid = info.Receipt, info.BlockNumber, info.Solid
	}
	return ev, nil
}

// noProof says why ev does not prove the txid dead, or "" when it does.
func noProof(ev sluice.Evidence) string {
	if ev.Proves() {
		return ""
	}
	t := ev.Txid.String()
	switch {
	case ev.Lookup == tron.Included && ev.Receipt == tron.ReceiptSuccess:
		return fmt.Sprintf("txid %s is included in block #%d with receipt SUCCESS: tokens may have moved, so it can never be cancelled; resolve it as paid if it paid exactly the request", t, ev.BlockNumber)
	case ev.Lookup == tron.Included && ev.BlockNumber > 0 && ev.BlockNumber <= ev.SolidNumber && !ev.SeenSolid:
		// Behind a balancer, a node left on an orphaned fork shows the
		// orphaned block's receipt at a height another node's solid block
		// covers, while on the canonical chain the transaction went back
		// to the pools and may still pay: a refund now could refund a
		// payment.
		return fmt.Sprintf("txid %s is included in block #%d with receipt %s, but the node that answered does not call it solid (its solid head #%d): it may be on a fork that will be orphaned; wait until it does",
			t, ev.BlockNumber, ev.Receipt, ev.LookupSolid)
	case ev.Lookup == tron.Included:
		return fmt.Sprintf("txid %s is included in block #%d with receipt %s, not yet solid (solid head #%d): wait until it is", t, ev.BlockNumber, ev.Receipt, ev.SolidNumber)
	case ev.Lookup == tron.Pending:
		return fmt.Sprintf("txid %s is pending in the node's pool: it may still land", t)
	case ev.Lookup != tron.Unknown:
		return fmt.Sprintf("txid %s: the node answered %s", t, ev.Lookup)
	case ev.LookupSolid < ev.SolidNumber:
		return fmt.Sprintf("txid %s is unknown to a node whose solid head #%d is behind the solid block #%d: its answer covers too few blocks to prove anything; ask again", t, ev.LookupSolid, ev.SolidNumber)
	}
	dead := ev.Expiration.Add(ev.Margin)
	return fmt.Sprintf("txid %s is unknown, but it may still land until the solid chain passes its expiration %s plus the margin %s; the solid block #%d is at %s, %s short: wait",
		t, ev.Expiration.Format(time.RFC3339), ev.Margin, ev.SolidNumber, ev.SolidTime.UTC().Format(time.RFC3339), dead.Sub(ev.SolidTime))
}

// ResolvePaid settles a review as paid by txid: hold settled, state
// confirmed. txid must be the operation's current txid (one of its retired
// ones is refused, saying so: each was proven dead when it was retired),
// and the chain must show it included in a solid block with a SUCCESS
// receipt and exactly one USDT Transfer log from the hot wallet to the
// recipient for exactly the amount.
func (s *Service) ResolvePaid(ctx context.Context, id sluice.OperationID, txid tron.Txid, a Act) (sluice.Operation, error) {
	act := Action{Kind: ResolvePaid, Operator: a.Operator, Why: a.Why, ID: id, Txid: txid}
	op, err := s.resolvePaid(ctx, id, txid, a, &act)
	return s.done(act, op, err)
}

func (s *Service) resolvePaid(ctx context.Context, id sluice.OperationID, txid tron.Txid, a Act, act *Action) (sluice.Operation, error) {
	if err := a.Check(); err != nil {
		return sluice.Operation{}, err
	}
	if txid.IsZero() {
		return sluice.Operation{}, &InputError{Field: FieldTxid, Reason: "missing: name the txid that paid"}
	}
	row, err := s.Store.Get(ctx, id)
	if err != nil {
		return sluice.Operation{}, fmt.Errorf("resolve %s: %w", id, err)
	}
	act.Before = row
	if row.State != sluice.Review {
		return sluice.Operation{}, refuse(ResolvePaid, id, "only a review is resolved as paid; it is "+row.State.String())
	}
	events, err := s.Store.Events(ctx, id)
	if err != nil {
		return sluice.Operation{}, fmt.Errorf("resolve %s: %w", id, err)
	}
	own := Txids(row, events)
	if !ownsTxid(own, txid) {
		names := make([]string, len(own))
		for i, t := range own {
			names[i] = t.String()
		}
		which := "none: it never had an envelope"
		if len(names) > 0 {
			which = strings.Join(names, ", ")
		}
		return sluice.Operation{}, refuse(ResolvePaid, id, fmt.Sprintf("txid %s is not one of the operation's txids (%s)", txid, which))
	}
	if txid != row.Envelope.Txid {
		// Every retired txid was proven dead when it was retired, so only
		// the current one can have paid (the stores refuse any other). A
		// retired txid that did pay means that proof was wrong, and the
		// current txid may pay as well: that is for a person to untangle
		// on the chain, not for a resolution to paper over.
		return sluice.Operation{}, refuse(ResolvePaid, id, fmt.Sprintf(
			"txid %s was retired with proof of death; only the current txid %s can have paid (if the chain shows the retired one paid, the proof was wrong: escalate)",
			txid, row.Envelope.Txid))
	}
	// Solid block first, as for a proof of death: the lookup is then at
	// least as recent as the block it is judged against.
	solid, err := s.Node.SolidBlock(ctx)
	if err != nil {
		return sluice.Operation{}, fmt.Errorf("resolve %s: solid block: %w: %w", id, err, ErrNodeUnavailable)
	}
	info, err := s.Node.Lookup(ctx, txid)
	if err != nil {
		return sluice.Operation{}, fmt.Errorf("resolve %s: lookup %s: %w: %w", id, txid.Short(), err, ErrNodeUnavailable)
	}
	switch {
	case info.Status != tron.Included:
		return sluice.Operation{}, refuse(ResolvePaid, id, fmt.Sprintf("txid %s is %s on chain, not included", txid, info.Status))
	case !info.Solid || info.BlockNumber > solid.Number:
		return sluice.Operation{}, refuse(ResolvePaid, id, fmt.Sprintf("txid %s is in block #%d, not yet solid (solid head #%d): wait until it is", txid, info.BlockNumber, solid.Number))
	case info.Receipt != tron.ReceiptSuccess:
		return sluice.Operation{}, refuse(ResolvePaid, id, fmt.Sprintf("txid %s has receipt %s: it moved nothing", txid, info.Receipt))
	}
	// A review exists because the logs are not exactly the payment asked
	// (a fee taken, a short amount, a log twice): demanding exactness here
	// would make every review unresolvable. The operator settles as paid a
	// transaction that did reach the recipient from the hot wallet, and
	// takes responsibility for the difference: the event records who and
	// why. A transfer that reached no one we meant is never "paid".
	if !reachedRecipient(s.HotWallet, row.Request, info.Logs) {
		why := sluice.TransferMismatch(s.HotWallet, row.Request, info.Logs)
		return sluice.Operation{}, refuse(ResolvePaid, id, fmt.Sprintf(
			"txid %s shows no USDT transfer from the hot wallet to the recipient (%s): nothing to settle as paid", txid, why))
	}
	return s.resolve(ctx, sluice.Resolution{ID: id, From: sluice.Review, To: sluice.Confirmed, Operator: a.Operator, Why: a.Why,
		Hold: sluice.HoldSettle, Txid: txid})
}

// resolve applies r. A row that left r.From in the meantime (ErrFenced) is
// a refusal: the operator acted on a view that is gone.
func (s *Service) resolve(ctx context.Context, r sluice.Resolution) (sluice.Operation, error) {
	op, err := s.Store.Resolve(ctx, r)
	if errors.Is(err, sluice.ErrFenced) {
		kind := Retry
		switch r.To {
		case sluice.Failed:
			kind = Cancel
		case sluice.Confirmed:
			kind = ResolvePaid
		}
		return sluice.Operation{}, refuse(kind, r.ID, "it is no longer "+r.From.String()+": read it again")
	}
	if err != nil {
		// Wrapped with %w at the end, so that a caller still matches the
		// store's conditions (ErrIllegalTransition above all).
		return sluice.Operation{}, fmt.Errorf("resolve %s %s->%s: %w", r.ID, r.From, r.To, err)
	}
	return op, nil
}

// Credit adds a deposit to a customer's account, once per c.Ref (see
// sluice.Store.Credit): credited is false for a replay of the same ref and
// numbers; the same ref with other numbers is sluice.ErrPayloadMismatch.
func (s *Service) Credit(ctx context.Context, c sluice.Credit, a Act) (acct sluice.Account, credited bool, err error) {
	act := Action{Kind: Credit, Operator: a.Operator, Why: a.Why, Credit: c}
	defer func() {
		act.Account, act.Credited, act.Err = acct, credited, err
		if s.Observer != nil {
			s.Observer.ObserveAction(act)
		}
	}()
	if err := a.Check(); err != nil {
		return sluice.Account{}, false, err
	}
	if err := sluice.CheckCredit(c); err != nil {
		return sluice.Account{}, false, err
	}
	return s.Store.Credit(ctx, c)
}

// Account reads a customer's ledger; sluice.ErrNotFound if it has none.
func (s *Service) Account(ctx context.Context, c sluice.CustomerID) (sluice.Account, error) {
	if why := c.Valid(); why != "" {
		return sluice.Account{}, &InputError{Field: FieldCustomer, Reason: why}
	}
	return s.Store.Account(ctx, c)
}

// done tells the observer what happened and returns the outcome.
func (s *Service) done(act Action, op sluice.Operation, err error) (sluice.Operation, error) {
	act.After, act.Err = op, err
	if s.Observer != nil {
		s.Observer.ObserveAction(act)
	}
	return op, err
}

// Txids lists every txid the operation has had, oldest first, each once:
// from its events (each transition's txid, each rebuild's retired one) and
// the row's current one.
func Txids(row sluice.Operation, events []sluice.Event) []tron.Txid {
	var out []tron.Txid
	add := func(t tron.Txid) {
		if !t.IsZero() && !ownsTxid(out, t) {
			out = append(out, t)
		}
	}
	for _, e := range events {
		add(e.RetiredTxid)
		add(e.Txid)
	}
	add(row.Envelope.Txid)
	return out
}

func ownsTxid(list []tron.Txid, t tron.Txid) bool {
	for _, x := range list {
		if x == t {
			return true
		}
	}
	return false
}

// reachedRecipient reports whether the logs hold a USDT Transfer log from
// the hot wallet to the request's recipient for some amount.
func reachedRecipient(hot tron.Address, req sluice.Request, logs []tron.Log) bool {
	for _, l := range logs {
		if l.Address != tron.USDTContract.Bytes20() {
			continue
		}
		if t, ok := tron.ParseTransferLog(l); ok && t.From == hot && t.To == req.To && t.Amount > 0 {
			return true
		}
	}
	return false
}
