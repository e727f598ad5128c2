package storetest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

var parkCases = []testCase{
	{"Park/GivesUpTheLeaseAndCountsSpells", testPark},
	{"Park/StaleTokenOrTerminalIsFenced", testParkFenced},
}

// resolveCases states the operator's actions once per state they apply to,
// generated from sluice's tables, like perStateCases.
func resolveCases() []testCase {
	out := []testCase{
		{"Resolve/ReviewResolvedAsPaidSettles", testResolvePaid},
		{"Resolve/OnlyOperatorEdges", testResolveMatrix},
		{"Resolve/WrongFromIsFenced", testResolveWrongFrom},
		{"Resolve/TheHolderIsFenced", testResolveFencesHolder},
		{"Resolve/CheckResolutionRefuses", testResolveRefused},
	}
	for _, s := range sluice.States {
		if !s.Terminal() {
			out = append(out, testCase{"Resolve/Retry/" + s.String(), func(e *env) { testResolveRetry(e, s) }})
		}
		if sluice.OperatorCanTransition(s, sluice.Failed) {
			out = append(out, testCase{"Resolve/Cancel/" + s.String(), func(e *env) { testResolveCancel(e, s) }})
		}
	}
	return out
}

// paidReview drives operation n to review the way a payment that did not
// match goes there, from broadcast, so that it has a txid to be resolved
// as paid by (the shortest path to review, from validated, has none).
func (e *env) paidReview(n int, worker sluice.WorkerID) sluice.Operation {
	e.t.Helper()
	return e.step(e.drive(n, worker, sluice.Broadcast), worker, sluice.Review)
}

func (e *env) park(op sluice.Operation, worker sluice.WorkerID, after time.Duration, reason string) sluice.Operation {
	e.t.Helper()
	got, err := e.s.Park(e.ctx, sluice.Park{ID: op.ID, Token: op.Token, Worker: worker, After: after, Reason: reason})
	if err != nil {
		e.t.Fatalf("Park(%s token=%d): %v", op.ID, op.Token, err)
	}
	return got
}

func (e *env) resolve(r sluice.Resolution) sluice.Operation {
	e.t.Helper()
	got, err := e.s.Resolve(e.ctx, r)
	if err != nil {
		e.t.Fatalf("Resolve(%s %s->%s): %v", r.ID, r.From, r.To, err)
	}
	return got
}

// foreignTxid is a txid no operation of the suite ever has.
var foreignTxid = tron.Txid{0x9a, 0x1d, 0xbe, 0xef}

// resolution is the action a correct operator takes to move op to to: the
// hold action its target needs (HoldFor: a retry keeps), the operation's
// current txid as the paying one for confirmed, and proof for a cancel. A
// row without a txid names foreignTxid, so that sluice.CheckResolution lets
// the action through to the store, which must refuse it.
func resolution(op sluice.Operation, to sluice.State) sluice.Resolution {
	r := sluice.Resolution{ID: op.ID, From: op.State, To: to, Operator: "alice", Why: fmt.Sprintf("operator %s->%s", op.State, to),
		Hold: sluice.HoldFor(to)}
	switch to {
	case sluice.Confirmed:
		r.Txid = op.Envelope.Txid
		if r.Txid.IsZero() {
			r.Txid = foreignTxid
		}
	case sluice.Failed:
		if !op.Envelope.Txid.IsZero() {
			r.Evidence = evidenceFor(op.Envelope)
		}
	}
	return r
}

