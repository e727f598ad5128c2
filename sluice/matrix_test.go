package sluice_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

const settleBudget = 30 * time.Minute

// Goal: the happy path's event log tells the whole story, one transition per
// step, with the txid known from the build on and a single wire attempt.
func TestHappyPathEventLogTellsTheWholeStory(t *testing.T) {
	w := newWorld(t)
	id := w.submit("12.50")
	w.run(settleBudget, w.spawn("w1"))

	op := w.wantState(id, sluice.Confirmed)
	w.wantOnePayment(id, 12_500_000)
	var got []string
	for _, e := range w.events(id) {
		got = append(got, e.From.String()+"->"+e.To.String())
		if e.To >= sluice.Signing && e.Txid != op.Envelope.Txid {
			t.Errorf("event %s->%s txid = %s, want %s", e.From, e.To, e.Txid.Short(), op.Envelope.Txid.Short())
		}
	}
	want := "none->requested requested->validated validated->signing signing->signed signed->broadcasting broadcasting->broadcast broadcast->confirmed"
	if strings.Join(got, " ") != want {
		t.Errorf("event log =\n  %s\nwant\n  %s", strings.Join(got, " "), want)
	}
	if n := w.wireBy(""); n != 1 {
		t.Errorf("wire attempts = %d, want 1", n)
	}
	if op.Builds != 1 || op.ClaimedBy != "" || !op.LeaseUntil.IsZero() {
		t.Errorf("final row builds=%d claimedBy=%q lease=%v, want 1, none, zero", op.Builds, op.ClaimedBy, op.LeaseUntil)
	}
}

// Goal: two workers, one operation: one claims, the other gets nothing and
// does not block.
func TestTwoWorkersOneOperation(t *testing.T) {
	w := newWorld(t)
	w.submit("1")
	a, b := w.spawn("a"), w.spawn("b")
	// a waits on its first send (busy), so it releases with a delay;
	// until then b must find nothing. Hold a inside its first Step by
	// asking b to tick from a's first CAS.
	var bClaimed int
	a.store.beforeCAS = func(c sluice.Change) {
		if bClaimed == 0 {
			rep, _ := b.tick()
			bClaimed = rep.Claimed + 1 // +1 marks "ran"
		}
	}
	if rep, _ := a.tick(); rep.Claimed != 1 {
		t.Fatalf("a claimed %d, want 1", rep.Claimed)
	}
	if bClaimed != 1 {
		t.Errorf("b claimed %d while a held the lease, want 0", bClaimed-1)
	}
}

// Goal: crash after the write-ahead, before the send. Recovery re-sends the
// same bytes; one acceptance in total; no rebuild.
func TestCrashAfterWriteAheadBeforeSend(t *testing.T) {
	w := newWorld(t)
	id := w.submit("3")
	a := w.spawn("a")
	a.node.beforeBroadcast = func(tron.Transaction) (tron.BroadcastResult, error, bool) { panic(crash{"before send"}) }
	if _, crashed := a.tick(); !crashed {
		t.Fatal("a did not crash")
	}
	op := w.wantState(id, sluice.Broadcasting)
	written := op.Envelope.Txid
	if n := w.wireBy(""); n != 0 {
		t.Fatalf("wire attempts after the crash = %d, want 0", n)
	}

	w.run(settleBudget, w.spawn("b"))
	op = w.wantState(id, sluice.Confirmed)
	if op.Envelope.Txid != written || op.Builds != 1 {
		t.Errorf("confirmed txid %s builds %d, want the written-ahead %s and 1 build", op.Envelope.Txid.Short(), op.Builds, written.Short())
	}
	if acc := w.node.Accepted(); len(acc) != 1 || acc[0].Times != 1 {
		t.Errorf("acceptances = %+v, want one txid accepted once", acc)
	}
	w.wantOnePayment(id, 3_000_000)
}

// Goal: crash after the send, before recording the answer. Recovery finds
// the txid on chain and carries on; no second spend, no second send.
func TestCrashAfterSendBeforeRecordingResult(t *testing.T) {
	w := newWorld(t)
	id := w.submit("4")
	a := w.spawn("a")
	a.node.afterBroadcast = func(tron.Transaction, tron.BroadcastResult, error) { panic(crash{"after send"}) }
	a.tick()
	w.wantState(id, sluice.Broadcasting)

	w.run(settleBudget, w.spawn("b"))
	op := w.wantState(id, sluice.Confirmed)
	if op.Builds != 1 {
		t.Errorf("builds = %d, want 1", op.Builds)
	}
	if n := w.wireBy("b"); n != 0 {
		t.Errorf("b sent %d times, want 0: the lookup should have found the txid", n)
	}
	w.wantOnePayment(id, 4_000_000)
}

