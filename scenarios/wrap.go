package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"sluicesim/model"
	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// actor is one process's view of the world. Every call the unmodified core
// makes on Store, Node, Signer or Clock goes through it and gets a yield
// point before (the request has not arrived) and after (the effect happened,
// the reply has not reached the caller). Both are crash points; the second
// is the dangerous one.
type actor struct {
	w      *world
	p      *sim.Proc
	worker bool      // only workers crash, pause and have their clocks jump
	server bool      // a server process handling one HTTP request: may stall
	node   tron.Node // a worker's node, as its pipeline sees it
	skew   time.Duration
	busy   bool // holds claimed work: from a claim that took rows to the next claim
	// storeFailed: the world failed one of this process's store calls (a
	// server's request then may answer 5xx with nothing to blame).
	storeFailed bool
	// nodeFailed: a node call of this process failed (the operator API
	// may then answer 503 for the node).
	nodeFailed bool
	// For coverage (a crash at these moments): the worker committed
	// broadcasting and has not sent yet; it sent and has not written since.
	wroteAhead, sentUnwritten bool
	// step is what the worker's current step wrote, until it reports the
	// step to its observer (step_metrics.go).
	step stepTally
	// The current step's latest solid block and lookup answers, until it
	// reports the step (waits.go).
	stepSolid                 tron.Block
	stepLookup                tron.TxInfo
	stepSolidOK, stepLookupOK bool
	stepHeadOK                bool       // the node answered the head block in this step
	stepHead                  tron.Block // its latest answer
	// What the worker itself got in this step (over a wire the records
	// above are the server's, and an answer can be lost on the way back:
	// a cut body, a cancelled call): a solid block and a lookup returned
	// without an error; a head block asked at all; a write carrying a
	// stuck policy's decision tried, landed or not (step_metrics.go).
	stepSolidGot, stepLookupGot bool
	stepHeadAsked, stepDecided  bool
	// stepWrote: the step tried a CAS or a park, landed or not.
	stepWrote bool
	// tickFailed: the world failed one of this worker's store calls in
	// its current Tick (workers.go holds Tick to answering an error).
	tickFailed bool
	// stepLookupRow: the txid of the step's latest lookup the worker got
	// an answer to, and the row that stored it as the world saw it then.
	stepLookupRow lookupRow
	// stepSendRow: the txid of the step's latest send the node answered
	// as taken (SUCCESS or DUP_TRANSACTION_ERROR) as the worker got it,
	// and the row that stored it as the world saw it then (stepSendGot).
	stepSendRow lookupRow
	stepSendGot bool
	// lookupsServed counts the lookups the node behind a wire's server
	// answered this actor without an error (servedNode): a lookup the
	// actor got without an error must have raised it, or its answer came
	// from no node (node.Lookup).
	lookupsServed int
	// resolveLanded, resolveFailed: the operator's current action wrote
	// its Resolve to the store (landed, whatever the answer said), or the
	// world failed that write (either kind). A refusal, which tells the
	// person nothing changed, is then a wrong answer (operator.go).
	resolveLanded, resolveFailed bool
	// resolveAnswered: the current request's Resolve landed and the
	// store's answer to it reached the service (no fault after it): the
	// service knows the action is done, and a 503 for it is a wrong
	// answer (operator_http.go's unavailable; reset by each request).
	resolveAnswered bool
	// resolveFenced: the operator's current action's Resolve was fenced
	// by the store (the row moved since the service read it): the one
	// refusal of a retry of a live row that can be right (operator.go).
	resolveFenced bool
	// stop cancels a worker's context (a graceful stop, as SIGTERM does
	// to cmd/sluice's workers); nil where the world never stops one.
	stop context.CancelFunc
	// release is the release a worker runs (world.rollout): 0 but in a
	// world that deploys, for a worker started after the deploy began.
	release int
}

// rowView is a row as the world's record of accepted writes has it.
type rowView struct {
	state sluice.State
	txid  tron.Txid // the envelope's, from the latest write that stored one
}

// lookupRow is a worker's lookup of asked, and the world's view of the
// row op that stored it, as of the answer.
type lookupRow struct {
	asked tron.Txid
	op    sluice.OperationID
	rowView
}

// maybeStop, before a worker's node call while faults are on, now and then
// stops the worker as a deploy does: its context is cancelled, so the call
// fails as cancelled (the wire's transport honours the context, as a real
// one does), its step's further store calls fail too, and the worker's
// loop ends and restarts it later. The lease stays until it expires.
func (a *actor) maybeStop() {
	w := a.w
	if a.stop != nil && w.faulty() && w.s.Chance("graceful-stop", w.cfg.GracefulStopP) {
		a.stop()
		a.stop = nil
		w.tally["worker-stop"]++
		w.fact(model.Fact{Kind: model.FactStop})
	}
}

// point is a yield point. A dead process unwinds here and never reaches the
// world again. While faults are on, a worker may crash, pause (and wake as a
// zombie), or see its wall clock jump.
func (a *actor) point() { a.yield(false) }