// Goal: a park gives up the lease held under its token without a
// transition: no event, the hold and account untouched, the token kept. It
// counts (Parks), says why (ParkReason), starts a spell (ParkedSince, set
// by the first park of a spell only) and holds the row back until
// NotBefore, exactly. A later park in the same spell counts and replaces
// the reason but keeps ParkedSince; a claim does not end the spell, a
// transition does (the count stays), and the next park starts a new one. A
// negative After counts as zero. The token alone decides, as for CAS: a
// row released under the token may still be parked with it.
func testPark(e *env) {
	e.insert(1)
	op := e.claimID("w1", id(1))
	e.clock.Advance(3 * time.Second)
	before := e.record(id(1))
	spell := e.clock.Now()
	got := e.park(op, "w1", 10*time.Second, "bandwidth")
	want := before.op
	want.Parks, want.ParkReason, want.ParkedSince = 1, "bandwidth", spell
	want.ClaimedBy, want.LeaseUntil = "", time.Time{}
	want.NotBefore = spell.Add(10 * time.Second)
	want.UpdatedAt = spell
	for _, d := range diffOperation(got, want) {
		e.t.Errorf("Park returned row %s", d)
	}
	before.op = want
	e.unchanged("a park (not a transition: no event)", id(1), before)
	if !got.Parked() {
		e.t.Error("a parked row is not Parked()")
	}

	e.clock.Advance(10*time.Second - time.Nanosecond)
	e.claimNone("w2")
	e.clock.Advance(time.Nanosecond)
	op = e.claimID("w2", id(1))
	if op.Token != 2 || op.ParkReason != "bandwidth" || !op.ParkedSince.Equal(spell) {
		e.t.Errorf("claim of a parked row: token %d, reason %q, since %s; want 2, the spell kept (a claim does not end it)",
			op.Token, op.ParkReason, op.ParkedSince)
	}

	e.clock.Advance(time.Second)
	op = e.park(op, "w2", -time.Hour, "energy")
	if op.Parks != 2 || op.ParkReason != "energy" || !op.ParkedSince.Equal(spell) || !op.NotBefore.Equal(e.clock.Now()) {
		e.t.Errorf("second park of the spell: parks %d, reason %q, since %s, not before %s; want 2, energy, %s, now %s",
			op.Parks, op.ParkReason, op.ParkedSince, op.NotBefore, spell, e.clock.Now())
	}

	op = e.claimID("w3", id(1))
	op = e.step(op, "w3", sluice.Validated)
	if op.Parks != 2 || op.ParkReason != "" || !op.ParkedSince.IsZero() || op.Parked() {
		e.t.Errorf("after a transition: parks %d, reason %q, since %s, parked %v; want 2 and the spell ended",
			op.Parks, op.ParkReason, op.ParkedSince, op.Parked())
	}

	e.clock.Advance(time.Second)
	op = e.park(op, "w3", time.Second, "node unreachable")
	if op.Parks != 3 || !op.ParkedSince.Equal(e.clock.Now()) {
		e.t.Errorf("a park after the spell ended: parks %d, since %s; want 3 and a new spell from %s", op.Parks, op.ParkedSince, e.clock.Now())
	}

	e.clock.Advance(time.Second)
	op = e.claimID("w4", id(1))
	if err := e.s.Release(e.ctx, id(1), op.Token, 0); err != nil {
		e.t.Fatalf("Release: %v", err)
	}
	if op = e.park(op, "w4", time.Minute, "signer unreachable"); op.Parks != 4 {
		e.t.Errorf("a park under a released token: parks %d, want 4", op.Parks)
	}
	if got := e.get(id(1)); !got.Parked() || got.ParkReason != "signer unreachable" {
		e.t.Errorf("Get after the parks: parked %v reason %q", got.Parked(), got.ParkReason)
	}
}

// Goal: a park is fenced like a CAS: a stale, future or zero token, or a
// terminal row (review included: an operator's, not a worker's) is
// ErrFenced and changes nothing.
func testParkFenced(e *env) {
	e.insert(1)
	old := e.claimID("w1", id(1))
	e.clock.Advance(Lease)
	cur := e.claimID("w2", id(1))
	before := e.record(id(1))
	for _, tok := range []sluice.FencingToken{old.Token, cur.Token + 1, 0} {
		p := sluice.Park{ID: id(1), Token: tok, Worker: "w1", After: time.Minute, Reason: "stale"}
		if _, err := e.s.Park(e.ctx, p); !errors.Is(err, sluice.ErrFenced) {
			e.t.Errorf("Park with token %d (row has %d): err = %v, want ErrFenced", tok, cur.Token, err)
		}
		e.unchanged(fmt.Sprintf("Park with token %d", tok), id(1), before)
	}
	for i, s := range []sluice.State{sluice.Rejected, sluice.Review, sluice.Failed, sluice.Confirmed} {
		op := e.drive(i+2, "w3", s)
		before := e.record(op.ID)
		p := sluice.Park{ID: op.ID, Token: op.Token, Worker: "w3", After: time.Minute, Reason: "too late"}
		if _, err := e.s.Park(e.ctx, p); !errors.Is(err, sluice.ErrFenced) {
			e.t.Errorf("Park of a %s row under its token: err = %v, want ErrFenced", s, err)
		}
		e.unchanged("Park of a "+s.String()+" row", op.ID, before)
	}
	// The holder is unaffected.
	e.park(cur, "w2", time.Minute, "bandwidth")
}

