// Command explore runs the sluice simulator: many seeds of a world, one seed,
// or the replay of a trace, and checks the invariants on every run.
//
//	go run ./cmd/explore -seeds 10000          # seeds 1..10000 of the chaos world
//	go run ./cmd/explore -seed 42 -trace t.jsonl
//	go run ./cmd/explore -replay t.jsonl
//
// Exit status: 0 no violation, 1 a violation was found (or a replay did not
// reproduce), 2 bad usage or unreadable input.
package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sluicesim/model"
	"sluicesim/scenarios"
	"sluicesim/sim"
	"sluicesim/sluice"
)

func main() {
	// Runs allocate briskly and keep little: trading memory for fewer
	// collections is worth about a tenth of the run time.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const (
	exitOK        = 0
	exitViolation = 1
	exitUsage     = 2
)

// fixedClock is the clock of the store made only to test the connection.
type fixedClock struct{}

func (fixedClock) Now() time.Time { return time.Unix(0, 0) }

type options struct {
	stores       scenarios.StoreFactory // nil: store.Memory
	storeKind    string
	seeds        int
	seedStart    uint64
	seed         uint64
	seedSet      bool
	world        string
	mutant       string
	strategy     string
	trace        string
	replay       string
	json         string
	parallel     int
	shardI       int
	shardN       int
	progress     bool
	list         bool
	mutants      bool
	seedsSet     bool
	pctDepth     int
	shrink       string
	report       string
	shrinkBudget int
	bounds       scenarios.ExhaustiveBounds
}