// pointAfter is the yield point right after a call. Under FaultsAtWork it
// is the only place a worker faults, and only while it holds work: a fault
// at the point before the next call would land at the same place in the
// worker's run (only local computation lies between, and no virtual time),
// so offering both would make exhaustive search run each fault twice.
func (a *actor) pointAfter() { a.yield(true) }

func (a *actor) yield(after bool) {
	a.p.ExitIfDead()
	w := a.w
	if after && a.worker && w.faulty() && w.s.Chance("slow-call", w.cfg.SlowCallP) {
		// The call took effect; its answer is slow to come back. Shorter
		// than the lease, so the worker still holds its claim when it
		// reads the answer, while the chain and other workers move on.
		d := w.cfg.SlowCalls[w.s.Choose("slow-len", len(w.cfg.SlowCalls))].D()
		w.tally["slow-call"]++
		a.w.fact(model.Fact{Kind: model.FactSlowAnswer, Dur: d})
		a.p.Sleep(d)
		a.p.ExitIfDead()
	}
	if a.worker && w.faulty() && (!w.cfg.FaultsAtWork || a.busy && after) && w.s.Chance("fault", w.cfg.WorkerFaultP) {
		switch w.s.Choose("fault-kind", 3) {
		case 0:
			if a.wroteAhead {
				w.cov[covCrashAfterWriteAhead]++
			}
			if a.sentUnwritten {
				w.cov[covCrashAfterSend]++
			}
			w.tally["worker-crash"]++
			w.fact(model.Fact{Kind: model.FactCrash})
			w.restartLater(a)
			a.p.Crash()
		case 1:
			d := w.cfg.Pauses[w.s.Choose("pause-len", len(w.cfg.Pauses))].D()
			w.tally["worker-pause"]++
			a.pausing(d)
			w.fact(model.Fact{Kind: model.FactPause, Dur: d})
			a.p.Sleep(d)
			w.fact(model.Fact{Kind: model.FactWake})
		case 2:
			j := w.cfg.ClockJumps[w.s.Choose("jump-len", len(w.cfg.ClockJumps))].D()
			a.skew += j
			w.tally["clock-jump"]++
			w.fact(model.Fact{Kind: model.FactClockJump, Dur: j, Skew: a.skew})
		}
	}
	if a.server && w.faulty() && w.s.Chance("server-stall", w.cfg.ServerStallP) {
		d := w.cfg.ServerStalls[w.s.Choose("stall-len", len(w.cfg.ServerStalls))].D()
		w.tally["server-stall"]++
		w.fact(model.Fact{Kind: model.FactStall, Dur: d})
		a.p.Sleep(d)
	}
	a.p.Yield()
	a.p.ExitIfDead()
}

// pauseBeforeWrite is the zombie maker: a pause right before a write, the
// moment when a stale view of the row does harm if fencing is weak. Faults at
// ordinary yield points make zombies too, but rarely at this exact spot.
func (a *actor) pauseBeforeWrite() {
	w := a.w
	if !a.worker || !w.faulty() || !w.s.Chance("pause-before-write", w.cfg.PauseBeforeWriteP) {
		return
	}
	d := w.cfg.Pauses[w.s.Choose("pause-len", len(w.cfg.Pauses))].D()
	w.tally["worker-pause-before-write"]++
	a.pausing(d)
	w.fact(model.Fact{Kind: model.FactPauseBeforeWrite, Dur: d})
	a.p.Sleep(d)
	w.fact(model.Fact{Kind: model.FactWake})
	a.p.ExitIfDead()
}

// pausing counts, for coverage, a pause of a worker holding work that
// outlasts its lease.
func (a *actor) pausing(d time.Duration) {
	if a.busy && d > a.w.cfg.Lease.D() {
		a.w.cov[covPausedPastLease]++
	}
}

// wrote notes, for coverage, a worker's write call that reached the store
// (err is the store's answer): it ends a send's unwritten spell, begins a
// write-ahead's, and counts a write refused for its token.
func (a *actor) wrote(to sluice.State, err error) {
	a.sentUnwritten = false
	a.wroteAhead = err == nil && to == sluice.Broadcasting
	if err != nil && a.worker && errors.Is(err, sluice.ErrFenced) {
		a.w.cov[covFencedWrite]++
	}
}

// readRow records that this step read an operation's row, for exhaustive
// search's footprints (wroteRow records writes). Keys are built only when
// someone is observing: every store call passes here, on the simulator's
// hot path.
func (a *actor) readRow(id sluice.OperationID) {
	if a.w.s.Observing() {
		a.w.s.Touch("row:"+string(id), false)
	}
}

// readRows records that this step read every row (a scan of the store:
// List, Census, a mutant's look at every lease), for footprints. Without
// an observer it costs nothing.
func (a *actor) readRows() {
	if a.w.s.Observing() {
		a.w.s.Touch("row:*", false)
	}
}

// claimable reads whether a claim now could take the row, for footprints
// only: a write that leaves it unchanged (a CAS renewing a live lease, a
// replayed insert) commutes with a claim that takes nothing, so exhaustive
// search need not run both orders. Without an observer it costs nothing.
func (a *actor) claimable(id sluice.OperationID) bool {
	if !a.w.s.Observing() {
		return false
	}
	row, err := a.w.store.Get(context.Background(), id)
	return err == nil && row.Claimable(a.w.s.Now())
}

