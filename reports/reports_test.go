package reports

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sluicesim/model"
	"sluicesim/scenarios"
	"sluicesim/sim"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// fixture describes a golden report: a world and mutant, a seed range run
// the way explore runs it (untraced, aggregated), and the failing seeds
// re-run with tracing.
type fixture struct {
	name, world, mutant string
	start               uint64
	seeds               int
	// killTable: the run is a kill table (explore -mutants): no seed range
	// of its own, a page and a trace for the kill of seed start.
	killTable bool
}

// reportDir is the report directory the fixtures' commands name, as
// explore names the directory -report was given.
const reportDir = "report"

var fixtures = []fixture{
	// Seed 5 fails intake-uniqueness and linearizable-intake.
	{name: "chaos-check-then-insert", world: "chaos", mutant: "check-then-insert", start: 24, seeds: 3},
	// Seed 1 fails at-most-once and conservation (a run-wide violation).
	{name: "zombies-send-before-write-ahead", world: "zombies", mutant: "send-before-write-ahead", start: 1, seeds: 2},
	// The kill table, with check-then-insert killed by chaos seed 25.
	{name: "kill-table", world: "chaos", mutant: "check-then-insert", start: 25, killTable: true},
}

var (
	runsOnce sync.Once
	runs     map[string]*Run
)

// fixtureRuns builds each fixture's Run once per test binary: the
// simulations are the slow part.
func fixtureRuns(t testing.TB) map[string]*Run {
	runsOnce.Do(func() {
		runs = map[string]*Run{}
		for _, fx := range fixtures {
			runs[fx.name] = buildRun(t, fx)
		}
	})
	return runs
}

// buildRun does what the explore command does to fill a Run: it is also
// the worked example of which Result fields go where.
func buildRun(t testing.TB, fx fixture) *Run {
	cfg, err := scenarios.World(fx.world)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Mutant = fx.mutant
	if fx.killTable {
		return buildKillTable(cfg, fx)
	}
	r := &Run{World: fx.world, Strategy: "random", Mutant: fx.mutant, SeedStart: fx.start, Seeds: fx.seeds, Shard: "0/1",
		Elapsed: 1234 * time.Millisecond}
	agg := NewAggregate(fx.start, 1, fx.seeds, 1000)
	for seed := fx.start; seed < fx.start+uint64(fx.seeds); seed++ {
		res := scenarios.Run(cfg, seed, scenarios.Options{})
		r.SeedsRun++
		agg.Add(&Seed{Seed: seed, Steps: res.Steps, Violations: res.Violations, Tally: res.Tally,
			Outcomes: res.Outcomes, Stats: res.Stats})
		if !res.Failed() {
			continue
		}
		r.Failures = append(r.Failures, tracedFailure(cfg, seed, res.Violations, ""))
	}
	agg.Fill(r)
	// A kind that never fired must show: add one the worlds do not have.
	r.Faults = model.MergeTallies(r.Faults, []model.Tally{{Kind: "zz-never-fired", Count: 0}})
	return r
}

// tracedFailure re-runs a failing seed with tracing, its trace to be
// written into the report directory (mutant set: a kill of a kill table).
func tracedFailure(cfg scenarios.Config, seed uint64, vs []model.Violation, mutant string) Failure {
	trace := fmt.Sprintf("%s-%s-seed%d.trace.jsonl", cfg.Name, cfg.Mutant, seed)
	traced := scenarios.Run(cfg, seed, scenarios.Options{Tracing: true})
	return Failure{
		Seed: seed, Violations: vs, Mutant: mutant, TraceFile: trace,
		Replay: "go run ./cmd/explore -replay " + reportDir + "/" + trace,
		Rerun:  fmt.Sprintf("go run ./cmd/explore -world %s -mutant %s -seed %d -trace %s", cfg.Name, cfg.Mutant, seed, trace),
		Traced: &Traced{Steps: traced.Steps, Virtual: traced.Virtual, Trace: traced.Trace,
			Snapshot: traced.Snapshot, Linearizability: traced.Linearizability},
	}
}

