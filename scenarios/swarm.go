package scenarios

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"sluicesim/sim"
	"sluicesim/sluice"
)

// Swarm testing (Groce et al.): a seed of a world with Config.Swarm set
// first draws its own variant of the world from the tape, then runs it.
// Every seed of a fixed world meets every fault at its fixed rate, so a bug
// that needs a quiet world with one rare fault, or a storm of one kind,
// is found late or never; drawn worlds leave most faults off in some seeds
// and turn some up to a storm in others.
//
// What is drawn, in this order (each a choice on the tape, so a trace
// replays and a seed is still the whole story):
//
//   - for each row of the fault table present in the world (its Off would
//     change the world), whether it is on ("swarm-on", 2 ways: off with
//     one chance in three);
//   - for each row that is on and has a rate, a factor on that rate
//     ("swarm-rate": rare, as configured, high, storm);
//   - the number of workers and of withdrawals, relative to the world's
//     ("swarm-workers", "swarm-withdrawals");
//   - the lease and the envelopes' expiration window, relative to the
//     world's ("swarm-lease", "swarm-expiration"), kept legal: a pick that
//     would make the world invalid (a lease shorter than a slow call, say)
//     falls back to the world's own value;
//   - with Config.SwarmSettings (the settings world), the pipeline's own
//     settings (drawSettings), each kept legal the same way.
//
// The draws depend only on the world as configured and on the picks, never
// on earlier draws' values, so re-running a trace draws the same world.

// swarmChoices are the choice kinds a swarm seed's draw asks, in order.
var swarmChoices = []string{"swarm-on", "swarm-rate", "swarm-workers", "swarm-withdrawals", "swarm-lease", "swarm-expiration",
	"swarm-min-validity", "swarm-margin", "swarm-rebuild-after", "swarm-cancel-after", "swarm-rebuilds",
	"swarm-park-limit", "swarm-park-for", "swarm-park-backoff", "swarm-claim-batch", "swarm-claim-steps", "swarm-retry"}

// SwarmFactors are the rate factors a drawn fault takes, rare to storm.
var SwarmFactors = []float64{0.25, 1, 3, 8}

// swarmFactorNames name SwarmFactors in the drawn world's description.
var swarmFactorNames = []string{"rare", "as configured", "high", "storm"}

// swarmRateMax caps a drawn rate: a storm, not a world where nothing works.
const swarmRateMax = 0.6

// SwarmDraw is what a swarm seed drew: it is written into the trace
// header (as the world's SwarmDraw) and shown in reports.
type SwarmDraw struct {
	Off         []string    `json:"off,omitempty"`   // fault rows drawn off
	Rates       []SwarmRate `json:"rates,omitempty"` // rows on, with a rate factor other than 1
	Workers     int         `json:"workers"`
	Withdrawals int         `json:"withdrawals"`
	Lease       Duration    `json:"lease"`
	Expiration  Duration    `json:"expiration"`
	Fallbacks   []string    `json:"fallbacks,omitempty"` // picks refused as illegal, the world's value kept
	// Settings is the pipeline's settings drawn (Config.SwarmSettings),
	// nil for a world that keeps its own.
	Settings *SwarmSettings `json:"settings,omitempty"`
}

// SwarmSettings is the pipeline's settings a swarm seed drew.
type SwarmSettings struct {
	MinValidity    Duration `json:"min_validity"`
	SafetyMargin   Duration `json:"safety_margin"`
	RebuildAfter   Duration `json:"rebuild_after"`
	CancelAfter    Duration `json:"cancel_after"`
	Rebuilds       int      `json:"rebuilds"`
	ParkLimit      int      `json:"park_limit"`
	ParkFor        Duration `json:"park_for"`
	ParkBackoffMax Duration `json:"park_backoff_max"`
	ClaimBatch     int      `json:"claim_batch"`
	StepsPerClaim  int      `json:"steps_per_claim"`
	RetryAmbiguous Duration `json:"retry_ambiguous"`
	// Liveness is the world's liveness budget for these settings
	// (settingsLiveness): the world's own, or more when the drawn stuck
	// policy legitimately takes longer to give a withdrawal up.
	Liveness Duration `json:"liveness_budget"`
}

// SwarmRate is a fault row drawn on with a factor on its rate.
type SwarmRate struct {
	Fault  string  `json:"fault"`
	Factor float64 `json:"factor"`
}

