package operator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// wantRefused checks that err is a refusal whose reason says says.
func wantRefused(t *testing.T, what string, err error, says string) {
	t.Helper()
	rf, ok := errors.AsType[*operator.Refusal](err)
	if !ok || !errors.Is(err, operator.ErrRefused) {
		t.Fatalf("%s: err %v, want a refusal", what, err)
	}
	if !strings.Contains(rf.Reason, says) {
		t.Errorf("%s: refused with %q, want a reason that says %q", what, rf.Reason, says)
	}
}

// lastEvent is id's newest event.
func (w *world) lastEvent(id sluice.OperationID) sluice.Event {
	evs := w.events(id)
	return evs[len(evs)-1]
}

// Goal: a cancel needs proof of death. A parked operation whose first send
// the node refused is refused a cancel (with the time still to wait) until
// the solid chain passes its expiration plus the margin; then the cancel
// lands: failed, hold released, the evidence and the operator's name and
// reason in the event, the customer's balance whole again.
func TestCancelNeedsProofOfDeath(t *testing.T) {
	w := newWorld(t, nil)
	w.fund("cust-1", "100")
	id := w.parkedInBroadcasting("cust-1")

	_, err := w.svc.Cancel(w.ctx, id, act)
	wantRefused(t, "cancel right after the park", err, "may still land until the solid chain passes")
	// The wait it names is what the person on call acts on: the row's own
	// expiration plus the configured margin, less the solid block's time
	// (read here from the row and the node, not from the message's own
	// parts alone). Short by the margin, a retry at that time is refused
	// again, and a wait shown as past tempts a refund by hand.
	exp := time.UnixMilli(w.get(id).Envelope.Raw.Expiration).UTC()
	solid := w.node.Solid()
	wantRefused(t, "cancel right after the park", err, fmt.Sprintf("its expiration %s plus the margin %s; the solid block #%d is at %s, %s short: wait",
		exp.Format(time.RFC3339), w.cfg.SafetyMargin, solid.Number, solid.Time.UTC().Format(time.RFC3339), exp.Add(w.cfg.SafetyMargin).Sub(solid.Time)))
	if op := w.get(id); op.State != sluice.Broadcasting || w.hold(id).State != sluice.HoldHeld {
		t.Fatalf("a refused cancel changed the row or the hold: %s, hold %s", op.State, w.hold(id).State)
	}

	// Expiration (60 s) + margin (30 s) + the solid lag (57 s), and more.
	w.idle(3 * time.Minute)
	op, err := w.svc.Cancel(w.ctx, id, act)
	if err != nil {
		t.Fatalf("cancel with proof: %v", err)
	}
	if op.State != sluice.Failed || !strings.Contains(op.Reason, "ticket 42") {
		t.Errorf("after cancel: %s reason %q, want failed with the operator's reason", op.State, op.Reason)
	}
	e := w.lastEvent(id)
	if e.Worker != "operator:alice" || e.Note != "ticket 42" || e.Hold != sluice.HoldRelease {
		t.Errorf("cancel event: worker %q note %q hold %s, want operator:alice, ticket 42, release", e.Worker, e.Note, e.Hold)
	}
	if e.Evidence == nil || !e.Evidence.Proves() || e.Evidence.Txid != op.Envelope.Txid {
		t.Errorf("cancel event evidence %v, want a proof about the current txid", e.Evidence)
	}
	if a := w.account("cust-1"); a.Balance != 100_000_000 || a.Held != 0 || !a.Balanced() {
		t.Errorf("account after cancel: %+v, want the whole 100 back in the balance", a)
	}
	_, err = w.svc.Cancel(w.ctx, id, act)
	wantRefused(t, "second cancel", err, "already failed")
}

// Goal: an operation that never had an envelope is cancelled without any
// question to the chain (there is nothing there to ask about).
func TestCancelWithoutEnvelopeNeedsNoProof(t *testing.T) {
	w := newWorld(t, nil)
	w.fund("cust-1", "100")
	id := w.submit("cust-1", "10") // no worker has ticked: requested
	w.svc.Node = nil               // any question to the node would panic
	op, err := w.svc.Cancel(w.ctx, id, act)
	if err != nil || op.State != sluice.Failed {
		t.Fatalf("cancel of a requested operation: %s, %v; want failed", op.State, err)
	}
	if w.hold(id).State != sluice.HoldReleased {
		t.Errorf("hold %s, want released", w.hold(id).State)
	}
}