// runOptions are the scenarios options the strategy flags ask for.
func (o *options) runOptions() scenarios.Options {
	if o.strategy == "pct" {
		return scenarios.Options{PCTDepth: o.pctDepth, Stores: o.stores}
	}
	return scenarios.Options{Stores: o.stores}
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("explore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.seeds, "seeds", 100, "run `N` seeds, from -seed-start")
	fs.Uint64Var(&o.seedStart, "seed-start", 1, "first seed of the range")
	seed := fs.String("seed", "", "run exactly seed `S` (with events traced)")
	fs.StringVar(&o.world, "world", "chaos", "the world: "+strings.Join(scenarios.WorldNames(), ", "))
	fs.StringVar(&o.mutant, "mutant", "", "run against a deliberately broken core: "+strings.Join(scenarios.MutantNames(), ", "))
	fs.StringVar(&o.strategy, "strategy", "random", "how tapes are produced: random or pct")
	fs.IntVar(&o.pctDepth, "pct-depth", 3, "PCT's depth `D`: D-1 priority change points per run")
	o.bounds = scenarios.DefaultExhaustiveBounds()
	fs.IntVar(&o.bounds.Crashes, "max-crashes", o.bounds.Crashes, "exhaustive: crashes per schedule")
	fs.IntVar(&o.bounds.Pauses, "max-pauses", o.bounds.Pauses, "exhaustive: pauses per schedule")
	fs.IntVar(&o.bounds.Lies, "max-lies", o.bounds.Lies, "exhaustive: lying node answers per schedule")
	fs.IntVar(&o.bounds.Preemptions, "max-preemptions", o.bounds.Preemptions, "exhaustive: deviations from the default schedule (-1: no bound)")
	fs.IntVar(&o.bounds.StepsMax, "max-steps", o.bounds.StepsMax, "exhaustive: steps per schedule")
	fs.IntVar(&o.bounds.SchedulesMax, "max-schedules", o.bounds.SchedulesMax, "exhaustive: stop (incomplete) after this many runs")
	noReduction := fs.Bool("no-reduction", false, "exhaustive: explore commuting interleavings too (no sleep sets)")
	fs.StringVar(&o.trace, "trace", "", "write the trace of the first failing seed (or of -seed S) to `FILE`")
	fs.StringVar(&o.replay, "replay", "", "re-run the trace in `FILE`, check it reproduces, print its verdict")
	fs.StringVar(&o.shrink, "shrink", "", "minimize the failing trace in `FILE` while the same invariant fails; writes -trace (default FILE.shrunk.jsonl)")
	fs.IntVar(&o.shrinkBudget, "shrink-seeds", 200, "seeds tried per candidate world while shrinking")
	fs.StringVar(&o.json, "json", "", "write a machine-readable summary to `FILE`")
	fs.StringVar(&o.report, "report", "", "write an HTML report to `DIR`")
	fs.IntVar(&o.parallel, "parallel", runtime.GOMAXPROCS(0), "run `P` seeds at once (each seed stays single-threaded)")
	shard := fs.String("shard", "", "run only shard `I/N` of the seed range (0 <= I < N)")
	fs.BoolVar(&o.progress, "progress", isTerminal(stderr), "show a live progress line on stderr")
	fs.BoolVar(&o.list, "list-mutants", false, "print the mutant catalog, one a line, and exit")
	fs.BoolVar(&o.mutants, "mutants", false, "run every mutant against its world (budget: -seeds, default 10000) and print the kill table")
	fs.StringVar(&o.storeKind, "store", "memory", "the store the worlds run on: memory, or postgres (the real PostgreSQL store at $DATABASE_URL, a fresh schema per seed; with -mutants, the mutants of the store)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.bounds.Reduce = !*noReduction
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.seedsSet = set["seeds"]
	if o.mutants {
		for _, f := range []string{"seed", "replay", "mutant", "world", "shard", "trace"} {
			if set[f] {
				return nil, fmt.Errorf("-mutants runs the whole catalog on each mutant's own world: drop -%s", f)
			}
		}
	}
	if *seed != "" {
		v, err := strconv.ParseUint(*seed, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("-seed %q: want a non-negative integer", *seed)
		}
		o.seed, o.seedSet = v, true
		if set["seeds"] || set["seed-start"] || set["shard"] {
			return nil, errors.New("-seed runs one seed: drop -seeds, -seed-start and -shard")
		}
	}
	if o.replay != "" && o.shrink != "" {
		return nil, errors.New("-replay and -shrink each take a trace: give one")
	}
	if o.shrinkBudget < 1 {
		return nil, fmt.Errorf("-shrink-seeds %d: want at least 1", o.shrinkBudget)
	}
	if o.replay != "" || o.shrink != "" {
		for _, f := range []string{"seeds", "seed-start", "seed", "world", "shard", "strategy", "mutant"} {
			if set[f] {
				return nil, fmt.Errorf("-replay and -shrink take everything from the trace: drop -%s", f)
			}
		}
	}
	if o.seeds < 1 {
		return nil, fmt.Errorf("-seeds %d: want at least 1", o.seeds)
	}
	if o.parallel < 1 {
		return nil, fmt.Errorf("-parallel %d: want at least 1", o.parallel)
	}
	switch o.strategy {
	case "random":
	case "pct":
		if o.pctDepth < 1 {
			return nil, fmt.Errorf("-pct-depth %d: want at least 1", o.pctDepth)
		}
	case "exhaustive":
		if set["seeds"] || set["seed-start"] || set["shard"] || set["seed"] {
			return nil, errors.New("-strategy exhaustive enumerates schedules, not seeds: drop -seeds, -seed-start, -seed and -shard")
		}
		b := o.bounds
		if b.Crashes < 0 || b.Pauses < 0 || b.Lies < 0 || b.Preemptions < sim.NoPreemptionBound || b.StepsMax < 1 || b.SchedulesMax < 1 {
			return nil, errors.New("exhaustive bounds must not be negative (but -max-preemptions -1 means no bound), and -max-steps and -max-schedules must be positive")
		}
	default:
		return nil, fmt.Errorf("-strategy %q: want random, pct or exhaustive", o.strategy)
	}
	cfg, err := scenarios.World(o.world)
	if err != nil {
		return nil, fmt.Errorf("-world: %w", err)
	}
	cfg.Mutant = o.mutant
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("-mutant: %w", err)
	}
	switch o.storeKind {
	case "memory":
	case "postgres":
		for _, f := range []string{"replay", "shrink"} {
			if set[f] {
				return nil, fmt.Errorf("-store postgres runs seeds (-seeds, -seed, or the store mutants with -mutants): drop -%s", f)
			}
		}
		if o.strategy == "exhaustive" {
			return nil, errors.New("-store postgres runs seeds: exhaustive search runs on the memory store")
		}
		url := os.Getenv("DATABASE_URL")
		if url == "" {
			return nil, errors.New("-store postgres needs DATABASE_URL (make test's private cluster: eval \"$(.ci/postgres.sh start)\")")
		}
		if o.stores, err = scenarios.PostgresStores(url); err != nil {
			return nil, err
		}
		// One store now, so that a database that cannot be reached is a
		// clear error before any seed runs, not a failure of every seed.
		_, dispose, err := o.stores(fixedClock{}, time.Second)
		if err != nil {
			return nil, fmt.Errorf("-store postgres: %w", err)
		}
		dispose()
	default:
		return nil, fmt.Errorf("-store %q: want memory or postgres", o.storeKind)
	}
	o.shardN = 1
	if *shard != "" {
		i, n, ok := strings.Cut(*shard, "/")
		iv, err1 := strconv.Atoi(i)
		nv, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || nv < 1 || iv < 0 || iv >= nv {
			return nil, fmt.Errorf("-shard %q: want I/N with 0 <= I < N, e.g. 0/4", *shard)
		}
		o.shardI, o.shardN = iv, nv
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "explore:", err)
		}
		return exitUsage
	}
	switch {
	case o.list:
		return listMutants(stdout)
	case o.mutants:
		budget := 10000
		if o.seedsSet {
			budget = o.seeds
		}
		return mutants(o, budget, stdout, stderr)
	case o.replay != "":
		return replay(o, stdout, stderr)
	case o.shrink != "":
		return shrink(o, stdout, stderr)
	case o.strategy == "exhaustive":
		return exhaustive(o, stdout, stderr)
	case o.seedSet:
		return single(o, stdout, stderr)
	}
	return explore(o, stdout, stderr)
}