// String is the drawn world in one line, for traces and reports.
func (d *SwarmDraw) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workers %d, withdrawals %d, lease %s, expiration %s", d.Workers, d.Withdrawals, d.Lease.D(), d.Expiration.D())
	if len(d.Off) > 0 {
		fmt.Fprintf(&b, "; off: %s", strings.Join(d.Off, ", "))
	}
	for _, r := range d.Rates {
		name := ""
		if i := slices.Index(SwarmFactors, r.Factor); i >= 0 {
			name = " (" + swarmFactorNames[i] + ")"
		}
		fmt.Fprintf(&b, "; %s x%g%s", r.Fault, r.Factor, name)
	}
	if p := d.Settings; p != nil {
		fmt.Fprintf(&b, "; pipeline: min validity %s, margin %s, stuck %s/%s/%d, park %d for %s backoff %s, claim %d x %d steps, retry %s; liveness %s",
			p.MinValidity.D(), p.SafetyMargin.D(), p.RebuildAfter.D(), p.CancelAfter.D(), p.Rebuilds,
			p.ParkLimit, p.ParkFor.D(), p.ParkBackoffMax.D(), p.ClaimBatch, p.StepsPerClaim, p.RetryAmbiguous.D(), p.Liveness.D())
	}
	if len(d.Fallbacks) > 0 {
		fmt.Fprintf(&b, "; kept the world's %s", strings.Join(d.Fallbacks, ", "))
	}
	return b.String()
}

// swarmRate is the rate field of a fault row, nil for a row that is only
// on or off (chain events, the operator, skews, the client mixes).
func swarmRate(c *Config, fault string) *float64 {
	switch fault {
	case "worker-fault":
		return &c.WorkerFaultP
	case "pause-before-write":
		return &c.PauseBeforeWriteP
	case "broadcast-lie":
		return &c.BroadcastLieP
	case "query-timeout":
		return &c.QueryLieP
	case "receipt-fail":
		return &c.ReceiptFailP
	case "node-lag":
		return &c.LagP
	case "gossip-loss":
		return &c.GossipLossP
	case "reorg":
		return &c.ReorgP
	case "odd-execution":
		return &c.OddExecutionP
	case "slow-call":
		return &c.SlowCallP
	case "relay":
		return &c.RelayP
	case "signer-fail":
		return &c.SignerFailP
	case "signer-outage":
		return &c.SignerOutageP
	case "customer-cancel":
		return &c.CustomerCancelP
	case "wallet-shortage":
		return &c.ShortageP
	case "store-fault":
		return &c.StoreFaultP
	case "server-stall":
		return &c.ServerStallP
	case "reads":
		return &c.ClientGetP
	case "wire-middlebox":
		return &c.MiddleboxP
	case "stale-fork":
		return &c.StaleForkP
	case "graceful-stop":
		return &c.GracefulStopP
	case "census-fault":
		return &c.CensusFaultP
	}
	return nil
}

// Relative menus for the world's sizes and times: the world's own value
// is always one of them, so a swarm of a small world stays small.
var (
	swarmWorkers     = []func(int) int{func(int) int { return 1 }, func(n int) int { return max(1, n/2) }, func(n int) int { return n }, func(n int) int { return n + 2 }}
	swarmWithdrawals = []func(int) int{func(n int) int { return max(1, n/6) }, func(n int) int { return max(1, n/2) }, func(n int) int { return n }, func(n int) int { return n + n/2 }}
	swarmTimes       = []float64{0.5, 1, 2, 4}
)

// drawSwarm draws a world from base (see the package comment above) on
// s's tape. It returns the world to run and what was drawn.
func drawSwarm(s *sim.Sim, base Config) (Config, *SwarmDraw) {
	c := base
	c.Skews = append([]Duration(nil), base.Skews...)
	d := &SwarmDraw{}
	present := presentFaults(base)
	for i, f := range Faults {
		if !present[i] {
			continue
		}
		if s.Choose("swarm-on", 3) == 0 {
			f.Off(&c)
			d.Off = append(d.Off, f.Name)
			continue
		}
		if p := swarmRate(&c, f.Name); p != nil {
			k := s.Choose("swarm-rate", len(SwarmFactors))
			if SwarmFactors[k] != 1 {
				*p = min(*p*SwarmFactors[k], swarmRateMax)
				d.Rates = append(d.Rates, SwarmRate{Fault: f.Name, Factor: SwarmFactors[k]})
			}
		}
	}
	c.Workers = swarmWorkers[s.Choose("swarm-workers", len(swarmWorkers))](base.Workers)
	c.Withdrawals = swarmWithdrawals[s.Choose("swarm-withdrawals", len(swarmWithdrawals))](base.Withdrawals)
	if len(c.Only) > 0 {
		// A shrunk world names its withdrawals: keep them and their count.
		c.Withdrawals = base.Withdrawals
	}
	lease := swarmTimes[s.Choose("swarm-lease", len(swarmTimes))]
	exp := swarmTimes[s.Choose("swarm-expiration", len(swarmTimes))]
	c.Lease = Duration(time.Duration(float64(base.Lease) * lease))
	if c.Validate() != nil {
		c.Lease = base.Lease
		d.Fallbacks = append(d.Fallbacks, "lease")
	}
	c.Sluice.ExpirationWindow = time.Duration(float64(base.Sluice.ExpirationWindow) * exp)
	if c.Validate() != nil {
		c.Sluice.ExpirationWindow = base.Sluice.ExpirationWindow
		d.Fallbacks = append(d.Fallbacks, "expiration")
	}
	d.Workers, d.Withdrawals, d.Lease, d.Expiration = c.Workers, c.Withdrawals, c.Lease, Duration(c.Sluice.ExpirationWindow)
	if c.SwarmSettings {
		d.Settings = drawSettings(s, &c, d)
	}
	return c, d
}