// Goal: a non-terminal operation with an envelope that is not parked is not
// cancelled, even with its txid proven dead: a worker may rebuild it
// between the proof and the write.
func TestCancelRefusesAnOperationAWorkerDrives(t *testing.T) {
	w := newWorld(t, nil)
	w.fund("cust-1", "100")
	w.node.Next(mocknode.Broadcast, mocknode.LoseRequest)
	id := w.submit("cust-1", "10")
	w.run(time.Second) // the send is lost: broadcasting, waiting to reconcile
	if op := w.get(id); op.State != sluice.Broadcasting || op.Parked() {
		t.Fatalf("%s parked=%v, want broadcasting and not parked", op.State, op.Parked())
	}
	w.idle(3 * time.Minute) // long past expiration and margin: provably dead
	_, err := w.svc.Cancel(w.ctx, id, act)
	wantRefused(t, "cancel of an operation a worker drives", err, "not parked")
	if op := w.get(id); op.State != sluice.Broadcasting {
		t.Errorf("the refused cancel moved it to %s", op.State)
	}
}

// raceNode lets a test act between the cancel's two questions to the
// chain, as a worker on another machine could.
type raceNode struct {
	tron.Node
	beforeLookup func()
}

func (n raceNode) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	if n.beforeLookup != nil {
		n.beforeLookup()
	}
	return n.Node.Lookup(ctx, id)
}

// Goal: a cancel whose row was claimed while the chain was asked is refused:
// the claim could have rebuilt it, and the proof would be about a txid the
// row no longer has.
func TestCancelRefusesARowThatMovedOn(t *testing.T) {
	w := newWorld(t, nil)
	w.fund("cust-1", "100")
	id := w.parkedInBroadcasting("cust-1")
	w.idle(3 * time.Minute)
	w.svc.Node = raceNode{Node: w.svc.Node, beforeLookup: func() {
		if _, err := w.store.Claim(w.ctx, "w2", 1); err != nil {
			t.Fatal(err)
		}
	}}
	_, err := w.svc.Cancel(w.ctx, id, act)
	wantRefused(t, "cancel of a row claimed meanwhile", err, "moved on while the chain was asked")
	if op := w.get(id); op.State != sluice.Broadcasting || w.hold(id).State != sluice.HoldHeld {
		t.Errorf("the refused cancel changed the row: %s, hold %s", op.State, w.hold(id).State)
	}
}

// Goal: a review whose transaction succeeded on chain but did not pay as
// asked (no Transfer log at all) can be neither cancelled (tokens may have
// moved) nor resolved as paid (it did not pay the request): both are
// refused, saying why, and the hold stays.
func TestSuccessReviewIsNeitherCancelledNorResolved(t *testing.T) {
	w := newWorld(t, nil)
	w.node.Network().SetExecution(func(mocknode.ExecRequest) mocknode.Execution {
		return mocknode.Execution{NoTransfer: true}
	})
	w.fund("cust-1", "100")
	id := w.submit("cust-1", "10")
	op := w.runUntil(id, 3*time.Minute, func(op sluice.Operation) bool { return op.State.Terminal() })
	if op.State != sluice.Review {
		t.Fatalf("%s, want review", op.State)
	}
	_, err := w.svc.Cancel(w.ctx, id, act)
	wantRefused(t, "cancel of a SUCCESS review", err, "receipt SUCCESS")
	_, err = w.svc.ResolvePaid(w.ctx, id, op.Envelope.Txid, act)
	wantRefused(t, "resolve of a review that paid nothing", err, "no USDT Transfer log")
	_, err = w.svc.Retry(w.ctx, id, act)
	wantRefused(t, "retry of a review", err, "review is final")
	if h := w.hold(id); h.State != sluice.HoldHeld {
		t.Errorf("hold %s, want still held", h.State)
	}
}