// Goal: the node accepts, then the caller times out. Reconcile finds the
// txid pending: no rebuild and no re-sign.
func TestTimeoutThatWasSecretlyAnAccept(t *testing.T) {
	w := newWorld(t)
	id := w.submit("5")
	w.node.Next(mocknode.Broadcast, mocknode.AcceptThenTimeout)
	a := w.spawn("a")
	w.run(settleBudget, a)
	op := w.wantState(id, sluice.Confirmed)
	if op.Builds != 1 || a.signer.calls != 1 {
		t.Errorf("builds=%d signs=%d, want 1 and 1", op.Builds, a.signer.calls)
	}
	if n := len(w.rebuilds(id)); n != 0 {
		t.Errorf("rebuilds = %d, want 0", n)
	}
	w.wantOnePayment(id, 5_000_000)
}

// Goal: a timeout that really was a drop: the same bytes are re-sent and the
// network's dedup makes that safe.
func TestTimeoutThatReallyWasADrop(t *testing.T) {
	w := newWorld(t)
	id := w.submit("6")
	w.node.Next(mocknode.Broadcast, mocknode.LoseRequest)
	w.run(settleBudget, w.spawn("a"))
	op := w.wantState(id, sluice.Confirmed)
	wire := w.node.Wire()
	if len(wire) != 2 || wire[0].Txid != op.Envelope.Txid || wire[1].Txid != op.Envelope.Txid {
		t.Errorf("wire = %+v, want two sends of %s", wire, op.Envelope.Txid.Short())
	}
	w.wantOnePayment(id, 6_000_000)
}

// Goal: the transaction expires while every worker is dead. The next worker
// rebuilds with a new txid, and only with chain-time proof.
func TestDroppedTxWorkerDeadPastExpirationRebuildsWithProof(t *testing.T) {
	w := newWorld(t)
	id := w.submit("7")
	w.node.Next(mocknode.Broadcast, mocknode.LoseRequest)
	a := w.spawn("a")
	a.node.afterBroadcast = func(tron.Transaction, tron.BroadcastResult, error) { panic(crash{"after lost send"}) }
	a.tick()
	first := w.wantState(id, sluice.Broadcasting).Envelope.Txid

	w.clock.Advance(10 * time.Minute) // all workers dead
	w.run(settleBudget, w.spawn("b"))
	op := w.wantState(id, sluice.Confirmed)
	if op.Builds != 2 || op.Envelope.Txid == first {
		t.Errorf("builds=%d txid=%s, want 2 builds and a new txid (old %s)", op.Builds, op.Envelope.Txid.Short(), first.Short())
	}
	rb := w.rebuilds(id)
	if len(rb) != 1 || rb[0].RetiredTxid != first {
		t.Fatalf("rebuild events = %d, want one retiring %s", len(rb), first.Short())
	}
	w.checkEvidence(rb[0])
	w.wantOnePayment(id, 7_000_000)
}

// checkEvidence re-audits a rebuild's evidence against the chain.
func (w *world) checkEvidence(e sluice.Event) {
	w.t.Helper()
	ev := e.Evidence
	if ev == nil {
		w.t.Fatalf("rebuild event #%d carries no evidence", e.Seq)
	}
	if !ev.Proves() || ev.Txid != e.RetiredTxid {
		w.t.Errorf("evidence %s does not prove the death of %s", ev, e.RetiredTxid.Short())
	}
	var blk tron.Block
	ok := false
	for _, b := range w.node.Blocks() {
		if b.Number == ev.SolidNumber {
			blk, ok = b, true
		}
	}
	if !ok || !blk.Time.Equal(ev.SolidTime) {
		w.t.Errorf("evidence solid block #%d@%s, chain has %v (found %v)", ev.SolidNumber, ev.SolidTime, blk.Time, ok)
	}
	if blk.Time.Before(ev.Expiration.Add(ev.Margin)) {
		w.t.Errorf("solid time %s is before expiration %s + margin %s", blk.Time, ev.Expiration, ev.Margin)
	}
	for _, id := range w.inclusions() {
		if id == e.RetiredTxid {
			w.t.Errorf("retired txid %s is on chain", id.Short())
		}
	}
}

