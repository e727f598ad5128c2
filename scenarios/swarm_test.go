package scenarios

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"sluicesim/sim"
)

// Goal: a swarm seed draws its world from the tape, the draw is in the
// trace header, and the trace replays byte for byte (a replay draws the
// same world from the same picks).
func TestSwarmDrawsReplayFromTheTape(t *testing.T) {
	cfg := Chaos()
	cfg.Swarm = true
	draws := map[string]bool{}
	for seed := uint64(1); seed <= 12; seed++ {
		res := Run(cfg, seed, Options{Tracing: true})
		if res.Swarm == nil {
			t.Fatalf("seed %d: no draw", seed)
		}
		draws[res.Swarm.String()] = true
		var header Config
		if err := json.Unmarshal(res.Trace.Header.Config, &header); err != nil {
			t.Fatal(err)
		}
		if !header.Swarm || header.SwarmDraw == nil || !reflect.DeepEqual(*header.SwarmDraw, *res.Swarm) {
			t.Fatalf("seed %d: header has swarm %v draw %+v, run drew %+v", seed, header.Swarm, header.SwarmDraw, res.Swarm)
		}
		again, err := Replay(res.Trace)
		if err != nil {
			t.Fatalf("seed %d: replay: %v", seed, err)
		}
		var a, b bytes.Buffer
		if err := res.Trace.Write(&a); err != nil {
			t.Fatal(err)
		}
		if err := again.Trace.Write(&b); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("seed %d: the replayed trace differs", seed)
		}
	}
	if len(draws) < 10 {
		t.Errorf("12 seeds drew only %d distinct worlds", len(draws))
	}
}

// Goal: every fault row whose Off zeroes a rate has that rate drawn by
// swarm (a new row with a rate must say how it scales), and the pointer
// returned is that very field.
func TestSwarmRatesCoverTheFaultTable(t *testing.T) {
	base := Chaos()
	for _, f := range Faults {
		if f.Off == nil || !faultPresent(base, f) {
			continue
		}
		off := base
		off.Skews = append([]Duration(nil), base.Skews...)
		f.Off(&off)
		bv, ov := reflect.ValueOf(base), reflect.ValueOf(off)
		var rates []string
		for i := range bv.NumField() {
			if bv.Field(i).Kind() == reflect.Float64 && bv.Field(i).Float() != ov.Field(i).Float() {
				rates = append(rates, bv.Type().Field(i).Name)
			}
		}
		c := base
		p := swarmRate(&c, f.Name)
		switch {
		case len(rates) == 0 && p != nil:
			t.Errorf("%s: swarm scales a rate, but Off changes none", f.Name)
		case len(rates) > 0 && p == nil:
			t.Errorf("%s: Off zeroes %v, which swarm never scales", f.Name, rates)
		case p != nil:
			*p = 0.123
			if got := reflect.ValueOf(c).FieldByName(rates[0]).Float(); got != 0.123 {
				t.Errorf("%s: swarm scales another field than %s", f.Name, rates[0])
			}
		}
	}
}

// Goal: drawn worlds are legal, and a swarm really varies the world: over
// a few hundred draws every present fault row is off in some and on in
// others, a rate reaches a storm, and sizes and times take several values.
func TestSwarmDrawsVariedLegalWorlds(t *testing.T) {
	base := Chaos()
	off, on := map[string]int{}, map[string]int{}
	workers, withdrawals, leases := map[int]bool{}, map[int]bool{}, map[Duration]bool{}
	storm := false
	for seed := uint64(1); seed <= 300; seed++ {
		s := sim.New(sim.NewRandom(seed), sim.Options{Start: epoch, StepsMax: 10})
		c, d := drawSwarm(s, base)
		if err := c.Validate(); err != nil {
			t.Fatalf("seed %d drew an illegal world: %v (%s)", seed, err, d)
		}
		for _, f := range d.Off {
			off[f]++
		}
		for _, r := range d.Rates {
			storm = storm || r.Factor == SwarmFactors[len(SwarmFactors)-1]
		}
		for _, f := range Faults {
			if f.Off != nil && faultPresent(base, f) && !slices.Contains(d.Off, f.Name) {
				on[f.Name]++
			}
		}
		workers[c.Workers], withdrawals[c.Withdrawals], leases[c.Lease] = true, true, true
	}
	for _, f := range Faults {
		if f.Off != nil && faultPresent(base, f) && (off[f.Name] == 0 || on[f.Name] == 0) {
			t.Errorf("%s: off in %d draws, on in %d", f.Name, off[f.Name], on[f.Name])
		}
	}
	if !storm || len(workers) < 3 || len(withdrawals) < 3 || len(leases) < 3 {
		t.Errorf("storm %v, %d worker counts, %d withdrawal counts, %d leases", storm, len(workers), len(withdrawals), len(leases))
	}
}