// Goal: a review reached by parking past its bounds, whose transaction did
// land exactly, is resolved as paid with its txid once the block is solid:
// confirmed, hold settled, paid in the ledger. A txid that is not the
// operation's, or not yet solid, is refused.
func TestResolvePaid(t *testing.T) {
	w := newWorld(t, func(c *sluice.Config) { c.ParkLimit = 1 })
	w.fund("cust-1", "100")
	id := w.reviewAfterParking("cust-1")
	txid := w.get(id).Envelope.Txid

	_, err := w.svc.ResolvePaid(w.ctx, id, txid, act)
	wantRefused(t, "resolve before the block is solid", err, "not yet solid")

	// Another withdrawal of the same amount to the same recipient, paid:
	// its transaction matches this request's Transfer log exactly, which is
	// why only the operation's own txid may resolve it.
	other := w.submit("cust-1", "10")
	w.runUntil(other, 3*time.Minute, func(op sluice.Operation) bool { return op.State == sluice.Confirmed })
	_, err = w.svc.ResolvePaid(w.ctx, id, w.get(other).Envelope.Txid, act)
	wantRefused(t, "resolve with another operation's txid", err, "not one of the operation's txids")

	op, err := w.svc.ResolvePaid(w.ctx, id, txid, act)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	if op.State != sluice.Confirmed || w.hold(id).State != sluice.HoldSettled {
		t.Errorf("after resolve: %s, hold %s; want confirmed and settled", op.State, w.hold(id).State)
	}
	if a := w.account("cust-1"); a.Paid != 20_000_000 || a.Held != 0 || a.Balance != 80_000_000 {
		t.Errorf("account %+v, want 20 paid (this and the other) and 80 free", a)
	}
	if e := w.lastEvent(id); e.Txid != txid || e.Worker != "operator:alice" || e.To != sluice.Confirmed {
		t.Errorf("resolve event %+v, want the paying txid and the operator", e)
	}

	// A colleague resolves the same review a moment later, pasting the
	// other withdrawal's txid (or the same one): refused, nothing changed.
	// Answered as landed, it would tell them that txid paid this withdrawal
	// (blind bug 317 took every confirmed row for a retry of its resolve).
	last := w.lastEvent(id)
	for _, again := range []tron.Txid{w.get(other).Envelope.Txid, txid} {
		_, err = w.svc.ResolvePaid(w.ctx, id, again, act)
		wantRefused(t, "a second resolve of the confirmed row", err, "it is confirmed")
	}
	if e := w.lastEvent(id); e.Seq != last.Seq {
		t.Errorf("a refused second resolve wrote event %+v", e)
	}
}

// failedReceipt answers every lookup as the node behind it does, but with
// the receipt a failed execution gets: a node on a fork, a proxy that
// merged two answers. The Transfer logs stay as they were.
type failedReceipt struct {
	tron.Node
	receipt string
}

func (f failedReceipt) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	info, err := f.Node.Lookup(ctx, id)
	if err == nil && info.Status == tron.Included {
		info.Receipt = f.receipt
	}
	return info, err
}

// Goal: a review is not resolved as paid by an answer whose receipt says
// the transaction failed, whatever Transfer logs the answer carries: a
// failed execution moves no token (TRON.md), so the logs and the receipt
// disagree and a person must look, not settle the hold (the customer would
// be charged for a payment no one received). Blind bug 325 dropped the
// receipt check: the logs alone then settled it.
// Method: the review of TestResolvePaid, paid and solid, with the lookup's
// receipt rewritten to each failure (its logs intact): refused, naming
// the receipt; the hold stays held. The true answer then resolves it.
func TestResolvePaidRefusesAFailedReceipt(t *testing.T) {
	w := newWorld(t, func(c *sluice.Config) { c.ParkLimit = 1 })
	w.fund("cust-1", "100")
	id := w.reviewAfterParking("cust-1")
	txid := w.get(id).Envelope.Txid
	w.idle(5 * time.Minute)
	honest := w.svc.Node
	for _, r := range []string{tron.ReceiptRevert, tron.ReceiptOutOfEnergy, "OUT_OF_TIME"} {
		w.svc.Node = failedReceipt{Node: honest, receipt: r}
		_, err := w.svc.ResolvePaid(w.ctx, id, txid, act)
		wantRefused(t, "resolve by an answer with receipt "+r, err, "receipt "+r)
		if op, h := w.get(id), w.hold(id); op.State != sluice.Review || h.State != sluice.HoldHeld {
			t.Errorf("receipt %s: the refused resolve left %s, hold %s", r, op.State, h.State)
		}
	}
	w.svc.Node = honest
	if op, err := w.svc.ResolvePaid(w.ctx, id, txid, act); err != nil || op.State != sluice.Confirmed {
		t.Fatalf("the true answer: %s, %v; want confirmed", op.State, err)
	}
}

