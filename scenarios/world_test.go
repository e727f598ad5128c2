package scenarios

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sluicesim/model"
	"sluicesim/sim"
	"sluicesim/sluice"
)

// Goal: determinism is the product. A sample of seeds, each run twice with
// tracing, must give byte-identical traces.
func TestSameSeedSameTraceBytes(t *testing.T) {
	for _, cfg := range []Config{Chaos(), Pair()} {
		for seed := uint64(1); seed <= 8; seed++ {
			a := Run(cfg, seed, Options{Tracing: true})
			b := Run(cfg, seed, Options{Tracing: true})
			if ha, hb := a.Trace.Hash(), b.Trace.Hash(); ha != hb {
				t.Errorf("%s seed %d: trace hashes differ: %s vs %s", cfg.Name, seed, ha[:12], hb[:12])
			}
		}
	}
}

// Goal: tracing changes nothing about the run: the untraced run makes the
// same choices and reaches the same verdict.
func TestTracingDoesNotPerturb(t *testing.T) {
	cfg := Chaos()
	for seed := uint64(1); seed <= 4; seed++ {
		a, b := Run(cfg, seed, Options{}), Run(cfg, seed, Options{Tracing: true})
		if a.Steps != b.Steps || len(a.Violations) != len(b.Violations) || a.Virtual != b.Virtual {
			t.Errorf("seed %d: untraced %d steps %s, traced %d steps %s", seed, a.Steps, a.Virtual, b.Steps, b.Virtual)
		}
	}
}

// Goal: the real core keeps every invariant on a sample of chaos seeds,
// and the runs were actually hostile.
func TestChaosSampleIsGreenAndHostile(t *testing.T) {
	fired := map[string]int{}
	for seed := uint64(1); seed <= 30; seed++ {
		res := Run(Chaos(), seed, Options{})
		for _, v := range res.Violations {
			t.Errorf("seed %d: %s: %s", seed, v.Invariant, v.Message)
		}
		for _, k := range res.Tally {
			fired[k.Kind] += k.Count
		}
	}
	for _, k := range []string{"worker-crash", "worker-pause", "worker-pause-before-write", "node-lose-request",
		"node-accept-then-timeout", "node-expiration-lie", "client-duplicate", "client-hostile", "chain-missed-slot", "slow-call", "relay"} {
		if fired[k] == 0 {
			t.Errorf("fault %s never fired in 30 seeds", k)
		}
	}
}

