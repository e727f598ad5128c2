package scenarios

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"sluicesim/sluice/tron/nodehttp"
)

// wireSeeds is how many seeds the wire tests compare; a wire world run
// takes a few milliseconds.
const wireSeeds = 12

// TestWireIsTransparent: the wire world is logs with the production node
// stack in between, and the stack must carry every answer as the node gave
// it. Same seed, same tape, same verdicts, same outcomes: any answer the
// wire changed (a log lost or merged, a receipt or block read wrongly, an
// error turned into another) would show as a different run.
func TestWireIsTransparent(t *testing.T) {
	direct, wired := Logs(), Wire()
	for seed := uint64(1); seed <= wireSeeds; seed++ {
		a := Run(direct, seed, Options{TapeDigest: true})
		b := Run(wired, seed, Options{TapeDigest: true})
		if a.TapeDigest != b.TapeDigest || a.Steps != b.Steps || a.Virtual != b.Virtual {
			t.Errorf("seed %d: direct tape %x, %d steps, %v; over the wire %x, %d steps, %v",
				seed, a.TapeDigest, a.Steps, a.Virtual, b.TapeDigest, b.Steps, b.Virtual)
		}
		if !reflect.DeepEqual(a.Outcomes, b.Outcomes) {
			t.Errorf("seed %d: outcomes differ over the wire:\ndirect %+v\nwire   %+v", seed, a.Outcomes, b.Outcomes)
		}
		if !reflect.DeepEqual(a.Violations, b.Violations) {
			t.Errorf("seed %d: verdicts differ over the wire:\ndirect %v\nwire   %v", seed, a.Violations, b.Violations)
		}
	}
}

// TestWireCarriesTheNodeCalls: in a wire world every kind of call the core
// makes crosses the HTTP server, and in a world without the wire none does
// (so the transparency above is not two direct runs compared).
func TestWireCarriesTheNodeCalls(t *testing.T) {
	count := func(cfg Config) map[string]int {
		seen := map[string]int{}
		o := Options{wireHandler: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				seen[r.URL.Path]++
				h.ServeHTTP(rw, r)
			})
		}}
		if res := Run(cfg, 3, o); len(res.Violations) > 0 {
			t.Fatalf("%s seed 3: %v", cfg.Name, res.Violations)
		}
		return seen
	}
	seen := count(Wire())
	for _, path := range []string{nodehttp.PathBroadcast, nodehttp.PathLookup, nodehttp.PathSolid} {
		if seen[path] == 0 {
			t.Errorf("wire seed 3: no call crossed %s (all: %v)", path, seen)
		}
	}
	if direct := count(Logs()); len(direct) > 0 {
		t.Errorf("logs seed 3 crossed a wire: %v", direct)
	}
}

// TestWireManglingIsCaught: a wire that loses the logs of SUCCESS answers
// (as a decoder that dropped them would) changes the runs and is reported
// by the invariants, which hold every review to the chain's truth.
func TestWireManglingIsCaught(t *testing.T) {
	o := Options{TapeDigest: true, wireHandler: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			if r.URL.Path != nodehttp.PathLookup {
				h.ServeHTTP(rw, r)
				return
			}
			var rec recorder
			h.ServeHTTP(&rec, r)
			var ans map[string]any
			if err := json.Unmarshal(rec.body, &ans); err == nil && ans["receipt"] == "SUCCESS" {
				delete(ans, "logs")
				rec.body, _ = json.Marshal(ans)
			}
			for k, v := range rec.header {
				rw.Header()[k] = v
			}
			rw.WriteHeader(rec.code)
			rw.Write(rec.body)
		})
	}}
	caught := 0
	for seed := uint64(1); seed <= wireSeeds; seed++ {
		direct := Run(Logs(), seed, Options{TapeDigest: true})
		mangled := Run(Wire(), seed, o)
		if mangled.TapeDigest == direct.TapeDigest {
			t.Errorf("seed %d: a wire that loses logs left the run as it was", seed)
		}
		if len(mangled.Violations) > 0 {
			caught++
		}
	}
	if caught == 0 {
		t.Errorf("a wire that loses every SUCCESS's logs: no violation in %d seeds", wireSeeds)
	}
}