// Goal: the node accepts, then drops the transaction from its pool. The
// broadcast state waits out the expiration, then rebuilds.
func TestAcceptedButNeverMinedWaitsOutExpirationThenRebuilds(t *testing.T) {
	w := newWorld(t)
	id := w.submit("8")
	a := w.spawn("a")
	a.tick()
	first := w.wantState(id, sluice.Broadcast).Envelope.Txid
	if !w.node.Evict(first) {
		t.Fatal("Evict found nothing in the pool")
	}
	// Every later send of the old bytes is lost on the way.
	w.node.SetFaults(func(c mocknode.Call) mocknode.Fault {
		if c.Kind == mocknode.Broadcast && c.Txid == first {
			return mocknode.LoseRequest
		}
		return mocknode.None
	})
	w.run(settleBudget, a)
	op := w.wantState(id, sluice.Confirmed)
	rb := w.rebuilds(id)
	if len(rb) != 1 || op.Builds != 2 {
		t.Fatalf("rebuilds=%d builds=%d, want 1 and 2", len(rb), op.Builds)
	}
	if rb[0].From != sluice.Broadcast {
		t.Errorf("rebuild from %s, want broadcast", rb[0].From)
	}
	w.checkEvidence(rb[0])
	w.wantOnePayment(id, 8_000_000)
}

// Goal: an answer code nobody knows is ambiguous: reconcile resolves it and
// nothing is rebuilt.
func TestUnknownBroadcastCodeIsAmbiguous(t *testing.T) {
	w := newWorld(t)
	id := w.submit("9")
	w.node.Next(mocknode.Broadcast, mocknode.UnknownCode)
	a := w.spawn("a")
	a.tick()
	w.wantState(id, sluice.Broadcasting) // not failed, not broadcast: unclear
	w.run(settleBudget, a)
	op := w.wantState(id, sluice.Confirmed)
	if op.Builds != 1 {
		t.Errorf("builds = %d, want 1", op.Builds)
	}
	w.wantOnePayment(id, 9_000_000)
}

// Goal: the node's word is not proof. A first send is lost; every re-send is
// answered TRANSACTION_EXPIRATION_ERROR although the node takes it. Had the
// pipeline believed the answer and rebuilt, two txids would be alive.
func TestNodesWordIsNotProof(t *testing.T) {
	w := newWorld(t)
	id := w.submit("10")
	w.node.Next(mocknode.Broadcast, mocknode.LoseRequest)
	w.node.SetFaults(func(c mocknode.Call) mocknode.Fault {
		if c.Kind == mocknode.Broadcast {
			return mocknode.ExpirationLie
		}
		return mocknode.None
	})
	w.run(settleBudget, w.spawn("a"))
	op := w.wantState(id, sluice.Confirmed)
	if op.Builds != 1 || len(w.rebuilds(id)) != 0 {
		t.Errorf("builds=%d rebuilds=%d, want 1 and 0", op.Builds, len(w.rebuilds(id)))
	}
	w.wantOnePayment(id, 10_000_000)
}

// Goal: no rebuild before the deadline, ever. Every send of the first txid is
// lost; stepping one second at a time, the operation must stay on its first
// envelope until the solid block's time reaches expiration + margin, and then
// rebuild promptly.
func TestNoRebuildBeforeTheDeadline(t *testing.T) {
	for _, margin := range []time.Duration{0, 10 * time.Second, 45 * time.Second} {
		t.Run(margin.String(), func(t *testing.T) {
			w := newWorld(t)
			w.cfg.SafetyMargin = margin
			id := w.submit("11")
			var first tron.Txid
			w.node.SetFaults(func(c mocknode.Call) mocknode.Fault {
				if c.Kind == mocknode.Broadcast && (first.IsZero() || c.Txid == first) {
					return mocknode.LoseRequest
				}
				return mocknode.None
			})
			a := w.spawn("a")
			a.tick()
			op := w.op(id)
			first = op.Envelope.Txid
			deadline := time.UnixMilli(op.Envelope.Raw.Expiration).Add(margin)
			for i := 0; i < 600 && w.op(id).Builds == 1; i++ {
				if solid := w.node.Solid(); !solid.Time.Before(deadline) {
					// Proof exists now; allow the worker's backoff to pass.
					break
				}
				a.tick()
				if w.op(id).Builds != 1 {
					t.Fatalf("rebuilt at solid time %s, before the deadline %s", w.node.Solid().Time, deadline)
				}
				w.clock.Advance(time.Second)
			}
			w.run(settleBudget, a)
			w.wantState(id, sluice.Confirmed)
			rb := w.rebuilds(id)
			if len(rb) != 1 {
				t.Fatalf("rebuilds = %d, want 1", len(rb))
			}
			w.checkEvidence(rb[0])
			if late := rb[0].At.Sub(deadline); late > 2*time.Minute {
				t.Errorf("rebuild %s after solid time could prove death... store time; want prompt", late)
			}
		})
	}
}

