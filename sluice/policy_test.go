package sluice_test

// The stuck policy is a pure function (seed 004), so every branch is reached
// by passing values: no node, no store, no sleeping. The cases follow the
// seed's list, mapped to TRON, where the one thing the policy may never do
// is act on a txid that is not proven dead.

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

var (
	sentAt = time.Date(2026, 9, 14, 12, 0, 0, 0, time.UTC)
	policy = sluice.StuckPolicy{RebuildAfter: 10 * time.Minute, CancelAfter: 2 * time.Hour, Rebuilds: 3}
)

// sentOp is an operation whose first envelope went out at sentAt, was
// accepted (state broadcast) and has built builds envelopes since.
func sentOp(builds int) sluice.Operation {
	return sluice.Operation{ID: "00000000-0000-4000-8000-000000000001", State: sluice.Broadcast,
		Builds: builds, FirstSentAt: sentAt}
}

// Goal: a txid no node was ever heard accepting (the row still in
// broadcasting) is not cancelled when the budget is spent, by time or by
// rebuilds: it goes to review.
func TestPolicyNeverAcceptedEscalates(t *testing.T) {
	for _, c := range []struct {
		name   string
		builds int
		waited time.Duration
	}{{"time spent", 1, 2 * time.Hour}, {"rebuilds spent", 4, 30 * time.Minute}} {
		op := sentOp(c.builds)
		op.State = sluice.Broadcasting
		ev := dead()
		ev.SolidTime = sentAt.Add(c.waited)
		d := policy.Decide(op, ev, sentAt.Add(c.waited))
		if d.Action != sluice.Escalate || !strings.Contains(d.Reason, "ever heard accepting") {
			t.Errorf("%s, never accepted: Decide = %s, want review saying no node accepted it", c.name, d)
		}
		op.State = sluice.Broadcast
		if d := policy.Decide(op, ev, sentAt.Add(c.waited)); d.Action != sluice.Cancel {
			t.Errorf("%s, accepted once: Decide = %s, want cancel", c.name, d)
		}
	}
}

// dead is evidence that proves death: a node that had seen the solid block
// did not know a txid whose expiration plus margin that block is past.
func dead() sluice.Evidence {
	return sluice.Evidence{Expiration: sentAt.Add(time.Minute), Margin: 30 * time.Second,
		SolidNumber: 500, SolidTime: sentAt.Add(2 * time.Minute), Lookup: tron.Unknown, LookupSolid: 500}
}

// alive is evidence that proves nothing: the solid block is not yet past
// the expiration plus margin.
func alive() sluice.Evidence {
	ev := dead()
	ev.SolidTime = sentAt.Add(time.Minute)
	return ev
}

func decide(t *testing.T, op sluice.Operation, ev sluice.Evidence, waited time.Duration, want sluice.Action) sluice.Decision {
	t.Helper()
	d := policy.Decide(op, ev, sentAt.Add(waited))
	if d.Action != want {
		t.Fatalf("Decide(builds=%d parks=%d, proves=%v, waited %s) = %s, want %s", op.Builds, op.Parks, ev.Proves(), waited, d, want)
	}
	if d.Waited != waited {
		t.Errorf("Waited = %s, want %s", d.Waited, waited)
	}
	if d.Rebuilds != op.Builds-1 {
		t.Errorf("Rebuilds = %d, want %d (builds %d)", d.Rebuilds, op.Builds-1, op.Builds)
	}
	if d.Reason == "" {
		t.Error("no reason: the person paged at night reads it")
	}
	return d
}

// Goal: a fresh withdrawal waits, proven dead or not: patience has not run
// out, and the decision says how long it has waited.
func TestPolicyFreshWaits(t *testing.T) {
	decide(t, sentOp(1), alive(), 5*time.Minute, sluice.Wait)
	d := decide(t, sentOp(1), dead(), 5*time.Minute, sluice.Wait)
	for _, n := range []string{"5m0s", "10m0s"} {
		if !strings.Contains(d.Reason, n) {
			t.Errorf("reason %q does not carry %s: the numbers behind the decision belong in it", d.Reason, n)
		}
	}
}

