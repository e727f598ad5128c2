package scenarios

import (
	"context"
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
		a.event("SLOW answer %s", d)
		a.p.Sleep(d)
		a.p.ExitIfDead()
	}
	if a.worker && w.faulty() && (!w.cfg.FaultsAtWork || a.busy && after) && w.s.Chance("fault", w.cfg.WorkerFaultP) {
		switch w.s.Choose("fault-kind", 3) {
		case 0:
			w.tally["worker-crash"]++
			if w.s.Tracing() {
				w.s.Event("CRASH")
			}
			w.restartLater(a)
			a.p.Crash()
		case 1:
			d := w.cfg.Pauses[w.s.Choose("pause-len", len(w.cfg.Pauses))].D()
			w.tally["worker-pause"]++
			if w.s.Tracing() {
				w.s.Event(fmt.Sprintf("PAUSE %s", d))
			}
			a.p.Sleep(d)
			if w.s.Tracing() {
				w.s.Event("wakes from pause")
			}
		case 2:
			j := w.cfg.ClockJumps[w.s.Choose("jump-len", len(w.cfg.ClockJumps))].D()
			a.skew += j
			w.tally["clock-jump"]++
			if w.s.Tracing() {
				w.s.Event(fmt.Sprintf("wall clock jumps %s (skew now %s)", j, a.skew))
			}
		}
	}
	if a.server && w.faulty() && w.s.Chance("server-stall", w.cfg.ServerStallP) {
		d := w.cfg.ServerStalls[w.s.Choose("stall-len", len(w.cfg.ServerStalls))].D()
		w.tally["server-stall"]++
		a.event("STALL %s", d)
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
	a.event("PAUSE before write %s", d)
	a.p.Sleep(d)
	a.event("wakes from pause")
	a.p.ExitIfDead()
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

func (a *actor) event(format string, args ...any) {
	if a.w.s.Tracing() {
		a.w.s.Event(fmt.Sprintf(format, args...))
	}
}

// storeView wraps sluice.Store.
type storeView struct{ a *actor }

func (s storeView) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	s.a.point()
	before := s.a.claimable(op.ID)
	row, created, err := s.a.w.store.Insert(ctx, op)
	s.a.wroteRow(op.ID, before)
	s.a.event("insert %s created=%v%s", s.a.w.name(op.ID), created, errSuffix(err))
	s.a.pointAfter()
	return row, created, err
}

func (s storeView) Get(ctx context.Context, id sluice.OperationID) (sluice.Operation, error) {
	s.a.point()
	row, err := s.a.w.store.Get(ctx, id)
	s.a.readRow(id)
	s.a.event("get %s %s%s", s.a.w.name(id), row.State, errSuffix(err))
	s.a.pointAfter()
	return row, err
}

func (s storeView) Claim(ctx context.Context, worker sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	s.a.point()
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
	for _, op := range ops {
		s.a.w.claims = append(s.a.w.claims, model.ClaimRecord{Op: op.ID, Token: op.Token, Proc: s.a.p.Name(), At: s.a.w.s.Now()})
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
		desc := ""
		for _, op := range ops {
			desc += fmt.Sprintf(" %s:%s/t%d", s.a.w.name(op.ID), op.State, op.Token)
		}
		for _, op := range ops {
			if old, ok := lapsed[op.ID]; ok {
				s.a.event("lease expired: %s held by %s (token=%d) taken over", s.a.w.name(op.ID), old.ClaimedBy, old.Token)
			}
		}
		s.a.event("claim%s%s", desc, errSuffix(err))
	}
	s.a.pointAfter()
	return ops, err
}

func (s storeView) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	s.a.point()
	s.a.pauseBeforeWrite()
	before := s.a.claimable(c.ID)
	row, err := s.a.w.store.CAS(ctx, c)
	s.a.wroteRow(c.ID, before)
	if err == nil {
		s.a.landed(c, row)
	}
	if s.a.w.s.Tracing() {
		extra := ""
		if c.Envelope != nil {
			extra += " txid=" + c.Envelope.Txid.Short()
		}
		if !c.RetiredTxid.IsZero() {
			extra += " retired=" + c.RetiredTxid.Short()
		}
		s.a.event("cas %s %s->%s token=%d%s%s", s.a.w.name(c.ID), c.From, c.To, c.Token, extra, errSuffix(err))
	}
	s.a.pointAfter()
	return row, err
}