// Goal: a trace replays on its own and reproduces every event; a trace
// whose tape is bent names the first divergence.
func TestReplayReproducesAndDetectsDivergence(t *testing.T) {
	res := Run(Pair(), 11, Options{Tracing: true})
	b := res.Trace.Bytes()
	tr, err := sim.ReadTrace(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Replay(tr)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !bytes.Equal(again.Trace.Bytes(), b) {
		t.Error("replayed trace differs from the original bytes")
	}

	bent, _ := sim.ReadTrace(bytes.NewReader(b))
	for i, c := range bent.Tape {
		if c.Kind == "sched" && i > 20 {
			bent.Tape[i].Pick = (c.Pick + 1) % c.N
			break
		}
	}
	if _, err := Replay(bent); err == nil || !strings.Contains(err.Error(), "diverged") {
		t.Errorf("replay of a bent tape = %v, want a divergence", err)
	}

	foreign, _ := sim.ReadTrace(bytes.NewReader(b))
	foreign.Header.Model = "worlds/0"
	if _, err := Replay(foreign); err == nil || !strings.Contains(err.Error(), "model") {
		t.Errorf("replay of another model's trace = %v, want a model mismatch", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, name := range WorldNames() {
		cfg, err := World(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("world %s: %v", name, err)
		}
	}
	bad := Chaos()
	bad.BroadcastLieP = 1.5
	if err := bad.Validate(); err == nil {
		t.Error("Validate accepted a probability of 1.5")
	}
	if _, err := World("nope"); err == nil {
		t.Error(`World("nope") succeeded`)
	}
}

// BenchmarkChaosSeed measures seeds per second on chaos through the
// scheduler (untraced, as exploration runs them).
func BenchmarkChaosSeed(b *testing.B) {
	cfg := Chaos()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Run(cfg, uint64(i+1), Options{})
	}
}

// BenchmarkJudge is what the model costs per chaos seed: every invariant
// and the outcome count over seed 1's snapshot (part of BenchmarkChaosSeed).
func BenchmarkJudge(b *testing.B) {
	snap := Run(Chaos(), 1, Options{keepSnapshot: true}).Snapshot
	b.ReportAllocs()
	for b.Loop() {
		model.Judge(snap, LinCheckTimeout)
	}
}

// BenchmarkChaosSeedTraced is the cost of a failing seed's re-run.
func BenchmarkChaosSeedTraced(b *testing.B) {
	cfg := Chaos()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Run(cfg, uint64(i+1), Options{Tracing: true})
	}
}

// Goal: the checker bites. A deliberately broken intake (check-then-insert)
// is caught within a handful of chaos seeds, under linearizable-intake or
// intake-uniqueness, while the real intake stays green on the same seeds.
func TestCheckThenInsertIsCaught(t *testing.T) {
	cfg := Chaos()
	cfg.Mutant = "check-then-insert"
	// The race needs two posts of one id to interleave just so: about one
	// chaos seed in twenty (19, 33 and 34 of the first 60).
	caught := map[string]bool{}
	for seed := uint64(1); seed <= 40 && !(caught["linearizable-intake"] && caught["intake-uniqueness"]); seed++ {
		for _, v := range Run(cfg, seed, Options{}).Violations {
			caught[v.Invariant] = true
		}
	}
	if !caught["linearizable-intake"] || !caught["intake-uniqueness"] {
		t.Errorf("check-then-insert over 40 seeds caught by %v, want linearizable-intake and intake-uniqueness", caught)
	}
	for seed := uint64(1); seed <= 10; seed++ {
		if vs := Run(Chaos(), seed, Options{}).Violations; len(vs) > 0 {
			t.Errorf("real intake, seed %d: %v", seed, vs)
		}
	}
}

// Goal: a mutant run's trace carries the mutant and replays as such.
func TestMutantTraceReplays(t *testing.T) {
	cfg := Chaos()
	cfg.Mutant = "check-then-insert"
	var res *Result
	for seed := uint64(1); seed <= 20 && (res == nil || !res.Failed()); seed++ {
		res = Run(cfg, seed, Options{Tracing: true})
	}
	if !res.Failed() {
		t.Fatal("check-then-insert should fail within 20 chaos seeds")
	}
	tr, err := sim.ReadTrace(bytes.NewReader(res.Trace.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Replay(tr)
	if err != nil || len(again.Violations) != len(res.Violations) {
		t.Errorf("replay: %v, %d violations, want %d", err, len(again.Violations), len(res.Violations))
	}
	bad := Chaos()
	bad.Mutant = "no-such-mutant"
	if err := bad.Validate(); err == nil {
		t.Error("Validate accepted an unknown mutant")
	}
}

// Goal: the stats a report draws on agree with the run's event log.
func TestStatsAgreeWithTheLog(t *testing.T) {
	res := Run(Chaos(), 2, Options{Tracing: true})
	confirmed := 0
	for _, op := range res.Snapshot.Operations {
		if op.State == sluice.Confirmed {
			confirmed++
		}
	}
	if len(res.Stats.ConfirmTimes) != confirmed || confirmed == 0 {
		t.Errorf("%d confirm times for %d confirmed operations", len(res.Stats.ConfirmTimes), confirmed)
	}
	total := 0
	for _, row := range res.Stats.Transitions {
		for _, n := range row {
			total += n
		}
	}
	if total != len(res.Snapshot.Events) {
		t.Errorf("transitions count %d events, the log has %d", total, len(res.Snapshot.Events))
	}
	if got := res.Stats.Transitions[sluice.Broadcast][sluice.Confirmed]; got != confirmed {
		t.Errorf("broadcast->confirmed hit %d times, want %d", got, confirmed)
	}
}

// Goal: a random-seed failure from the mutant table shrinks to at most a
// fifth of its steps, fails the same invariant, and the shrunk trace
// replays on its own.
func TestShrink(t *testing.T) {
	cfg := Chaos()
	cfg.Mutant = "send-before-write-ahead"
	// The first failing seed, found rather than pinned, so that the test
	// follows the world as it changes.
	var orig *Result
	for seed := uint64(1); seed <= 20 && (orig == nil || !orig.Failed()); seed++ {
		orig = Run(cfg, seed, Options{Tracing: true})
	}
	if !orig.Failed() {
		t.Fatal("no seed up to 20 of send-before-write-ahead fails")
	}
	tr, _ := sim.ReadTrace(bytes.NewReader(orig.Trace.Bytes()))
	sr, err := Shrink(tr, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sr.Best.Steps*5 > orig.Steps || !fails(sr.Best, orig.Violations[0].Invariant) {
		t.Errorf("shrunk to %d of %d steps, invariant kept %v", sr.Best.Steps, orig.Steps, fails(sr.Best, orig.Violations[0].Invariant))
	}
	back, _ := sim.ReadTrace(bytes.NewReader(sr.Best.Trace.Bytes()))
	if again, err := Replay(back); err != nil || !fails(again, sr.Invariant) {
		t.Errorf("the shrunk trace does not replay to the same violation: %v", err)
	}
	clean, _ := sim.ReadTrace(bytes.NewReader(Run(Pair(), 1, Options{Tracing: true}).Trace.Bytes()))
	if _, err := Shrink(clean, 10, nil); err == nil {
		t.Error("shrinking a passing trace succeeded")
	}
}

// Goal: bounded exhaustive search completes on small worlds with the real
// core green, and sleep sets cut the schedules explored about tenfold on
// the two-withdrawal world (measured 289 -> 17; the test asks for 8x so
// that a small change in the world does not make it flaky).
func TestExhaustiveSearch(t *testing.T) {
	b := DefaultExhaustiveBounds()
	b.Crashes, b.Lies, b.Pauses, b.Preemptions = 0, 0, 0, 1
	counts := map[bool]int{}
	for _, reduce := range []bool{true, false} {
		b.Reduce = reduce
		res, err := Exhaust(Pair2(), b, nil)
		if err != nil || !res.Stats.Complete || res.Violations != 0 {
			t.Fatalf("reduce=%v: %+v, %d violations, %v", reduce, res.Stats, res.Violations, err)
		}
		counts[reduce] = res.Stats.Schedules
	}
	if counts[true]*8 > counts[false] {
		t.Errorf("pair2: %d schedules with reduction, %d without; want at least 8x fewer", counts[true], counts[false])
	}
}

// BenchmarkExhaustivePair is one complete bounded search of pair (one lie,
// one preemption), with and without reduction: schedules per second and
// the explored counts, side by side.
func BenchmarkExhaustivePair(b *testing.B) {
	for _, reduce := range []bool{true, false} {
		b.Run(map[bool]string{true: "sleep-sets", false: "no-reduction"}[reduce], func(b *testing.B) {
			bounds := DefaultExhaustiveBounds()
			bounds.Crashes, bounds.Lies, bounds.Preemptions, bounds.Reduce = 0, 1, 1, reduce
			var st sim.ExhaustiveStats
			for b.Loop() {
				res, err := Exhaust(Pair(), bounds, nil)
				if err != nil {
					b.Fatal(err)
				}
				st = res.Stats
			}
			b.ReportMetric(float64(st.Schedules), "schedules")
			b.ReportMetric(float64(st.Schedules+st.Pruned)*float64(b.N)/b.Elapsed().Seconds(), "runs/s")
		})
	}
}

// Goal: exhaustive search on pair finds the write-ahead and token-fencing
// mutants, each with a trace that replays to the same verdict. The
// write-ahead mutant needs one crash (the taker-over finds the envelope
// too close to expiry, rebuilds, and sends a second transfer); the fencing
// mutant needs a pause and a crash (the zombie wakes after its rival
// rebuilt and crashed, and its stale write lands; one-writer sees the
// zombie write under its rival's token as soon as it happens).
func TestExhaustiveFindsMutants(t *testing.T) {
	pauseAndCrash := DefaultExhaustiveBounds()
	pauseAndCrash.Pauses, pauseAndCrash.Preemptions = 1, 0
	for _, c := range []struct {
		mutant    string
		bounds    ExhaustiveBounds
		invariant string
	}{
		{"send-before-write-ahead", DefaultExhaustiveBounds(), "at-most-once"},
		{"cas-ignores-token", pauseAndCrash, "one-writer"},
	} {
		cfg := Pair()
		cfg.Mutant = c.mutant
		b := c.bounds
		b.StopAtFirst = true
		res, err := Exhaust(cfg, b, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.mutant, err)
		}
		if res.FirstFailure == nil {
			t.Errorf("%s: not found (%+v)", c.mutant, res.Stats)
			continue
		}
		t.Logf("%s: found after %d schedules (%d cut short)", c.mutant, res.Stats.Schedules, res.Stats.Pruned)
		if !violates(res.FirstFailure, c.invariant) {
			t.Errorf("%s: violations %v, want %s among them", c.mutant, res.FirstFailure.Violations, c.invariant)
		}
		tr, err := sim.ReadTrace(bytes.NewReader(res.FirstFailure.Trace.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		again, err := Replay(tr)
		if err != nil {
			t.Fatalf("%s: replay: %v", c.mutant, err)
		}
		if !violates(again, c.invariant) {
			t.Errorf("%s: the replay does not violate %s: %v", c.mutant, c.invariant, again.Violations)
		}
	}
}

func violates(r *Result, invariant string) bool {
	for _, v := range r.Violations {
		if v.Invariant == invariant {
			return true
		}
	}
	return false
}

// Goal: the reduction loses no outcome. Sleep sets skip only schedules
// that reorder commuting steps, so a reduced search must reach every
// history the full search reaches: each operation's event log (who moved
// it, under which token, when, with which txid) and what went on the wire.
// A footprint that leaves out an access would make steps look commuting
// that are not, and some history would go missing here; this test found
// one (the workers' random streams drawn from the world's data stream in
// their first steps, so the order in which they started mattered).
//
// Under a preemption bound the reduced search may need more preemptions
// than the bound allows for a class's representative (see sim.Exhaustive),
// so the reduced side runs without a bound except where the bounded
// searches were measured to agree.
func TestReductionKeepsEveryHistory(t *testing.T) {
	for _, c := range []struct {
		name       string
		cfg        Config
		crashes    int
		lies       int
		reducedPre int // the reduced search's preemption bound
	}{
		{"pair, no faults, unbounded reduced", Pair(), 0, 0, sim.NoPreemptionBound},
		// Workers polling every second claim at the instant the insert
		// lands: a claim must not commute with a write that makes a row
		// claimable.
		{"pair polling every second, unbounded reduced", pollEverySecond(Pair()), 0, 0, sim.NoPreemptionBound},
		{"pair, 1 crash", Pair(), 1, 0, 1},
		{"pair, 1 lie", Pair(), 0, 1, 1},
	} {
		seen := map[bool]map[string]bool{}
		for _, reduce := range []bool{false, true} {
			b := DefaultExhaustiveBounds()
			b.Crashes, b.Lies, b.Preemptions, b.Reduce = c.crashes, c.lies, 1, reduce
			if reduce {
				b.Preemptions = c.reducedPre
			}
			seen[reduce] = map[string]bool{}
			res, err := exhaust(c.cfg, b, nil, func(r *Result) { seen[reduce][history(r.Snapshot)] = true })
			if err != nil {
				t.Fatalf("%s reduce=%v: %v", c.name, reduce, err)
			}
			if !res.Stats.Complete {
				t.Fatalf("%s reduce=%v: incomplete: %+v", c.name, reduce, res.Stats)
			}
		}
		missing := 0
		for h := range seen[false] {
			if !seen[true][h] {
				missing++
				if testing.Verbose() {
					t.Logf("%s: missing with reduction:\n%s", c.name, h)
				}
			}
		}
		t.Logf("%s: %d distinct histories without reduction, %d with", c.name, len(seen[false]), len(seen[true]))
		if missing > 0 {
			t.Errorf("%s: %d of the %d histories the full search reached are missing from the reduced search", c.name, missing, len(seen[false]))
		}
	}
}

func pollEverySecond(c Config) Config {
	c.IdlePoll = Duration(time.Second)
	return c
}

// history renders what a run did, operation by operation (steps of
// different operations commute, so their global interleaving is not part
// of it).
func history(s *model.Snapshot) string {
	per := map[sluice.OperationID][]string{}
	for _, e := range s.Events {
		per[e.OperationID] = append(per[e.OperationID], fmt.Sprintf("%s>%s t%d %s @%s %s x%s", e.From, e.To, e.Token, e.Worker, e.At.Format(time.TimeOnly), e.Txid.Short(), e.RetiredTxid.Short()))
	}
	wire := map[string][]string{}
	for _, a := range s.Wire {
		wire[a.Txid.Short()] = append(wire[a.Txid.Short()], fmt.Sprintf("%s@%s:%v", a.Worker, a.At.Format(time.TimeOnly), a.Fault))
	}
	var out []string
	for id, evs := range per {
		out = append(out, string(id)+": "+strings.Join(evs, ", "))
	}
	for tx, as := range wire {
		out = append(out, "wire "+tx+": "+strings.Join(as, ", "))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// Goal: a calm run pays every valid withdrawal, and says so; a core that
// pays nobody (every envelope unusable) fails on progress, although it
// keeps every safety invariant.
func TestCalmConfirmsEverything(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		res := Run(Calm(), seed, Options{})
		for _, v := range res.Violations {
			t.Errorf("calm seed %d: %s", seed, v)
		}
		o := res.Outcomes
		if o.Requested != Calm().Withdrawals || o.Confirmed != o.Requested || o.Accepted != o.Requested {
			t.Errorf("calm seed %d: outcomes %s, want all %d confirmed", seed, o, Calm().Withdrawals)
		}
	}
	cfg := Calm()
	cfg.Mutant = "unusable-envelope"
	res := Run(cfg, 1, Options{})
	if !violates(res, "progress") {
		t.Errorf("unusable-envelope on calm: violations %v, want progress", res.Violations)
	}
	for _, v := range res.Violations {
		if v.Invariant != "progress" {
			t.Errorf("unusable-envelope on calm also broke %s: the planted bug moves no money, only progress can see it", v)
		}
	}
	if res.Outcomes.Confirmed != 0 || res.Outcomes.Failed != res.Outcomes.Requested {
		t.Errorf("unusable-envelope on calm: outcomes %s, want every withdrawal failed", res.Outcomes)
	}
}

// Goal: bugs that are wrong in a self-consistent way (the code agrees with
// itself, so a checker that computed its expectations with it would pass)
// are caught by the independent oracle: a wrong amount scale in the parser,
// a request hash that leaves out the recipient, a GET that shows another
// operation's history, a worker that adopts the current holder's token.
func TestOracleCatchesSelfConsistentBugs(t *testing.T) {
	for _, c := range []struct {
		mutant    string
		invariant string
		seedsMax  uint64
	}{
		{"amount-scale", "conservation", 1},
		{"amount-scale", "intake-uniqueness", 1},
		{"hash-ignores-recipient", "intake-uniqueness", 5},
		{"history-of-another", "linearizable-intake", 5},
		{"adopts-holder-token", "one-writer", 100},
	} {
		cfg := Chaos()
		cfg.Mutant = c.mutant
		caught := uint64(0)
		for seed := uint64(1); seed <= c.seedsMax && caught == 0; seed++ {
			if violates(Run(cfg, seed, Options{}), c.invariant) {
				caught = seed
			}
		}
		if caught == 0 {
			t.Errorf("%s: no %s violation within %d chaos seeds", c.mutant, c.invariant, c.seedsMax)
		} else {
			t.Logf("%s: %s at seed %d", c.mutant, c.invariant, caught)
		}
	}
}