// strategyFlags repeats the strategy flags for a re-run command.
func (o *options) strategyFlags() string {
	if o.strategy == "pct" {
		return fmt.Sprintf(" -strategy pct -pct-depth %d", o.pctDepth)
	}
	return ""
}

// config is the world the flags name, with the mutant if any.
func (o *options) config() scenarios.Config {
	cfg, _ := scenarios.World(o.world)
	cfg.Mutant = o.mutant
	return cfg
}

// single runs one seed with events traced.
func single(o *options, stdout, stderr io.Writer) int {
	cfg := o.config()
	ro := o.runOptions()
	ro.Tracing = true
	res := scenarios.Run(cfg, o.seed, ro)
	fmt.Fprintf(stdout, "world %s%s, seed %d: %d steps, %s virtual, %d choices, %d events\n",
		cfg.Name, mutantNote(cfg), o.seed, res.Steps, res.Virtual, len(res.Trace.Tape), len(res.Trace.Events))
	printVerdict(stdout, res.Violations)
	if o.trace != "" {
		if err := writeArtifacts(stdout, o.trace, res); err != nil {
			fmt.Fprintln(stderr, "explore:", err)
			return exitUsage
		}
		fmt.Fprintf(stdout, "replay: go run ./cmd/explore -replay %s\n", o.trace)
	}
	if res.Failed() {
		return exitViolation
	}
	return exitOK
}

