package model

import (
	"fmt"
	"strings"
	"testing"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

const opEnergy = 20 // runs out of energy, rebuilt with the fee limits a case gives

// outOfEnergy adds opEnergy to b: its envelopes carry the fee limits given
// (in TRX), each but the last runs out of energy on chain and is rebuilt
// with that proof (and parked, then retried by an operator, as opReverted
// is), and the last confirms.
func outOfEnergy(b *builder, fees ...int64) *opb {
	builds := make([]feeBuild, len(fees))
	for i, f := range fees {
		builds[i].fee = f
	}
	return outOfEnergyBuilds(b, builds...)
}

// feeBuild is one envelope of opEnergy: its fee limit, and the limits of
// the release its builder runs (0: none recorded), in TRX.
type feeBuild struct{ fee, floor, ceil int64 }

// outOfEnergyBuilds is outOfEnergy with each build's release recorded.
func outOfEnergyBuilds(b *builder, builds ...feeBuild) *opb {
	o := b.create(opEnergy, 1_000_000, "c1").claim()
	set := func(f feeBuild) {
		o.fee, o.floor, o.ceil = f.fee*1_000_000, f.floor*1_000_000, f.ceil*1_000_000
	}
	set(builds[0])
	o.build()
	for _, f := range builds[1:] {
		o.step(sluice.Broadcasting, nil).send(true).step(sluice.Broadcast, nil).include(tron.ReceiptOutOfEnergy)
		why := fmt.Sprintf("receipt %s in solid block #%d: no tokens moved", tron.ReceiptOutOfEnergy, b.inclusion(o.txid()).BlockNumber)
		set(f)
		o.reenvelope(o.receiptEvidence(), o.decide(sluice.Rebuild, why)).park(why)
		o.resolve("alice", sluice.Signing, "energy bought", nil)
		o.claimBy("w2").sign()
	}
	return o.broadcastAndConfirm()
}

// Goal: every envelope is built within the fee limits of the release its
// builder runs, whatever release built the row's earlier ones (a deploy
// between them), and "nothing higher is allowed" is judged by the ceiling
// of the release that built the transaction that ran out again. Method:
// opEnergy's builds recorded with their releases' limits; the world's
// FeeLimitMax is the higher release's, as a world that deploys sets it.
func TestFeeLimitsOfTheBuildersRelease(t *testing.T) {
	for _, c := range []struct {
		name   string
		builds []feeBuild
		caught string // "" for a clean run
	}{
		{name: "raised floor met", builds: []feeBuild{{40, 40, 240}, {80, 60, 240}}},
		{name: "raised floor: the rebuild doubles from the old limit", builds: []feeBuild{{40, 40, 240}, {80, 100, 320}},
			caught: "w1 built txid %s with fee limit 80 TRX, below the FeeLimit 100 TRX of the release it runs"},
		{name: "old limit kept under a raised floor", builds: []feeBuild{{40, 40, 240}, {40, 60, 240}},
			caught: "built txid %s with fee limit 40 TRX, below the FeeLimit 60 TRX of the release it runs"},
		{name: "old limit kept over a lowered cap", builds: []feeBuild{{160, 40, 240}, {160, 20, 120}},
			caught: "built txid %s with fee limit 160 TRX, above the FeeLimitMax 120 TRX of the release it runs"},
		{name: "at a lowered cap it may stay, below a limit that ran out", builds: []feeBuild{{160, 40, 240}, {120, 20, 120}, {120, 20, 120}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			b.s.FeeLimitMax = 320_000_000
			outOfEnergyBuilds(b, c.builds...)
			if c.caught == "" {
				wantOneFeeViolation(t, b, "")
				return
			}
			txids := readOwnership(&b.s).of(opID(opEnergy))
			wantOneFeeViolation(t, b, fmt.Sprintf(c.caught, txids[len(txids)-1].Short()))
		})
	}
}

// Goal: a withdrawal that ran out of energy is rebuilt with a higher fee
// limit (up to FeeLimitMax, where it may stay), and nothing lands above
// FeeLimitMax. Method: a clean run plus opEnergy with the limits of each
// case; the clean ones must pass every invariant.
func TestCheckFeeLimits(t *testing.T) {
	for _, c := range []struct {
		name string
		fees []int64
		max  int64 // FeeLimitMax in TRX (0: not judged)
		// caught is the violation's text, given the block of the txid
		// numbered wasted (from 0) and, for a repeat, the short txid
		// numbered shown (-1: none); "" for a clean run.
		caught        string
		wasted, shown int
	}{
		{name: "doubled", fees: []int64{30, 60}, max: 240},
		{name: "doubled twice", fees: []int64{30, 60, 120}, max: 240},
		{name: "at the ceiling it may stay", fees: []int64{240, 240, 240}, max: 240},
		{name: "no ceiling set: not judged", fees: []int64{30, 300}},
		{name: "sent again at the limit that ran out", fees: []int64{30, 30, 60}, max: 240, wasted: 1, shown: 0,
			caught: "ran out of energy in #%d with fee limit 30 TRX, though its txid %s had already run out of energy with 30 TRX"},
		{name: "lowered after a raise", fees: []int64{60, 30, 120}, max: 240, wasted: 1, shown: 0,
			caught: "ran out of energy in #%d with fee limit 30 TRX, though its txid %s had already run out of energy with 60 TRX"},
		{name: "above the ceiling", fees: []int64{30, 300}, max: 240, wasted: 1, shown: -1,
			caught: "landed in #%d with fee limit 300 TRX, above FeeLimitMax 240 TRX"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := clean(t)
			b.s.FeeLimitMax = c.max * 1_000_000
			outOfEnergy(b, c.fees...)
			if c.caught == "" {
				wantOneFeeViolation(t, b, "")
				return
			}
			txids := readOwnership(&b.s).of(opID(opEnergy))
			want := fmt.Sprintf(c.caught, b.inclusion(txids[c.wasted]).BlockNumber)
			if c.shown >= 0 {
				want = fmt.Sprintf(c.caught, b.inclusion(txids[c.wasted]).BlockNumber, txids[c.shown].Short())
			}
			wantOneFeeViolation(t, b, want)
			for _, v := range Check(&b.s) {
				if v.Invariant != FeeLimits {
					t.Errorf("Check also reported %s", v)
				}
			}
		})
	}
}

