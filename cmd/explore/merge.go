package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"sluicesim/model"
	"sluicesim/reports"
	"sluicesim/scenarios"
)

// mergeUsage heads explore merge -h; the flags follow it.
const mergeUsage = `usage: explore merge [-json FILE] [-report DIR] [-trace FILE] [-partial] SHARD.json...

Adds up the -json summaries of the shards of one seed range (explore
-seeds S -shard I/N -json SHARD.json, I = 0..N-1, or -shard auto/N in a
Kubernetes Indexed Job) into the summary, and with -report the HTML
report, that one process running all S seeds writes: the same counts,
histograms, tallies and violations, timing aside.

The shards' summaries carry no trace. When a seed failed, merge re-runs
the first failing seed with tracing (runs are deterministic, and the
summaries name the world, mutant, strategy and store) and writes its
trace where a single run would: -trace FILE, else into -report DIR, else
WORLD[-MUTANT]-seedS.trace.jsonl in the current directory; first_failure
names it. A -store postgres run needs DATABASE_URL for that re-run.

Shards of another world, mutant, strategy, store, model version, -swarm
or -recheck fraction than the first, of another seed range or N, given
twice, unreadable or not a seed range's summary, or whose counts
contradict one another or name what this build does not have, are
refused (exit 2, naming the file and the field), and so is a missing
shard, unless -partial: the summary
then covers the shards given and lists the others under missing_shards.
Nothing is written when refusing.

Exit status: 0 no violation, 1 a violation (or a re-check mismatch) in
some shard, 2 refused or bad usage.

`

// shardFile is one shard's summary, as read.
type shardFile struct {
	path   string
	sum    summary
	index  int // I of the summary's shard I/N
	shards int // N
}

func merge(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("explore merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, mergeUsage)
		fs.PrintDefaults()
	}
	o := &options{}
	fs.StringVar(&o.json, "json", "", "write the merged summary to `FILE`")
	fs.StringVar(&o.report, "report", "", "write the HTML report of all the shards' seeds to `DIR`, with the failing seeds' traces")
	fs.StringVar(&o.trace, "trace", "", "write the trace of the first failing seed to `FILE`")
	partial := fs.Bool("partial", false, "merge even if shards are missing; the summary lists them under missing_shards")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		fmt.Fprintln(stderr, "explore merge:", err)
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "explore merge: no shard summaries given (explore merge -h)")
		return exitUsage
	}
	for _, in := range fs.Args() {
		for _, out := range []struct{ flag, path string }{{"json", o.json}, {"trace", o.trace}} {
			if out.path != "" && onePath(in, out.path) {
				fmt.Fprintf(stderr, "explore merge: -%s %s is one of the shard summaries merged: writing it would destroy that shard; write the merged %s elsewhere\n", out.flag, out.path, out.flag)
				return exitUsage
			}
		}
	}
	// Every shard is read and checked before anything is written.
	shards, err := readShards(fs.Args())
	if err == nil {
		err = checkShards(shards, *partial)
	}
	if err != nil {
		fmt.Fprintln(stderr, "explore merge:", err)
		return exitUsage
	}
	first := shards[0].sum
	o.world, o.mutant, o.strategy, o.pctDepth, o.storeKind = first.World, first.Mutant, first.Strategy, first.PCTDepth, first.Store
	// The shards' choice, not this world's default: the re-run must draw
	// (or not) what they drew.
	o.swarm = swarmOff
	if first.Swarm {
		o.swarm = swarmOn
	}
	o.seedStart, o.seeds, o.shardI, o.shardN, o.parallel = first.SeedStart, first.Seeds, 0, 1, 1
	sum, err := mergeSummaries(shards)
	if err != nil {
		fmt.Fprintln(stderr, "explore merge:", err)
		return exitUsage
	}
	if sum.SeedsFailed > 0 && o.storeKind == "postgres" {
		// The first failure's traced re-run needs the store it failed on.
		url := os.Getenv("DATABASE_URL")
		if url == "" {
			fmt.Fprintln(stderr, "explore merge: the shards ran -store postgres and a seed failed: its traced re-run needs DATABASE_URL")
			return exitUsage
		}
		if o.stores, err = scenarios.PostgresStores(url); err != nil {
			fmt.Fprintln(stderr, "explore merge:", err)
			return exitUsage
		}
	}
	if err := checkOutputs(o); err != nil {
		fmt.Fprintln(stderr, "explore merge:", err)
		return exitUsage
	}
	return finishMerge(o, shards, sum, stdout, stderr)
}