// Goal: a payment whose block is the solid head itself is solid: resolved
// as paid at once (blind bug 282 refused it as "in block #N, not yet solid
// (solid head #N)" until the next block).
func TestResolvePaidAtTheSolidHead(t *testing.T) {
	w := newWorld(t, func(c *sluice.Config) { c.ParkLimit = 1 })
	w.fund("cust-1", "100")
	id := w.reviewAfterParking("cust-1")
	txid := w.get(id).Envelope.Txid
	node := w.node.Client("test")
	for i := 0; ; i++ {
		info, err := node.Lookup(w.ctx, txid)
		if err != nil {
			t.Fatal(err)
		}
		solid, err := node.SolidBlock(w.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Status == tron.Included && solid.Number >= info.BlockNumber {
			if solid.Number != info.BlockNumber {
				t.Fatalf("the solid head went from below block #%d to #%d in one step", info.BlockNumber, solid.Number)
			}
			break
		}
		if i == 200 {
			t.Fatalf("%s never reached the solid head: %+v, solid #%d", txid.Short(), info, solid.Number)
		}
		w.run(time.Second)
	}
	op, err := w.svc.ResolvePaid(w.ctx, id, txid, act)
	if err != nil || op.State != sluice.Confirmed {
		t.Fatalf("resolve at the solid head: %s, %v; want confirmed", op.State, err)
	}
}

// Goal: a review is not resolved by a txid it retired: each was proven
// dead when it was retired, so only the current one can have paid.
func TestResolvePaidRefusesARetiredTxid(t *testing.T) {
	w := newWorld(t, func(c *sluice.Config) { c.ParkLimit = 1 })
	w.fund("cust-1", "100")
	id := w.submit("cust-1", "10")
	w.run(time.Second)
	retired := w.get(id).Envelope.Txid
	w.node.SetOutcome(retired, tron.ReceiptOutOfEnergy)
	// Rebuilt after the failed receipt (and parked once), then a first
	// send of the new txid refused for bandwidth is a second park: past
	// ParkLimit, review.
	w.runUntil(id, 3*time.Minute, func(op sluice.Operation) bool { return op.Builds == 2 })
	w.node.Next(mocknode.Broadcast, mocknode.BandwidthExhausted)
	op := w.runUntil(id, 3*time.Minute, func(op sluice.Operation) bool { return op.State.Terminal() })
	if op.State != sluice.Review || op.Envelope.Txid == retired {
		t.Fatalf("%s with txid %s, want review with a new txid", op.State, op.Envelope.Txid.Short())
	}
	_, err := w.svc.ResolvePaid(w.ctx, id, retired, act)
	// The person on call acts on which txid the refusal calls dead and
	// which current: swapped, it tells them the one that may still pay is
	// dead.
	wantRefused(t, "resolve with a retired txid", err,
		fmt.Sprintf("txid %s was retired with proof of death; only the current txid %s can have paid", retired, op.Envelope.Txid))
}

// uncounted is a store as a release that did not count builds left it: the
// envelope is written, the build count stays 0. The schema allows such a
// row (builds has no tie to txid), and so might a repair by hand.
type uncounted struct{ sluice.Store }

func (u uncounted) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	c.Builds = 0
	return u.Store.CAS(ctx, c)
}

// Goal: what makes a cancel safe without proof is that the row never had a
// txid, not its build count. A row sent under a txid but with no build
// counted (an older release, a repair) is refused a cancel like any other
// sent row: its transaction may still land, and a cancel then would
// release the hold of a payment.
func TestCancelOfASentRowNeedsProofWhateverItsBuildCount(t *testing.T) {
	w := newWorld(t, nil)
	w.worker.Pipeline.Store = uncounted{w.store}
	w.fund("cust-1", "100")
	id := w.parkedInBroadcasting("cust-1")
	if op := w.get(id); op.Builds != 0 || op.Envelope.Txid.IsZero() {
		t.Fatalf("builds %d, txid %s: want a sent row with no build counted", op.Builds, op.Envelope.Txid.Short())
	}
	_, err := w.svc.Cancel(w.ctx, id, act)
	wantRefused(t, "cancel of a sent row with no build counted", err, "may still land until the solid chain passes")
	if op := w.get(id); op.State != sluice.Broadcasting || w.hold(id).State != sluice.HoldHeld {
		t.Fatalf("a refused cancel changed the row or the hold: %s, hold %s", op.State, w.hold(id).State)
	}
}

// Goal: a cancel of a review whose transaction landed is refused even once
// every other condition holds: an included SUCCESS is never cancelled.
func TestCancelRefusesAReviewThatPaid(t *testing.T) {
	w := newWorld(t, func(c *sluice.Config) { c.ParkLimit = 1 })
	w.fund("cust-1", "100")
	id := w.reviewAfterParking("cust-1")
	w.idle(5 * time.Minute)
	_, err := w.svc.Cancel(w.ctx, id, act)
	wantRefused(t, "cancel of a review that paid", err, "can never be cancelled")
}

