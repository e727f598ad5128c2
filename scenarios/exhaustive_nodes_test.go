package scenarios

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"sluicesim/model"
	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// The two bound sets of exhaustive search on pairnodes. Neither needs a
// crash, a pause or a preemption; each is the smallest that finds its
// mutant (TestTwoNodeBoundsAreTight).
//
// resendBounds: one lie (the bandwidth refusal), one lost gossip hop (so
// that node 1 never hears of the transaction node 0 took) and two calls
// routed to node 1 (the lookup that says unknown and the re-send it
// refuses).
func resendBounds() ExhaustiveBounds {
	b := DefaultExhaustiveBounds()
	b.Crashes, b.Preemptions = 0, 0
	b.Lies, b.GossipLosses, b.Routes = 1, 1, 2
	return b
}

// lagBounds: node 1 falls behind twice (20 blocks, then 60) and three calls
// go to it: the solid block and the lookup that make the worker wait
// another minute for solidity, and the later lookup that says unknown for a
// transaction below node 0's solid block.
func lagBounds() ExhaustiveBounds {
	b := DefaultExhaustiveBounds()
	b.Crashes, b.Preemptions = 0, 0
	b.Routes, b.Lags = 3, 2
	return b
}

// Goal: within both bound sets exhaustive search on pairnodes completes
// with the real core green, and it really explored the two-node world:
// schedules where a call reached node 1, where node 1 fell behind, where
// gossip was lost and where the node refused for bandwidth, not just the
// default schedule many times.
func TestExhaustiveTwoNodesRealCoreGreen(t *testing.T) {
	for _, c := range []struct {
		name   string
		bounds ExhaustiveBounds
		// want are the kinds of schedule the search must have reached.
		want []string
	}{
		{"resend bounds", resendBounds(), []string{"routed", "gossip-lost", "refused-for-bandwidth"}},
		{"lag bounds", lagBounds(), []string{"routed", "node-lag"}},
	} {
		seen := map[string]int{}
		res, err := exhaust(PairNodes(), c.bounds, nil, func(r *Result) {
			for _, k := range twoNodeShape(r) {
				seen[k]++
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%s: %d schedules (%d cut short), reached %v", c.name, res.Stats.Schedules, res.Stats.Pruned, seen)
		if !res.Stats.Complete || res.Violations != 0 {
			t.Errorf("%s: %+v with %d violating schedules, want complete and green", c.name, res.Stats, res.Violations)
			if res.FirstFailure != nil {
				t.Errorf("%s: first failure: %v", c.name, res.FirstFailure.Violations)
			}
		}
		for _, k := range c.want {
			if seen[k] == 0 {
				t.Errorf("%s: no schedule %s: the search did not branch where the two-node bugs live", c.name, k)
			}
		}
	}
}

// twoNodeShape names what a run did that only a two-node world can: a
// broadcast reached node 1 ("routed"; lookups leave no wire record, but a
// search that routes anything routes broadcasts too), node 1 fell behind,
// a gossip hop was lost, a node refused for bandwidth.
func twoNodeShape(r *Result) []string {
	var out []string
	for _, w := range r.Snapshot.Wire {
		if w.Node == 1 && !slices.Contains(out, "routed") {
			out = append(out, "routed")
		}
		if w.Answer == string(tron.CodeBandwidthError) && !slices.Contains(out, "refused-for-bandwidth") {
			out = append(out, "refused-for-bandwidth")
		}
	}
	for _, tl := range r.Tally {
		if (tl.Kind == "node-lag" || tl.Kind == "chain-gossip-lost") && tl.Count > 0 {
			out = append(out, map[string]string{"node-lag": "node-lag", "chain-gossip-lost": "gossip-lost"}[tl.Kind])
		}
	}
	return out
}

// Goal (issue 15): exhaustive search on the two-node world finds
// resend-reject-is-terminal and proof-from-lagging-node, each first
// failing schedule is the two-node bug it is meant to be (checked against
// the chain's ground truth, not the trace's text), and its trace replays to
// the same violations.
func TestExhaustiveFindsTwoNodeMutants(t *testing.T) {
	for _, c := range []struct {
		mutant     string
		bounds     ExhaustiveBounds
		invariants []string // among the first failure's violations
		shape      func(t *testing.T, r *Result)
	}{
		{"resend-reject-is-terminal", resendBounds(), []string{"at-most-once", "conservation", "progress"}, refusedByTheNodeThatNeverSawIt},
		{"proof-from-lagging-node", lagBounds(), []string{"at-most-once", "conservation", "audit-log"}, provenDeadOnTheLaggingNode},
	} {
		cfg := PairNodes()
		cfg.Mutant = c.mutant
		b := c.bounds
		b.StopAtFirst = true
		res, err := Exhaust(cfg, b, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.mutant, err)
		}
		first := res.FirstFailure
		if first == nil {
			t.Errorf("%s: not found (%+v)", c.mutant, res.Stats)
			continue
		}
		t.Logf("%s: found at schedule %d (%d cut short)", c.mutant, res.Stats.Schedules, res.Stats.Pruned)
		for _, inv := range c.invariants {
			if !violates(first, inv) {
				t.Errorf("%s: violations %v, want %s among them", c.mutant, first.Violations, inv)
			}
		}
		c.shape(t, first)

		tr, err := sim.ReadTrace(bytes.NewReader(first.Trace.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		again, err := Replay(tr)
		if err != nil {
			t.Fatalf("%s: replay: %v", c.mutant, err)
		}
		if got, want := invariantsOf(again), invariantsOf(first); !slices.Equal(got, want) {
			t.Errorf("%s: the replay violates %v, the search's run %v", c.mutant, got, want)
		}
	}
}

// refusedByTheNodeThatNeverSawIt: node 0 took the transaction, node 1
// refused its re-send for bandwidth without ever having held it (gossip
// lost it), the mutant failed the withdrawal, and the transaction node 0
// held landed anyway.
func refusedByTheNodeThatNeverSawIt(t *testing.T, r *Result) {
	t.Helper()
	s := r.Snapshot
	var refused *mocknode.WireAttempt
	for i, w := range s.Wire {
		if w.Answer == string(tron.CodeBandwidthError) {
			refused = &s.Wire[i]
			break
		}
	}
	if refused == nil {
		t.Fatalf("no broadcast was refused for bandwidth: %+v", s.Wire)
	}
	if refused.Node != 1 {
		t.Errorf("the refusal came from node %d, want node 1 (the node that never saw the transaction)", refused.Node)
	}
	took := false
	for _, w := range s.Wire {
		if w.Seq >= refused.Seq || w.Txid != refused.Txid {
			continue
		}
		if w.Node == 0 && w.Accepted {
			took = true
		}
		if w.Node == 1 && w.Accepted {
			t.Errorf("node 1 held %s before refusing it (wire %d): no node refuses for bandwidth what it holds", w.Txid.Short(), w.Seq)
		}
	}
	if !took {
		t.Errorf("node 0 never took %s before node 1 refused it", refused.Txid.Short())
	}
	if tally(r, "chain-gossip-lost") == 0 {
		t.Error("no gossip hop was lost: node 1 would have held the transaction")
	}
	if !included(s, refused.Txid) {
		t.Errorf("%s never landed: nothing was paid behind the failure", refused.Txid.Short())
	}
	if len(s.Operations) != 1 || s.Operations[0].State != sluice.Failed {
		t.Errorf("operations %+v, want the one withdrawal failed", s.Operations)
	}
}

// provenDeadOnTheLaggingNode: node 1 fell 20 blocks behind, then 60; the
// operation was rebuilt with a proof of death citing a solid block at or
// above the block that holds the txid it retired, while node 1 had not
// reached that block, so the unknown came from node 1; both txids paid.
func provenDeadOnTheLaggingNode(t *testing.T, r *Result) {
	t.Helper()
	var lags []int
	for _, f := range facts(t, r) {
		if f.Kind == model.FactNodeLag {
			lags = append(lags, f.N)
		}
	}
	if !slices.Equal(lags, []int{20, 60}) {
		t.Errorf("node 1's lags %v, want [20 60] (behind by about the solid lag, then past the transaction)", lags)
	}
	s := r.Snapshot
	rebuilt := false
	for _, e := range s.Events {
		if e.RetiredTxid.IsZero() || e.Evidence == nil {
			continue
		}
		rebuilt = true
		inc, ok := inclusion(s, e.RetiredTxid)
		if !ok {
			t.Errorf("retired %s is not on chain: the rebuild was sound", e.RetiredTxid.Short())
			continue
		}
		if e.Evidence.SolidNumber < inc.BlockNumber {
			t.Errorf("the proof cites solid #%d, below #%d that holds %s: not the cross-node bug", e.Evidence.SolidNumber, inc.BlockNumber, e.RetiredTxid.Short())
		}
		// The mutant forges the answering node's solid height, so the
		// evidence cannot say which node answered; the chain can. The
		// cited solid block puts node 0's head DefaultSolidLag above it,
		// and node 1, last put 60 blocks behind that, had not reached the
		// block: only its lookup could have said unknown.
		if last := lags[len(lags)-1]; inc.BlockNumber <= e.Evidence.SolidNumber+mocknode.DefaultSolidLag-int64(last) {
			t.Errorf("node 1 at %d blocks behind head #%d had seen #%d: the unknown did not come from a lagging node",
				last, e.Evidence.SolidNumber+mocknode.DefaultSolidLag, inc.BlockNumber)
		}
	}
	if !rebuilt {
		t.Error("no rebuild with a proof of death")
	}
	if n := len(s.Inclusions); n != 2 {
		t.Errorf("%d inclusions, want 2 (both txids paid)", n)
	}
}

// Goal: the bounds are the smallest that find each mutant: one fewer
// route, lag or lost gossip hop and the search completes without the
// money-moving failure. This is what the fault and choice classification
// must get right; a bound that stopped mattering would show here.
func TestTwoNodeBoundsAreTight(t *testing.T) {
	less := func(b ExhaustiveBounds, f func(*ExhaustiveBounds)) ExhaustiveBounds { f(&b); return b }
	for _, c := range []struct {
		name, mutant string
		bounds       ExhaustiveBounds
	}{
		{"re-send without a lost gossip hop", "resend-reject-is-terminal", less(resendBounds(), func(b *ExhaustiveBounds) { b.GossipLosses = 0 })},
		{"lagging proof with two routed calls", "proof-from-lagging-node", less(lagBounds(), func(b *ExhaustiveBounds) { b.Routes = 2 })},
		{"lagging proof with one lag", "proof-from-lagging-node", less(lagBounds(), func(b *ExhaustiveBounds) { b.Lags = 1 })},
	} {
		cfg := PairNodes()
		cfg.Mutant = c.mutant
		res, err := Exhaust(cfg, c.bounds, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%s: %d schedules, %d violating", c.name, res.Stats.Schedules, res.Violations)
		if !res.Stats.Complete || res.Violations != 0 {
			t.Errorf("%s: %+v, %d violating schedules; want complete and none", c.name, res.Stats, res.Violations)
		}
	}
	// With one routed call the re-send can still be refused by a node that
	// never saw it, when it is node 0 and node 1 holds the transaction
	// alone: the mutant fails the withdrawal, but node 1 is not the
	// producer and nothing is paid, so only progress catches it.
	cfg := PairNodes()
	cfg.Mutant = "resend-reject-is-terminal"
	b := less(resendBounds(), func(b *ExhaustiveBounds) { b.Routes, b.StopAtFirst = 1, true })
	res, err := Exhaust(cfg, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	switch first := res.FirstFailure; {
	case first == nil:
		t.Errorf("re-send with one routed call: nothing found (%+v), want a failure progress alone catches", res.Stats)
	case violates(first, "at-most-once") || !violates(first, "progress"):
		t.Errorf("re-send with one routed call: first failure violates %v, want progress alone", invariantsOf(first))
	}
}

func invariantsOf(r *Result) []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.Invariant+": "+v.Message)
	}
	return out
}

func tally(r *Result, kind string) int {
	for _, tl := range r.Tally {
		if tl.Kind == kind {
			return tl.Count
		}
	}
	return 0
}

func facts(t *testing.T, r *Result) []model.Fact {
	t.Helper()
	var out []model.Fact
	for _, e := range r.Trace.Events {
		var f model.Fact
		if err := json.Unmarshal(e.Data, &f); err != nil {
			t.Fatalf("event %q: %v", e.Text, err)
		}
		out = append(out, f)
	}
	return out
}

func inclusion(s *model.Snapshot, id tron.Txid) (mocknode.Inclusion, bool) {
	for _, in := range s.Inclusions {
		if in.Txid == id {
			return in, true
		}
	}
	return mocknode.Inclusion{}, false
}

func included(s *model.Snapshot, id tron.Txid) bool {
	_, ok := inclusion(s, id)
	return ok
}