// exhaustive enumerates the world's schedules within bounds.
func exhaustive(o *options, stdout, stderr io.Writer) int {
	cfg := o.config()
	b := o.bounds
	reduction := "sleep sets over step footprints"
	if !b.Reduce {
		reduction = "none"
	}
	preemptions := fmt.Sprintf("<= %d", b.Preemptions)
	if b.Preemptions < 0 {
		preemptions = "unbounded"
	}
	fmt.Fprintf(stdout, "world %s%s, strategy exhaustive: crashes <= %d, pauses <= %d, lies <= %d, preemptions %s, steps <= %d; reduction: %s\n",
		cfg.Name, mutantNote(cfg), b.Crashes, b.Pauses, b.Lies, preemptions, b.StepsMax, reduction)
	began := time.Now()
	var progress func(sim.ExhaustiveStats)
	if o.progress {
		progress = func(st sim.ExhaustiveStats) {
			fmt.Fprintf(stderr, "\r\033[Kschedules %d, pruned %d", st.Schedules, st.Pruned)
		}
	}
	res, err := scenarios.Exhaust(cfg, b, progress)
	if o.progress {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	st := res.Stats
	if st.Complete {
		fmt.Fprintf(stdout, "complete within bounds: %d schedules (%d more cut short as redundant), %d with violations\n", st.Schedules, st.Pruned, res.Violations)
	} else {
		fmt.Fprintf(stdout, "NOT complete: the budget of %d runs ran out after %d schedules (%d cut short as redundant), %d with violations\n",
			b.SchedulesMax, st.Schedules, st.Pruned, res.Violations)
	}
	code := exitOK
	if res.FirstFailure != nil {
		code = exitViolation
		printVerdict(stdout, res.FirstFailure.Violations)
		path := o.trace
		if path == "" {
			path = cfg.Name + "-exhaustive.trace.jsonl"
		}
		if err := writeArtifacts(stdout, path, res.FirstFailure); err != nil {
			fmt.Fprintln(stderr, "explore:", err)
			return exitUsage
		}
		fmt.Fprintf(stdout, "replay: go run ./cmd/explore -replay %s\n", path)
	}
	elapsed := time.Since(began)
	fmt.Fprintf(stdout, "\nexplored in %.1fs (%.0f runs/s)\n", elapsed.Seconds(), float64(st.Schedules+st.Pruned)/elapsed.Seconds())
	return code
}

// readTraceFile opens and checks a trace file; the error names the file.
func readTraceFile(path string) (*sim.Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := sim.ReadTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// replay re-runs a trace file.
func replay(o *options, stdout, stderr io.Writer) int {
	t, err := readTraceFile(o.replay)
	if err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	res, err := scenarios.Replay(t)
	if res == nil {
		fmt.Fprintf(stderr, "explore: %s: %v\n", o.replay, err)
		return exitUsage
	}
	if err != nil {
		fmt.Fprintf(stdout, "replay of %s does NOT reproduce: %v\n", o.replay, err)
		printVerdict(stdout, res.Violations)
		return exitViolation
	}
	fmt.Fprintf(stdout, "replay of %s (world %s, seed %d) reproduces it: %d choices, %d events identical\n",
		o.replay, t.Header.World, t.Header.Seed, len(t.Tape), len(t.Events))
	printVerdict(stdout, res.Violations)
	if res.Failed() {
		return exitViolation
	}
	return exitOK
}

// shrink minimizes a failing trace and writes the minimal one.
func shrink(o *options, stdout, stderr io.Writer) int {
	t, err := readTraceFile(o.shrink)
	if err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	var progress func(string)
	if o.progress {
		progress = func(s string) { fmt.Fprintf(stderr, "\r\033[Kshrinking: %s", s) }
	}
	sr, err := scenarios.Shrink(t, o.shrinkBudget, progress)
	if o.progress {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		fmt.Fprintf(stderr, "explore: %s: %v\n", o.shrink, err)
		return exitUsage
	}
	out := o.trace
	if out == "" {
		out = strings.TrimSuffix(o.shrink, ".jsonl") + ".shrunk.jsonl"
	}
	fmt.Fprintf(stdout, "shrinking %s: %s, %d steps\n", o.shrink, sr.Invariant, sr.Original.Steps)
	for _, s := range sr.Steps {
		fmt.Fprintln(stdout, "  "+s)
	}
	fmt.Fprintf(stdout, "shrunk to %d steps (%.0f%% of the original) after %d runs; world %s, seed %d, withdrawals %v, %d workers\n",
		sr.Best.Steps, 100*float64(sr.Best.Steps)/float64(sr.Original.Steps), sr.Tried, sr.Config.Name, sr.Seed, sr.Config.Only, sr.Config.Workers)
	printVerdict(stdout, sr.Best.Violations)
	if err := writeArtifacts(stdout, out, sr.Best); err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "replay: go run ./cmd/explore -replay %s\n", out)
	return exitViolation
}

func printVerdict(w io.Writer, vs []model.Violation) {
	if len(vs) == 0 {
		fmt.Fprintln(w, "verdict: every invariant holds")
		return
	}
	fmt.Fprintf(w, "verdict: %d violation(s)\n", len(vs))
	for _, v := range vs {
		fmt.Fprintf(w, "  %s: %s\n", v.Invariant, v.Message)
	}
}

func mutantNote(cfg scenarios.Config) string {
	if cfg.Mutant == "" {
		return ""
	}
	return " (mutant " + cfg.Mutant + ")"
}

// writeArtifacts writes a run's trace to path and, when the run violated
// linearizable-intake, porcupine's visualization next to it.
func writeArtifacts(stdout io.Writer, path string, res *scenarios.Result) error {
	if err := writeTrace(path, res.Trace); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "trace: %s\n", path)
	for _, v := range res.Violations {
		if v.Invariant != model.LinearizableIntake || res.Linearizability == nil {
			continue
		}
		html := strings.TrimSuffix(path, ".jsonl") + ".linearizability.html"
		f, err := os.Create(html)
		if err != nil {
			return err
		}
		if err := res.Linearizability.Visualize(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "linearizability visualization: %s\n", html)
		break
	}
	return nil
}