// Goal: past RebuildAfter with proof of death, rebuild; the reason says
// which rebuild of how many.
func TestPolicyPastRebuildAfterWithProofRebuilds(t *testing.T) {
	decide(t, sentOp(1), dead(), policy.RebuildAfter, sluice.Rebuild)
	d := decide(t, sentOp(2), dead(), 30*time.Minute, sluice.Rebuild)
	if !strings.Contains(d.Reason, "rebuild 2 of 3") {
		t.Errorf("reason %q does not say which rebuild of how many", d.Reason)
	}
}

// Goal: long past CancelAfter with proof, cancel (fail, release the hold),
// even with rebuilds left: the time budget ran out.
func TestPolicyLongPastCancels(t *testing.T) {
	d := decide(t, sentOp(1), dead(), policy.CancelAfter, sluice.Cancel)
	if !strings.Contains(d.Reason, "CancelAfter 2h0m0s") {
		t.Errorf("reason %q does not name the deadline", d.Reason)
	}
	decide(t, sentOp(2), dead(), 30*time.Hour, sluice.Cancel)
}

// Goal: rebuilt as often as allowed, cancel, well inside the time budget:
// the attempt budget ran out (seed: "cancelled because the attempt budget
// is gone, not the time budget").
func TestPolicyRebuiltAsOftenAsAllowedCancels(t *testing.T) {
	d := decide(t, sentOp(policy.Rebuilds+1), dead(), 30*time.Minute, sluice.Cancel)
	if !strings.Contains(d.Reason, "rebuilt 3 times, the policy allows 3") {
		t.Errorf("reason %q does not say the rebuilds are spent", d.Reason)
	}
	// One short of the budget still rebuilds.
	decide(t, sentOp(policy.Rebuilds), dead(), 30*time.Minute, sluice.Rebuild)
}

// Goal: an operation parked for operational trouble of ours, with either
// budget spent, goes to review instead of being cancelled: failing it would
// turn our shortage into the customer's failure.
func TestPolicyParkedThenExhaustedEscalates(t *testing.T) {
	op := sentOp(policy.Rebuilds + 1)
	op.Parks, op.ParkReason = 2, "first send refused by the node: BANDWITH_ERROR"
	d := decide(t, op, dead(), 30*time.Minute, sluice.Escalate)
	if !strings.Contains(d.Reason, "parked 2 times") || !strings.Contains(d.Reason, "BANDWITH_ERROR") {
		t.Errorf("reason %q does not say why it goes to review", d.Reason)
	}
	// Parked once, long ago: a transition since ended that spell and
	// cleared its reason, and the decision must not print an empty one.
	op = sentOp(1)
	op.Parks = 1
	d = decide(t, op, dead(), 3*time.Hour, sluice.Escalate)
	if !strings.Contains(d.Reason, "parked 1 times") || strings.Contains(d.Reason, "last: )") {
		t.Errorf("reason %q: want the park count and no empty last reason", d.Reason)
	}
	// Parked but with budget left: the parks change nothing yet.
	decide(t, op, dead(), 30*time.Minute, sluice.Rebuild)
	// And without proof, nothing but wait.
	decide(t, op, alive(), 3*time.Hour, sluice.Wait)
}