// Goal: a worker whose wall clock runs a year ahead of chain time is no
// closer to proof: wall time never enters the decision.
func TestWallClockFarAheadIsNotProof(t *testing.T) {
	w := newWorld(t)
	id := w.submit("12")
	var first tron.Txid
	w.node.SetFaults(func(c mocknode.Call) mocknode.Fault {
		if c.Kind == mocknode.Broadcast && (first.IsZero() || c.Txid == first) {
			return mocknode.LoseRequest
		}
		return mocknode.None
	})
	a := w.spawn("a")
	a.worker.Pipeline.Clock = skewed{w.clock, 365 * 24 * time.Hour}
	a.tick()
	first = w.op(id).Envelope.Txid
	// Run until chain time has passed the expiration but not the solid
	// proof: 60 s window + a few seconds, far less than the ~57 s solid lag.
	w.runFor(70*time.Second, a)
	if op := w.op(id); op.Builds != 1 {
		t.Fatalf("builds = %d after 70s with a clock a year ahead, want 1", op.Builds)
	}
	w.run(settleBudget, a)
	w.wantState(id, sluice.Confirmed)
	w.checkEvidence(w.rebuilds(id)[0])
}

type skewed struct {
	c    sluice.Clock
	skew time.Duration
}

func (s skewed) Now() time.Time { return s.c.Now().Add(s.skew) }

// Goal: a transaction that reverts on chain is failed, not confirmed; the
// row is then a brick and no tokens moved.
func TestRevertedOnChainIsFailedNotConfirmed(t *testing.T) {
	w := newWorld(t)
	id := w.submit("13")
	a := w.spawn("a")
	a.tick()
	op := w.wantState(id, sluice.Broadcast)
	w.node.SetOutcome(op.Envelope.Txid, tron.ReceiptRevert)
	w.run(settleBudget, a)
	op = w.wantState(id, sluice.Failed)
	if !strings.Contains(op.Reason, "REVERT") {
		t.Errorf("reason = %q, want it to name REVERT", op.Reason)
	}
	if got := w.node.Balance(alice); got != 0 {
		t.Errorf("alice's balance = %d, want 0", got)
	}
	// A brick: no write of any kind changes it, and nobody claims it.
	_, err := w.store.CAS(w.ctx, sluice.Change{ID: id, Token: op.Token, From: sluice.Failed, To: sluice.Signing})
	if !errors.Is(err, sluice.ErrIllegalTransition) {
		t.Errorf("CAS from failed = %v, want ErrIllegalTransition", err)
	}
	if got, _ := w.store.Claim(w.ctx, "z", 10); len(got) != 0 {
		t.Errorf("claimed %d terminal rows, want 0", len(got))
	}
}

// Goal: a zombie (lease expired while paused) wakes up: its write lands on
// nothing, it stops dead, and it never reaches the wire.
func TestZombieWriteLandsOnNothing(t *testing.T) {
	w := newWorld(t)
	id := w.submit("14")
	zombie, b := w.spawn("zombie"), w.spawn("b")
	paused := false
	zombie.store.beforeCAS = func(c sluice.Change) {
		if c.To == sluice.Broadcasting && !paused {
			paused = true // a GC pause right before the write-ahead
			w.clock.Advance(lease + time.Second)
			w.run(settleBudget, b)
		}
	}
	rep, _ := zombie.tick()
	if !paused || !rep.Fenced {
		t.Fatalf("paused=%v fenced=%v, want the zombie's write fenced", paused, rep.Fenced)
	}
	w.wantState(id, sluice.Confirmed)
	if n := w.wireBy("zombie"); n != 0 {
		t.Errorf("the zombie reached the wire %d times, want 0", n)
	}
	for _, e := range w.events(id) {
		if e.Worker == "zombie" && e.To >= sluice.Broadcasting {
			t.Errorf("zombie wrote %s->%s", e.From, e.To)
		}
	}
	w.wantOnePayment(id, 14_000_000)
}