// wroteRow records a write to the row, and to its claimability when the
// write changed it (before is claimable's answer from before the write).
func (a *actor) wroteRow(id sluice.OperationID, before bool) {
	if a.w.s.Observing() {
		a.w.s.Touch("row:"+string(id), true)
		if a.claimable(id) != before {
			a.w.s.Touch("claim:"+string(id), true)
		}
	}
}

// claimOrder is the footprint key of the store's row order: claims take
// claimable rows oldest first, so two inserts that create rows do not
// commute (the other order has a claim take the other row first), though
// they touch different rows. It falls under a claim's "claim:*".
const claimOrder = "claim:order"

// touchedAccount records, for footprints, that the step read or wrote the
// account of id's customer (the ledger: an insert's funds check and hold,
// a hold closed on a terminal write, a balance read). Inserts of two
// customers commute; of one customer they may not (a balance that covers
// one of them). Without an observer it costs nothing.
func (a *actor) touchedAccount(c sluice.CustomerID, write bool) {
	if a.w.s.Observing() {
		a.w.s.Touch("acct:"+string(c), write)
	}
}

// touchedAccountOf is touchedAccount for the customer of row id (if the
// store holds it).
func (a *actor) touchedAccountOf(id sluice.OperationID, write bool) {
	if !a.w.s.Observing() {
		return
	}
	if row, err := a.w.store.Get(context.Background(), id); err == nil {
		a.touchedAccount(row.Request.Customer, write)
	}
}

// fact records f in the trace: its text, derived from its fields, and the
// fields themselves. Not tracing, it costs the caller's struct literal only;
// callers whose fields are costly to compute check Tracing first.
func (w *world) fact(f model.Fact) {
	if !w.s.Tracing() {
		return
	}
	data, err := json.Marshal(f)
	if err != nil {
		panic("scenarios: marshal fact: " + err.Error()) // plain strings and ints
	}
	w.s.Record(f.Text(), data)
}

// withErr sets f's error fields from a store call's error.
func withErr(f model.Fact, err error) model.Fact {
	switch {
	case err == nil:
	case errors.Is(err, sluice.ErrFenced):
		f.Fenced = true
	default:
		f.Err = err.Error()
	}
	return f
}

// refused records a worker's write the store refused as fenced (whatever
// the world then tells the worker): one-writer holds it to a rival claim.
func (a *actor) refused(call string, id sluice.OperationID, token sluice.FencingToken, from sluice.State, err error) {
	if err == nil || !errors.Is(err, sluice.ErrFenced) {
		return
	}
	a.w.fenced = append(a.w.fenced, model.FencedRecord{Op: id, Token: token, Proc: a.p.Name(), At: a.w.s.Now(),
		Call: call, From: from, Claims: len(a.w.claims)})
}

// storeView wraps sluice.Store.
type storeView struct{ a *actor }

// The store faults the world injects into a call (the fault table's
// store-fault row).
const (
	storeOK          = iota
	storeErrBefore   // the call fails before it reaches the store: nothing happened
	storeErrAfter    // the call takes effect, its answer is lost: the caller hears it failed
	storeStall       // the call waits, then goes through
	storeFaultKindsN // how many kinds the tape chooses from
)

// errStoreDown is what an injected store failure returns: a connection
// reset, the classic ambiguous answer (the commit may or may not have
// happened).
var errStoreDown = errors.New("store: connection reset by peer (injected)")

// storeFault decides, before the heal point, whether this call fails and
// how. A stall sleeps here and lets the call go through.
func (s storeView) storeFault() int {
	w := s.a.w
	if !w.faulty() || !w.s.Chance("store-fault", w.cfg.StoreFaultP) {
		return storeOK
	}
	k := 1 + w.s.Choose("store-fault-kind", storeFaultKindsN-1)
	switch k {
	case storeErrBefore:
		w.tally["store-error-before"]++
	case storeErrAfter:
		w.tally["store-error-after"]++
	case storeStall:
		w.tally["store-stall"]++
		d := w.cfg.StoreStalls[w.s.Choose("store-stall-len", len(w.cfg.StoreStalls))].D()
		w.fact(model.Fact{Kind: model.FactStoreStall, Dur: d})
		s.a.p.Sleep(d)
		s.a.p.ExitIfDead()
		return storeOK
	}
	s.a.storeFailed = true
	return k
}

// failed records an injected failure: a worker's for the oracle, and
// every one in the trace.
func (s storeView) failed(call string, k int) {
	if w := s.a.w; s.a.worker {
		s.a.tickFailed = true
		w.storeFailures = append(w.storeFailures, model.StoreFailure{Proc: s.a.p.Name(), Call: call, At: w.s.Now(), Claims: len(w.claims)})
	}
	if s.a.w.s.Tracing() {
		s.a.w.fact(model.Fact{Kind: model.FactStoreError, Answer: call, Created: k == storeErrAfter})
	}
}