// Goal: the outcomes say what energy cost, and how much of it bought
// nothing. Method: opEnergy runs out at 30 TRX (burning all 30) and pays
// at 60 (burning 20).
func TestOutcomesCountBurntTRX(t *testing.T) {
	b := clean(t)
	outOfEnergy(b, 30, 60)
	for i := range b.s.Inclusions {
		switch in := &b.s.Inclusions[i]; {
		case in.Receipt == tron.ReceiptOutOfEnergy:
			in.Burnt = in.FeeLimit
		case in.FeeLimit == 60_000_000:
			in.Burnt = 20_000_000
		}
	}
	o := CountOutcomes(&b.s)
	if o.Burnt != 50_000_000 || o.BurntOutOfEnergy != 30_000_000 {
		t.Errorf("burnt %d, of it out of energy %d; want 50,000,000 and 30,000,000", o.Burnt, o.BurntOutOfEnergy)
	}
	if want := "50 TRX burnt for energy, 30 TRX of it by transactions that ran out of energy"; !strings.Contains(o.String(), want) {
		t.Errorf("outcomes %q, want them to say %q", o, want)
	}
	if sum := o.Add(o); sum.Burnt != 100_000_000 || sum.BurntOutOfEnergy != 60_000_000 {
		t.Errorf("Add: burnt %d, out of energy %d; want twice each", sum.Burnt, sum.BurntOutOfEnergy)
	}
}

// wantOneFeeViolation holds b's run to want: a clean run by every
// invariant for "", else exactly one fee-limits violation, about
// opEnergy, whose message contains want.
func wantOneFeeViolation(t *testing.T, b *builder, want string) {
	t.Helper()
	if want == "" {
		if all := Check(&b.s); len(all) > 0 {
			t.Fatalf("want a clean run, got:\n%s", describe(all))
		}
		return
	}
	got := CheckFeeLimits(&b.s)
	if len(got) != 1 || got[0].Operation != opID(opEnergy) || !strings.Contains(got[0].Message, want) {
		t.Fatalf("want one %s violation about op %d mentioning %q, got:\n%s", FeeLimits, opEnergy, want, describe(got))
	}
}