// Goal: the worker stops dead at the first fenced write: it does not go on
// to the other operations of its batch.
func TestFencedWorkerStopsItsBatch(t *testing.T) {
	w := newWorld(t)
	first, second := w.submit("1"), w.submit("2")
	zombie, b := w.spawn("zombie"), w.spawn("b")
	zombie.store.beforeCAS = func(c sluice.Change) {
		if c.ID == first && c.To == sluice.Validated {
			w.clock.Advance(lease + time.Second)
			b.tick() // takes both over
		}
	}
	if rep, _ := zombie.tick(); !rep.Fenced {
		t.Fatal("zombie not fenced")
	}
	for _, e := range w.events(second) {
		if e.Worker == "zombie" {
			t.Errorf("zombie wrote to %s after being fenced: %s->%s", second, e.From, e.To)
		}
	}
}

// Goal: release lets another worker in at once, without waiting for the
// lease to expire.
func TestReleaseLetsAnotherWorkerIn(t *testing.T) {
	w := newWorld(t)
	id := w.submit("1")
	a, b := w.spawn("a"), w.spawn("b")
	a.tick() // sends, then releases while waiting for the block
	op := w.wantState(id, sluice.Broadcast)
	if op.ClaimedBy != "" {
		t.Fatalf("claimed by %q after the wait, want released", op.ClaimedBy)
	}
	w.clock.Advance(w.cfg.PollPending * 2) // past the jittered wait, far below the lease
	if rep, _ := b.tick(); rep.Claimed != 1 {
		t.Errorf("b claimed %d, want 1 without waiting out a's lease", rep.Claimed)
	}
}

// Goal: server busy, then fine: the same bytes go again after a pause.
func TestServerBusyThenFine(t *testing.T) {
	w := newWorld(t)
	id := w.submit("15")
	w.node.Next(mocknode.Broadcast, mocknode.Busy)
	w.run(settleBudget, w.spawn("a"))
	op := w.wantState(id, sluice.Confirmed)
	wire := w.node.Wire()
	if len(wire) != 2 || wire[0].Answer != string(tron.CodeServerBusy) || op.Builds != 1 {
		t.Errorf("wire=%+v builds=%d, want busy then one accept, 1 build", wire, op.Builds)
	}
	w.wantOnePayment(id, 15_000_000)
}

// Goal: a crash while signing recovers. The envelope went stale while every
// worker was dead; it was never sent, so it is rebuilt without waiting for
// proof, and the old txid never reaches the wire.
func TestCrashWhileSigningRecoversByRebuilding(t *testing.T) {
	w := newWorld(t)
	id := w.submit("16")
	a := w.spawn("a")
	a.signer.before = func(tron.RawData) { panic(crash{"while signing"}) }
	a.tick()
	first := w.wantState(id, sluice.Signing).Envelope.Txid
	w.clock.Advance(5 * time.Minute)
	w.run(settleBudget, w.spawn("b"))
	op := w.wantState(id, sluice.Confirmed)
	if op.Builds != 2 || op.Envelope.Txid == first {
		t.Errorf("builds=%d, want 2 with a new txid", op.Builds)
	}
	for _, a := range w.node.Wire() {
		if a.Txid == first {
			t.Errorf("the stale txid %s reached the wire", first.Short())
		}
	}
	rb := w.rebuilds(id)
	if len(rb) != 1 || rb[0].From != sluice.Signed || rb[0].Evidence != nil {
		t.Errorf("rebuild events %+v, want one signed->signing without evidence", rb)
	}
	w.wantOnePayment(id, 16_000_000)
}