// Goal: the one rule TRON imposes: without proof of death, no decision but
// wait, whatever the operation (broadcasting or broadcast, parked or not),
// the evidence and the time. Checked over many generated inputs against the
// rule spelled here from TRON.md (proven below), not against
// Evidence.Proves alone: a policy that loosened the proof for some rows
// only (blind bugs 265 and 267: a broadcasting row, a parked one, taken as
// dead on a lagging node's "unknown") would agree with Proves and still
// rebuild a live txid. The generator must also reach every other action
// with proof, or the property would hold of a policy that never acts.
func TestPolicyNeverActsWithoutProof(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 16))
	dur := func(max time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(max))) }
	seen := map[sluice.Action]int{}
	for i := 0; i < 20_000; i++ {
		p := sluice.StuckPolicy{RebuildAfter: 1 + dur(time.Hour), Rebuilds: 1 + rng.IntN(sluice.RebuildsMax)}
		p.CancelAfter = p.RebuildAfter + 1 + dur(4*time.Hour)
		op := sluice.Operation{State: []sluice.State{sluice.Broadcasting, sluice.Broadcast}[rng.IntN(2)],
			Builds: rng.IntN(p.Rebuilds + 3), Parks: rng.IntN(3) * rng.IntN(40)}
		if op.Parks > 0 && rng.IntN(2) == 0 {
			op.ParkReason = "BANDWIDTH_ERROR" // parked now: a re-send refused
		}
		if rng.IntN(10) > 0 {
			op.FirstSentAt = sentAt.Add(-dur(time.Hour))
		}
		ev := sluice.Evidence{
			Expiration:  sentAt.Add(dur(2*time.Hour) - time.Hour),
			Margin:      dur(time.Minute),
			SolidNumber: rng.Int64N(1000),
			SolidTime:   sentAt.Add(dur(2*time.Hour) - time.Hour),
			Lookup:      []tron.Status{tron.Unknown, tron.Pending, tron.Included}[rng.IntN(3)],
			LookupSolid: rng.Int64N(1000),
		}
		if ev.Lookup == tron.Included {
			ev.Receipt = []string{"", tron.ReceiptSuccess, tron.ReceiptRevert, tron.ReceiptOutOfEnergy}[rng.IntN(4)]
			ev.BlockNumber = rng.Int64N(1000)
			ev.SeenSolid = rng.IntN(2) == 0
		}
		now := sentAt.Add(dur(8*time.Hour) - time.Hour)
		d := p.Decide(op, ev, now)
		seen[d.Action]++
		if d.Action != sluice.Wait && !proven(ev) {
			t.Fatalf("Decide(%+v, %+v, %s) = %s without proof of death (%s)", op, ev, now, d, ev)
		}
		if proven(ev) != ev.Proves() {
			t.Fatalf("Evidence.Proves(%+v) = %v; by TRON's rule %v", ev, ev.Proves(), proven(ev))
		}
		if d.Waited < 0 {
			t.Fatalf("Decide waited %s: negative", d.Waited)
		}
		if again := p.Decide(op, ev, now); again != d {
			t.Fatalf("Decide is not a function of its inputs: %s, then %s", d, again)
		}
	}
	for _, a := range []sluice.Action{sluice.Wait, sluice.Rebuild, sluice.Cancel, sluice.Escalate} {
		if seen[a] < 100 {
			t.Errorf("the generator reached %s %d times: too few for the property to mean much (%v)", a, seen[a], seen)
		}
	}
}

// proven is proof of death as TRON.md states it: the txid's own receipt
// failed in a block at or below the solid head and seen there, or the
// lookup node, as far as the solid head, does not know it and the solid
// time is past its expiration and the margin.
func proven(ev sluice.Evidence) bool {
	switch ev.Lookup {
	case tron.Included:
		failed := ev.Receipt != "" && ev.Receipt != tron.ReceiptSuccess // any contractResult but SUCCESS
		return failed && ev.SeenSolid && ev.BlockNumber > 0 && ev.BlockNumber <= ev.SolidNumber
	case tron.Unknown:
		return ev.LookupSolid >= ev.SolidNumber && ev.SolidTime.Compare(ev.Expiration.Add(ev.Margin)) >= 0
	}
	return false
}

// Goal: waiting is measured from the first send, not from the latest
// rebuild (or any other stamp on the row): a clock reset by every rebuild
// would make a rebuilt withdrawal immortal.
func TestPolicyWaitedFromTheFirstSend(t *testing.T) {
	op := sentOp(2)
	lastRebuild := sentAt.Add(policy.CancelAfter) // the rebuild was a moment ago
	op.UpdatedAt, op.CreatedAt = lastRebuild, sentAt.Add(-time.Minute)
	op.Envelope.Raw.Timestamp = lastRebuild.UnixMilli()
	now := lastRebuild.Add(time.Second)
	d := policy.Decide(op, dead(), now)
	if d.Waited != now.Sub(sentAt) || d.Action != sluice.Cancel {
		t.Fatalf("Decide = %s; want cancel after %s, the time since the first send", d, now.Sub(sentAt))
	}
}