// buildKillTable fills a kill table's Run: rows and one kill's page, and
// nothing summed over seeds.
func buildKillTable(cfg scenarios.Config, fx fixture) *Run {
	r := &Run{World: "mutant catalog", Strategy: "random", SeedStart: 1, Seeds: 2000, Shard: "0/1", Elapsed: 1234 * time.Millisecond,
		Notes: []string{"real core on chaos, same budget: green"}}
	res := scenarios.Run(cfg, fx.start, scenarios.Options{})
	f := tracedFailure(cfg, fx.start, res.Violations, fx.mutant)
	f.World = fx.world
	r.Failures = []Failure{f}
	r.Mutants = []MutantRow{
		{Name: "check-then-insert", Breaks: "intake looks the id up, then inserts", World: "chaos", Verdict: "killed",
			SeedsToKill: fx.start, KillingSeed: fx.start, SeedsRun: int(fx.start), Invariants: []string{"intake-uniqueness", "linearizable-intake"},
			Replay: f.Rerun, Recorded: fx.start},
		{Name: "txid-not-unique", Breaks: "the store does not enforce that a txid belongs to one operation", World: "chaos",
			Verdict: "survived-as-listed", SeedsRun: 2000, Uncaught: "the core writes the operation id into every memo"},
		{Name: "slow-to-die", Breaks: "a mutant the budget is too small for", World: "chaos", Verdict: "budget-too-small", SeedsRun: 2000, Recorded: 5000},
		{Name: "imaginary", Breaks: "a mutant nothing catches", World: "pair", Verdict: "survived", SeedsRun: 2000},
	}
	return r
}

// timingsRe matches the one element allowed to differ between runs.
var timingsRe = regexp.MustCompile(`<p class="` + TimingsClass + `">[^<]*</p>`)

func mask(b []byte) []byte {
	return timingsRe.ReplaceAll(b, []byte(`<p class="`+TimingsClass+`">(masked)</p>`))
}

// Goal: the pages are what they were, byte for byte apart from timings.
// Run with -update to accept a change; review the diff of testdata/.
// porcupine's own visualization is not golden (it is porcupine's output);
// TestDeterministic covers its stability.
func TestGolden(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			files, err := Render(fixtureRuns(t)[fx.name])
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("testdata", fx.name)
			var names []string
			for _, f := range files {
				// porcupine's pages and the simulator's traces are not ours to
				// pin; TestDeterministic covers their stability.
				if strings.HasSuffix(f.Name, "-linearizability.html") || strings.HasSuffix(f.Name, ".jsonl") {
					continue
				}
				names = append(names, f.Name)
				path := filepath.Join(dir, f.Name)
				got := mask(f.Data)
				if *update {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./reports -update to create it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from the golden file: %s\n(run go test ./reports -update and review the diff)", path, firstDiff(got, want))
				}
			}
			// No stale golden files: the set of pages is part of the output.
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if !slices.Contains(names, e.Name()) {
					if *update {
						os.Remove(filepath.Join(dir, e.Name()))
						continue
					}
					t.Errorf("golden file %s is no longer produced", e.Name())
				}
			}
		})
	}
}

func firstDiff(got, want []byte) string {
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < max(len(gl), len(wl)); i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			return fmt.Sprintf("line %d:\n got: %.300s\nwant: %.300s", i+1, g, w)
		}
	}
	return "(same lines, different bytes)"
}

// Goal: the same Run renders the same bytes every time, including
// porcupine's page, and a different Elapsed changes only the timings element.
func TestDeterministic(t *testing.T) {
	r := fixtureRuns(t)["chaos-check-then-insert"]
	a, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	r2 := *r
	r2.Elapsed = 99 * time.Second
	b, err := Render(&r2)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) {
		t.Fatalf("%d files, then %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			t.Fatalf("file %d: %s, then %s", i, a[i].Name, b[i].Name)
		}
		if !bytes.Equal(mask(a[i].Data), mask(b[i].Data)) {
			t.Errorf("%s: differs beyond the timings: %s", a[i].Name, firstDiff(a[i].Data, b[i].Data))
		}
	}
	if bytes.Equal(a[0].Data, b[0].Data) {
		t.Errorf("index.html does not show Elapsed")
	}
}