// Menus for the pipeline's settings (Config.SwarmSettings): each holds
// the world's own value (factor 1, or the value itself) and reaches the
// edges sluice.Config.Validate allows (a margin of zero, a park limit or a
// claim of one, one rebuild).
var (
	settingsMinValidity = []float64{0.05, 0.25, 0.5, 0.8} // of the drawn expiration window
	settingsMargin      = []func(time.Duration) time.Duration{func(time.Duration) time.Duration { return 0 }, func(time.Duration) time.Duration { return 3 * time.Second }, func(m time.Duration) time.Duration { return m }, func(m time.Duration) time.Duration { return 2 * m }}
	settingsFactors     = []float64{0.25, 1, 4}
	settingsRebuilds    = []func(int) int{func(int) int { return 1 }, func(n int) int { return n }, func(n int) int { return n + 3 }}
	settingsParkLimit   = []func(int) int{func(int) int { return 1 }, func(int) int { return 3 }, func(n int) int { return n }, func(n int) int { return 4 * n }}
	settingsClaim       = []func(int) int{func(int) int { return 1 }, func(int) int { return 2 }, func(n int) int { return n }, func(n int) int { return 4 * n }}
)

// settingsLiveness bounds the time the pipeline at settings p may
// legitimately take, after the heal, to bring a withdrawal to a terminal
// state when every envelope it builds is taken by a node and never packed
// (a wallet short of energy that nobody tops up): each build waits out its
// expiration, the margin and RebuildAfter before the next (plus slack for
// the polls' jitter and the solid block's lag), until the rebuilds or
// CancelAfter are spent; then one park spell. The worlds' budget of 20
// minutes covers their own settings (3 builds); a drawn policy of six
// builds of four minutes each needs more, and a liveness violation there
// would be the world's mistake, not sluice's.
func settingsLiveness(p sluice.Config) time.Duration {
	build := p.ExpirationWindow + p.SafetyMargin + p.Stuck.RebuildAfter + 2*(p.RetryAmbiguous+p.PollPending) + time.Minute
	builds := min(time.Duration(p.Stuck.Rebuilds+1)*build, p.Stuck.CancelAfter+build)
	return builds + p.ParkFor + p.ParkBackoffMax
}

