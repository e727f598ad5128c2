package model

import (
	"strings"
	"testing"

	"sluicesim/sluice"
)

// Goal: where a release was rolled out mid-run (Snapshot.Deployed), a
// worker's own decisions are judged by the settings of the release that
// worker ran, not the world's: a rebuild past the new release's smaller
// budget and a park past its lower limit are reported when a worker of
// that release made them, and only then; a failure on the new release's
// spent budget is justified when a worker of that release wrote it.
// Method: the clean run, with the writer of one decision named as the
// deployed release's worker (or another worker named instead).
func TestDeployedReleaseJudgesItsOwnWorkers(t *testing.T) {
	// lastRebuilder is the worker that made opPolicyCancel's last rebuild.
	lastRebuilder := func(b *builder) string {
		var w string
		for _, e := range b.s.Events {
			if e.OperationID == opID(opPolicyCancel) && e.To == sluice.Signing && !e.RetiredTxid.IsZero() {
				w = string(e.Worker)
			}
		}
		return w
	}
	lastWriter := func(b *builder, id sluice.OperationID) string {
		var w string
		for _, e := range b.s.Events {
			if e.OperationID == id {
				w = string(e.Worker)
			}
		}
		return w
	}
	for _, c := range []struct {
		name    string
		setup   func(b *builder)
		mention string // "" for a clean run
	}{
		{
			name: "rebuild past the deployed budget, by its worker",
			setup: func(b *builder) {
				b.s.Deployed = &Deployment{Procs: map[string]bool{lastRebuilder(b): true}, Rebuilds: buildsMax - 2}
			},
			mention: "is rebuild 2, but the stuck policy allows 1",
		},
		{
			name: "the same rebuild, by a worker of the world's release",
			setup: func(b *builder) {
				b.s.Deployed = &Deployment{Procs: map[string]bool{"someone else": true}, Rebuilds: buildsMax - 2}
			},
		},
		{
			name: "park past the deployed limit, by its worker",
			setup: func(b *builder) {
				b.s.ParkFor = 1 << 62
				twoParks(b)
				b.s.Deployed = &Deployment{Procs: map[string]bool{b.s.Parks[len(b.s.Parks)-1].Proc: true}, ParkLimit: 1}
			},
			mention: "its park number 2 in its life, past ParkLimit 1",
		},
		{
			// The world's budget is one build larger than the cancel's:
			// only the deployed release's smaller one was spent.
			name: "a cancel on the deployed release's spent budget",
			setup: func(b *builder) {
				b.s.BuildsMax++
				b.s.Stuck.Rebuilds++
				b.s.Deployed = &Deployment{Procs: map[string]bool{lastWriter(b, opID(opPolicyCancel)): true}, Rebuilds: buildsMax - 1}
			},
		},
		{
			name: "the same cancel, by a worker of the world's release",
			setup: func(b *builder) {
				b.s.BuildsMax++
				b.s.Stuck.Rebuilds++
				b.s.Deployed = &Deployment{Procs: map[string]bool{"someone else": true}, Rebuilds: buildsMax - 1}
			},
			mention: "of 4 builds",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			c.setup(b)
			got := Check(&b.s)
			if c.mention == "" {
				if len(got) > 0 {
					t.Fatalf("want a clean run, got:\n%s", describe(got))
				}
				return
			}
			for _, v := range got {
				if strings.Contains(v.Message, c.mention) {
					return
				}
			}
			t.Fatalf("want a violation mentioning %q, got:\n%s", c.mention, describe(got))
		})
	}
}
