package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"sluicesim/scenarios"
	"sluicesim/sim"
)

func main() {
	scenarios.BatchGC()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const (
	exitOK           = 0
	exitViolation    = 1
	exitUsage        = 2
	exitInconclusive = 3
	// exitInterrupted: a signal (Ctrl-C, a pod's SIGTERM) stopped a seed
	// range that found no violation: what ran is summarised, the rest of
	// the range is unknown. 128 + SIGINT, as a shell reports it.
	exitInterrupted = 130
	// exitHung: a seed outlasted -seed-timeout (runner.go's seedWatch).
	exitHung = 4
)

// defaultSeedTimeout is -seed-timeout's default: a seed costs milliseconds
// in memory and about a second on PostgreSQL, so five minutes is a hang on
// any machine, and short enough that a CI job sees it well before its own
// timeout.
const defaultSeedTimeout = 5 * time.Minute

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
	anyWorld     bool          // -exhaustive-any-world
	swarm        swarmFlag     // -swarm: each seed draws its own variant of the world
	seedRandom   bool          // -seed-start random: seedStart was drawn
	duration     time.Duration // -duration: stop claiming seeds after this long
	seedTimeout  time.Duration // -seed-timeout: a seed running longer hangs (exitHung)
	recheck      float64       // -recheck: fraction of seeds run twice and compared
	regressions  string        // -regressions: where a failing seed's trace is kept
	requireCov   bool          // -require-coverage: fail a run that missed a condition
	cpuProfile   string        // -cpuprofile: where the run's CPU profile goes
	memProfile   string        // -memprofile: where the run's allocation profile goes
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
	seedStart := fs.String("seed-start", "1", "first seed of the range, or `random` for a fresh range (the start chosen is printed and in -json)")
	fs.DurationVar(&o.seedTimeout, "seed-timeout", defaultSeedTimeout, "a seed still running after `D` hangs (a seed range, -mutants, -seed, and the first PostgreSQL store): print it, how to run it alone and every goroutine's stack, and exit 4 (0: wait for ever)")
	fs.DurationVar(&o.duration, "duration", 0, "run seeds from -seed-start until `D` (e.g. 10m) has passed, then summarise the seeds run (at most -seeds if given, else 1,000,000)")
	fs.BoolVar(&o.requireCov, "require-coverage", false, "fail (exit 3) a seed range that never reached a condition of the coverage catalog the world should reach (every edge of the state machine, faults at the dangerous points)")
	fs.StringVar(&o.regressions, "regressions", "", "keep the first failing seed's trace (real core only) in the regression corpus `DIR` too ("+regressionCorpus+" in this repository), which make test re-runs")
	fs.Float64Var(&o.recheck, "recheck", 0, "determinism re-check: run a fraction `F` (0 to 1) of the seeds a second time in the same process, after the others, and fail if a tape or verdict differs")
	seed := fs.String("seed", "", "run exactly seed `S` (with events traced)")
	fs.StringVar(&o.world, "world", "chaos", "the world: "+strings.Join(scenarios.WorldNames(), ", "))
	fs.StringVar(&o.mutant, "mutant", "", "run against a deliberately broken core: "+strings.Join(scenarios.MutantNames(), ", "))
	fs.StringVar(&o.strategy, "strategy", "random", "how tapes are produced: random, pct (see -pct-depth) or exhaustive (every schedule within the -max-* bounds)")
	fs.IntVar(&o.pctDepth, "pct-depth", 3, "PCT's depth `D`: D-1 priority change points per run")
	o.bounds = scenarios.DefaultExhaustiveBounds()
	fs.IntVar(&o.bounds.Crashes, "max-crashes", o.bounds.Crashes, "exhaustive: crashes per schedule")
	fs.IntVar(&o.bounds.Pauses, "max-pauses", o.bounds.Pauses, "exhaustive: pauses per schedule")
	fs.IntVar(&o.bounds.Lies, "max-lies", o.bounds.Lies, "exhaustive: lying node answers per schedule")
	fs.IntVar(&o.bounds.Preemptions, "max-preemptions", o.bounds.Preemptions, "exhaustive: deviations from the default schedule (-1: no bound)")
	fs.IntVar(&o.bounds.Routes, "max-routes", o.bounds.Routes, "exhaustive, worlds of several nodes: calls sent to a node other than node 0 per schedule")
	fs.IntVar(&o.bounds.Lags, "max-lags", o.bounds.Lags, "exhaustive, worlds of several nodes: times a node falls behind per schedule")
	fs.IntVar(&o.bounds.GossipLosses, "max-gossip-losses", o.bounds.GossipLosses, "exhaustive, worlds of several nodes: gossip hops lost per schedule")
	fs.IntVar(&o.bounds.StepsMax, "max-steps", o.bounds.StepsMax, "exhaustive: steps per schedule")
	fs.IntVar(&o.bounds.SchedulesMax, "max-schedules", o.bounds.SchedulesMax, "exhaustive: stop (incomplete) after this many runs")
	noReduction := fs.Bool("no-reduction", false, "exhaustive: explore commuting interleavings too (no reduction)")
	fs.BoolVar(&o.anyWorld, "exhaustive-any-world", false, fmt.Sprintf("exhaustive: search a world of more than %d withdrawals or %d workers anyway (it may not finish)", exhaustiveMaxWithdrawals, exhaustiveMaxWorkers))
	fs.StringVar(&o.trace, "trace", "", "write the trace of the first failing seed (or of -seed S, of the first failing schedule, or the shrunk trace) to `FILE`")
	fs.StringVar(&o.replay, "replay", "", "re-run the trace in `FILE`, check it reproduces, print its verdict")
	fs.StringVar(&o.shrink, "shrink", "", "minimize the failing trace in `FILE` while the same invariant fails; writes -trace (default FILE.shrunk.jsonl)")
	fs.IntVar(&o.shrinkBudget, "shrink-seeds", 200, "seeds tried per candidate world while shrinking")
	fs.StringVar(&o.json, "json", "", "write a machine-readable summary to `FILE` (every mode)")
	fs.StringVar(&o.report, "report", "", "write an HTML report to `DIR`, with the traces it links (every mode)")
	fs.IntVar(&o.parallel, "parallel", runtime.GOMAXPROCS(0), "run `P` seeds at once (each seed stays single-threaded)")
	shard := fs.String("shard", "", "run only shard `I/N` of the seed range (0 <= I < N); auto/N takes I from $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job); explore merge adds the shards' -json summaries up")
	fs.BoolVar(&o.progress, "progress", isTerminal(stderr), "show a live progress line on stderr")
	fs.BoolVar(&o.list, "list-mutants", false, "print the mutant catalog, one a line, and exit")
	fs.BoolVar(&o.mutants, "mutants", false, "run every mutant against its world (budget: -seeds, default 10000) and print the kill table")
	fs.Var(&o.swarm, "swarm", "swarm testing: each seed first draws its own variant of the world from the tape (which faults are on and how often, workers, withdrawals, lease, expiration; the draw is in the trace header). On by default for the chaos world, off for the others: -swarm or -swarm=false to choose")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to `FILE`, for go tool pprof")
	fs.StringVar(&o.memProfile, "memprofile", "", "write a profile of the whole run's allocations to `FILE`, for go tool pprof")
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
		if o.strategy == "exhaustive" {
			return nil, errors.New("-mutants runs seeds (random or pct): exhaustive search takes one mutant, with -mutant and -world")
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
	if o.list {
		for _, f := range slices.Sorted(maps.Keys(set)) {
			if f != "list-mutants" {
				return nil, fmt.Errorf("-list-mutants prints the catalog and runs nothing: drop -%s (-mutants runs the catalog)", f)
			}
		}
	}
	if o.replay != "" && set["trace"] {
		return nil, errors.New("-replay reads a trace and writes none: drop -trace (-report DIR keeps a copy of the trace with the report)")
	}
	if err := onlyWith(set, o); err != nil {
		return nil, err
	}
	if o.shrinkBudget < 1 {
		return nil, fmt.Errorf("-shrink-seeds %d: want at least 1", o.shrinkBudget)
	}
	if o.replay != "" || o.shrink != "" {
		for _, f := range []string{"seeds", "seed-start", "seed", "world", "shard", "strategy", "mutant", "swarm"} {
			if set[f] {
				return nil, fmt.Errorf("-replay and -shrink take everything from the trace: drop -%s", f)
			}
		}
	}
	if o.seeds < 1 {
		return nil, fmt.Errorf("-seeds %d: want at least 1", o.seeds)
	}
	if err := o.parseSeedRange(*seedStart, set); err != nil {
		return nil, err
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
		if o.swarm == swarmOn {
			return nil, errors.New("-swarm draws a world per seed: exhaustive search takes one world; drop -swarm")
		}
		b := o.bounds
		if b.Crashes < 0 || b.Pauses < 0 || b.Lies < 0 || b.Routes < 0 || b.Lags < 0 || b.GossipLosses < 0 ||
			b.Preemptions < sim.NoPreemptionBound || b.StepsMax < 1 || b.SchedulesMax < 1 {
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
	if cfg.Nodes <= 1 {
		// A one-node world never routes a call, lags or gossips: the bound
		// would be ignored, and an ignored flag is refused.
		for _, f := range []string{"max-routes", "max-lags", "max-gossip-losses"} {
			if set[f] {
				return nil, fmt.Errorf("-%s bounds what only a world of several nodes does (pairnodes), and world %s has one node: drop it", f, cfg.Name)
			}
		}
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
		// Watched as a seed is: a migration that never returns would hang
		// the run before its first seed.
		forEachSeed(1, 1, nil, o.watch(stderr, func(int) string {
			return "the first PostgreSQL store (a fresh schema, migrated), made before any seed,"
		}), func(int) {
			var dispose func()
			if _, dispose, err = o.stores(fixedClock{}, time.Second); err == nil {
				dispose()
			}
		})
		if err != nil {
			return nil, fmt.Errorf("-store postgres: %w", err)
		}
	default:
		return nil, fmt.Errorf("-store %q: want memory or postgres", o.storeKind)
	}
	o.shardN = 1
	if *shard != "" {
		spec := *shard
		if n, auto := strings.CutPrefix(spec, "auto/"); auto {
			// A Kubernetes Indexed Job gives each pod its index in
			// JOB_COMPLETION_INDEX; the manifest names only N.
			idx, ok := os.LookupEnv(jobIndexVar)
			nv, err := strconv.Atoi(n)
			if err != nil || nv < 1 {
				return nil, fmt.Errorf("-shard %q: want auto/N with N >= 1, e.g. auto/4", *shard)
			}
			iv, err := strconv.Atoi(idx)
			if !ok || err != nil || iv < 0 || iv >= nv {
				if !ok {
					return nil, fmt.Errorf("-shard %s reads the shard index from %s (a Kubernetes Indexed Job sets it), which is not set", *shard, jobIndexVar)
				}
				return nil, fmt.Errorf("-shard %s: %s=%q: want an integer I with 0 <= I < %d", *shard, jobIndexVar, idx, nv)
			}
			spec = fmt.Sprintf("%d/%d", iv, nv)
		}
		i, n, ok := strings.Cut(spec, "/")
		iv, err1 := strconv.Atoi(i)
		nv, err2 := strconv.Atoi(n)
		if !ok || err1 != nil || err2 != nil || nv < 1 || iv < 0 || iv >= nv {
			return nil, fmt.Errorf("-shard %q: want I/N with 0 <= I < N, e.g. 0/4", *shard)
		}
		o.shardI, o.shardN = iv, nv
	}
	// Last, so that a combination that is wrong anyway says so first.
	if o.strategy == "exhaustive" && !o.anyWorld {
		if why := exhaustiveTooLarge(cfg); why != "" {
			return nil, errors.New(why)
		}
	}
	return o, nil
}

// jobIndexVar is where -shard auto/N reads the shard index.
const jobIndexVar = "JOB_COMPLETION_INDEX"

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "merge" {
		return merge(args[1:], stdout, stderr)
	}
	o, err := parse(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK // asked for: the usage is the answer, not an error
		}
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	if err := checkOutputs(o); err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	stop, err := startProfiles(o)
	if err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	code := runMode(o, stdout, stderr)
	if err := stop(); err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return max(code, exitUsage)
	}
	return code
}

// runMode runs the mode the flags chose.
func runMode(o *options, stdout, stderr io.Writer) int {
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

// onlyWith refuses a flag that the mode it belongs to would read but the
// flags given do not select: silently ignoring it would let a user believe
// it took effect.
func onlyWith(set map[string]bool, o *options) error {
	for _, g := range []struct {
		flags []string
		on    bool
		mode  string
	}{
		{[]string{"max-crashes", "max-pauses", "max-lies", "max-routes", "max-lags", "max-gossip-losses", "max-preemptions", "max-steps", "max-schedules", "no-reduction", "exhaustive-any-world"},
			o.strategy == "exhaustive", "-strategy exhaustive"},
		{[]string{"pct-depth"}, o.strategy == "pct", "-strategy pct"},
		{[]string{"shrink-seeds"}, o.shrink != "", "-shrink"},
		// One seed, a replay, a shrink and an exhaustive search each run on
		// one core: -parallel would be ignored.
		{[]string{"parallel"}, o.runsSeedRange() || o.mutants, "a seed range or -mutants"},
		{[]string{"seed-timeout"}, o.runsSeedRange() || o.mutants || o.seedSet || o.storeKind == "postgres", "a seed range, -mutants, -seed or -store postgres"},
	} {
		for _, f := range g.flags {
			if set[f] && !g.on {
				return fmt.Errorf("-%s applies only with %s: drop it or add %s", f, g.mode, g.mode)
			}
		}
	}
	return nil
}

// config is the world the flags name, with the mutant if any.
func (o *options) config() scenarios.Config {
	cfg, _ := scenarios.World(o.world)
	cfg.Mutant = o.mutant
	cfg.Swarm = o.swarmFor(o.world)
	return cfg
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