// Goal: Write lays out the files the index links to, and the pages are
// self-contained: no script of ours, nothing fetched from anywhere.
func TestWriteLinksAndSelfContained(t *testing.T) {
	dir := t.TempDir()
	r := fixtureRuns(t)["chaos-check-then-insert"]
	idx, err := Write(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if idx != filepath.Join(dir, "index.html") {
		t.Errorf("Write returned %s", idx)
	}
	for _, want := range []string{"index.html", "seed-25.html", "seed-25-linearizability.html", "chaos-check-then-insert-seed25.trace.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
			t.Errorf("missing %s: %v", want, err)
		}
	}
	href := regexp.MustCompile(`href="([^"]+)"`)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "-linearizability.html") || strings.HasSuffix(e.Name(), ".jsonl") {
			continue // porcupine's page carries its own script; a trace is data
		}
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		for _, bad := range []string{"<script", "://", "@import", "<img", "<link"} {
			if bytes.Contains(b, []byte(bad)) {
				t.Errorf("%s contains %q: pages must stand alone", e.Name(), bad)
			}
		}
		for _, m := range href.FindAllSubmatch(b, -1) {
			if _, err := os.Stat(filepath.Join(dir, string(m[1]))); err != nil {
				t.Errorf("%s links to %s, which was not written", e.Name(), m[1])
			}
		}
	}
}