func (s storeView) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	s.a.point()
	f := s.storeFault()
	if f == storeErrBefore {
		s.failed("insert", f)
		s.a.pointAfter()
		return sluice.Operation{}, false, errStoreDown
	}
	before := s.a.claimable(op.ID)
	row, created, err := s.a.w.store.Insert(ctx, op)
	s.a.wroteRow(op.ID, before)
	s.a.touchedAccount(op.Request.Customer, created)
	if created {
		s.a.w.checkLedger(op.Request.Customer)
		if s.a.w.s.Observing() {
			s.a.w.s.Touch(claimOrder, true)
		}
	}
	if s.a.w.s.Tracing() {
		s.a.w.fact(withErr(model.Fact{Kind: model.FactInsert, Op: s.a.w.name(op.ID), Created: created}, err))
	}
	if f == storeErrAfter {
		if created {
			s.a.w.cov[covStoreInsertLost]++
		}
		s.failed("insert", f)
		s.a.pointAfter()
		return sluice.Operation{}, false, errStoreDown
	}
	s.a.pointAfter()
	return row, created, err
}

func (s storeView) Get(ctx context.Context, id sluice.OperationID) (sluice.Operation, error) {
	s.a.point()
	if f := s.storeFault(); f != storeOK {
		s.failed("get", f) // a read has no effect to lose: either kind is a failed read
		s.a.pointAfter()
		return sluice.Operation{}, errStoreDown
	}
	row, err := s.a.w.store.Get(ctx, id)
	s.a.readRow(id)
	if s.a.w.s.Tracing() {
		s.a.w.fact(withErr(model.Fact{Kind: model.FactGet, Op: s.a.w.name(id), To: row.State.String()}, err))
	}
	s.a.pointAfter()
	return row, err
}

func (s storeView) Claim(ctx context.Context, worker sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	s.a.point()
	fault := s.storeFault()
	if fault == storeErrBefore {
		s.failed("claim", fault)
		s.a.pointAfter()
		return nil, errStoreDown
	}
	var lapsed map[sluice.OperationID]sluice.Operation
	if s.a.w.s.Tracing() {
		// A lease lapses silently in the store; the trace names the moment
		// a claim takes over a row whose holder never let go of it.
		now := s.a.w.s.Now()
		for _, row := range s.a.w.store.Snapshot().Operations {
			if !row.State.Terminal() && row.ClaimedBy != "" && !row.LeaseUntil.After(now) {
				if lapsed == nil {
					lapsed = map[sluice.OperationID]sluice.Operation{}
				}
				lapsed[row.ID] = row
			}
		}
	}
	ops, err := s.a.w.store.Claim(ctx, worker, limit)
	s.a.busy = len(ops) > 0
	s.a.wroteAhead, s.a.sentUnwritten = false, false
	seq := s.a.w.store.LastSeq()
	if err == nil && s.a.worker {
		s.a.w.claimCalls = append(s.a.w.claimCalls, model.ClaimCall{Proc: s.a.p.Name(), At: s.a.w.s.Now(), Limit: limit, Took: len(ops),
			Claims: len(s.a.w.claims), Releases: len(s.a.w.releases), Seq: seq})
	}
	for i, op := range ops {
		s.a.w.claims = append(s.a.w.claims, model.ClaimRecord{Op: op.ID, Token: op.Token, Proc: s.a.p.Name(), At: s.a.w.s.Now(), First: i == 0, Seq: seq})
	}
	// A claim reads which rows are claimable (not their contents) and
	// writes the rows it takes.
	if s.a.w.s.Observing() {
		s.a.w.s.Touch("claim:*", false)
		for _, op := range ops {
			s.a.w.s.Touch("row:"+string(op.ID), true)
			s.a.w.s.Touch("claim:"+string(op.ID), true)
		}
	}
	if s.a.w.s.Tracing() && (len(ops) > 0 || err != nil) {
		f := model.Fact{Kind: model.FactClaim}
		for _, op := range ops {
			f.Claimed = append(f.Claimed, model.ClaimedRow{Op: s.a.w.name(op.ID), State: op.State.String(), Token: int64(op.Token)})
		}
		for _, op := range ops {
			if old, ok := lapsed[op.ID]; ok {
				s.a.w.fact(model.Fact{Kind: model.FactLeaseExpired, Op: s.a.w.name(op.ID), Holder: string(old.ClaimedBy), Token: int64(old.Token)})
			}
		}
		s.a.w.fact(withErr(f, err))
	}
	if fault == storeErrAfter {
		// The rows are claimed (tokens bumped, leases granted) and the
		// world recorded the claims; the worker never hears of them, and
		// they wait for their leases to lapse.
		if len(ops) > 0 {
			s.a.w.cov[covStoreClaimLost]++
		}
		s.failed("claim", fault)
		s.a.busy = false
		s.a.pointAfter()
		return nil, errStoreDown
	}
	s.a.pointAfter()
	return ops, err
}