// Goal: an operation whose every envelope dies gives up after BuildsMax
// builds, failed with evidence, no tokens moved.
func TestGivesUpAfterMaxBuilds(t *testing.T) {
	w := newWorld(t)
	w.cfg.BuildsMax = 3
	id := w.submit("17")
	w.node.SetFaults(func(c mocknode.Call) mocknode.Fault {
		if c.Kind == mocknode.Broadcast {
			return mocknode.LoseRequest
		}
		return mocknode.None
	})
	w.run(2*time.Hour, w.spawn("a"))
	op := w.wantState(id, sluice.Failed)
	if op.Builds != 3 || !strings.Contains(op.Reason, "gave up after 3 builds") {
		t.Errorf("builds=%d reason=%q, want 3 and a give-up reason", op.Builds, op.Reason)
	}
	evs := w.events(id)
	last := evs[len(evs)-1]
	if last.Evidence == nil || !last.Evidence.Proves() {
		t.Errorf("the give-up event carries no proof of death: %+v", last)
	}
	if len(w.inclusions()) != 0 || w.node.Balance(alice) != 0 {
		t.Errorf("inclusions=%d balance=%d, want none", len(w.inclusions()), w.node.Balance(alice))
	}
}

// Goal: solidity is respected: an included but not yet solid transaction is
// not confirmed.
func TestSolidityRespected(t *testing.T) {
	w := newWorld(t)
	id := w.submit("18")
	a := w.spawn("a")
	for i := 0; i < 600 && w.op(id).State != sluice.Confirmed; i++ {
		a.tick()
		in := w.node.Inclusions()
		if w.op(id).State == sluice.Confirmed && (len(in) != 1 || in[0].BlockNumber > w.node.Solid().Number) {
			t.Fatalf("confirmed with inclusions %+v and solid head #%d", in, w.node.Solid().Number)
		}
		if len(in) == 1 && in[0].BlockNumber > w.node.Solid().Number && w.op(id).State != sluice.Broadcast {
			t.Fatalf("state %s while the including block is not solid", w.op(id).State)
		}
		w.clock.Advance(time.Second)
	}
	w.wantState(id, sluice.Confirmed)
}

// Goal: a hard reject on the first send fails the operation: those bytes
// were never accepted anywhere.
func TestHardRejectOnFirstSendFails(t *testing.T) {
	w := newWorld(t)
	id := w.submit("19")
	a := w.spawn("a")
	a.worker.Pipeline.Signer = tron.NewHMACSigner([]byte("the wrong key")) // SIGERROR
	w.run(settleBudget, a)
	op := w.wantState(id, sluice.Failed)
	if !strings.Contains(op.Reason, string(tron.CodeSigError)) {
		t.Errorf("reason = %q, want SIGERROR", op.Reason)
	}
}

// Goal: a hard reject on a re-send is not terminal: an earlier send of the
// same bytes may be in another pool. BANDWITH_ERROR comes and goes with the
// account's resources, so a real node can give it to a re-send.
func TestHardRejectOnResendIsNotTerminal(t *testing.T) {
	w := newWorld(t)
	id := w.submit("20")
	w.node.Next(mocknode.Broadcast, mocknode.LoseRequest)
	a := w.spawn("a")
	sends := 0
	a.node.beforeBroadcast = func(tron.Transaction) (tron.BroadcastResult, error, bool) {
		sends++
		if sends == 2 {
			return tron.BroadcastResult{Code: tron.CodeBandwidthError}, nil, true
		}
		return tron.BroadcastResult{}, nil, false
	}
	w.run(settleBudget, a)
	w.wantState(id, sluice.Confirmed)
	if sends < 3 {
		t.Errorf("sends = %d, want at least 3 (lost, rejected, accepted)", sends)
	}
	w.wantOnePayment(id, 20_000_000)
}

// Goal: the steps one claim may take are bounded; the rest waits for the
// next claim.
func TestStepsPerClaimAreBounded(t *testing.T) {
	w := newWorld(t)
	w.cfg.StepsPerClaimMax = 2
	id := w.submit("21")
	a := w.spawn("a")
	rep, _ := a.tick()
	if rep.Steps != 2 {
		t.Errorf("steps = %d, want 2", rep.Steps)
	}
	op := w.wantState(id, sluice.Signing)
	if op.ClaimedBy != "" {
		t.Errorf("still claimed by %q after the step budget, want released", op.ClaimedBy)
	}
	w.run(settleBudget, a)
	w.wantState(id, sluice.Confirmed)
}

