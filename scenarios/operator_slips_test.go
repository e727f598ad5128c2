package scenarios

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"sluicesim/sluice/operator"
)

// Goal: the person on call's slips cost the world nothing but their own
// checks: a slip draws no tape choice and, refused for its input, reaches
// no store or node call (no yield point), so a wire seed with slips makes
// the same steps, draws the same tape and ends with the same outcomes as
// the seed without them, and every kind of slip is made and refused.
func TestSlipsKeepTheSchedule(t *testing.T) {
	slips := map[string]bool{}
	for _, with := range probeKeepsTheSchedule(t, Wire, 6, "slips", func(o *Options) { o.noSlips = true }) {
		for _, e := range with.Trace.Events {
			for _, s := range append(append(actionSlips[:], creditSlips[:]...), resolveSlip) {
				if strings.Contains(e.Text, "("+s.name+")") {
					slips[s.name] = true
				}
			}
		}
	}
	for _, s := range append(append(actionSlips[:], creditSlips[:]...), resolveSlip) {
		if !slips[s.name] {
			t.Errorf("no wire seed of 1 to 6 made the slip %q", s.name)
		}
	}
}

// Goal: a hostile client's lie about its body's length is answered 400
// and costs the world nothing else: chaos seeds with the lie make the same
// steps, draw the same tape and end with the same outcomes as without it.
func TestLengthLieKeepsTheSchedule(t *testing.T) {
	if tallyOfAll(probeKeepsTheSchedule(t, Chaos, 4, "the length lie", func(o *Options) { o.noLengthLie = true }), "client-length-lie") == 0 {
		t.Error("no hostile client of chaos seeds 1 to 4 lied about its length")
	}
}

// Goal: the person on call's look at an operation's page before acting
// costs the world nothing but its own checks (operator_look.go): wire
// seeds (the operator API's script) and chaos and nodes seeds (the
// service's methods) with the looks make the same steps, draw the same
// tape and end with the same outcomes as without them, and looks are made.
func TestLooksKeepTheSchedule(t *testing.T) {
	for _, world := range []func() Config{Wire, Chaos, Nodes} {
		if tallyOfAll(probeKeepsTheSchedule(t, world, 4, "the looks", func(o *Options) { o.noLooks = true }), "operator-look") == 0 {
			t.Errorf("no %s seed of 1 to 4 looked at an operation's page", world().Name)
		}
	}
}

// probeKeepsTheSchedule runs seeds 1 to n of a world with a probe and
// without it (off turns it off), and fails the test when either run has a
// violation, or the probe moved the schedule (other steps or another tape)
// or the outcomes. It returns the runs with the probe, traced.
func probeKeepsTheSchedule(t *testing.T, world func() Config, n uint64, probe string, off func(*Options)) []*Result {
	t.Helper()
	var withs []*Result
	for seed := uint64(1); seed <= n; seed++ {
		cfg := world()
		with := Run(cfg, seed, Options{TapeDigest: true, Tracing: true})
		o := Options{TapeDigest: true}
		off(&o)
		without := Run(cfg, seed, o)
		if len(with.Violations) > 0 || len(without.Violations) > 0 {
			t.Fatalf("%s seed %d: violations %v (with %s), %v (without)", cfg.Name, seed, with.Violations, probe, without.Violations)
		}
		if with.Steps != without.Steps || with.TapeDigest != without.TapeDigest {
			t.Errorf("%s seed %d: %d steps, tape %x with %s; %d steps, tape %x without: %s moved the schedule", cfg.Name, seed, with.Steps, with.TapeDigest, probe, without.Steps, without.TapeDigest, probe)
		}
		if !reflect.DeepEqual(without.Outcomes, with.Outcomes) {
			t.Errorf("%s seed %d: the outcomes differ with %s:\n%+v\nwithout:\n%+v", cfg.Name, seed, probe, with.Outcomes, without.Outcomes)
		}
		withs = append(withs, with)
	}
	return withs
}

// tallyOfAll sums tallyOf over runs.
func tallyOfAll(runs []*Result, kind string) int {
	n := 0
	for _, r := range runs {
		n += tallyOf(r, kind)
	}
	return n
}

