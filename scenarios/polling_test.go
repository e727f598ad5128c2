package scenarios

import (
	"testing"

	"sluicesim/sluice/tron"
)

// Goal: paced-polling and audit-log's write-ahead and expiration clauses
// judge something in honest runs. They pass trivially on a world that
// records no lookups, or no head with its write-aheads and builds; these
// seeds must give them records to
// judge: lookups attributed to their operations, some txid looked up again
// by the same process (a pair the floor is held to), and write-aheads and
// builds each with the head its step was answered.
func TestPollingAndWriteAheadsAreJudged(t *testing.T) {
	for _, cfg := range []Config{Chaos(), Wire(), Nodes()} {
		var lookups, again, aheads, builds int
		for seed := uint64(1); seed <= 5; seed++ {
			snap := Run(cfg, seed, Options{keepSnapshot: true}).Snapshot
			type key struct {
				proc string
				txid tron.Txid
			}
			seen := map[key]bool{}
			for _, l := range snap.Lookups {
				if l.Op == "" {
					t.Fatalf("%s seed %d: a lookup of %s by %s names no operation", cfg.Name, seed, l.Txid.Short(), l.Proc)
				}
				k := key{l.Proc, l.Txid}
				if seen[k] {
					again++
				}
				seen[k] = true
			}
			lookups += len(snap.Lookups)
			for _, w := range snap.Writes {
				if w.Built {
					builds++
					if w.BuiltHead.IsZero() {
						t.Errorf("%s seed %d: build #%d by %s recorded with no head", cfg.Name, seed, w.Seq, w.Proc)
					}
				}
				if w.Ahead {
					aheads++
					if w.AheadHead.IsZero() {
						t.Errorf("%s seed %d: write-ahead #%d by %s recorded with no head", cfg.Name, seed, w.Seq, w.Proc)
					}
				}
			}
			if snap.PollFloor <= 0 || snap.MinValidity <= 0 || snap.ExpirationWindow <= 0 {
				t.Fatalf("%s seed %d: PollFloor %s, MinValidity %s, ExpirationWindow %s: none may be off in a world", cfg.Name, seed, snap.PollFloor, snap.MinValidity, snap.ExpirationWindow)
			}
		}
		t.Logf("%s seeds 1-5: %d lookups, %d of them again by the same process, %d write-aheads, %d builds", cfg.Name, lookups, again, aheads, builds)
		if lookups == 0 || again == 0 || aheads == 0 || builds == 0 {
			t.Errorf("%s seeds 1-5: %d lookups, %d again by the same process, %d write-aheads, %d builds: want some of each", cfg.Name, lookups, again, aheads, builds)
		}
	}
}