// readShards reads every summary, strictly: a file that is not a summary
// of a seed range is named, with what is wrong with it.
func readShards(paths []string) ([]shardFile, error) {
	var out []shardFile
	for _, p := range paths {
		sf, err := readShard(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, sf)
	}
	return out, nil
}

func readShard(path string) (shardFile, error) {
	sf := shardFile{path: path}
	b, err := os.ReadFile(path)
	if err != nil {
		return sf, bareErr(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	// Unknown fields are refused: a file that is some other JSON (a
	// trace, another tool's output) must not pass as an empty summary.
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sf.sum); err != nil {
		return sf, fmt.Errorf("not an explore -json summary: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return sf, errors.New("not an explore -json summary: data after the summary")
	}
	s := &sf.sum
	if s.Mode != "seeds" {
		return sf, fmt.Errorf("a summary of mode %q: only seed ranges (-seeds, -shard I/N) merge", s.Mode)
	}
	cfg, err := scenarios.World(s.World)
	if err != nil {
		return sf, err
	}
	cfg.Mutant = s.Mutant
	if err := cfg.Validate(); err != nil {
		return sf, err
	}
	// The re-run of a failing seed takes the strategy and store from the
	// summary: a name explore does not have would be re-run as another.
	switch s.Strategy {
	case "random":
		if s.PCTDepth != 0 {
			return sf, fmt.Errorf("pct_depth %d with strategy random: only pct has a depth", s.PCTDepth)
		}
	case "pct":
		if s.PCTDepth < 1 {
			return sf, errors.New("strategy pct without pct_depth: its seeds cannot be re-run the same")
		}
	default:
		return sf, fmt.Errorf("strategy %q: a seed range runs random or pct", s.Strategy)
	}
	if s.Store != "memory" && s.Store != "postgres" {
		return sf, fmt.Errorf("store %q: want memory or postgres", s.Store)
	}
	if s.Replay != nil || s.Shrink != nil || s.Exhaustive != nil {
		return sf, errors.New("a summary of mode \"seeds\" carrying replay, shrink or exhaustive: not what a seed range writes")
	}
	if s.Model == "" {
		return sf, errors.New("no model version: written by an explore older than merge; re-run the shard")
	}
	i, n, ok := strings.Cut(s.Shard, "/")
	var err1, err2 error
	sf.index, err1 = strconv.Atoi(i)
	sf.shards, err2 = strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || sf.shards < 1 || sf.index < 0 || sf.index >= sf.shards {
		return sf, fmt.Errorf("shard %q: want I/N with 0 <= I < N", s.Shard)
	}
	if s.Seeds < 1 {
		return sf, fmt.Errorf("seeds %d: want at least 1", s.Seeds)
	}
	return sf, nil
}

// shardSize is how many of seeds seeds shard i of n runs: the k-th seed
// of the range is in shard k mod n (explore's -shard).
func shardSize(seeds, i, n int) int {
	if seeds <= i {
		return 0
	}
	return (seeds-i-1)/n + 1
}

func inShard(seed, start uint64, seeds, i, n int) bool {
	if seed < start || seed-start >= uint64(seeds) {
		return false
	}
	return int((seed-start)%uint64(n)) == i
}

// checkShards refuses shards that do not add up to one seed range: each
// must be of the first's world, mutant, strategy, store, model, swarm and
// re-check fraction, range and N; no index twice; none missing unless
// partial.
func checkShards(shards []shardFile, partial bool) error {
	first := shards[0]
	seen := map[int]string{}
	for _, sf := range shards {
		s, f := &sf.sum, &first.sum
		for _, c := range []struct {
			field     string
			got, want any
		}{
			{"model", s.Model, f.Model},
			{"world", s.World, f.World},
			{"mutant", s.Mutant, f.Mutant},
			{"strategy", s.Strategy, f.Strategy},
			{"pct_depth", s.PCTDepth, f.PCTDepth},
			{"store", s.Store, f.Store},
			{"swarm", s.Swarm, f.Swarm},
			{"recheck fraction", recheckFraction(s), recheckFraction(f)},
			{"seed range (seed_start)", s.SeedStart, f.SeedStart},
			{"seed range (seeds)", s.Seeds, f.Seeds},
			{"number of shards N", sf.shards, first.shards},
		} {
			if c.got != c.want {
				return fmt.Errorf("%s: %s %v, but %s has %v: shards of one run only", sf.path, c.field, show(c.got), first.path, show(c.want))
			}
		}
		if err := consistent(sf); err != nil {
			return fmt.Errorf("%s: %w", sf.path, err)
		}
		if other, dup := seen[sf.index]; dup {
			return fmt.Errorf("%s: shard %s again (%s is that shard): the shards overlap", sf.path, sf.sum.Shard, other)
		}
		seen[sf.index] = sf.path
	}
	if missing := missingShards(shards); len(missing) > 0 && !partial {
		return fmt.Errorf("shards %s of %d missing (the shards given are %s): give their summaries, or -partial to merge only these (missing_shards then lists the others)",
			joinInts(missing), first.shards, joinInts(slices.Sorted(func(yield func(int) bool) {
				for i := range seen {
					if !yield(i) {
						return
					}
				}
			})))
	}
	return nil
}

// recheckFraction is the -recheck fraction a summary ran with; -1 for
// none, so that a shard re-checked at any fraction differs from one not.
func recheckFraction(s *summary) float64 {
	if s.Recheck == nil {
		return -1
	}
	return s.Recheck.Fraction
}

// show quotes a string (an empty mutant reads "" rather than nothing).
func show(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case float64:
		if x < 0 {
			return "none"
		}
	}
	return fmt.Sprint(v)
}

func missingShards(shards []shardFile) []int {
	have := map[int]bool{}
	for _, sf := range shards {
		have[sf.index] = true
	}
	var out []int
	for i := range shards[0].shards {
		if !have[i] {
			out = append(out, i)
		}
	}
	return out
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// mergeSummaries adds checked shards up into the summary of one run of
// their seeds; first_failure and timing are left to the caller.
func mergeSummaries(shards []shardFile) (summary, error) {
	f := shards[0].sum
	sum := summary{Mode: "seeds", World: f.World, Mutant: f.Mutant, Strategy: f.Strategy, Store: f.Store,
		PCTDepth: f.PCTDepth, Swarm: f.Swarm, Model: f.Model, SeedStart: f.SeedStart, Seeds: f.Seeds, Shard: "0/1",
		PerInvariant: map[string]int{}, MissingShards: missingShards(shards)}
	var states []reports.State
	var faults [][]model.Tally
	var coverage [][]CoverageCount
	for _, sf := range shards {
		s := &sf.sum
		sum.SeedsRun += s.SeedsRun
		sum.SeedsFailed += s.SeedsFailed
		for k, v := range s.PerInvariant {
			sum.PerInvariant[k] += v
		}
		sum.Violations = append(sum.Violations, s.Violations...)
		sum.FailingSeeds = append(sum.FailingSeeds, s.FailingSeeds...)
		faults = append(faults, s.Faults)
		sum.Outcomes = sum.Outcomes.Add(s.Outcomes)
		states = append(states, s.Histograms)
		coverage = append(coverage, s.Coverage)
		if s.Recheck != nil {
			if sum.Recheck == nil {
				sum.Recheck = &RecheckInfo{Fraction: s.Recheck.Fraction}
			}
			sum.Recheck.Rechecked += s.Recheck.Rechecked
			sum.Recheck.Mismatches += s.Recheck.Mismatches
		}
	}
	// A single run lists the first violations in seed order, each seed's
	// in its own order; each shard lists its own first ones, so the first
	// violationsListedMax of all are among them (a seed is in one shard
	// only, and the stable sort keeps its violations' order).
	slices.SortStableFunc(sum.Violations, func(x, y seedViolation) int { return cmp.Compare(x.Seed, y.Seed) })
	sum.Violations = sum.Violations[:min(len(sum.Violations), violationsListedMax)]
	sum.ViolationsShown = len(sum.Violations)
	slices.Sort(sum.FailingSeeds)
	sum.FailingSeeds = sum.FailingSeeds[:min(len(sum.FailingSeeds), reportPagesMax)]
	sum.Faults = model.MergeTallies(faults...)
	if c := reports.MergeCoverage(coverage...); len(c) > 0 {
		sum.Coverage = c
	}
	var err error
	if sum.Histograms, err = reports.MergeStates(states...); err != nil {
		return sum, err
	}
	return sum, nil
}

// failingSeeds are the merged summary's failing seeds, lowest first, as
// many as the report has pages for, each with its listed violations (the
// first has its own at least: it leads the list).
func failingSeeds(sum *summary) []*reports.Seed {
	var out []*reports.Seed
	for _, seed := range sum.FailingSeeds {
		s := &reports.Seed{Seed: seed}
		for _, v := range sum.Violations {
			if v.Seed == seed {
				s.Violations = append(s.Violations, v.Violation)
			}
		}
		out = append(out, s)
	}
	return out
}

// finishMerge re-runs the first failing seed traced, prints the merged
// summary, and writes -trace, -report and -json, as seeds mode does.
func finishMerge(o *options, shards []shardFile, sum summary, stdout, stderr io.Writer) int {
	began := time.Now()
	cfg := o.config()
	fmt.Fprintf(stdout, "merged %d shard summaries of world %s%s, strategy %s, store %s, seeds %d..%d: %d seeds run, %d with violations\n",
		len(shards), cfg.Name, mutantNote(cfg), o.strategy, o.storeKind, o.seedStart, o.seedStart+uint64(o.seeds)-1, sum.SeedsRun, sum.SeedsFailed)
	if len(sum.MissingShards) > 0 {
		fmt.Fprintf(stdout, "PARTIAL (-partial): shards %s of %d missing; the counts below cover the others only\n", joinInts(sum.MissingShards), shards[0].shards)
	}
	printCounts(stdout, cfg, &sum, false)

	code := exitOK
	failures := failingSeeds(&sum)
	var pages []reports.Failure
	if len(failures) > 0 {
		code = exitViolation
		first := failures[0]
		ro := o.runOptions()
		ro.Tracing = true
		traced := scenarios.Run(cfg, first.Seed, ro)
		got := traced.Violations
		if len(failures) == 1 && len(sum.Violations) == violationsListedMax {
			// The list may have cut this seed's violations short.
			got = got[:min(len(got), len(first.Violations))]
		}
		if !slices.EqualFunc(got, first.Violations, sameViolation) {
			// The shard saw this seed fail so; a re-run that does not means
			// the build or the flags differ from the shards'. Say so rather
			// than write a trace of another run as the failure.
			fmt.Fprintf(stderr, "explore merge: seed %d does not fail here as its shard says (%d violations listed, %d on re-run): is this the shards' build, and did they record every flag (model %s)?\n",
				first.Seed, len(first.Violations), len(traced.Violations), sum.Model)
			return exitUsage
		}
		pages, sum.FirstFailure = firstFailureArtifacts(o, cfg, failures, traced, " (re-run here with tracing)", stdout, stderr)
	}
	if sum.Recheck != nil {
		fmt.Fprintf(stdout, "\ndeterminism re-check (-recheck %g): %d seeds run again, %d differ\n", sum.Recheck.Fraction, sum.Recheck.Rechecked, sum.Recheck.Mismatches)
		if sum.Recheck.Mismatches > 0 {
			code = exitViolation
		}
	}

	// The shards' own wall time, summed: what the seeds cost.
	var shardSeconds, slowest float64
	for _, sf := range shards {
		shardSeconds += sf.sum.Timing["seconds"]
		slowest = max(slowest, sf.sum.Timing["seconds"])
	}
	if o.report != "" {
		agg := reports.NewAggregate(o.seedStart, 1, 0, violationsListedMax)
		err := agg.AddMerged(sum.Histograms, reports.Totals{Failed: sum.SeedsFailed, PerInvariant: sum.PerInvariant,
			Outcomes: sum.Outcomes, Faults: sum.Faults, Coverage: sum.Coverage})
		if err == nil {
			r := exploreRun(o, cfg, agg, pages, sum.SeedsRun, time.Duration(shardSeconds*float64(time.Second)))
			// A partial merge's report says so, as the console and the
			// summary do: its counts leave the missing shards' seeds out.
			r.MissingShards, r.Shards = sum.MissingShards, shards[0].shards
			err = writeReport(o.report, r, stdout)
		}
		if err != nil {
			fmt.Fprintln(stderr, "explore merge:", err)
			return exitUsage
		}
	}
	sum.Timing = map[string]float64{
		"seconds":             time.Since(began).Seconds(),
		"shard_seconds_sum":   shardSeconds,
		"shard_seconds_max":   slowest,
		"shard_seeds_per_sec": float64(sum.SeedsRun) / max(shardSeconds, 1e-9),
	}
	if err := writeJSON(o.json, sum); err != nil {
		fmt.Fprintln(stderr, "explore merge:", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "\nmerged %d seeds of %d shards (the shards ran %.1fs in all, %.1f seeds/s per process)\n",
		sum.SeedsRun, len(shards), shardSeconds, sum.Timing["shard_seeds_per_sec"])
	return code
}

// sameViolation compares what a summary keeps of a violation.
func sameViolation(a, b model.Violation) bool {
	return a == b
}