// Goal: an operator's retry (To == From, non-terminal) takes the row
// whatever lease is on it and makes it claimable now: the token is bumped
// (the holder is fenced), the lease cleared, NotBefore now, the park spell
// ended (the count kept); nothing else moves, the hold included. Its event
// is From -> From under the new token, written by "operator:" + Operator,
// with the row's txid and the operator's reason as note.
func testResolveRetry(e *env, s sluice.State) {
	op := e.drive(1, "w1", s)
	e.clock.Advance(time.Second)
	op = e.park(op, "w1", time.Hour, "node unreachable")
	e.clock.Advance(time.Second)
	before := e.record(op.ID)
	r := resolution(op, s)
	r.Decision = &sluice.Decision{Action: sluice.Wait, Reason: "the node is back", Rebuilds: 1}
	got := e.resolve(r)
	want := before.op
	want.Token++
	want.NotBefore, want.UpdatedAt = e.clock.Now(), e.clock.Now()
	want.ParkReason, want.ParkedSince = "", time.Time{}
	for _, d := range diffOperation(got, want) {
		e.t.Errorf("retry of a %s row: Resolve returned row %s", s, d)
	}
	before.op = want
	before.events = append(before.events, sluice.Event{OperationID: op.ID, From: s, To: s, Token: want.Token,
		Worker: "operator:alice", At: e.clock.Now(), Txid: op.Envelope.Txid, Decision: r.Decision, Note: r.Why})
	if evs := e.events(op.ID); len(evs) == len(before.events) {
		before.events[len(evs)-1].Seq = evs[len(evs)-1].Seq
	}
	e.unchanged("an operator's retry", op.ID, before)
	got = e.claimID("w2", op.ID)
	if got.Token != op.Token+2 {
		e.t.Errorf("claim after the retry: token %d, want %d", got.Token, op.Token+2)
	}
}