func (s storeView) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	s.a.point()
	s.a.pauseBeforeWrite()
	fault := s.storeFault()
	if fault == storeErrBefore {
		s.failed("cas", fault)
		s.a.stepCAS(c, sluice.Operation{}, errStoreDown)
		s.a.pointAfter()
		return sluice.Operation{}, errStoreDown
	}
	before := s.a.claimable(c.ID)
	row, err := s.a.w.store.CAS(ctx, c)
	s.a.refused("cas", c.ID, c.Token, c.From, err)
	s.a.wroteRow(c.ID, before)
	if c.Hold != sluice.HoldKeep {
		s.a.touchedAccountOf(c.ID, true) // the hold closes into the balance or the paid sum
	}
	s.a.wrote(c.To, err)
	if err == nil {
		s.a.landed(c, row)
	}
	if s.a.w.s.Tracing() {
		f := model.Fact{Kind: model.FactCAS, Op: s.a.w.name(c.ID), From: c.From.String(), To: c.To.String(), Token: int64(c.Token)}
		if c.Envelope != nil {
			f.Txid = c.Envelope.Txid.Short()
		}
		if !c.RetiredTxid.IsZero() {
			f.Retired = c.RetiredTxid.Short()
		}
		s.a.w.fact(withErr(f, err))
	}
	if fault == storeErrAfter {
		if err == nil {
			s.a.w.cov[covStoreCASLost]++
		}
		s.failed("cas", fault)
		s.a.stepCAS(c, sluice.Operation{}, errStoreDown)
		s.a.pointAfter()
		return sluice.Operation{}, errStoreDown
	}
	s.a.stepCAS(c, row, err)
	s.a.pointAfter()
	return row, err
}

func (s storeView) Release(ctx context.Context, id sluice.OperationID, token sluice.FencingToken, after time.Duration) error {
	s.a.point()
	fault := s.storeFault()
	if fault == storeErrBefore {
		s.failed("release", fault)
		s.a.pointAfter()
		return errStoreDown
	}
	before := s.a.claimable(id)
	err := s.a.w.store.Release(ctx, id, token, after)
	s.a.wroteRow(id, before)
	s.a.wrote(sluice.None, err)
	if err == nil {
		// A stale release changes nothing in the store, and ends nothing in
		// one-writer's reckoning either: it names a token whose lease a
		// later claim already replaced.
		// Its wait and its place among the claims and the writes let the
		// model tell when the row came free (a release within a spell of
		// parks moves that later), and tell a stale one itself.
		s.a.w.releases = append(s.a.w.releases, model.ReleaseRecord{Op: id, Token: token, Proc: s.a.p.Name(), At: s.a.w.s.Now(),
			After: after, Seq: s.a.w.store.LastSeq(), Claims: len(s.a.w.claims)})
	}
	if s.a.w.s.Tracing() {
		s.a.w.fact(withErr(model.Fact{Kind: model.FactRelease, Op: s.a.w.name(id), Token: int64(token), Dur: after}, err))
	}
	if fault == storeErrAfter {
		s.failed("release", fault)
		s.a.pointAfter()
		return errStoreDown
	}
	s.a.pointAfter()
	return err
}

func (s storeView) Events(ctx context.Context, id sluice.OperationID) ([]sluice.Event, error) {
	s.a.point()
	if f := s.storeFault(); f != storeOK {
		s.failed("events", f)
		s.a.pointAfter()
		return nil, errStoreDown
	}
	evs, err := s.a.w.store.Events(ctx, id)
	s.a.readRow(id)
	s.a.pointAfter()
	return evs, err
}

// Park is a worker's write that gives up its lease: for one-writer it ends
// the holder's claim like a release.
func (s storeView) Park(ctx context.Context, pk sluice.Park) (sluice.Operation, error) {
	s.a.point()
	fault := s.storeFault()
	if fault == storeErrBefore {
		s.failed("park", fault)
		s.a.stepPark(errStoreDown)
		s.a.pointAfter()
		return sluice.Operation{}, errStoreDown
	}
	before := s.a.claimable(pk.ID)
	row, err := s.a.w.store.Park(ctx, pk)
	s.a.refused("park", pk.ID, pk.Token, sluice.None, err)
	s.a.wroteRow(pk.ID, before)
	s.a.wrote(sluice.None, err)
	if err == nil {
		r := model.ReleaseRecord{Op: pk.ID, Token: pk.Token, Proc: s.a.p.Name(), At: s.a.w.s.Now(),
			After: pk.After, Seq: s.a.w.store.LastSeq(), Claims: len(s.a.w.claims), Park: true}
		s.a.w.releases = append(s.a.w.releases, r)
		s.a.w.parks = append(s.a.w.parks, r)
	}
	if s.a.w.s.Tracing() {
		s.a.w.fact(withErr(model.Fact{Kind: model.FactPark, Op: s.a.w.name(pk.ID), Token: int64(pk.Token), Dur: pk.After, Answer: pk.Reason}, err))
	}
	if fault == storeErrAfter {
		s.failed("park", fault)
		s.a.stepPark(errStoreDown)
		s.a.pointAfter()
		return sluice.Operation{}, errStoreDown
	}
	s.a.stepPark(err)
	s.a.pointAfter()
	return row, err
}

