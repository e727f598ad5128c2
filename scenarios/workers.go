package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"sluicesim/model"
	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// spawnWorker starts incarnation gen of worker slot. Its wall clock gets a
// skew chosen on the tape; its jitter comes from the data stream.
func (w *world) spawnWorker(slot, gen int) {
	name := fmt.Sprintf("w%d", slot+1)
	if gen > 0 {
		name = fmt.Sprintf("w%d.%d", slot+1, gen)
	}
	w.s.Spawn(name, func(p *sim.Proc) {
		a := &actor{w: w, p: p, worker: true, release: w.releaseNow()}
		if w.incarnation != nil {
			w.incarnation[slot] = a
		}
		if a.release == 1 {
			w.deployed.Procs[name] = true
		}
		if w.faulty() {
			a.skew = w.cfg.Skews[w.s.Choose("skew", len(w.cfg.Skews))].D()
			if a.skew != 0 {
				w.tally["clock-skew"]++
			}
		}
		// The worker's random stream is drawn from the world's data stream
		// here, in the worker's first step, so the order in which workers
		// start decides who gets which draw: the step touches the stream.
		w.s.Touch("data", true)
		var st sluice.Store = storeView{a}
		inner := w.node.Client(name)
		if w.cfg.Nodes > 1 {
			inner = w.net.Balancer(name, w.router(name))
		}
		if w.cfg.Wire {
			inner = w.overWire(a, name, inner)
		}
		a.node = node{a: a, inner: inner}
		if m, ok := mutant(w.cfg.Mutant); ok {
			if m.workerStore != nil {
				st = m.workerStore(a, st)
			}
			if m.workerNode != nil {
				a.node = m.workerNode(a, a.node)
			}
		}
		var sign tron.Signer = signer{a: a, inner: w.sign}
		if m, ok := mutant(w.cfg.Mutant); ok && m.workerSign != nil {
			sign = m.workerSign(sign)
		}
		worker := &sluice.Worker{
			ID: sluice.WorkerID(name),
			Pipeline: &sluice.Pipeline{
				Store: st, Node: a.node, Signer: sign,
				Clock: clock{a}, HotWallet: w.hot, Config: w.rollout[a.release].conf,
				Txids: w.txids,
			},
			Rand: rand.New(rand.NewPCG(w.data.Uint64(), uint64(slot))),
		}
		var observer sluice.Observer
		if w.meter != nil {
			// As cmd/sluice's workers: every step is counted. The world
			// takes its own count of the step's writes as it is reported.
			observer = stepObserver{a: a, inner: w.meter}
		}
		// Every world records the stuck policy's waits (waits.go).
		worker.Observer = waitObserver{a: a, inner: observer}
		ctx := w.ctx
		if w.cfg.GracefulStopP > 0 || w.cfg.Deploy != nil {
			// A cancel context under Background starts no goroutine
			// (nothing to watch above it): the run stays single-threaded.
			ctx, a.stop = context.WithCancel(w.ctx)
		}
		for {
			a.tickFailed = false
			rep, err := worker.Tick(ctx)
			w.ticks++
			if ctx.Err() != nil {
				// Stopped (maybeStop): like cmd/sluice's worker loop, it
				// ends whatever the tick said, and the world starts a new
				// incarnation later.
				w.restartLater(a)
				return
			}
			if errors.Is(err, errStoreDown) {
				// The store failed a call: like the real service, back off
				// and tick again; the next claim reads the rows afresh.
				p.Sleep(storeErrorPause)
				continue
			}
			if err == nil && a.tickFailed {
				// Tick's contract: a store failure other than fencing is
				// returned. One swallowed leaves the loop nothing to back
				// off from, cmd/sluice nothing to log, an alert nothing to
				// fire on, while the work does not move.
				panic(fmt.Sprintf("%s: Tick answered no error after the store failed one of its calls", name))
			}
			if err != nil {
				// Fencing is handled inside Tick; anything else is a bug in
				// the core or the store, and a failure of the run.
				panic(fmt.Sprintf("%s: Tick: %v", name, err))
			}
			if rep.Fenced {
				w.fact(model.Fact{Kind: model.FactFencedStop})
			}
			if rep.Claimed == 0 {
				p.Sleep(w.cfg.IdlePoll.D())
			}
		}
	})
}

// storeErrorPause is how long a worker backs off after a store error, as
// cmd/sluice's worker loop does.
const storeErrorPause = time.Second

// restartLater brings a crashed worker back as a fresh incarnation after a
// delay chosen on the tape. Its lease stays until it expires.
func (w *world) restartLater(a *actor) {
	var slot int
	fmt.Sscanf(a.p.Name(), "w%d", &slot)
	slot--
	delay := w.cfg.RestartDelays[w.s.Choose("restart-delay", len(w.cfg.RestartDelays))].D()
	w.gen[slot]++
	gen := w.gen[slot]
	w.s.Spawn(fmt.Sprintf("restart-w%d", slot+1), func(p *sim.Proc) {
		p.Sleep(delay)
		w.tally["worker-restart"]++
		w.spawnWorker(slot, gen)
	})
}
