package sluice_test

// The failure matrix's stories live in testdata/*.txt as scripts (see
// script_test.go), with their trace as the golden output. The two stories
// left here are loops whose point is an invariant checked at every step, for
// hundreds of steps (and, for the deadline, for several margins): as scripts
// they would be hundreds of identical commands, and a trace of every step
// would bury the one line that matters.

import (
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

const settleBudget = 30 * time.Minute

// checkEvidence re-audits a rebuild's evidence against the chain.
func (w *world) checkEvidence(e sluice.Event) {
	w.t.Helper()
	if e.Evidence == nil {
		w.t.Fatalf("rebuild event #%d carries no evidence", e.Seq)
	}
	for _, bad := range w.auditEvidence(e) {
		w.t.Error(bad)
	}
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