func writeTrace(path string, t *sim.Trace) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := t.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// summary is what -json writes. Everything but Timing is the same from run
// to run of the same flags.
type summary struct {
	World           string             `json:"world"`
	Strategy        string             `json:"strategy"`
	Store           string             `json:"store"`
	SeedStart       uint64             `json:"seed_start"`
	Seeds           int                `json:"seeds"`
	Shard           string             `json:"shard"`
	SeedsRun        int                `json:"seeds_run"`
	SeedsFailed     int                `json:"seeds_failed"`
	PerInvariant    map[string]int     `json:"seeds_failed_per_invariant"`
	Violations      []seedViolation    `json:"violations"`
	ViolationsShown int                `json:"violations_listed"`
	Faults          []model.Tally      `json:"faults"`
	Outcomes        model.Outcomes     `json:"outcomes"`
	FirstFailure    *firstFailure      `json:"first_failure,omitempty"`
	Timing          map[string]float64 `json:"timing"`
}

type seedViolation struct {
	Seed uint64 `json:"seed"`
	model.Violation
}

type firstFailure struct {
	Seed    uint64 `json:"seed"`
	Trace   string `json:"trace"`
	Replay  string `json:"replay"`
	Command string `json:"command"`
}

const violationsListedMax = 1000

// explore runs the seed range in parallel and summarizes.
func explore(o *options, stdout, stderr io.Writer) int {
	cfg := o.config()
	// Seed k of this shard is seedStart + shardI + k*shardN.
	total := 0
	if o.seeds > o.shardI {
		total = (o.seeds-o.shardI-1)/o.shardN + 1
	}
	seedAt := func(k int) uint64 { return o.seedStart + uint64(o.shardI+k*o.shardN) }
	agg := newAggregate(o.seedStart+uint64(o.shardI), o.shardN, total)
	var next, done atomic.Int64
	began := time.Now()

	stopProgress := make(chan struct{})
	var progressWG sync.WaitGroup
	if o.progress {
		progressWG.Add(1)
		go func() {
			defer progressWG.Done()
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stopProgress:
					fmt.Fprint(stderr, "\r\033[K")
					return
				case <-tick.C:
					d := done.Load()
					rate := float64(d) / time.Since(began).Seconds()
					fmt.Fprintf(stderr, "\r\033[Kseeds %d/%d  %.0f seeds/s  seeds with violations so far: %d", d, total, rate, agg.failedCount())
				}
			}
		}()
	}

	var wg sync.WaitGroup
	for range min(o.parallel, total) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := next.Add(1) - 1
				if k >= int64(total) {
					return
				}
				ro := o.runOptions()
				ro.Now = time.Now
				agg.add(scenarios.Run(cfg, seedAt(int(k)), ro))
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(began)
	close(stopProgress)
	progressWG.Wait()

	sum := summary{
		World: cfg.Name, Strategy: o.strategy, Store: o.storeKind, SeedStart: o.seedStart, Seeds: o.seeds,
		Shard: fmt.Sprintf("%d/%d", o.shardI, o.shardN), SeedsRun: total,
		PerInvariant: agg.perInvariant, SeedsFailed: agg.failed,
	}
	failures := agg.sortedFailures()
	var first *scenarios.Result
	if len(failures) > 0 {
		first = failures[0]
	}
	for _, res := range failures {
		for _, v := range res.Violations {
			if len(sum.Violations) < violationsListedMax {
				sum.Violations = append(sum.Violations, seedViolation{Seed: res.Seed, Violation: v})
			}
		}
	}
	sum.Faults = agg.faults()
	sum.Outcomes = agg.outcomes
	sum.ViolationsShown = len(sum.Violations)

	fmt.Fprintf(stdout, "world %s%s, strategy %s, store %s, seeds %d..%d", cfg.Name, mutantNote(cfg), o.strategy, o.storeKind, o.seedStart, o.seedStart+uint64(o.seeds)-1)
	if o.shardN > 1 {
		fmt.Fprintf(stdout, ", shard %d/%d", o.shardI, o.shardN)
	}
	fmt.Fprintf(stdout, ": %d seeds run, %d with violations\n\n", total, sum.SeedsFailed)
	fmt.Fprintf(stdout, "withdrawals (all seeds): %s\n", sum.Outcomes)
	fmt.Fprintln(stdout, outcomeVerdict(sum.Outcomes))
	fmt.Fprintln(stdout, "\ninvariant              seeds violated")
	for _, inv := range sortedKeys(sum.PerInvariant) {
		fmt.Fprintf(stdout, "  %-20s %d\n", inv, sum.PerInvariant[inv])
	}
	fmt.Fprintln(stdout, "\nfaults fired (all seeds)")
	fmt.Fprint(stdout, model.FormatTally(sum.Faults))

	code := exitOK
	if first != nil {
		code = exitViolation
		path := o.trace
		if path == "" {
			path = fmt.Sprintf("%s-seed%d.trace.jsonl", cfg.Name, first.Seed)
		}
		ro := o.runOptions()
		ro.Tracing = true
		traced := scenarios.Run(cfg, first.Seed, ro)
		mutantFlag := o.strategyFlags()
		if cfg.Mutant != "" {
			mutantFlag += " -mutant " + cfg.Mutant
		}
		ff := &firstFailure{Seed: first.Seed, Trace: path,
			Replay:  "go run ./cmd/explore -replay " + path,
			Command: fmt.Sprintf("go run ./cmd/explore -world %s%s -seed %d -trace %s", cfg.Name, mutantFlag, first.Seed, path)}
		sum.FirstFailure = ff
		fmt.Fprintf(stdout, "\nfirst failing seed: %d\n", first.Seed)
		printVerdict(stdout, first.Violations)
		if err := writeArtifacts(stdout, path, traced); err != nil {
			fmt.Fprintln(stderr, "explore: writing the trace:", err)
		} else {
			fmt.Fprintf(stdout, "replay: %s\nre-run: %s\n", ff.Replay, ff.Command)
		}
	}

	if o.report != "" {
		if err := writeExploreReport(o, cfg, agg, failures, total, elapsed, stdout); err != nil {
			fmt.Fprintln(stderr, "explore:", err)
			return exitUsage
		}
	}

	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	sum.Timing = map[string]float64{
		"seconds":          elapsed.Seconds(),
		"seeds_per_second": float64(total) / elapsed.Seconds(),
		"heap_inuse_mib":   float64(ms.HeapInuse) / (1 << 20),
		"goroutines":       float64(runtime.NumGoroutine()),
		"check_share":      agg.checkShare(),
	}
	if o.json != "" {
		b, _ := json.MarshalIndent(sum, "", "  ")
		if err := os.WriteFile(o.json, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(stderr, "explore:", err)
			return exitUsage
		}
	}
	fmt.Fprintf(stdout, "\nran %d seeds in %.1fs (%.1f seeds/s, %d workers; checkers %.1f%% of run time; heap in use %.0f MiB, %d goroutines)\n",
		total, elapsed.Seconds(), float64(total)/elapsed.Seconds(), o.parallel, 100*agg.checkShare(),
		float64(ms.HeapInuse)/(1<<20), runtime.NumGoroutine())
	return code
}