// Resolve is an operator's write: it takes the row whatever lease is on
// it, bumping the token.
func (s storeView) Resolve(ctx context.Context, r sluice.Resolution) (sluice.Operation, error) {
	s.a.point()
	fault := s.storeFault()
	if fault == storeErrBefore {
		s.a.resolveFailed = true
		s.failed("resolve", fault)
		s.a.pointAfter()
		return sluice.Operation{}, errStoreDown
	}
	before := s.a.claimable(r.ID)
	row, err := s.a.w.store.Resolve(ctx, r)
	s.a.resolveLanded = s.a.resolveLanded || err == nil
	s.a.resolveFailed = s.a.resolveFailed || fault == storeErrAfter
	s.a.resolveAnswered = s.a.resolveAnswered || err == nil && fault != storeErrAfter
	s.a.resolveFenced = s.a.resolveFenced || errors.Is(err, sluice.ErrFenced)
	s.a.wroteRow(r.ID, before)
	if r.Hold != sluice.HoldKeep {
		s.a.touchedAccountOf(r.ID, true)
	}
	if err == nil {
		w := s.a.w
		w.claims = append(w.claims, model.ClaimRecord{Op: r.ID, Token: row.Token, Proc: s.a.p.Name(), At: w.s.Now(), Operator: true, Seq: w.store.LastSeq()})
		w.writes = append(w.writes, model.WriteRecord{Seq: w.store.LastSeq(), Op: r.ID, Token: row.Token,
			Proc: s.a.p.Name(), At: w.s.Now(), Terminal: model.Terminal(r.To), SolidSeen: w.solidSeen(r.To)})
		w.setView(r.ID, r.To, nil)
		w.checkLedger(row.Request.Customer)
	}
	if s.a.w.s.Tracing() {
		s.a.w.fact(withErr(model.Fact{Kind: model.FactResolve, Op: s.a.w.name(r.ID), From: r.From.String(), To: r.To.String(), Token: int64(row.Token), Answer: r.Why}, err))
	}
	if fault == storeErrAfter {
		s.failed("resolve", fault)
		s.a.pointAfter()
		return sluice.Operation{}, errStoreDown
	}
	s.a.pointAfter()
	return row, err
}

// The reads below have no effect to lose: either fault kind fails them.

func (s storeView) List(ctx context.Context, f sluice.ListFilter) ([]sluice.Operation, error) {
	s.a.point()
	if k := s.storeFault(); k != storeOK {
		s.failed("list", k)
		s.a.pointAfter()
		return nil, errStoreDown
	}
	ops, err := s.a.w.store.List(ctx, f)
	s.a.readRows()
	s.a.pointAfter()
	return ops, err
}

func (s storeView) Census(ctx context.Context) (sluice.Census, error) {
	s.a.point()
	if k := s.storeFault(); k != storeOK {
		s.failed("census", k)
		s.a.pointAfter()
		return sluice.Census{}, errStoreDown
	}
	c, err := s.a.w.store.Census(ctx)
	s.a.readRows()
	s.a.pointAfter()
	return c, err
}

// Credit is the depositor's (deposits.go): the world credits its other
// customers before any process runs, on the store itself (fund).
func (s storeView) Credit(ctx context.Context, c sluice.Credit) (sluice.Account, bool, error) {
	s.a.point()
	f := s.storeFault()
	if f == storeErrBefore {
		s.failed("credit", f)
		s.a.pointAfter()
		return sluice.Account{}, false, errStoreDown
	}
	acct, credited, err := s.a.w.store.Credit(ctx, c)
	s.a.touchedAccount(c.Customer, true)
	if err == nil {
		s.a.w.credited()
		s.a.w.creditAcct = acct
	}
	if f == storeErrAfter {
		s.failed("credit", f)
		s.a.pointAfter()
		return sluice.Account{}, false, errStoreDown
	}
	s.a.pointAfter()
	return acct, credited, err
}

func (s storeView) Account(ctx context.Context, c sluice.CustomerID) (sluice.Account, error) {
	s.a.point()
	acct, err := s.a.w.store.Account(ctx, c)
	s.a.touchedAccount(c, false)
	s.a.pointAfter()
	return acct, err
}

func (s storeView) Hold(ctx context.Context, id sluice.OperationID) (sluice.Hold, error) {
	s.a.point()
	h, err := s.a.w.store.Hold(ctx, id)
	s.a.readRow(id)
	s.a.pointAfter()
	return h, err
}

// checkLedger reads a customer's account right after a write that moved it
// and keeps the reading, with the store's newest event then, for funds to
// hold to the model's own books at that point of the log; and records, the
// first few times, an account whose numbers do not add up: the store's own
// arithmetic, watched at every point of the run.
func (w *world) checkLedger(c sluice.CustomerID) {
	if c == "" {
		return
	}
	acct, err := w.store.Account(w.ctx, c)
	if err != nil {
		return
	}
	w.ledgerReadings = append(w.ledgerReadings, model.LedgerReading{Seq: w.store.LastSeq(), LateDeposits: len(w.lateDeposits), Account: acct})
	if acct.Balanced() || len(w.ledgerBreaks) >= 5 {
		return
	}
	w.ledgerBreaks = append(w.ledgerBreaks, fmt.Sprintf("at %s: account %s has balance %d + held %d + paid %d != deposited %d",
		w.s.Now().Sub(epoch), c, acct.Balance, acct.Held, acct.Paid, acct.Deposited))
}

// solidSeen is what a write into to records of the chain: for a
// confirmation, the solid head it must not be ahead of (the network's truth
// as it stands, read without producing a block, so the run is unchanged).
func (w *world) solidSeen(to sluice.State) int64 {
	if to != sluice.Confirmed {
		return 0
	}
	return w.net.SolidSeen()
}