// Goal: the index shows what the issue asks for, in words a reader finds.
func TestIndexContent(t *testing.T) {
	files, err := Render(fixtureRuns(t)["chaos-check-then-insert"])
	if err != nil {
		t.Fatal(err)
	}
	idx := string(files[0].Data)
	for _, want := range []string{
		"world <b>chaos</b>", "mutant <b>check-then-insert</b>", "seeds 24..26",
		`<td>intake-uniqueness</td><td class="num">1</td>`,
		`<tr class="zero"><td>zz-never-fired</td>`, "never fired",
		"none → requested: ", "class=\"edge unhit\"",
		"p50 &lt;",
		`<a href="seed-25.html">25</a>`, `<a class="mono" href="chaos-check-then-insert-seed25.trace.jsonl">`,
	} {
		if !strings.Contains(idx, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	seed := string(files[1].Data)
	for _, want := range []string{
		"linearizable-intake", `href="seed-25-linearizability.html"`, "Operation op7",
		"none → requested", "go run ./cmd/explore -replay report/chaos-check-then-insert-seed25.trace.jsonl",
		`href="chaos-check-then-insert-seed25.trace.jsonl"`,
		`class="lanes"`, "c7&#39;", // the twin client gets its own lane
		"other clients (",
	} {
		if !strings.Contains(seed, want) {
			t.Errorf("seed-25.html lacks %q", want)
		}
	}
	zr := fixtureRuns(t)["zombies-send-before-write-ahead"]
	zf, err := Render(zr)
	if err != nil {
		t.Fatal(err)
	}
	z := string(zf[1].Data)
	for _, want := range []string{"at-most-once", "conservation", "Operation op6"} {
		if !strings.Contains(z, want) {
			t.Errorf("%s lacks %q", zf[1].Name, want)
		}
	}
	if strings.Contains(z, "linearizability.html") {
		t.Errorf("%s links a linearizability page though linearizable-intake held", zf[1].Name)
	}
}

// Goal: the index of a merge of some shards only says plainly that it is
// partial and which seeds are missing; a whole run's says nothing of it.
func TestIndexSaysPartial(t *testing.T) {
	r := fixtureRuns(t)["chaos-check-then-insert"]
	whole, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	if idx := string(whole[0].Data); strings.Contains(idx, "PARTIAL") || strings.Contains(idx, "missing") {
		t.Errorf("a whole run's index speaks of missing shards")
	}
	p := *r
	p.SeedStart, p.Seeds, p.MissingShards, p.Shards = 1, 40, []int{1, 2}, 4
	files, err := Render(&p)
	if err != nil {
		t.Fatal(err)
	}
	idx := string(files[0].Data)
	for _, want := range []string{
		"<title>sluicesim: chaos (mutant check-then-insert) (PARTIAL)</title>",
		"<b>PARTIAL</b>", "shards 1, 2 of 4 missing, 20 seeds",
		"<li>shard 1/4: seeds 2, 6, …, 38 (every 4th seed from 2: 10 seeds)</li>",
		"<li>shard 2/4: seeds 3, 7, …, 39 (every 4th seed from 3: 10 seeds)</li>",
	} {
		if !strings.Contains(idx, want) {
			t.Errorf("a partial index lacks %q", want)
		}
	}
	p.MissingShards = []int{4}
	if _, err := Render(&p); err == nil || !strings.Contains(err.Error(), "missing shard 4") {
		t.Errorf("a missing shard the range does not have: %v", err)
	}
}

func TestStrideSeeds(t *testing.T) {
	for _, c := range []struct {
		first     uint64
		stride, n int
		want      string
	}{
		{5, 8, 0, "no seeds (the range has fewer seeds than shards)"},
		{5, 8, 1, "seed 5"},
		{5, 8, 3, "seeds 5, 13, 21"},
		{5, 8, 4, "seeds 5, 13, 21, 29"},
		{5, 2, 5, "seeds 5, 7, …, 13 (every 2nd seed from 5: 5 seeds)"},
		{1, 11, 9, "seeds 1, 12, …, 89 (every 11th seed from 1: 9 seeds)"},
		{1, 21, 9, "seeds 1, 22, …, 169 (every 21st seed from 1: 9 seeds)"},
		{1, 113, 9, "seeds 1, 114, …, 905 (every 113th seed from 1: 9 seeds)"},
		{1, 3, 9, "seeds 1, 4, …, 25 (every 3rd seed from 1: 9 seeds)"},
	} {
		if got := strideSeeds(c.first, c.stride, c.n); got != c.want {
			t.Errorf("strideSeeds(%d, %d, %d) = %q, want %q", c.first, c.stride, c.n, got, c.want)
		}
	}
}

// Goal: facts map to the marks the legend promises.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		fact  model.Fact
		class string
	}{
		{model.Fact{Kind: model.FactCrash}, "crash"},
		{model.Fact{Kind: model.FactStop}, "crash"},
		{model.Fact{Kind: model.FactPause, Dur: 40 * time.Second}, "pause"},
		{model.Fact{Kind: model.FactPauseBeforeWrite, Dur: 40 * time.Second}, "pausew"},
		{model.Fact{Kind: model.FactWake}, "wake"},
		{model.Fact{Kind: model.FactStall, Dur: 8 * time.Second}, "stall"},
		{model.Fact{Kind: model.FactBroadcast, Txid: "1a2b3c4d", Answer: "timeout", Failed: true}, "lie"},
		{model.Fact{Kind: model.FactBroadcast, Txid: "1a2b3c4d", Answer: "NO_CONNECTION", Failed: true}, "lie"},
		{model.Fact{Kind: model.FactBroadcast, Txid: "1a2b3c4d", Answer: "SUCCESS"}, "other"},
		{model.Fact{Kind: model.FactLookup, Txid: "1a2b3c4d", Answer: "mocknode: timeout", Failed: true}, "lie"},
		{model.Fact{Kind: model.FactLookup, Txid: "1a2b3c4d", Answer: "included #12 solid=true SUCCESS"}, "other"},
		{model.Fact{Kind: model.FactCAS, Op: "op7", From: "signing", To: "signed", Token: 4}, "write"},
		{model.Fact{Kind: model.FactCAS, Op: "op7", From: "signing", To: "signed", Token: 4, Fenced: true}, "fenced"},
		{model.Fact{Kind: model.FactFencedStop}, "fenced"},
		{model.Fact{Kind: model.FactClaim, Claimed: []model.ClaimedRow{{Op: "op1", State: "requested", Token: 1}}}, "claim"},
		{model.Fact{Kind: model.FactRelease, Op: "op7", Token: 2, Dur: 6 * time.Second}, "release"},
		{model.Fact{Kind: model.FactClientPost, Op: "op3", Answer: "created"}, "client"},
		{model.Fact{Kind: model.FactNodeRestart}, "nodefault"},
		{model.Fact{Kind: model.FactEvict, Txid: "1a2b3c4d"}, "nodefault"},
		{model.Fact{Kind: model.FactMissedSlots, N: 2}, "nodefault"},
		{model.Fact{Kind: model.FactNodeLag, N: 40, Answer: "node 1"}, "nodefault"},
		{model.Fact{Kind: model.FactReorg, N: 3}, "nodefault"},
		{model.Fact{Kind: model.FactOddExecution, Txid: "1a2b3c4d", Answer: "fee"}, "nodefault"},
		{model.Fact{Kind: model.FactStoreStall, Dur: time.Second}, "stall"},
		{model.Fact{Kind: model.FactClockJump, Dur: time.Minute, Skew: time.Minute}, "clock"},
		{model.Fact{Kind: model.FactLeaseExpired, Op: "op2", Holder: "w1", Token: 3}, "lease"},
	} {
		if got := classify(factEvent(t, 0, 0, "w1", tc.fact)).class; got != tc.class {
			t.Errorf("classify(%q) = %s, want %s", tc.fact.Text(), got, tc.class)
		}
	}
	// An event without a fact (a trace of another kind) is drawn as other.
	if got := classify(sim.Event{Text: "CRASH"}).class; got != "other" {
		t.Errorf("classify(an event without data) = %s, want other", got)
	}
}