// Goal: an operator's cancel moves the row to failed from every state the
// operator may cancel from (review included), releases the hold in the
// same step (held -> balance), bumps the token, clears the lease and the
// park spell, records the reason (naming operator and why) and files the
// proof with its event. The row is then a brick like any failed row.
func testResolveCancel(e *env, from sluice.State) {
	var op sluice.Operation
	if from == sluice.Review {
		// A review with a txid, whose proof of death the cancel files.
		op = e.paidReview(1, "w1")
	} else {
		op = e.drive(1, "w1", from)
	}
	if !from.Terminal() {
		op = e.park(op, "w1", time.Hour, "energy")
	}
	e.clock.Advance(time.Second)
	before := e.record(op.ID)
	r := resolution(op, sluice.Failed)
	r.Decision = &sluice.Decision{Action: sluice.Cancel, Reason: "dead", Waited: time.Hour, Rebuilds: 3}
	if !op.Envelope.Txid.IsZero() {
		// A cancel names the txid its proof of death is about: if the row
		// has moved on to another (a worker rebuilt it meanwhile, and the
		// new txid may be live), the cancel is refused whole. Found by a
		// bug written without the checker, in one store only (38).
		stale := r
		stale.Txid = foreignTxid
		if _, err := e.s.Resolve(e.ctx, stale); !errors.Is(err, sluice.ErrIllegalTransition) {
			e.t.Errorf("cancel from %s naming a txid the row does not have: err = %v, want ErrIllegalTransition", from, err)
		}
		e.unchanged("cancel from "+from.String()+" naming another txid", op.ID, before)
		r.Txid = op.Envelope.Txid
	}
	got := e.resolve(r)
	if got.State != sluice.Failed || got.Token != op.Token+1 || got.ClaimedBy != "" || !got.LeaseUntil.IsZero() ||
		got.ParkReason != "" || !got.ParkedSince.IsZero() || !got.UpdatedAt.Equal(e.clock.Now()) {
		e.t.Errorf("cancel from %s: row %s token %d holder %q lease %s park %q since %s updated %s; want failed, token %d, no lease, no spell, updated now",
			from, got.State, got.Token, got.ClaimedBy, got.LeaseUntil, got.ParkReason, got.ParkedSince, got.UpdatedAt, op.Token+1)
	}
	if !strings.Contains(got.Reason, r.Operator) || !strings.Contains(got.Reason, r.Why) {
		e.t.Errorf("cancel from %s: reason %q names neither operator %q nor why %q", from, got.Reason, r.Operator, r.Why)
	}
	for _, d := range diffOperation(e.get(op.ID), got) {
		e.t.Errorf("Get after the cancel: row %s", d)
	}
	evs := e.events(op.ID)
	wantEv := sluice.Event{Seq: evs[len(evs)-1].Seq, OperationID: op.ID, From: from, To: sluice.Failed, Token: op.Token + 1,
		Worker: "operator:alice", At: e.clock.Now(), Txid: op.Envelope.Txid, Evidence: r.Evidence, Hold: sluice.HoldRelease,
		Decision: r.Decision, Note: r.Why}
	for _, d := range diffEvent(evs[len(evs)-1], wantEv) {
		e.t.Errorf("cancel event %s", d)
	}
	wantAcct, wantHold := before.account, before.hold
	wantAcct.Held -= wantHold.Amount
	wantAcct.Balance += wantHold.Amount
	wantHold.State, wantHold.ClosedSeq = sluice.HoldReleased, wantEv.Seq
	e.wantLedger("after the cancel from "+from.String(), customer, wantAcct, op.ID, wantHold)
	e.clock.Advance(time.Hour)
	e.claimNone("w2")
}

// Goal: an operator resolves a review as paid by the operation's current
// txid: confirmed, the hold settled (held -> paid), the event naming the
// txid, the token bumped. Any other txid, a retired one of the operation's
// own included (it was proven dead before it was retired), is
// ErrIllegalTransition and changes nothing.
func testResolvePaid(e *env) {
	op := e.drive(1, "w1", sluice.Broadcast)
	retired := op.Envelope.Txid
	op = e.step(op, "w1", sluice.Signing) // a rebuild: the first txid retired
	for _, to := range []sluice.State{sluice.Signed, sluice.Broadcasting, sluice.Broadcast, sluice.Review} {
		op = e.step(op, "w1", to)
	}
	other := e.drive(2, "w1", sluice.Signing).Envelope.Txid
	e.clock.Advance(time.Second)
	before := e.record(op.ID)
	for _, tc := range []struct {
		name string
		txid tron.Txid
	}{{"its retired txid", retired}, {"another operation's txid", other}, {"a txid of no operation", foreignTxid}} {
		r := resolution(op, sluice.Confirmed)
		r.Txid = tc.txid
		if _, err := e.s.Resolve(e.ctx, r); !errors.Is(err, sluice.ErrIllegalTransition) {
			e.t.Errorf("Resolve review->confirmed by %s: err = %v, want ErrIllegalTransition", tc.name, err)
		}
		e.unchanged("Resolve review->confirmed by "+tc.name, op.ID, before)
	}
	got := e.resolve(resolution(op, sluice.Confirmed))
	want := before.op
	want.State, want.Token, want.NotBefore, want.UpdatedAt = sluice.Confirmed, op.Token+1, e.clock.Now(), e.clock.Now()
	for _, d := range diffOperation(got, want) {
		e.t.Errorf("review resolved as paid: row %s", d)
	}
	evs := e.events(op.ID)
	last := evs[len(evs)-1]
	if last.Txid != op.Envelope.Txid || last.Hold != sluice.HoldSettle || last.To != sluice.Confirmed || last.Worker != "operator:alice" {
		e.t.Errorf("event: txid %s hold %q to %s worker %q; want %s, settle, confirmed, operator:alice",
			last.Txid.Short(), last.Hold, last.To, last.Worker, op.Envelope.Txid.Short())
	}
	wantAcct, wantHold := before.account, before.hold
	wantAcct.Held -= wantHold.Amount
	wantAcct.Paid += wantHold.Amount
	wantHold.State, wantHold.ClosedSeq = sluice.HoldSettled, last.Seq
	e.wantLedger("after resolving as paid", customer, wantAcct, op.ID, wantHold)
}