// Goal: a request to a route no action has (an action name only the
// credits route has, a HEAD on an action's route) must be answered 404 or
// 405 and change nothing, and the world says so when it is not
// (independent bugs 224 and 225). Method: the honest handler over a wire
// seed, quiet, the route slips made; then a handler that takes the HEAD as
// the POST it probed, and one that answers the unknown action 200: each
// stops the run naming the route slip.
func TestRouteSlipsAreRefused(t *testing.T) {
	res := Run(Wire(), 1, Options{})
	if len(res.Violations) > 0 {
		t.Fatalf("honest handler, wire seed 1: %v", res.Violations)
	}
	made := 0
	for _, f := range res.Tally {
		if f.Kind == "operator-route-slip" {
			made = f.Count
		}
	}
	if made < len(routeSlips) {
		t.Fatalf("wire seed 1 made %d route slips, want every kind (%d)", made, len(routeSlips))
	}
	for name, wrap := range map[string]func(http.Handler) http.Handler{
		"HEAD taken as POST": func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodHead && strings.HasPrefix(r.URL.Path, "/v1/operations/") {
					r.Method = http.MethodPost
				}
				h.ServeHTTP(w, r)
			})
		},
		"credit answered as an action": func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, "/v1/operations/") && strings.HasSuffix(r.URL.Path, "/credit") {
					w.Header().Set("Content-Type", "application/json")
					w.Write([]byte(`{}`))
					return
				}
				h.ServeHTTP(w, r)
			})
		},
	} {
		caught := false
		for seed := uint64(1); seed <= 5 && !caught; seed++ {
			for _, v := range Run(Wire(), seed, Options{operatorWrap: wrap}).Violations {
				if v.Invariant == PanicInvariant && strings.Contains(v.Message, "no action's route") {
					caught = true
				}
			}
		}
		if !caught {
			t.Errorf("%s: wire seeds 1 to 5 took it without a complaint", name)
		}
	}
}

// Goal: a refusal of an action must name that action, in the service's
// error (the direct operator) and in the API's 409 (the script): a cancel
// refused as a retry (blind bug 237) stops the run, a refusal naming the
// action asked, or no refusal at all, does not.
func TestRefusalsNameTheActionAsked(t *testing.T) {
	asRetry := fmt.Errorf("resolve: %w", &operator.Refusal{Kind: operator.Retry, ID: "x", Reason: "it is no longer validated: read it again"})
	asCancel := &operator.Refusal{Kind: operator.Cancel, ID: "x", Reason: "it is no longer validated: read it again"}
	for _, c := range []struct {
		err   error
		kind  string
		wrong bool
	}{
		{asRetry, "cancel", true}, {asRetry, "retry", false}, {asCancel, "cancel", false}, {asCancel, "resolve", true},
		{nil, "cancel", false}, {errStoreDown, "cancel", false},
		{&operator.Refusal{Kind: operator.ResolvePaid, ID: "x", Reason: "r"}, "resolve", false},
	} {
		if got := refusedAsAnother(c.err, c.kind); (got != "") != c.wrong {
			t.Errorf("refusedAsAnother(%v, %s) = %q, want a complaint: %v", c.err, c.kind, got, c.wrong)
		}
	}
	for _, c := range []struct {
		msg, kind string
		wrong     bool
	}{
		{"retry refused: it is no longer validated: read it again", "cancel", true},
		{"cancel refused: it is no longer validated: read it again", "cancel", false},
		{"resolve refused: only a review is resolved as paid; it is failed", "resolve", false},
		{"cancel refused: x", "resolve", true},
	} {
		if got := refusalNamesAnother(c.msg, c.kind); got != c.wrong {
			t.Errorf("refusalNamesAnother(%q, %s) = %v, want %v", c.msg, c.kind, got, c.wrong)
		}
	}
}

// Goal: the person on call acts under a name of exactly the longest the
// operator API takes, which Act.Check accepts (blind bug 280 refused a
// name of exactly the bound, and every world passed with "sim").
func TestOnCallNameIsTheLongest(t *testing.T) {
	if len(onCallName) != operator.OperatorMax {
		t.Errorf("onCallName is %d bytes, want operator.OperatorMax (%d)", len(onCallName), operator.OperatorMax)
	}
	if err := (operator.Act{Operator: onCallName, Why: "on call"}).Check(); err != nil {
		t.Errorf("onCallName refused: %v", err)
	}
}
