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

// Goal: paced-polling's clause on sends after a shortage and one-writer's
// hand-back clause judge something in honest runs. They pass trivially on
// a world that records no sends, no refusals, no batches or no store
// failures; these seeds must give them some of each: sends with their
// operations, refusals for our shortages, builds with the claims and sends
// that came before them (a rebuild after a failed receipt is judged by
// them), claim batches marked where each began, and workers' store calls
// the world failed.
func TestSendsAndBatchesAreRecorded(t *testing.T) {
	for _, cfg := range []Config{Chaos(), Fees(), StoreFaults()} {
		var sends, refused, counted, batches, storeFailures int
		for seed := uint64(1); seed <= 5; seed++ {
			snap := Run(cfg, seed, Options{keepSnapshot: true}).Snapshot
			for _, d := range snap.Sends {
				if d.Op == "" {
					t.Fatalf("%s seed %d: a send of %s by %s names no operation", cfg.Name, seed, d.Txid.Short(), d.Proc)
				}
				if d.Answer == string(tron.CodeBandwidthError) || d.Answer == string(tron.CodeContractValidateError) {
					refused++
				}
			}
			sends += len(snap.Sends)
			for _, w := range snap.Writes {
				if w.Built && w.Claims > 0 && w.Sends > 0 {
					counted++
				}
			}
			for _, c := range snap.Claims {
				if c.First {
					batches++
				}
			}
			storeFailures += len(snap.StoreFailures)
		}
		t.Logf("%s seeds 1-5: %d sends, %d refused for a shortage, %d builds recorded with the claims and sends before them, %d claim batches, %d store failures of workers",
			cfg.Name, sends, refused, counted, batches, storeFailures)
		if sends == 0 || counted == 0 || batches == 0 {
			t.Errorf("%s seeds 1-5: %d sends, %d builds with their counts, %d batches: want some of each", cfg.Name, sends, counted, batches)
		}
		if cfg.Name == "chaos" && refused == 0 {
			t.Errorf("chaos seeds 1-5: no send refused for a shortage")
		}
		if cfg.Name == "storefaults" && storeFailures == 0 {
			t.Errorf("storefaults seeds 1-5: no worker's store call failed")
		}
	}
}