// landed records a write that the store accepted, as the world saw it: the
// event it appended, the token the row now carries, the process that made
// the call; and the envelope it stored, whose raw data audit-log re-derives
// a later rebuild's evidence from.
func (a *actor) landed(c sluice.Change, row sluice.Operation) {
	w := a.w
	rec := model.WriteRecord{Seq: w.store.LastSeq(), Op: c.ID, Token: row.Token,
		Proc: a.p.Name(), At: w.s.Now(), Terminal: model.Terminal(c.To), SolidSeen: w.solidSeen(c.To)}
	if c.To == sluice.Review && a.worker {
		rec.Review = a.reviewRead(c, row)
	}
	if c.From == sluice.Signed && c.To == sluice.Broadcasting && a.worker {
		rec.Ahead = true
		if a.stepHeadOK {
			rec.AheadHead = a.stepHead.Time
		}
	}
	fresh := c.Envelope != nil && w.stored[c.Envelope.Txid] == ""
	if fresh && a.worker {
		rec.Built, rec.BuiltSolid = true, w.net.SolidSeen()
		rec.Claims, rec.Sends = len(w.claims), len(w.sends)
		r := &w.rollout[a.release]
		rec.FeeLimit, rec.FeeFloor, rec.FeeCeiling, rec.Txid = c.Envelope.Raw.FeeLimit, r.floor, r.ceil, c.Envelope.Txid
		a.countBuild(c.Envelope, c.RetiredTxid)
		if a.stepHeadOK {
			rec.BuiltHead = a.stepHead.Time
		}
	}
	w.writes = append(w.writes, rec)
	a.countDeployedWrite(&row)
	w.setView(c.ID, c.To, c.Envelope)
	if fresh {
		w.stored[c.Envelope.Txid] = c.ID
		w.envelopes = append(w.envelopes, row.Envelope)
	}
	if c.Hold != sluice.HoldKeep {
		w.checkLedger(row.Request.Customer)
	}
}

// setView records an accepted write into the world's view of row id: its
// new state, and the txid of env when the write stored one.
func (w *world) setView(id sluice.OperationID, to sluice.State, env *sluice.Envelope) {
	v := w.views[id]
	v.state = to
	if env != nil {
		v.txid = env.Txid
	}
	w.views[id] = v
}

// node wraps the worker's mock node client.
type node struct {
	a     *actor
	inner tron.Node
}

func (n node) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	n.a.point()
	n.a.maybeStop()
	w := n.a.w
	id := w.txids.Txid(&tx.Raw)
	_, again := w.sent[id]
	if !again {
		w.sent[id] = len(w.sentTxs)
		w.sentTxs = append(w.sentTxs, tx)
	}
	// While this call lasts (a balancer's retries, the wire's server
	// process), the node's fault hook knows whether it is a re-send: the
	// same bytes were broadcast by an earlier call.
	name := n.a.p.Name()
	claims := len(w.claims)
	w.resending[name] = again
	res, err := n.inner.Broadcast(ctx, tx)
	delete(w.resending, name)
	if n.a.worker {
		// The answer as the worker got it: a refusal lost on the way back
		// told it nothing, and asks for no park.
		answer := string(res.Code)
		if err != nil {
			answer = err.Error()
		}
		w.sends = append(w.sends, model.SendRecord{Op: w.stored[id], Txid: id, Proc: name, At: w.s.Now(), Answer: answer, Claims: claims,
			Lookups: len(w.lookups), Writes: len(w.writes), Releases: len(w.releases), Parks: len(w.parks)})
		if err == nil && tron.Read(res.Code) == tron.Accepted {
			op := w.stored[id]
			n.a.stepSendRow, n.a.stepSendGot = lookupRow{asked: id, op: op, rowView: w.views[op]}, true
		}
	}
	n.a.wroteAhead, n.a.sentUnwritten = false, true
	n.a.nodeFailed = n.a.nodeFailed || err != nil
	if w.lostTxid == id {
		// The node lost this send; a peer may still carry it.
		w.lostTxid = tron.Txid{}
		w.dropped(id)
	}
	n.a.w.s.Touch("chain", true)
	if w.s.Tracing() {
		f := model.Fact{Kind: model.FactBroadcast, Txid: id.Short(), Answer: string(res.Code), Failed: res.Code != tron.CodeSuccess}
		if err != nil {
			f.Answer, f.Failed = err.Error(), true
		}
		w.fact(f)
	}
	n.a.pointAfter()
	return res, err
}

