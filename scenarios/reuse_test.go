package scenarios

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// Goal: what runs reuse from run to run (the kernel's pooled coroutines,
// tape storage, the storage of the world's records and of the mock node's,
// the pooled intake handlers, intake's pooled response writers and body
// buffers) carries nothing from one run into the next. The same runs, in
// three orders and from two goroutines at once, give the same summaries
// (the whole tape's digest, the swarm draw and any failure included), and
// the same as each run alone in a fresh Sim with fresh storage, tape and
// handler (keepTape). The chaos world's hostile
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
	// Swarm seeds draw worlds of different sizes, fault rows and rates
	// one after another: a bigger world, then a smaller one, on the same
	// pooled storage and the same memo of fault rows.
	for _, name := range []string{"chaos", "nodes", "reorgs", "zombies"} {
		cfg, _ := World(name)
		cfg.Swarm = true
		for seed := uint64(1); seed <= 3; seed++ {
			jobs = append(jobs, job{cfg, seed})
		}
	}
	summary := func(j job, o Options) string {
		o.TapeDigest = true
		r := Run(j.cfg, j.seed, o)
		b, err := json.Marshal(struct {
			V, O, S, T, C, Swarm any
			Steps                int
			Virtual              int64
			Tape                 uint64
			Failure              string
			Pruned               bool
		}{r.Violations, r.Outcomes, r.Stats, r.Tally, r.Coverage, r.Swarm, r.Steps, int64(r.Virtual), r.TapeDigest, r.Failure, r.Pruned})
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

// Goal: lend hands the world every pooled record list empty, whatever the
// last run left in it: a list lent as it was would carry one run's
// envelopes (or claims, or reads) into the next. Nothing a run reports
// shows a stale envelope (the checks look envelopes up by txid), so this
// is checked on lend itself, for every list records holds, by name.
func TestLendEmptiesEveryRecord(t *testing.T) {
	var r records
	rv := reflect.ValueOf(&r).Elem()
	lists := 0
	for i := range rv.NumField() {
		if f := rv.Field(i); f.Kind() == reflect.Slice {
			f = reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem()
			f.Set(reflect.MakeSlice(f.Type(), 1, 4))
			lists++
		}
	}
	var w world
	r.lend(&w)
	wv := reflect.ValueOf(&w).Elem()
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		if rv.Field(i).Kind() != reflect.Slice {
			continue
		}
		f := wv.FieldByName(name)
		if !f.IsValid() {
			t.Errorf("records.%s has no world.%s to be lent to", name, name)
			continue
		}
		if f.Len() != 0 {
			t.Errorf("lend gave world.%s with %d entries of the last run", name, f.Len())
		}
		if f.Cap() != 4 {
			t.Errorf("lend gave world.%s other storage than the pool's (cap %d)", name, f.Cap())
		}
	}
	if lists < 7 {
		t.Errorf("records has %d lists, want the seven it had when this test was written", lists)
	}
}
