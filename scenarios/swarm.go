package scenarios

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"sluicesim/sim"
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
//     falls back to the world's own value.
//
// The draws depend only on the world as configured and on the picks, never
// on earlier draws' values, so re-running a trace draws the same world.

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
	return c, d
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