// Goal: a node restart loses the pending pool; the operation still
// confirms once, by re-sending the same bytes.
func TestNodeRestartLosesThePool(t *testing.T) {
	w := newWorld(t)
	id := w.submit("22")
	a := w.spawn("a")
	a.tick()
	w.wantState(id, sluice.Broadcast)
	w.node.Restart()
	w.run(settleBudget, a)
	op := w.wantState(id, sluice.Confirmed)
	if op.Builds != 1 {
		t.Errorf("builds = %d, want 1: the old txid was still alive", op.Builds)
	}
	w.wantOnePayment(id, 22_000_000)
}

// Goal: query timeouts delay, never decide.
func TestQueryTimeoutsOnlyDelay(t *testing.T) {
	w := newWorld(t)
	id := w.submit("23")
	for range 5 {
		w.node.Next(mocknode.Lookup, mocknode.QueryTimeout)
		w.node.Next(mocknode.Solid, mocknode.QueryTimeout)
	}
	w.node.Next(mocknode.Broadcast, mocknode.LoseRequest)
	w.run(settleBudget, w.spawn("a"))
	op := w.wantState(id, sluice.Confirmed)
	if op.Builds != 1 {
		t.Errorf("builds = %d, want 1", op.Builds)
	}
	w.wantOnePayment(id, 23_000_000)
}

// Goal: two withdrawals of the same amount to the same address, built in the
// same millisecond, still get distinct txids (the memo names the operation)
// and both are paid.
func TestIdenticalWithdrawalsGetDistinctTxids(t *testing.T) {
	w := newWorld(t)
	a1, a2 := w.submit("5"), w.submit("5")
	w.run(settleBudget, w.spawn("a"))
	o1, o2 := w.wantState(a1, sluice.Confirmed), w.wantState(a2, sluice.Confirmed)
	if o1.Envelope.Txid == o2.Envelope.Txid {
		t.Errorf("both operations share txid %s", o1.Envelope.Txid.Short())
	}
	if got := w.node.Balance(alice); got != 10_000_000 {
		t.Errorf("alice's balance = %d, want 10000000", got)
	}
}

// Goal: the write-ahead closes the window between "sent" and "recorded". A
// worker dies right after its send; by the time anyone looks, the envelope
// would count as stale. Because the row already says broadcasting, recovery
// asks the chain and finds the txid, instead of rebuilding a second live
// transaction from signed.
func TestCrashAfterSendThenStaleEnvelopeIsNotRebuilt(t *testing.T) {
	w := newWorld(t)
	id := w.submit("24")
	a := w.spawn("a")
	a.node.afterBroadcast = func(tron.Transaction, tron.BroadcastResult, error) { panic(crash{"after send"}) }
	a.tick()
	// Long enough for the envelope to be stale (less than MinValidity
	// left), short enough that the transaction can still land.
	w.clock.Advance(50 * time.Second)
	w.run(settleBudget, w.spawn("b"))
	op := w.wantState(id, sluice.Confirmed)
	if op.Builds != 1 {
		t.Errorf("builds = %d, want 1", op.Builds)
	}
	w.wantOnePayment(id, 24_000_000)
}

// Goal: the token alone fences a zombie. While the zombie sleeps, its lease
// expires and another worker claims the row but has not moved it yet, so the
// state still matches the zombie's expectation: only the token can stop its
// write-ahead, and with it the send.
func TestZombieFencedByTokenAlone(t *testing.T) {
	w := newWorld(t)
	id := w.submit("25")
	zombie := w.spawn("zombie")
	zombie.store.beforeCAS = func(c sluice.Change) {
		if c.To == sluice.Broadcasting {
			zombie.store.beforeCAS = nil
			w.clock.Advance(lease + time.Second)
			if got, err := w.store.Claim(w.ctx, "b", 1); err != nil || len(got) != 1 || got[0].State != sluice.Signed {
				t.Fatalf("b's claim = %v, %v; want the signed row", got, err)
			}
		}
	}
	rep, _ := zombie.tick()
	if !rep.Fenced {
		t.Errorf("the zombie's write-ahead was not fenced")
	}
	if n := w.wireBy("zombie"); n != 0 {
		t.Errorf("the zombie reached the wire %d times, want 0", n)
	}
	if op := w.op(id); op.State != sluice.Signed || op.ClaimedBy != "b" {
		t.Errorf("row = %s claimed by %q, want signed and b's", op.State, op.ClaimedBy)
	}
}