// Goal: an operator takes exactly the edges sluice.OperatorCanTransition
// allows and retries of non-terminal rows; anything else (None and a state
// out of range included) is ErrIllegalTransition and changes nothing.
// Method: one row per state, every illegal target tried on it.
func testResolveMatrix(e *env) {
	targets := append([]sluice.State{sluice.None, sluice.State(200)}, sluice.States...)
	for i, from := range sluice.States {
		op := e.drive(i+1, "w1", from)
		before := e.record(op.ID)
		for _, to := range targets {
			legal := sluice.OperatorCanTransition(from, to) || to == from && !from.Terminal()
			if legal {
				continue // each legal edge has a test of its own
			}
			_, err := e.s.Resolve(e.ctx, resolution(op, to))
			if !errors.Is(err, sluice.ErrIllegalTransition) {
				e.t.Errorf("Resolve %s->%s: err = %v, want ErrIllegalTransition", from, to, err)
			}
			e.unchanged(fmt.Sprintf("Resolve %s->%s", from, to), op.ID, before)
		}
	}
}

// Goal: Resolve is fenced on From, and on From first: an operator who
// believes the row is elsewhere is ErrFenced, even for an action that
// would be illegal or legal from the state believed.
func testResolveWrongFrom(e *env) {
	op := e.drive(1, "w1", sluice.Validated)
	before := e.record(op.ID)
	for _, tc := range []struct{ from, to sluice.State }{
		{sluice.Requested, sluice.Failed},
		{sluice.Signing, sluice.Signing},
		{sluice.Review, sluice.Confirmed},
		{sluice.Confirmed, sluice.Signing},
		{sluice.None, sluice.Failed},
	} {
		r := resolution(sluice.Operation{ID: op.ID, State: tc.from}, tc.to)
		if _, err := e.s.Resolve(e.ctx, r); !errors.Is(err, sluice.ErrFenced) {
			e.t.Errorf("Resolve %s->%s on a validated row: err = %v, want ErrFenced", tc.from, tc.to, err)
		}
		e.unchanged(fmt.Sprintf("Resolve %s->%s on a validated row", tc.from, tc.to), op.ID, before)
	}
}

// Goal: the worker holding a live lease is fenced by an operator's action:
// its CAS and its park are ErrFenced, its release a no-op, and another
// worker claims the row at once under a newer token.
func testResolveFencesHolder(e *env) {
	op := e.drive(1, "w1", sluice.Validated)
	e.clock.Advance(time.Second)
	resolved := e.resolve(resolution(op, sluice.Validated))
	before := e.record(op.ID)
	if _, err := e.s.CAS(e.ctx, e.change(op, "w1", sluice.Signing)); !errors.Is(err, sluice.ErrFenced) {
		e.t.Errorf("the holder's CAS after a resolve: err = %v, want ErrFenced", err)
	}
	e.unchanged("the holder's CAS after a resolve", op.ID, before)
	if _, err := e.s.Park(e.ctx, sluice.Park{ID: op.ID, Token: op.Token, Worker: "w1", After: time.Hour, Reason: "late"}); !errors.Is(err, sluice.ErrFenced) {
		e.t.Errorf("the holder's Park after a resolve: err = %v, want ErrFenced", err)
	}
	e.unchanged("the holder's Park after a resolve", op.ID, before)
	if err := e.s.Release(e.ctx, op.ID, op.Token, time.Hour); err != nil {
		e.t.Errorf("the holder's Release after a resolve = %v, want nil", err)
	}
	e.unchanged("the holder's Release after a resolve", op.ID, before)
	if got := e.claimID("w2", op.ID); got.Token != resolved.Token+1 {
		e.t.Errorf("claim after the resolve: token %d, want %d", got.Token, resolved.Token+1)
	}
}