func (s storeView) Release(ctx context.Context, id sluice.OperationID, token sluice.FencingToken, after time.Duration) error {
	s.a.point()
	before := s.a.claimable(id)
	err := s.a.w.store.Release(ctx, id, token, after)
	s.a.wroteRow(id, before)
	if err == nil {
		// A stale release changes nothing in the store, and ends nothing in
		// one-writer's reckoning either: it names a token whose lease a
		// later claim already replaced.
		s.a.w.releases = append(s.a.w.releases, model.ReleaseRecord{Op: id, Token: token, Proc: s.a.p.Name(), At: s.a.w.s.Now()})
	}
	s.a.event("release %s token=%d after=%s%s", s.a.w.name(id), token, after, errSuffix(err))
	s.a.pointAfter()
	return err
}

func (s storeView) Events(ctx context.Context, id sluice.OperationID) ([]sluice.Event, error) {
	s.a.point()
	evs, err := s.a.w.store.Events(ctx, id)
	s.a.readRow(id)
	s.a.pointAfter()
	return evs, err
}

// landed records a write that the store accepted, as the world saw it: the
// event it appended, the token the row now carries, the process that made
// the call; and the envelope it stored, whose raw data audit-log re-derives
// a later rebuild's evidence from.
func (a *actor) landed(c sluice.Change, row sluice.Operation) {
	w := a.w
	w.writes = append(w.writes, model.WriteRecord{Seq: w.store.LastSeq(), Op: c.ID, Token: row.Token,
		Proc: a.p.Name(), At: w.s.Now(), Terminal: c.To.Terminal()})
	if c.Envelope != nil && !w.stored[c.Envelope.Txid] {
		w.stored[c.Envelope.Txid] = true
		w.envelopes = append(w.envelopes, row.Envelope)
	}
}

// node wraps the worker's mock node client.
type node struct {
	a     *actor
	inner tron.Node
}

func (n node) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	n.a.point()
	w := n.a.w
	id := tx.Txid()
	if _, ok := w.sent[id]; !ok {
		w.sent[id] = tx
	}
	res, err := n.inner.Broadcast(ctx, tx)
	if w.lostTxid == id {
		// The node lost this send; a peer may still carry it.
		w.lostTxid = tron.Txid{}
		w.dropped(id)
	}
	n.a.w.s.Touch("chain", true)
	if err != nil {
		n.a.event("broadcast %s -> %v", tx.Txid().Short(), err)
	} else {
		n.a.event("broadcast %s -> %s", tx.Txid().Short(), res.Code)
	}
	n.a.pointAfter()
	return res, err
}

func (n node) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	n.a.point()
	info, err := n.inner.Lookup(ctx, id)
	n.a.w.s.Touch("chain", false)
	if err != nil {
		n.a.event("lookup %s -> %v", id.Short(), err)
	} else {
		n.a.event("lookup %s -> %s #%d solid=%v %s", id.Short(), info.Status, info.BlockNumber, info.Solid, info.Receipt)
	}
	n.a.pointAfter()
	return info, err
}

func (n node) HeadBlock(ctx context.Context) (tron.Block, error) {
	n.a.point()
	b, err := n.inner.HeadBlock(ctx)
	n.a.w.s.Touch("chain", false)
	n.a.pointAfter()
	return b, err
}

func (n node) SolidBlock(ctx context.Context) (tron.Block, error) {
	n.a.point()
	b, err := n.inner.SolidBlock(ctx)
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
	if w.faulty() && w.s.Chance("signer-fail", w.cfg.SignerFailP) {
		// A remote signer (KMS, HSM) that times out or throttles: an
		// operating condition, never a reason to give up on a withdrawal.
		w.tally["signer-fail"]++
		s.a.event("signer fails")
		s.a.pointAfter()
		return nil, errSignerDown
	}
	sig, err := s.inner.Sign(ctx, raw)
	s.a.pointAfter()
	return sig, err
}

var errSignerDown = errors.New("signer: deadline exceeded (injected)")

// clock is the worker's wall clock: virtual time plus its skew. Reading it
// is an interaction like any other, with its own yield points.
type clock struct{ a *actor }

func (c clock) Now() time.Time {
	c.a.point()
	t := c.a.w.s.Now().Add(c.a.skew)
	c.a.pointAfter()
	return t
}

func errSuffix(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, sluice.ErrFenced):
		return " FENCED"
	}
	return " err=" + err.Error()
}
