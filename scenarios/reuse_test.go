package scenarios

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

// Goal: what runs reuse from run to run (the kernel's pooled coroutines,
// tape storage, the storage of the world's records and of the mock node's,
// the pooled intake handlers, intake's pooled response writers and body
// buffers) carries nothing from one run into the next. The same runs, in
// three orders and from two goroutines at once, give the same summaries
// (tape hash included), and the same as each run alone in a fresh Sim with
// fresh storage, tape and handler (keepTape). The chaos world's hostile
// clients and the intake mutants, which rewrite requests in front of the
// handler, put every kind of request through those pools; reorgs cut the
// node's chain back onto storage an earlier run filled.
func TestRunsDoNotDependOnEarlierRuns(t *testing.T) {
	type job struct {
		cfg  Config
		seed uint64
	}
	var jobs []job
	for _, name := range []string{"chaos", "zombies", "storefaults", "pair", "reorgs", "nodes"} {
		cfg, _ := World(name)
		for seed := uint64(1); seed <= 3; seed++ {
			jobs = append(jobs, job{cfg, seed})
		}
	}
	for _, mutant := range []string{"body-truncated", "content-type-ignored", "raw-bytes-hash"} {
		cfg := Chaos()
		cfg.Mutant = mutant
		jobs = append(jobs, job{cfg, 1})
	}
	summary := func(j job, o Options) string {
		r := Run(j.cfg, j.seed, o)
		b, err := json.Marshal(struct {
			V, O, S, T, C any
			Steps         int
			Virtual       int64
		}{r.Violations, r.Outcomes, r.Stats, r.Tally, r.Coverage, r.Steps, int64(r.Virtual)})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%x", sha256.Sum256(b))
	}
	want := make([]string, len(jobs))
	for i, j := range jobs {
		want[i] = summary(j, Options{keepTape: true})
	}
	check := func(order string, i int, got string) {
		if got != want[i] {
			t.Errorf("%s: %s seed %d summary %.12s, alone %.12s", order, jobs[i].cfg.Name, jobs[i].seed, got, want[i])
		}
	}
	for i := range jobs {
		check("forward", i, summary(jobs[i], Options{}))
	}
	for i := len(jobs) - 1; i >= 0; i-- {
		check("backward", i, summary(jobs[i], Options{}))
	}
	var wg sync.WaitGroup
	got := make([]string, len(jobs))
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(jobs); i += 2 {
				got[i] = summary(jobs[i], Options{})
			}
		}()
	}
	wg.Wait()
	for i := range jobs {
		check("two goroutines", i, got[i])
	}
}