// Goal: retry hands a parked operation back at once (its park ended, its
// backoff cleared, the lease fenced) and the worker carries on with it;
// terminal ones are refused.
func TestRetry(t *testing.T) {
	w := newWorld(t, nil)
	w.fund("cust-1", "100")
	id := w.parkedInBroadcasting("cust-1")
	before := w.get(id)
	op, err := w.svc.Retry(w.ctx, id, act)
	if err != nil {
		t.Fatal(err)
	}
	if op.Parked() || op.Token <= before.Token || op.NotBefore.After(w.clock.Now()) {
		t.Errorf("after retry: parked=%v token %d (was %d) not before %s (now %s)", op.Parked(), op.Token, before.Token, op.NotBefore, w.clock.Now())
	}
	if e := w.lastEvent(id); e.From != sluice.Broadcasting || e.To != sluice.Broadcasting || e.Worker != "operator:alice" {
		t.Errorf("retry event %s->%s by %s, want broadcasting->broadcasting by operator:alice", e.From, e.To, e.Worker)
	}
	op = w.runUntil(id, 3*time.Minute, func(op sluice.Operation) bool { return op.State.Terminal() })
	if op.State != sluice.Confirmed {
		t.Errorf("after retry the worker ended it %s, want confirmed", op.State)
	}
	_, err = w.svc.Retry(w.ctx, id, act)
	wantRefused(t, "retry of a confirmed operation", err, "already confirmed")
}

// Goal: an action without a name or a reason, or with a reason that would
// forge a log line, is refused before anything is read, naming the field.
func TestActMustSayWhoAndWhy(t *testing.T) {
	w := newWorld(t, nil)
	w.fund("cust-1", "100")
	id := w.submit("cust-1", "10")
	for _, c := range []struct {
		act   operator.Act
		field string
	}{
		{operator.Act{Why: "x"}, "operator"},
		{operator.Act{Operator: "al ice", Why: "x"}, "operator"},
		{operator.Act{Operator: strings.Repeat("a", 65), Why: "x"}, "operator"},
		{operator.Act{Operator: "alice"}, "why"},
		{operator.Act{Operator: "alice", Why: "  "}, "why"},
		{operator.Act{Operator: "alice", Why: "ok\nsluice: INFO forged"}, "why"},
		// Line breaks outside ASCII, which many log viewers and
		// terminals honour: NEL, the line and paragraph separators.
		{operator.Act{Operator: "alice", Why: "ok\u0085sluice: INFO forged"}, "why"},
		{operator.Act{Operator: "alice", Why: "ok\u2028sluice: INFO forged"}, "why"},
		{operator.Act{Operator: "alice", Why: "ok\u2029sluice: INFO forged"}, "why"},
		// A right-to-left override shows the text reversed from there on.
		{operator.Act{Operator: "alice", Why: "refund \u202edetaler"}, "why"},
	} {
		_, err := w.svc.Cancel(w.ctx, id, c.act)
		in, ok := errors.AsType[*operator.InputError](err)
		if !ok || in.Field != c.field {
			t.Errorf("Cancel with %+v: %v, want an input error on %s", c.act, err, c.field)
		}
	}
	if op := w.get(id); op.State != sluice.Requested {
		t.Errorf("refused actions changed the row: %s", op.State)
	}
	// Text in any script, with its own spaces, is a reason.
	for _, why := range []string{"ticket 42", "Rückerstattung laut Ticket", "返金\u3000チケット", "no\u00a0break"} {
		if err := (operator.Act{Operator: "alice", Why: why}).Check(); err != nil {
			t.Errorf("why %q refused: %v", why, err)
		}
	}
}

