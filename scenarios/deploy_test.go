package scenarios

import (
	"testing"
)

// Goal: the deploys world rolls its new release out as a rolling update
// does: the deploy fires, the old release's workers are stopped, workers
// of both releases build envelopes in one run, each build is recorded with
// its own release's limits (the world's menu, never the core's
// configuration), and a rebuild under the new release meets the old
// release's envelopes. The real core keeps every invariant meanwhile.
func TestDeployRollsOut(t *testing.T) {
	cfg := Deploys()
	menu := map[[2]int64]bool{{cfg.Sluice.FeeLimit, cfg.Sluice.FeeLimitMax}: true}
	for _, r := range cfg.Deploy.Releases {
		menu[[2]int64{r.FeeLimit, r.FeeLimitMax}] = true
	}
	var deployed, stopped, mixed, across int
	for seed := uint64(1); seed <= 30; seed++ {
		res := Run(cfg, seed, Options{keepSnapshot: true})
		if len(res.Violations) > 0 {
			t.Fatalf("seed %d: %v", seed, res.Violations)
		}
		for _, tl := range res.Tally {
			switch tl.Kind {
			case "deploy":
				deployed += tl.Count
			case "deploy-stop":
				stopped += tl.Count
			}
		}
		releases := map[[2]int64]bool{}
		world := [2]int64{cfg.Sluice.FeeLimit, cfg.Sluice.FeeLimitMax}
		var deployedLim [2]int64
		d := res.Snapshot.Deployed
		for _, w := range res.Snapshot.Writes {
			if !w.Built {
				continue
			}
			lim := [2]int64{w.FeeFloor, w.FeeCeiling}
			if !menu[lim] {
				t.Fatalf("seed %d: %s built %s under limits %v, not the world's nor a release of its menu", seed, w.Proc, w.Txid.Short(), lim)
			}
			releases[lim] = true
			// The checkers' list of the new release's workers and the
			// limits each build was recorded with must agree: the old
			// release's at the world's limits, the new one's at one pair.
			switch {
			case d == nil || !d.Procs[w.Proc]:
				if lim != world {
					t.Fatalf("seed %d: %s, of the world's release, built %s under limits %v", seed, w.Proc, w.Txid.Short(), lim)
				}
			case deployedLim == [2]int64{}:
				deployedLim = lim
			case lim != deployedLim:
				t.Fatalf("seed %d: the deployed release's workers built under limits %v and %v", seed, deployedLim, lim)
			}
		}
		if len(releases) > 1 {
			mixed++
		}
		if res.Coverage["deploy:rebuild-across"] > 0 {
			across++
		}
	}
	if deployed == 0 || stopped == 0 || mixed == 0 || across == 0 {
		t.Fatalf("over 30 seeds: %d deploys, %d workers stopped by one, %d seeds built under two releases, %d rebuilt across one; want each above 0", deployed, stopped, mixed, across)
	}
	t.Logf("over 30 seeds: %d deploys, %d workers stopped by one, %d seeds built under two releases, %d rebuilt across one", deployed, stopped, mixed, across)
}