// Goal: the memo of which fault rows a world has answers exactly what
// comparing the world with itself turned off answers, whichever world was
// asked before, and a caller changing its slices in place afterwards does
// not change what the memo answers for it.
func TestPresentFaultsMemoIsExact(t *testing.T) {
	direct := func(c Config) []bool {
		out := make([]bool, len(Faults))
		for i, f := range Faults {
			out[i] = f.Off != nil && faultPresent(c, f)
		}
		return out
	}
	var worlds []Config
	for _, name := range WorldNames() {
		c, _ := World(name)
		worlds = append(worlds, c)
		for _, f := range Faults {
			if f.Off != nil {
				off := cloneConfig(c)
				f.Off(&off)
				worlds = append(worlds, off)
			}
		}
	}
	for round := range 2 {
		for i := range worlds {
			c := worlds[(i*7+round)%len(worlds)]
			if got, want := presentFaults(c), direct(c); !slices.Equal(got, want) {
				t.Fatalf("world %s (variant %d): memo %v, direct %v", c.Name, i, got, want)
			}
		}
	}
	c := Chaos()
	c.Skews = durations(3 * time.Second) // one skew: clock-skew is present
	presentFaults(c)
	c.Skews[0] = 0 // now no skew, exactly what clock-skew's Off leaves
	if got, want := presentFaults(c), direct(c); !slices.Equal(got, want) {
		t.Fatalf("after changing the caller's slice in place: memo %v, direct %v", got, want)
	}
}

// Goal: the settings world draws the pipeline's settings, every draw legal
// (sluice.Config.Validate through the world's Validate), reaching the edges
// an operator may choose (a margin of zero, a park limit, a claim batch, a
// step budget and a rebuild budget of one, a MinValidity of most of the
// window) and the world's own values; its liveness budget covers the drawn
// stuck policy (settingsLiveness) and is raised above the world's in some
// draws; and the draws before the settings are chaos's, pick for pick, so
// that chaos's tapes do not move (chaos draws no settings).
func TestSwarmSettingsDrawsLegalEdges(t *testing.T) {
	base, chaos := Settings(), Chaos()
	seen := map[string]bool{}
	for seed := uint64(1); seed <= 400; seed++ {
		s := sim.New(sim.NewRandom(seed), sim.Options{Start: epoch, StepsMax: 10})
		c, d := drawSwarm(s, base)
		if err := c.Validate(); err != nil {
			t.Fatalf("seed %d drew an illegal world: %v (%s)", seed, err, d)
		}
		if d.Settings == nil {
			t.Fatalf("seed %d: the settings world drew no settings", seed)
		}
		p, q := c.Sluice, d.Settings
		if p.MinValidity != q.MinValidity.D() || p.SafetyMargin != q.SafetyMargin.D() || p.Stuck.Rebuilds != q.Rebuilds ||
			p.ParkLimit != q.ParkLimit || p.ClaimBatch != q.ClaimBatch || p.StepsPerClaimMax != q.StepsPerClaim || c.LivenessBudget != q.Liveness {
			t.Fatalf("seed %d: the draw reports %+v, the world runs %+v (liveness %s)", seed, *q, p, c.LivenessBudget.D())
		}
		if c.LivenessBudget < base.LivenessBudget || c.LivenessBudget.D() < settingsLiveness(p) {
			t.Fatalf("seed %d: liveness budget %s below the world's %s or the policy's %s", seed, c.LivenessBudget.D(), base.LivenessBudget.D(), settingsLiveness(p))
		}
		mark := func(name string, ok bool) {
			if ok {
				seen[name] = true
			}
		}
		mark("margin 0", p.SafetyMargin == 0)
		mark("park limit 1", p.ParkLimit == 1)
		mark("claim batch 1", p.ClaimBatch == 1)
		mark("steps 1", p.StepsPerClaimMax == 1)
		mark("rebuilds 1", p.Stuck.Rebuilds == 1)
		mark("min validity 0.8", p.MinValidity*5 >= p.ExpirationWindow*4)
		mark("world's margin", p.SafetyMargin == chaos.Sluice.SafetyMargin)
		mark("world's claim", p.ClaimBatch == chaos.Sluice.ClaimBatch && p.StepsPerClaimMax == chaos.Sluice.StepsPerClaimMax)
		mark("liveness raised", c.LivenessBudget > base.LivenessBudget)
		mark("a fallback", len(d.Fallbacks) > 0)

		sc := sim.New(sim.NewRandom(seed), sim.Options{Start: epoch, StepsMax: 10})
		cc, dc := drawSwarm(sc, chaos)
		kept := cc.Sluice
		kept.ExpirationWindow = chaos.Sluice.ExpirationWindow // chaos's swarm draws the window
		if dc.Settings != nil || kept != chaos.Sluice || cc.LivenessBudget != chaos.LivenessBudget {
			t.Fatalf("seed %d: chaos drew settings: %+v", seed, dc.Settings)
		}
		dd := *d
		dd.Settings, dd.Fallbacks = nil, slices.DeleteFunc(slices.Clone(d.Fallbacks), func(f string) bool { return f != "lease" && f != "expiration" })
		if len(dd.Fallbacks) == 0 {
			dd.Fallbacks = nil
		}
		if !reflect.DeepEqual(dd, *dc) {
			t.Fatalf("seed %d: the settings world's draw before its settings (%s) is not chaos's (%s)", seed, &dd, dc)
		}
	}
	for _, want := range []string{"margin 0", "park limit 1", "claim batch 1", "steps 1", "rebuilds 1", "min validity 0.8", "world's margin", "world's claim", "liveness raised", "a fallback"} {
		if !seen[want] {
			t.Errorf("400 draws never reached %s", want)
		}
	}
}
