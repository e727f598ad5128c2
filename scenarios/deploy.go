package scenarios

import (
	"fmt"
	"slices"

	"sluicesim/model"
	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// Deploy is a rolling deploy of a new release of the workers, once in a run
// (Config.Deploy). At a moment chosen from At the world starts every
// worker, from then on, with one of Releases (chosen on the tape too), and
// stops the workers still running the old release one by one, a gap from
// Gaps apart, as a rolling update replaces one pod at a time: each is
// stopped as SIGTERM stops cmd/sluice (its context cancelled), finishes
// its tick and restarts after a restart delay, under the new release. For
// a while old and new workers run side by side, and a row one release
// built is rebuilt, parked or confirmed by the other.
//
// A release differs from the world's settings in what a row carries from
// one release to the next: its fee limits (a rebuild starts from the row's
// earlier envelope's), its rebuild budget (the row counts its builds) and
// its park limit (the row counts its parks). Each worker's decisions are
// judged by its own release's settings (model.Snapshot.Deployed), and the
// release's numbers come from this menu, never from the configuration the
// core was handed.
type Deploy struct {
	At       []Duration
	Gaps     []Duration
	Releases []Release
}

// Release is a deployed release's settings: its fee limits, in sun
// (sluice.Config's FeeLimit and FeeLimitMax), and, where set, its stuck
// policy's rebuild budget and its park limit (0: the world's).
type Release struct {
	FeeLimit, FeeLimitMax int64
	Rebuilds              int `json:",omitempty"`
	ParkLimit             int `json:",omitempty"`
}

func (d *Deploy) validate(world string) error {
	if d == nil {
		return nil
	}
	if len(d.At) == 0 || len(d.Gaps) == 0 || len(d.Releases) == 0 {
		return fmt.Errorf("world %s: a Deploy needs At, Gaps and Releases menus", world)
	}
	for _, r := range d.Releases {
		switch {
		case r.FeeLimit <= 0 || r.FeeLimitMax < r.FeeLimit:
			return fmt.Errorf("world %s: deployed release's FeeLimit %d must be positive and at most its FeeLimitMax %d", world, r.FeeLimit, r.FeeLimitMax)
		case r.Rebuilds < 0 || r.ParkLimit < 0:
			return fmt.Errorf("world %s: deployed release's Rebuilds %d and ParkLimit %d must not be negative (0 keeps the world's)", world, r.Rebuilds, r.ParkLimit)
		}
	}
	return nil
}

// release is one release a run's workers run: the settings the core is
// handed (conf), and the fee limits the checkers hold its envelopes to
// (floor and ceiling), taken from the world as named for release 0 and
// from the deploy's menu for release 1, never from conf.
type release struct {
	conf        sluice.Config
	floor, ceil int64
	started     bool // release 1 only: the deploy has begun
}

// releaseNow is the release a worker started now runs: the deployed one
// once the deploy has begun.
func (w *world) releaseNow() int {
	if w.rollout[1].started {
		return 1
	}
	return 0
}

// deployLoop is the deploy's process: it waits for the chosen moment,
// makes the chosen release the one workers start with, and stops the old
// release's workers one by one.
func (w *world) deployLoop(p *sim.Proc) {
	d := w.cfg.Deploy
	p.Sleep(d.At[w.s.Choose("deploy-at", len(d.At))].D())
	r := d.Releases[w.s.Choose("deploy-release", len(d.Releases))]
	conf := w.cfg.Sluice
	conf.FeeLimit, conf.FeeLimitMax = r.FeeLimit, r.FeeLimitMax
	if r.Rebuilds > 0 {
		conf.Stuck.Rebuilds = r.Rebuilds
	}
	if r.ParkLimit > 0 {
		conf.ParkLimit = r.ParkLimit
	}
	w.rollout[1] = release{conf: conf, floor: r.FeeLimit, ceil: r.FeeLimitMax, started: true}
	w.deployed = &model.Deployment{Procs: map[string]bool{}, Rebuilds: r.Rebuilds, ParkLimit: r.ParkLimit}
	w.tally["deploy"]++
	if w.s.Tracing() {
		w.s.Event(fmt.Sprintf("deploy: release 1 (FeeLimit %g TRX, FeeLimitMax %g TRX, Rebuilds %d, ParkLimit %d) rolls out",
			float64(r.FeeLimit)/1e6, float64(r.FeeLimitMax)/1e6, conf.Stuck.Rebuilds, conf.ParkLimit))
	}
	for slot := range w.incarnation {
		if slot > 0 {
			p.Sleep(d.Gaps[w.s.Choose("deploy-gap", len(d.Gaps))].D())
		}
		// A worker already stopped or crashed restarts under the new
		// release anyway; one that restarted since the deploy runs it.
		if a := w.incarnation[slot]; a != nil && a.release == 0 && a.stop != nil && !a.p.Dead() {
			a.stop()
			a.stop = nil
			w.tally["deploy-stop"]++
			w.fact(model.Fact{Kind: model.FactStop})
		}
	}
}

// builtUnder is an envelope's builder's release and the envelope's fee
// limit.
type builtUnder struct {
	release int
	fee     int64
}

// countBuild counts, for coverage, a worker's build of env (retiring old,
// if it is a rebuild) in a world that deploys: a rebuild by the new
// release of the old release's envelope, and among those one whose fee
// limit the new release's limits move.
func (a *actor) countBuild(env *sluice.Envelope, old tron.Txid) {
	w := a.w
	if w.builtUnder == nil {
		return
	}
	w.builtUnder[env.Txid] = builtUnder{a.release, env.Raw.FeeLimit}
	prev, ok := w.builtUnder[old]
	if !ok || prev.release != 0 || a.release != 1 {
		return
	}
	w.cov[covDeployRebuild]++
	if r := &w.rollout[1]; prev.fee < r.floor || prev.fee > r.ceil {
		w.cov[covDeployLimits]++
	}
}

// deploysSome reports whether c deploys and one of its releases is keep's.
func deploysSome(c Config, keep func(Release) bool) bool {
	return c.Deploy != nil && slices.ContainsFunc(c.Deploy.Releases, keep)
}

// countDeployedWrite counts, for coverage, a write that landed by a worker
// of the deployed release on a row (as the write left it) that carries more
// rebuilds than that release's budget, or more parks than its limit: only
// the old release can have put them there.
func (a *actor) countDeployedWrite(row *sluice.Operation) {
	d := a.w.deployed
	if a.release != 1 || d == nil {
		return
	}
	if d.Rebuilds > 0 && row.Builds-1 > d.Rebuilds {
		a.w.cov[covDeployOverBudget]++
	}
	if d.ParkLimit > 0 && row.Parks > d.ParkLimit {
		a.w.cov[covDeployOverParks]++
	}
}