// drawSettings draws the pipeline's settings into c on s's tape, in the
// order of SwarmSettings' fields; a pick that sluice.Config.Validate (or
// the world's Validate) refuses falls back to the world's value, named in
// d.Fallbacks. MinValidity is a fraction of the expiration window drawn
// before it (a fixed MinValidity would be illegal under the shortest
// windows); every other setting scales the world's own value (base's),
// and depends on an earlier draw only through Validate.
func drawSettings(s *sim.Sim, c *Config, d *SwarmDraw) *SwarmSettings {
	base := c.Sluice
	scale := func(v time.Duration, f float64) time.Duration { return time.Duration(float64(v) * f) }
	try := func(name string, set func(*sluice.Config), undo func(*sluice.Config)) {
		set(&c.Sluice)
		if c.Validate() != nil {
			undo(&c.Sluice)
			d.Fallbacks = append(d.Fallbacks, name)
		}
	}
	mv := settingsMinValidity[s.Choose("swarm-min-validity", len(settingsMinValidity))]
	try("min validity", func(p *sluice.Config) { p.MinValidity = scale(p.ExpirationWindow, mv) }, func(p *sluice.Config) { p.MinValidity = base.MinValidity })
	mg := settingsMargin[s.Choose("swarm-margin", len(settingsMargin))]
	try("margin", func(p *sluice.Config) { p.SafetyMargin = mg(base.SafetyMargin) }, func(p *sluice.Config) { p.SafetyMargin = base.SafetyMargin })
	ra := settingsFactors[s.Choose("swarm-rebuild-after", len(settingsFactors))]
	ca := settingsFactors[s.Choose("swarm-cancel-after", len(settingsFactors))]
	rb := settingsRebuilds[s.Choose("swarm-rebuilds", len(settingsRebuilds))]
	try("stuck policy", func(p *sluice.Config) {
		p.Stuck = sluice.StuckPolicy{RebuildAfter: scale(base.Stuck.RebuildAfter, ra), CancelAfter: scale(base.Stuck.CancelAfter, ca), Rebuilds: rb(base.Stuck.Rebuilds)}
	}, func(p *sluice.Config) { p.Stuck = base.Stuck })
	pl := settingsParkLimit[s.Choose("swarm-park-limit", len(settingsParkLimit))]
	pf := settingsFactors[s.Choose("swarm-park-for", len(settingsFactors))]
	pb := settingsFactors[s.Choose("swarm-park-backoff", len(settingsFactors))]
	try("park bounds", func(p *sluice.Config) {
		p.ParkLimit, p.ParkFor, p.ParkBackoffMax = pl(base.ParkLimit), scale(base.ParkFor, pf), scale(base.ParkBackoffMax, pb)
	}, func(p *sluice.Config) {
		p.ParkLimit, p.ParkFor, p.ParkBackoffMax = base.ParkLimit, base.ParkFor, base.ParkBackoffMax
	})
	cb := settingsClaim[s.Choose("swarm-claim-batch", len(settingsClaim))]
	cs := settingsClaim[s.Choose("swarm-claim-steps", len(settingsClaim))]
	try("claim", func(p *sluice.Config) {
		p.ClaimBatch, p.StepsPerClaimMax = cb(base.ClaimBatch), cs(base.StepsPerClaimMax)
	},
		func(p *sluice.Config) { p.ClaimBatch, p.StepsPerClaimMax = base.ClaimBatch, base.StepsPerClaimMax })
	rt := settingsFactors[s.Choose("swarm-retry", len(settingsFactors))]
	try("retry", func(p *sluice.Config) {
		p.RetryNotTaken, p.RetryAmbiguous, p.PollPending = scale(base.RetryNotTaken, rt), scale(base.RetryAmbiguous, rt), scale(base.PollPending, rt)
	}, func(p *sluice.Config) {
		p.RetryNotTaken, p.RetryAmbiguous, p.PollPending = base.RetryNotTaken, base.RetryAmbiguous, base.PollPending
	})
	p := c.Sluice
	c.LivenessBudget = max(c.LivenessBudget, Duration(settingsLiveness(p)))
	return &SwarmSettings{Liveness: c.LivenessBudget,
		MinValidity: Duration(p.MinValidity), SafetyMargin: Duration(p.SafetyMargin),
		RebuildAfter: Duration(p.Stuck.RebuildAfter), CancelAfter: Duration(p.Stuck.CancelAfter), Rebuilds: p.Stuck.Rebuilds,
		ParkLimit: p.ParkLimit, ParkFor: Duration(p.ParkFor), ParkBackoffMax: Duration(p.ParkBackoffMax),
		ClaimBatch: p.ClaimBatch, StepsPerClaim: p.StepsPerClaimMax, RetryAmbiguous: Duration(p.RetryAmbiguous),
	}
}

// presentFaults says, for each row of the fault table, whether the world
// has it (faultPresent). Every seed of a run draws from the same world,
// and comparing the world with itself turned off, row by row, was 5% of a
// seed; the answer for the last world asked is kept (a pure function of
// the world, so keeping it changes no run), under a lock since explore
// runs seeds side by side, with a private copy of the world as the key.
func presentFaults(base Config) []bool {
	presentMemo.Lock()
	defer presentMemo.Unlock()
	if presentMemo.present != nil && reflect.DeepEqual(&presentMemo.base, &base) {
		return presentMemo.present
	}
	present := make([]bool, len(Faults))
	for i, f := range Faults {
		present[i] = f.Off != nil && faultPresent(base, f)
	}
	presentMemo.base, presentMemo.present = cloneConfig(base), present
	return present
}

var presentMemo struct {
	sync.Mutex
	base    Config
	present []bool
}

// cloneConfig copies c with slices of its own, so that a caller changing
// its slices in place cannot change the memo's key.
func cloneConfig(c Config) Config {
	v := reflect.ValueOf(&c).Elem()
	cloneSlices(v)
	return c
}

func cloneSlices(v reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case !f.CanSet():
		case f.Kind() == reflect.Slice && !f.IsNil():
			n := reflect.MakeSlice(f.Type(), f.Len(), f.Len())
			reflect.Copy(n, f)
			f.Set(n)
		case f.Kind() == reflect.Struct:
			cloneSlices(f)
		case f.Kind() == reflect.Pointer && !f.IsNil() && f.Elem().Kind() == reflect.Struct:
			p := reflect.New(f.Elem().Type())
			p.Elem().Set(f.Elem())
			cloneSlices(p.Elem())
			f.Set(p)
		}
	}
}

// faultPresent reports whether turning f off would change the world.
func faultPresent(c Config, f Fault) bool {
	off := c
	off.Skews = append([]Duration(nil), c.Skews...)
	f.Off(&off)
	return !reflect.DeepEqual(off, c)
}