func (n node) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	n.a.point()
	n.a.maybeStop()
	w := n.a.w
	var op sluice.OperationID // the row that stored id, by the world's record (a worker's own txid: set before the call)
	if n.a.worker {
		op = w.stored[id]
		w.lookups = append(w.lookups, model.LookupRecord{Op: op, Txid: id, Proc: n.a.p.Name(), At: w.s.Now(),
			Claims: len(w.claims), Writes: len(w.writes), Releases: len(w.releases), Parks: len(w.parks)})
	}
	served := n.a.lookupsServed
	info, err := n.inner.Lookup(ctx, id)
	if err == nil && w.cfg.Wire && n.a.lookupsServed == served {
		// Over a wire, an answer is the node's only if the node behind
		// the server gave one during the call: anything else (a proxy's
		// own page, a canned or cached answer) taken without an error is
		// an answer the client invented (independent bug 217 read a 404
		// as "unknown").
		panic(fmt.Sprintf("scenarios: %s's lookup of %s returned %s without an error, but the node behind the wire answered no lookup during the call", n.a.p.Name(), id, info.Status))
	}
	n.a.nodeFailed = n.a.nodeFailed || err != nil
	n.a.stepLookupGot = err == nil
	if err == nil && !n.a.w.cfg.Wire { // over a wire, the server's side records it (servedNode)
		n.a.stepLookup, n.a.stepLookupOK = info, true
	}
	if err == nil && n.a.worker {
		// The row as the world sees it when the worker gets the answer
		// (waits.go judges a settled answer against it).
		n.a.stepLookupRow = lookupRow{asked: id, op: op, rowView: w.views[op]}
	}
	n.a.w.s.Touch("chain", false)
	if n.a.w.s.Tracing() {
		f := model.Fact{Kind: model.FactLookup, Txid: id.Short()}
		if err != nil {
			f.Answer, f.Failed = err.Error(), true
		} else {
			f.Answer = fmt.Sprintf("%s #%d solid=%v %s", info.Status, info.BlockNumber, info.Solid, info.Receipt)
		}
		n.a.w.fact(f)
	}
	n.a.pointAfter()
	return info, err
}

func (n node) HeadBlock(ctx context.Context) (tron.Block, error) {
	n.a.point()
	n.a.maybeStop()
	n.a.stepHeadAsked = true
	b, err := n.inner.HeadBlock(ctx)
	n.a.nodeFailed = n.a.nodeFailed || err != nil
	if err == nil && !n.a.w.cfg.Wire { // over a wire, the server's side records it (servedNode)
		n.a.stepHead, n.a.stepHeadOK = b, true
	}
	n.a.w.s.Touch("chain", false)
	n.a.pointAfter()
	return b, err
}

func (n node) SolidBlock(ctx context.Context) (tron.Block, error) {
	n.a.point()
	n.a.maybeStop()
	b, err := n.inner.SolidBlock(ctx)
	n.a.nodeFailed = n.a.nodeFailed || err != nil
	n.a.stepSolidGot = err == nil
	if err == nil && !n.a.w.cfg.Wire {
		n.a.stepSolid, n.a.stepSolidOK = b, true
	}
	n.a.w.s.Touch("chain", false)
	n.a.pointAfter()
	return b, err
}

// signer wraps the signer.
type signer struct {
	a     *actor
	inner tron.Signer
}

func (s signer) Sign(ctx context.Context, raw tron.RawData) ([]byte, error) {
	s.a.point()
	w := s.a.w
	if w.faulty() && w.signerDown() {
		w.signerFailed(s.a, &raw)
		w.fact(model.Fact{Kind: model.FactSignerFails, Dur: w.signerBack.Sub(w.s.Now())})
		s.a.pointAfter()
		return nil, errSignerDown
	}
	if w.faulty() && w.s.Chance("signer-fail", w.cfg.SignerFailP) {
		// A remote signer (KMS, HSM) that times out or throttles: an
		// operating condition, never a reason to give up on a withdrawal.
		w.tally["signer-fail"]++
		w.signerFailed(s.a, &raw)
		w.fact(model.Fact{Kind: model.FactSignerFails})
		s.a.pointAfter()
		return nil, errSignerDown
	}
	sig, err := s.inner.Sign(ctx, raw)
	s.a.pointAfter()
	return sig, err
}

var errSignerDown = errors.New("signer: deadline exceeded (injected)")

// signerFailed records a signing the world failed, for the oracle: a park
// that follows answers a shortage of ours.
func (w *world) signerFailed(a *actor, raw *tron.RawData) {
	id := w.txids.Txid(raw)
	w.signerFailures = append(w.signerFailures, model.SignerFailure{Proc: a.p.Name(), Txid: id, Op: w.stored[id], At: w.s.Now(),
		Claims: len(w.claims), Sends: len(w.sends)})
}

// signerDown says whether the signer is in an outage now (SignerOutageP),
// starting one on the tape when it is up. A world without outages asks
// nothing.
func (w *world) signerDown() bool {
	if w.cfg.SignerOutageP == 0 {
		return false
	}
	if w.s.Now().Before(w.signerBack) {
		return true
	}
	if !w.s.Chance("signer-outage", w.cfg.SignerOutageP) {
		return false
	}
	w.signerBack = w.s.Now().Add(w.cfg.SignerOutages[w.s.Choose("signer-outage-len", len(w.cfg.SignerOutages))].D())
	w.tally["signer-outage"]++
	return true
}

// clock is the worker's wall clock: virtual time plus its skew. Reading it
// is an interaction like any other, with its own yield points.
type clock struct{ a *actor }

func (c clock) Now() time.Time {
	c.a.point()
	t := c.a.w.s.Now().Add(c.a.skew)
	c.a.pointAfter()
	return t
}