// Goal: a sent row with no first-send time (one a release before the stamp
// wrote, or a backfill missed) measures no waiting: it is never cancelled
// or sent to review for time, however long ago the chain says it expired.
// Measured from the zero time, it would have waited centuries, and its
// first proof of death would fail a withdrawal the policy should rebuild.
func TestPolicyNoFirstSendTimeIsNoWaiting(t *testing.T) {
	for _, state := range []sluice.State{sluice.Broadcast, sluice.Broadcasting} {
		op := sentOp(1)
		op.State, op.FirstSentAt = state, time.Time{}
		d := policy.Decide(op, dead(), sentAt.Add(30*time.Hour))
		if d.Waited != 0 || d.Action == sluice.Cancel || d.Action == sluice.Escalate {
			t.Errorf("%s with no first-send time: Decide = %s; want no waiting measured, and no cancel or review for time", state, d)
		}
	}
}

// Goal: an impossible policy is refused with a message naming the field and
// its value, and the service's Config.Validate refuses it too, so a bad
// policy stops the service at startup rather than quietly hollowing out one
// of the three actions.
func TestPolicyValidate(t *testing.T) {
	if err := policy.Validate(); err != nil {
		t.Fatalf("a coherent policy refused: %v", err)
	}
	if err := sluice.DefaultConfig().Stuck.Validate(); err != nil {
		t.Fatalf("the default policy refused: %v", err)
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*sluice.StuckPolicy)
		mention []string
	}{
		{"inverted pair", func(p *sluice.StuckPolicy) { p.RebuildAfter, p.CancelAfter = 2*time.Hour, 10*time.Minute },
			[]string{"CancelAfter 10m0s must come after RebuildAfter 2h0m0s"}},
		{"equal pair", func(p *sluice.StuckPolicy) { p.CancelAfter = p.RebuildAfter },
			[]string{"CancelAfter 10m0s must come after RebuildAfter 10m0s"}},
		{"zero rebuild after", func(p *sluice.StuckPolicy) { p.RebuildAfter = 0 }, []string{"RebuildAfter 0s must be positive"}},
		{"negative cancel after", func(p *sluice.StuckPolicy) { p.CancelAfter = -time.Second }, []string{"CancelAfter -1s must be positive"}},
		{"no rebuilds", func(p *sluice.StuckPolicy) { p.Rebuilds = 0 }, []string{"Rebuilds 0 must be at least 1"}},
		{"negative rebuilds", func(p *sluice.StuckPolicy) { p.Rebuilds = -3 }, []string{"Rebuilds -3 must be at least 1"}},
		{"too many rebuilds", func(p *sluice.StuckPolicy) { p.Rebuilds = sluice.RebuildsMax + 1 }, []string{"Rebuilds 101 is above 100"}},
		{"the zero policy", func(p *sluice.StuckPolicy) { *p = sluice.StuckPolicy{} }, []string{"RebuildAfter 0s must be positive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policy
			tc.mutate(&p)
			err := p.Validate()
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want a refusal", p)
			}
			for _, m := range append(tc.mention, "stuck policy") {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			cfg := sluice.DefaultConfig()
			cfg.Stuck = p
			if cerr := cfg.Validate(); cerr == nil || cerr.Error() != err.Error() {
				t.Errorf("Config.Validate = %v, want the policy's own refusal %q", cerr, err)
			}
		})
	}
}

// Goal: actions print and parse by name, as events and the operator API
// carry them.
func TestActionNames(t *testing.T) {
	for a, name := range map[sluice.Action]string{sluice.Wait: "wait", sluice.Rebuild: "rebuild", sluice.Cancel: "cancel", sluice.Escalate: "review"} {
		b, err := a.MarshalText()
		if err != nil || string(b) != name {
			t.Errorf("%d.MarshalText() = %q, %v; want %q", a, b, err, name)
		}
		var back sluice.Action
		if err := back.UnmarshalText(b); err != nil || back != a {
			t.Errorf("UnmarshalText(%q) = %s, %v; want %s", b, back, err, a)
		}
	}
	var a sluice.Action
	if err := a.UnmarshalText([]byte("bump")); err == nil {
		t.Error(`UnmarshalText("bump") succeeded: TRON has no bump`)
	}
}