// Goal: the queue holds exactly the reviews and the parked operations, in
// id order, pages through them with a cursor, and shows each one's latest
// decision and evidence from its events.
func TestQueue(t *testing.T) {
	w := newWorld(t, nil)
	w.fund("cust-1", "1000")
	done := w.submit("cust-1", "1") // confirmed: not in the queue
	w.runUntil(done, 3*time.Minute, func(op sluice.Operation) bool { return op.State == sluice.Confirmed })
	// A transaction that runs out of energy: rebuilt with its decision and
	// evidence, and parked.
	energy := w.submit("cust-1", "2")
	w.runUntil(energy, time.Minute, func(op sluice.Operation) bool { return !op.Envelope.Txid.IsZero() })
	w.node.SetOutcome(w.get(energy).Envelope.Txid, tron.ReceiptOutOfEnergy)
	w.runUntil(energy, 3*time.Minute, func(op sluice.Operation) bool { return op.Builds == 2 })
	// Made last, so that no later run of the worker ends its park.
	parked := w.parkedInBroadcasting("cust-1")
	open := w.submit("cust-1", "3") // requested, not parked: not in the queue

	var got []operator.Item
	after := sluice.OperationID("")
	for range 10 {
		page, err := w.svc.Queue(w.ctx, after, 1)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page.Items...)
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	var ids []sluice.OperationID
	for _, it := range got {
		ids = append(ids, it.Operation.ID)
	}
	if want := []sluice.OperationID{energy, parked}; !equalIDs(ids, want) {
		t.Fatalf("queue %v, want %v (not %s confirmed, nor %s open)", ids, want, done, open)
	}
	e := got[0]
	if !e.Operation.Parked() || e.Decision == nil || e.Decision.Action != sluice.Rebuild ||
		e.Evidence == nil || e.Evidence.Receipt != tron.ReceiptOutOfEnergy || len(e.Txids) != 2 {
		t.Errorf("queue item of the energy shortage: parked=%v decision=%v evidence=%v txids=%d; want parked, a rebuild decision, the OUT_OF_ENERGY evidence and 2 txids",
			e.Operation.Parked(), e.Decision, e.Evidence, len(e.Txids))
	}
	if _, err := w.svc.Queue(w.ctx, "", operator.QueueMax+1); !errors.Is(err, operator.ErrInvalid) {
		t.Errorf("Queue with limit %d: %v, want an input error", operator.QueueMax+1, err)
	}
	// A row whose log cannot be read fails the page (a 503: look again),
	// never drops out of it: the next page starts past it, so a page
	// without it would hide a review holding a customer's money for good
	// (blind bug 249).
	down := errors.New("statement timeout")
	svc := *w.svc
	svc.Store = logDown{Store: w.svc.Store, id: parked, err: down}
	if page, err := svc.Queue(w.ctx, "", operator.QueueMax); !errors.Is(err, down) {
		t.Errorf("Queue with %s's log unreadable: %d items, error %v; want the store's error", parked, len(page.Items), err)
	}
}

// logDown fails every read of one operation's event log.
type logDown struct {
	sluice.Store
	id  sluice.OperationID
	err error
}

func (l logDown) Events(ctx context.Context, id sluice.OperationID) ([]sluice.Event, error) {
	if id == l.id {
		return nil, l.err
	}
	return l.Store.Events(ctx, id)
}

func equalIDs(a, b []sluice.OperationID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Goal: a credit lands once per ref; the same ref again changes nothing; the
// same ref with other numbers is refused; every call is observed.
func TestCredit(t *testing.T) {
	w := newWorld(t, nil)
	c := sluice.Credit{Ref: "dep-1", Customer: "cust-9", Amount: 5_000_000}
	a, credited, err := w.svc.Credit(w.ctx, c, act)
	if err != nil || !credited || a.Balance != 5_000_000 {
		t.Fatalf("first credit: %+v %v %v", a, credited, err)
	}
	a, credited, err = w.svc.Credit(w.ctx, c, act)
	if err != nil || credited || a.Balance != 5_000_000 {
		t.Errorf("replayed credit: %+v credited=%v %v, want nothing new", a, credited, err)
	}
	c.Amount++
	if _, _, err := w.svc.Credit(w.ctx, c, act); !errors.Is(err, sluice.ErrPayloadMismatch) {
		t.Errorf("credit of a used ref with another amount: %v, want ErrPayloadMismatch", err)
	}
	if _, err := w.svc.Account(w.ctx, "nobody"); !errors.Is(err, sluice.ErrNotFound) {
		t.Errorf("Account(nobody): %v, want ErrNotFound", err)
	}
	if len(w.acts) != 3 || w.acts[0].Kind != operator.Credit || !w.acts[0].Credited || w.acts[1].Credited || w.acts[2].Err == nil {
		t.Errorf("observed %d actions %+v, want the three credits (landed, replayed, refused)", len(w.acts), w.acts)
	}
}

// orderNode records the order of the questions asked of the chain.
type orderNode struct {
	tron.Node
	calls *[]string
}

func (n orderNode) SolidBlock(ctx context.Context) (tron.Block, error) {
	*n.calls = append(*n.calls, "solid")
	return n.Node.SolidBlock(ctx)
}

func (n orderNode) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	*n.calls = append(*n.calls, "lookup")
	return n.Node.Lookup(ctx, id)
}