// outcomeVerdict is one line on what the withdrawals' outcomes say, so that
// a run that confirmed nothing, or failed many, cannot be missed.
func outcomeVerdict(o model.Outcomes) string {
	switch {
	case o.Requested == 0:
		return "  NOTHING was requested: this run tested no withdrawal"
	case o.Confirmed == 0:
		return "  NOTHING was confirmed: no withdrawal was paid in any seed"
	case o.Confirmed == o.Requested:
		return "  every valid withdrawal was confirmed"
	}
	return fmt.Sprintf("  %.1f%% of valid withdrawals confirmed; failures by verified reason above (progress checks each)",
		100*float64(o.Confirmed)/float64(o.Requested))
}

func sortedKeys(m map[string]int) []string {
	// Invariants first in their stable order, then anything else (panics).
	var keys []string
	seen := map[string]bool{}
	for _, k := range model.InvariantNames() {
		if _, ok := m[k]; ok {
			keys = append(keys, k)
			seen[k] = true
		}
	}
	var rest []string
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(keys, rest...)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// aggregate folds results in as they finish, keeping memory flat however
// many seeds run: sums for the tally and the per-invariant counts, and only
// the lowest-numbered failing results, enough to list the first violations.
// Every sum commutes, so the summary does not depend on which seed finished
// first.
type aggregate struct {
	mu sync.Mutex
	// For reports: sums and histograms, so memory does not grow with seeds
	// (steps is one int a seed).
	transitions    [sluice.Rejected + 1][sluice.Rejected + 1]int
	confirmSeconds []int
	rebuilds       []int
	steps          []int
	elapsed        time.Duration // summed over seeds: wall time inside runs
	checkTime      time.Duration // of which the checkers
	outcomes       model.Outcomes
	tally          map[string]int
	perInvariant   map[string]int
	failed         int
	failures       []*scenarios.Result
	firstSeed      uint64 // seed k of the run is firstSeed + k*stride
	stride         int
}

// bump adds one to h[i], growing the histogram as needed.
func bump(h []int, i int) []int {
	for len(h) <= i {
		h = append(h, 0)
	}
	h[i]++
	return h
}

func newAggregate(firstSeed uint64, stride, seeds int) *aggregate {
	a := &aggregate{tally: map[string]int{}, perInvariant: map[string]int{},
		firstSeed: firstSeed, stride: stride, steps: make([]int, seeds)}
	for _, inv := range model.InvariantNames() {
		a.perInvariant[inv] = 0
	}
	return a
}

func (a *aggregate) add(res *scenarios.Result) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.elapsed += res.Elapsed
	a.checkTime += res.CheckTime
	a.outcomes = a.outcomes.Add(res.Outcomes)
	for i, row := range res.Stats.Transitions {
		for j, n := range row {
			a.transitions[i][j] += n
		}
	}
	for _, d := range res.Stats.ConfirmTimes {
		a.confirmSeconds = bump(a.confirmSeconds, int(d/time.Second))
	}
	for _, k := range res.Stats.Rebuilds {
		a.rebuilds = bump(a.rebuilds, k)
	}
	if k := int(res.Seed - a.firstSeed); a.stride > 0 && k >= 0 && k%a.stride == 0 && k/a.stride < len(a.steps) {
		a.steps[k/a.stride] = res.Steps
	}
	for _, t := range res.Tally {
		a.tally[t.Kind] += t.Count
	}
	if !res.Failed() {
		return
	}
	a.failed++
	hit := map[string]bool{}
	for _, v := range res.Violations {
		if !hit[v.Invariant] {
			hit[v.Invariant] = true
			a.perInvariant[v.Invariant]++
		}
	}
	res.Tally = nil
	a.failures = append(a.failures, res)
	if len(a.failures) > 2*violationsListedMax {
		a.trim()
	}
}

// trim keeps the lowest-numbered failing seeds; each has at least one
// violation, so these hold the first violationsListedMax violations.
func (a *aggregate) trim() {
	slices.SortFunc(a.failures, func(x, y *scenarios.Result) int { return cmp.Compare(x.Seed, y.Seed) })
	if len(a.failures) > violationsListedMax {
		a.failures = a.failures[:violationsListedMax]
	}
}

func (a *aggregate) sortedFailures() []*scenarios.Result {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.trim()
	return a.failures
}

// checkShare is the fraction of the runs' wall time the checkers took.
func (a *aggregate) checkShare() float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.elapsed == 0 {
		return 0
	}
	return float64(a.checkTime) / float64(a.elapsed)
}

func (a *aggregate) failedCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failed
}

func (a *aggregate) faults() []model.Tally {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]model.Tally, 0, len(a.tally))
	for k, v := range a.tally {
		out = append(out, model.Tally{Kind: k, Count: v})
	}
	return model.MergeTallies(out)
}