// Goal: percentiles read off a histogram by nearest rank.
func TestHistogramStats(t *testing.T) {
	h := make([]int, 100)
	for i := range h {
		h[i] = 1 // one value in each second 0..99
	}
	s := histogramStats(h)
	if s.N != 100 || s.P50 != 49 || s.P95 != 94 || s.P99 != 98 || s.Max != 99 {
		t.Errorf("got %+v, want N=100 P50=49 P95=94 P99=98 Max=99", s)
	}
	if s := histogramStats([]int{0, 0, 5}); s.P50 != 2 || s.P99 != 2 {
		t.Errorf("one bucket: %+v", s)
	}
	if s := histogramStats(nil); s.N != 0 {
		t.Errorf("empty: %+v", s)
	}
}

// factEvent is a trace event carrying f, as the worlds record one.
func factEvent(t *testing.T, step int, at time.Duration, proc string, f model.Fact) sim.Event {
	t.Helper()
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return sim.Event{Step: step, At: at, Proc: proc, Text: f.Text(), Data: data}
}

// Goal: a trace of tens of thousands of events stays legible: lanes fold to
// at most lanesMax, ordinary marks stop at marksMax, and the page says so.
func TestTimelineCaps(t *testing.T) {
	var evs []sim.Event
	for i := range 30000 {
		at := time.Duration(i) * 10 * time.Millisecond
		evs = append(evs, factEvent(t, i, at, fmt.Sprintf("c%d", i%500),
			model.Fact{Kind: model.FactClientPost, Op: fmt.Sprintf("op%d", i%500), Answer: "created"}))
		if i%1000 == 0 {
			evs = append(evs, factEvent(t, i, at, fmt.Sprintf("w%d", i/1000), model.Fact{Kind: model.FactCrash}))
		}
	}
	svg, note := swimlanes(evs, 0, []string{"op7"})
	if n := strings.Count(string(svg), `<rect class="lane`); n > lanesMax {
		t.Errorf("%d lanes, want at most %d", n, lanesMax)
	}
	if got := strings.Count(string(svg), `class="m crash"`); got != 30 {
		t.Errorf("%d crash marks, want all 30", got)
	}
	if !strings.Contains(note, "were left out") {
		t.Errorf("note does not say marks were left out: %s", note)
	}
	if !strings.Contains(string(svg), ">c7</text>") {
		t.Errorf("the affected operation's client has no lane of its own")
	}
}

// Goal: Write replaces an earlier report as a whole, leaves nothing of
// its writing beside it, and refuses (changing nothing) a directory that
// is not a report, even one that became so after the run was checked.
func TestWriteReplacesOnlyReports(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "a", "rep") // its parent is created
	r := fixtureRuns(t)["chaos-check-then-insert"]
	if _, err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	passing := *r
	passing.Failures, passing.SeedsFailed = nil, 0
	if _, err := Write(dir, &passing); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || entries[0].Name() != "index.html" {
		t.Errorf("after a passing run's report the directory holds %v", entries)
	}
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 1 {
		t.Errorf("beside the report: %v", entries)
	}
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	if _, err := Write(dir, r); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("a report over a directory holding the user's notes: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("a refused Write changed the directory: %v", entries)
	}
}