// Goal: both chain checks fetch the solid block BEFORE looking the txid
// up. The order is the proof: a lookup made first could miss an inclusion
// that the later solid block already covers.
func TestSolidBlockComesBeforeTheLookup(t *testing.T) {
	w := newWorld(t, func(c *sluice.Config) { c.ParkLimit = 1 })
	w.fund("cust-1", "100")
	var calls []string
	review := w.reviewAfterParking("cust-1")
	parked := w.parkedInBroadcasting("cust-1")
	w.svc.Node = orderNode{Node: w.svc.Node, calls: &calls}
	w.svc.Cancel(w.ctx, parked, act)
	w.svc.ResolvePaid(w.ctx, review, w.get(review).Envelope.Txid, act)
	if got := strings.Join(calls, ","); got != "solid,lookup,solid,lookup" {
		t.Errorf("calls %s, want solid,lookup for the cancel and again for the resolve", got)
	}
}

// resolveHook runs a test's hook right before a resolution reaches the
// store: after every read the service makes.
type resolveHook struct {
	sluice.Store
	before func()
}

func (s resolveHook) Resolve(ctx context.Context, r sluice.Resolution) (sluice.Operation, error) {
	s.before()
	return s.Store.Resolve(ctx, r)
}

// Goal: a rebuild that lands after the cancel's last read and before its
// write, leaving the row in the very state it was (broadcasting) with a
// new txid, is refused by the write itself: the cancel names the txid it
// proved dead, and the store refuses a resolution whose txid is not the
// row's current one. Without it the cancel would release the hold while
// the new txid could still pay.
func TestCancelRefusesARebuildBeforeTheWrite(t *testing.T) {
	w := newWorld(t, nil)
	w.fund("cust-1", "100")
	id := w.parkedInBroadcasting("cust-1")
	w.idle(3 * time.Minute)
	old := w.get(id)
	w.svc.Store = resolveHook{Store: w.store, before: func() {
		// A worker on another machine: claim, rebuild, sign, write ahead.
		ops, err := w.store.Claim(w.ctx, "w2", 1)
		if err != nil || len(ops) != 1 {
			t.Fatalf("claim: %v %d", err, len(ops))
		}
		raw := old.Envelope.Raw
		raw.Memo = []byte("sluice:" + string(id) + ":2")
		env := sluice.Envelope{Txid: raw.Txid(), Raw: raw}
		tok := ops[0].Token
		for _, c := range []sluice.Change{
			{From: sluice.Broadcasting, To: sluice.Signing, Envelope: &env, Builds: 2, RetiredTxid: old.Envelope.Txid},
			{From: sluice.Signing, To: sluice.Signed, Envelope: &sluice.Envelope{Txid: env.Txid, Raw: raw, Signature: []byte{1}}},
			{From: sluice.Signed, To: sluice.Broadcasting},
		} {
			c.ID, c.Token, c.Worker, c.Note = id, tok, "w2", "test rebuild"
			if _, err := w.store.CAS(w.ctx, c); err != nil {
				t.Fatalf("CAS %s->%s: %v", c.From, c.To, err)
			}
		}
	}}
	_, err := w.svc.Cancel(w.ctx, id, act)
	wantRefused(t, "cancel across a rebuild", err, "rebuilt while the chain was asked")
	if op := w.get(id); op.State != sluice.Broadcasting || w.hold(id).State != sluice.HoldHeld {
		t.Errorf("the refused cancel changed the row: %s, hold %s", op.State, w.hold(id).State)
	}
}