// Goal: Config.Validate holds each bound at its exact value: the first
// value that cannot work is refused with a message naming the setting, and
// the last that can is taken. A setting the service cannot run with must
// stop it at startup: blind bug 305 let StepsPerClaimMax 0 through (an
// operator's "no limit"), and every claimed row was released without a
// step, nothing moving while the workers claimed and released in a loop.
func TestConfigValidateAtEachBound(t *testing.T) {
	if err := sluice.DefaultConfig().Validate(); err != nil {
		t.Fatalf("the default configuration refused: %v", err)
	}
	for _, tc := range []struct {
		name          string
		refuse, allow func(*sluice.Config)
		mention       string
	}{
		{"expiration window", func(c *sluice.Config) {
			c.ExpirationWindow = 3*time.Second - time.Millisecond
			c.MinValidity = time.Second
		},
			func(c *sluice.Config) { c.ExpirationWindow = 3 * time.Second; c.MinValidity = time.Second }, "ExpirationWindow"},
		{"min validity zero", func(c *sluice.Config) { c.MinValidity = 0 }, func(c *sluice.Config) { c.MinValidity = time.Nanosecond }, "MinValidity"},
		{"min validity the window", func(c *sluice.Config) { c.MinValidity = c.ExpirationWindow },
			func(c *sluice.Config) { c.MinValidity = c.ExpirationWindow - time.Nanosecond }, "MinValidity"},
		{"safety margin", func(c *sluice.Config) { c.SafetyMargin = -time.Nanosecond }, func(c *sluice.Config) { c.SafetyMargin = 0 }, "SafetyMargin"},
		{"fee limit", func(c *sluice.Config) { c.FeeLimit = 0 }, func(c *sluice.Config) { c.FeeLimit = 1 }, "FeeLimit"},
		{"fee limit max", func(c *sluice.Config) { c.FeeLimitMax = c.FeeLimit - 1 }, func(c *sluice.Config) { c.FeeLimitMax = c.FeeLimit }, "FeeLimitMax"},
		{"cancel after", func(c *sluice.Config) { c.Stuck.CancelAfter = c.ExpirationWindow + c.SafetyMargin },
			func(c *sluice.Config) {
				c.Stuck.CancelAfter = c.ExpirationWindow + c.SafetyMargin + time.Nanosecond
				c.Stuck.RebuildAfter = c.ExpirationWindow
			}, "CancelAfter"},
		{"park limit", func(c *sluice.Config) { c.ParkLimit = 0 }, func(c *sluice.Config) { c.ParkLimit = 1 }, "ParkLimit"},
		{"park for", func(c *sluice.Config) { c.ParkFor = 0 }, func(c *sluice.Config) { c.ParkFor = time.Nanosecond }, "ParkFor"},
		{"park backoff max", func(c *sluice.Config) { c.ParkBackoffMax = 0 }, func(c *sluice.Config) { c.ParkBackoffMax = time.Nanosecond }, "ParkBackoffMax"},
		{"claim batch", func(c *sluice.Config) { c.ClaimBatch = 0 }, func(c *sluice.Config) { c.ClaimBatch = 1 }, "ClaimBatch"},
		{"steps per claim", func(c *sluice.Config) { c.StepsPerClaimMax = 0 }, func(c *sluice.Config) { c.StepsPerClaimMax = 1 }, "StepsPerClaimMax"},
		{"retry not taken", func(c *sluice.Config) { c.RetryNotTaken = 0 }, func(c *sluice.Config) { c.RetryNotTaken = time.Nanosecond }, "retry"},
		{"retry ambiguous", func(c *sluice.Config) { c.RetryAmbiguous = 0 }, func(c *sluice.Config) { c.RetryAmbiguous = time.Nanosecond }, "retry"},
		{"poll pending", func(c *sluice.Config) { c.PollPending = 0 }, func(c *sluice.Config) { c.PollPending = time.Nanosecond }, "poll"},
		{"block interval", func(c *sluice.Config) { c.BlockInterval = 0 }, func(c *sluice.Config) { c.BlockInterval = time.Nanosecond }, "poll"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := sluice.DefaultConfig()
			tc.refuse(&c)
			err := c.Validate()
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want a refusal naming %s", c, tc.mention)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not name %s", err, tc.mention)
			}
			c = sluice.DefaultConfig()
			tc.allow(&c)
			if err := c.Validate(); err != nil {
				t.Errorf("the last value that works refused: %v", err)
			}
		})
	}
}