// Goal: what sluice.CheckResolution refuses, every store refuses before any
// store work (so before the fence: a wrong From does not change the
// answer), with ErrHoldAction for a hold action that does not fit the
// target and a plain error otherwise; a retry carrying a close is
// ErrHoldAction too. Nothing changes. The operator name's limit passes.
func testResolveRefused(e *env) {
	op := e.paidReview(1, "w1")
	before := e.record(op.ID)
	paid := resolution(op, sluice.Confirmed)
	cancel := resolution(op, sluice.Failed)
	for _, tc := range []struct {
		name string
		r    sluice.Resolution
		want error // nil: a plain error
	}{
		{"no operator", with(paid, func(r *sluice.Resolution) { r.Operator = "" }), nil},
		{"operator name too long", with(paid, func(r *sluice.Resolution) { r.Operator = strings.Repeat("o", 65) }), nil},
		{"no reason", with(paid, func(r *sluice.Resolution) { r.Why = "" }), nil},
		{"no reason, wrong from", with(paid, func(r *sluice.Resolution) { r.Why, r.From = "", sluice.Signing }), nil},
		{"cancel keeping the hold", with(cancel, func(r *sluice.Resolution) { r.Hold = sluice.HoldKeep }), sluice.ErrHoldAction},
		{"cancel settling the hold", with(cancel, func(r *sluice.Resolution) { r.Hold = sluice.HoldSettle }), sluice.ErrHoldAction},
		{"paid releasing the hold", with(paid, func(r *sluice.Resolution) { r.Hold = sluice.HoldRelease }), sluice.ErrHoldAction},
		{"paid keeping the hold", with(paid, func(r *sluice.Resolution) { r.Hold = sluice.HoldKeep }), sluice.ErrHoldAction},
		{"paid without a txid", with(paid, func(r *sluice.Resolution) { r.Txid = tron.Txid{} }), sluice.ErrHoldAction},
		{"paid without a txid, wrong from", with(paid, func(r *sluice.Resolution) { r.Txid, r.From = tron.Txid{}, sluice.Broadcast }), sluice.ErrHoldAction},
	} {
		_, err := e.s.Resolve(e.ctx, tc.r)
		switch {
		case err == nil:
			e.t.Errorf("Resolve (%s) = nil, want refused", tc.name)
		case tc.want != nil && !errors.Is(err, tc.want):
			e.t.Errorf("Resolve (%s): err = %v, want %v", tc.name, err, tc.want)
		case tc.want == nil && isSentinel(err):
			e.t.Errorf("Resolve (%s): err = %v matches an operating condition; want a plain error", tc.name, err)
		}
		if errors.Is(err, sluice.ErrFenced) {
			e.t.Errorf("Resolve (%s): err = %v is ErrFenced: CheckResolution comes before the fence", tc.name, err)
		}
		e.unchanged("the refused Resolve ("+tc.name+")", op.ID, before)
	}

	// A retry may not close the hold: the store's hold check.
	op2 := e.drive(2, "w1", sluice.Requested)
	before = e.record(op2.ID)
	for _, a := range []sluice.HoldAction{sluice.HoldSettle, sluice.HoldRelease, badHold} {
		r := resolution(op2, sluice.Requested)
		r.Hold = a
		if _, err := e.s.Resolve(e.ctx, r); !errors.Is(err, sluice.ErrHoldAction) {
			e.t.Errorf("a retry with hold action %q: err = %v, want ErrHoldAction", a, err)
		}
		e.unchanged(fmt.Sprintf("a retry with hold action %q", a), op2.ID, before)
	}
	r := resolution(op2, sluice.Requested)
	r.Operator = strings.Repeat("o", 64)
	if got := e.resolve(r); got.Token != op2.Token+1 {
		e.t.Errorf("a retry by an operator named with 64 bytes: token %d, want %d", got.Token, op2.Token+1)
	}
	if evs := e.events(op2.ID); evs[len(evs)-1].Worker != sluice.WorkerID(sluice.OperatorPrefix+r.Operator) {
		e.t.Errorf("retry event worker %q, want %q", evs[len(evs)-1].Worker, sluice.OperatorPrefix+r.Operator)
	}
}

// with returns r changed by f.
func with(r sluice.Resolution, f func(*sluice.Resolution)) sluice.Resolution {
	f(&r)
	return r
}