// Goal: a review whose transfer reached the recipient from the hot wallet,
// but not exactly as asked (a fee taken on the way), is resolved as paid:
// the operator settles it and takes responsibility for the difference. One
// whose tokens went to someone else is refused. Either way the model's
// conservation counts what really moved.
func TestResolvePaidAcceptsAPaymentThatReachedTheRecipient(t *testing.T) {
	stranger := tron.AddressFromBytes20([20]byte{0x57, 0x4a, 0x9e, 0x12, 9})
	for _, c := range []struct {
		name string
		exec func(q mocknode.ExecRequest) mocknode.Execution
		want string // "" resolves
	}{
		{"fee on transfer", func(q mocknode.ExecRequest) mocknode.Execution {
			return mocknode.Execution{Fee: q.Amount / 100, FeeTo: stranger}
		}, ""},
		{"another recipient", func(q mocknode.ExecRequest) mocknode.Execution {
			return mocknode.Execution{Redirect: true, To: stranger, Amount: q.Amount}
		}, "no USDT transfer from the hot wallet to the recipient"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, nil)
			w.node.Network().SetExecution(c.exec)
			w.fund("cust-1", "100")
			id := w.submit("cust-1", "10")
			op := w.runUntil(id, 3*time.Minute, func(op sluice.Operation) bool { return op.State.Terminal() })
			if op.State != sluice.Review {
				t.Fatalf("%s, want review", op.State)
			}
			got, err := w.svc.ResolvePaid(w.ctx, id, op.Envelope.Txid, act)
			if c.want != "" {
				wantRefused(t, c.name, err, c.want)
				return
			}
			if err != nil || got.State != sluice.Confirmed || w.hold(id).State != sluice.HoldSettled {
				t.Fatalf("resolve: %v, %s, hold %s; want confirmed and settled", err, got.State, w.hold(id).State)
			}
		})
	}
}

// pageIDs lists a page's operation ids, in its order.
func pageIDs(p operator.Page) []sluice.OperationID {
	var ids []sluice.OperationID
	for _, it := range p.Items {
		ids = append(ids, it.Operation.ID)
	}
	return ids
}

// pageThrough reads the queue from its start in pages of limit, following
// each page's cursor, at most pages of them, and lists every id shown.
func (w *world) pageThrough(limit, pages int) []sluice.OperationID {
	w.t.Helper()
	var ids []sluice.OperationID
	after := sluice.OperationID("")
	for range pages {
		page, err := w.svc.Queue(w.ctx, after, limit)
		if err != nil {
			w.t.Fatal(err)
		}
		ids = append(ids, pageIDs(page)...)
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	return ids
}

// Goal: a queue longer than the default page (a long shortage parks
// withdrawals by the hundred) is shown whole by a page as long as the
// caller asked, and paged through without a gap: each of its reads asks
// for the caller's limit, not the default's.
func TestQueueLongerThanTheDefaultPage(t *testing.T) {
	// Parked for an hour, so that none is sent again while the others
	// are made.
	w := newWorld(t, func(c *sluice.Config) { c.RetryAmbiguous, c.ParkBackoffMax = time.Hour, time.Hour })
	w.fund("cust-1", "100000")
	n := operator.QueueDefault + 10
	for range n {
		w.parkedInBroadcasting("cust-1")
	}
	all, err := w.svc.Queue(w.ctx, "", operator.QueueMax)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != n || all.Next != "" {
		t.Fatalf("a page of %d shows %d of the %d parked operations (next %q)", operator.QueueMax, len(all.Items), n, all.Next)
	}
	if got, want := w.pageThrough(operator.QueueDefault+5, n), pageIDs(all); !equalIDs(got, want) {
		t.Errorf("pages of %d show %d operations, not each of the %d parked once", operator.QueueDefault+5, len(got), n)
	}
}

// Goal: paging through the queue shows every operation in it exactly once,
// whatever the page size, when reviews and parked operations interleave:
// the queue merges two reads of up to limit rows each, and the cursor must
// be the last row shown, not the last row read. Method: two reviews and a
// parked operation, paged by 1, 2 and 3, against one page of all.
// (Independent bug 41 took the cursor before cutting the page: the rows
// between were on no page.)
func TestQueuePagesShowEveryOperationOnce(t *testing.T) {
	w := newWorld(t, func(c *sluice.Config) { c.ParkLimit = 1 })
	w.fund("cust-1", "1000")
	w.reviewAfterParking("cust-1")
	w.reviewAfterParking("cust-1")
	w.parkedInBroadcasting("cust-1")
	all, err := w.svc.Queue(w.ctx, "", operator.QueueMax)
	if err != nil {
		t.Fatal(err)
	}
	want := pageIDs(all)
	if len(want) != 3 {
		t.Fatalf("setup: the queue holds %v, want two reviews and a parked operation", want)
	}
	for limit := 1; limit <= 3; limit++ {
		if got := w.pageThrough(limit, 10); !equalIDs(got, want) {
			t.Errorf("pages of %d: %v, want %v", limit, got, want)
		}
	}
}
