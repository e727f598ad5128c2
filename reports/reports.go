package reports

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"html/template"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sluicesim/model"
	"sluicesim/sim"
	"sluicesim/sluice"
)

// Run is everything the index page shows about one explore run. The caller
// fills it from its aggregate; see Write.
type Run struct {
	World, Strategy string
	Mutant          string // "" for the real core
	SeedStart       uint64
	Seeds           int    // the range asked for: SeedStart .. SeedStart+Seeds-1
	SeedsRun        int    // seeds this process ran (fewer than Seeds under -shard)
	SeedsFailed     int    // seeds with at least one violation
	Shard           string // "I/N"; "" or "0/1" when not sharded
	// What, when set, says what was run in place of the seed range (a
	// single seed, a replayed or shrunk trace, an exhaustive search).
	What string
	// Notes are lines shown under the title (the kill table's real-core
	// baseline, an exhaustive search's bounds, a shrink's edits), in order.
	Notes []string
	// MissingShards, set by a merge of some shards only (explore merge
	// -partial), are the indices of the Shards shards of the seed range
	// whose seeds were not merged: every count leaves them out, and the
	// index says so before anything else, naming their seeds, as the
	// console and the JSON summary do.
	MissingShards []int
	Shards        int // N of the shards MissingShards are of

	// Elapsed is wall-clock time. It is shown (with seeds/s) in the single
	// element of class TimingsClass, the only part of a report that changes
	// from run to run of the same flags.
	Elapsed time.Duration

	Invariants []InvariantCount // in model.Invariants order
	// Outcomes are how the withdrawals ended, summed over seeds (nil: not
	// counted, as for a kill table).
	Outcomes *model.Outcomes
	Faults   []model.Tally // sorted by kind (model.MergeTallies order)

	// Transitions is the event log's edges summed over seeds, [from][to]
	// (scenarios.Stats.Transitions added up).
	Transitions [sluice.StateCount][sluice.StateCount]int
	// ConfirmSeconds[s] counts confirmed operations whose virtual time from
	// creation to confirmation was in [s, s+1) seconds.
	ConfirmSeconds []int
	// Rebuilds[k] counts operations that retired k envelopes.
	Rebuilds []int
	// StepsPerSeed has one entry per seed run, in seed order.
	StepsPerSeed []int

	// Coverage is the worlds' coverage catalog (scenarios.Coverage), in
	// its order, each condition with the number of seeds that reached it
	// (nil: not counted). The caller fills it: reports knows nothing of
	// the worlds.
	Coverage []CoverageRow

	// Mutants is the kill table, when -mutants ran; in catalog order. A
	// kill table's index leads with it and leaves out the sections that
	// sum over seeds: a kill table runs no seed range of its own.
	Mutants []MutantRow
	// Failures are the failing seeds, lowest first (the caller caps how
	// many), or for a kill table each kill (Failure.Mutant set).
	Failures []Failure
}

// InvariantCount is one row of the invariant table.
type InvariantCount struct {
	Name          string
	Doc           string // model's one-line doc
	SeedsViolated int
}

// CoverageRow is one condition of the coverage catalog and how many
// seeds reached it.
// It has the fields of scenarios.CoverageLine, in its order, so that the
// caller converts one to the other.
type CoverageRow struct {
	Name, Doc string
	Seeds     int
	// Expected: the world can reach it (scenarios.ExpectedCoverage), so a
	// run that never did has not tested it. A condition not expected that
	// no seed reached is shown as such, not flagged.
	Expected bool
	// Note says why it is never expected, when so: no world can reach it,
	// or it is too rare to require ("" for most).
	Note string
}

// MutantRow is one row of the kill table (cmd/explore's killRow).
type MutantRow struct {
	Name, Breaks, World string
	Verdict             string // killed, survived, survived-as-listed, killed-though-listed
	SeedsToKill         uint64 // 0 when not killed
	KillingSeed         uint64
	SeedsRun            int
	Invariants          []string
	Replay              string
	Uncaught            string // why no world catches it, for listed mutants
	// Recorded is the seeds to kill measured for the mutant before (0 if
	// none): a survivor under a smaller budget is not a checker miss.
	Recorded uint64
}

// Failure is one failing seed and its traced re-run.
type Failure struct {
	Seed       uint64
	Violations []model.Violation
	// World and Mutant are set when the failing run is not of the Run's
	// world and mutant: each kill of a kill table is another mutant's. The
	// page is then titled, and its files named, after them.
	World, Mutant string
	// Replay and Rerun are shell commands shown verbatim, e.g.
	// "go run ./cmd/explore -replay report/chaos-seed3.trace.jsonl" and
	// "go run ./cmd/explore -world chaos -mutant m -seed 3 -trace ...";
	// either may be empty (a shrunk world has no seed to re-run).
	Replay, Rerun string
	// Traced is the seed re-run with tracing: it draws the page. Nil gives
	// a page with the violations and commands only.
	Traced *Traced
	// TraceFile, when set (with Traced.Trace), is the file name under which
	// Write puts the trace into the report directory, and the page links
	// it: a copied report (a CI artifact) carries what it replays. Replay
	// should name it there.
	TraceFile string
}

// base is the stem of the failure's page names: seed-N, or for another
// mutant's run MUTANT-seed-N, since kills of one kill table share seeds.
func (f *Failure) base() string {
	if f.Mutant != "" {
		return fmt.Sprintf("%s-seed-%d", f.Mutant, f.Seed)
	}
	return fmt.Sprintf("seed-%d", f.Seed)
}

// hasTrace: the failure's trace is written into the report directory.
func hasTrace(f *Failure) bool { return f.TraceFile != "" && f.Traced != nil && f.Traced.Trace != nil }

func pageFile(f *Failure) string { return f.base() + ".html" }
func linPage(f *Failure) string  { return f.base() + "-linearizability.html" }

// Traced is what a traced re-run of a seed shows: the caller copies it
// from the simulator's result (reports knows nothing of the worlds).
type Traced struct {
	Steps           int
	Virtual         time.Duration // virtual time the run covered
	Trace           *sim.Trace
	Snapshot        *model.Snapshot
	Linearizability *model.LinearizabilityReport
}

// TimingsClass is the class of the one element that holds wall-clock
// timings; everything else on every page is a function of the Run.
const TimingsClass = "timings"

//go:embed templates/*.html templates/style.css
var templateFS embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"dur":    fmtDur,
	"linURL": linPage,
	"legend": legend,
	"inc":    func(i int) int { return i + 1 },
	"traced": hasTrace,
}).ParseFS(templateFS, "templates/*.html"))

// style is inlined into every page so that a page stands alone.
var style = func() template.CSS {
	b, err := templateFS.ReadFile("templates/style.css")
	if err != nil {
		panic(err) // embedded at build time
	}
	return template.CSS(b)
}()

// seedFile is the page of a failing seed of the Run's own world and mutant.
func seedFile(seed uint64) string { return pageFile(&Failure{Seed: seed}) }

// File is one rendered page.
type File struct {
	Name string
	Data []byte
}

// Render is Write without the file system: the files in a fixed order
// (index, then per failure its page, its visualization and its trace).
func Render(r *Run) ([]File, error) {
	for _, i := range r.MissingShards {
		// A shard the range does not have would be described as seeds
		// it does not hold.
		if i < 0 || i >= r.Shards {
			return nil, fmt.Errorf("missing shard %d: want 0 <= I < Shards %d", i, r.Shards)
		}
	}
	var out []File
	idx, err := execute("index.html", indexView(r))
	if err != nil {
		return nil, err
	}
	out = append(out, File{"index.html", idx})
	names := map[string]bool{"index.html": true}
	for i := range r.Failures {
		f := &r.Failures[i]
		// The page's title names the failing run's own world and mutant.
		view := r
		if f.World != "" || f.Mutant != "" {
			c := *r
			c.World, c.Mutant = cmp.Or(f.World, r.World), f.Mutant
			view = &c
		}
		fv := failureView(view, f)
		b, err := execute("seed.html", fv)
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", f.Seed, err)
		}
		files := []File{{pageFile(f), b}}
		if fv.LinLink {
			var buf bytes.Buffer
			if err := f.Traced.Linearizability.Visualize(&buf); err != nil {
				return nil, fmt.Errorf("seed %d: linearizability visualization: %w", f.Seed, err)
			}
			files = append(files, File{linPage(f), buf.Bytes()})
		}
		if hasTrace(f) {
			files = append(files, File{f.TraceFile, f.Traced.Trace.Bytes()})
		}
		for _, file := range files {
			// Two failures writing one name would leave a page linking
			// another run's file.
			if names[file.Name] || file.Name != filepath.Base(file.Name) {
				return nil, fmt.Errorf("seed %d: file name %q is taken or not a plain name", f.Seed, file.Name)
			}
			names[file.Name] = true
		}
		out = append(out, files...)
	}
	return out, nil
}

func execute(name string, data any) ([]byte, error) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// fmtDur prints a virtual duration compactly and deterministically.
func fmtDur(d time.Duration) string {
	if d >= time.Minute {
		return d.Round(time.Second).String()
	}
	return fmt.Sprintf("%.3fs", d.Seconds())
}

// ---- index ----

type indexPage struct {
	Style       template.CSS
	Title       string
	Partial     *partialView // nil unless shards are missing
	Run         *Run
	SeedEnd     uint64
	Timings     string
	Invariants  []invRow
	Faults      []faultRow
	FaultsZero  int
	Diagram     template.HTML
	Illegal     []illegalEdge
	Unhit       []string
	Confirm     histStats
	ConfirmSVG  template.HTML
	Rebuild     histStats
	RebuildSVG  template.HTML
	Steps       stepStats
	StepsSVG    template.HTML
	Failures    []failureLink
	MutantsKill string
	// KillTable: the run is -mutants; the index leads with Kills and shows
	// no section that sums over seeds.
	KillTable bool
	Kills     []killView
	// SeedSections: seeds were run, so the sections summing over them
	// (faults, state machine, distributions) have something to show.
	SeedSections bool
	// Coverage is the run's, and CoverageMissed counts the expected
	// conditions no seed reached.
	Coverage       []CoverageRow
	CoverageMissed int
}

// partialView is what the index says of a merge of some shards only.
type partialView struct {
	Shards  string // "1, 2"
	Of      int
	Seeds   int // seeds the missing shards hold
	Missing []string
}

// partial describes the missing shards of r and their seeds: shard i of
// N holds seeds SeedStart+i, SeedStart+i+N, ... of the range.
func partial(r *Run) *partialView {
	if len(r.MissingShards) == 0 {
		return nil
	}
	p := &partialView{Of: r.Shards}
	var idx []string
	for _, i := range r.MissingShards {
		idx = append(idx, fmt.Sprint(i))
		n := 0
		if r.Seeds > i {
			n = (r.Seeds-i-1)/r.Shards + 1
		}
		p.Seeds += n
		p.Missing = append(p.Missing, fmt.Sprintf("shard %d/%d: %s", i, r.Shards, strideSeeds(r.SeedStart+uint64(i), r.Shards, n)))
	}
	p.Shards = strings.Join(idx, ", ")
	return p
}

// strideSeeds names the n seeds first, first+stride, ...: all of them
// when few, else the first two, the last, and the rule.
func strideSeeds(first uint64, stride, n int) string {
	at := func(k int) uint64 { return first + uint64(k*stride) }
	switch {
	case n == 0:
		return "no seeds (the range has fewer seeds than shards)"
	case n == 1:
		return fmt.Sprintf("seed %d", first)
	case n <= 4:
		s := make([]string, n)
		for k := range n {
			s[k] = fmt.Sprint(at(k))
		}
		return "seeds " + strings.Join(s, ", ")
	}
	return fmt.Sprintf("seeds %d, %d, …, %d (every %s seed from %d: %d seeds)", at(0), at(1), at(n-1), ordinal(stride), first, n)
}

// ordinal is "2nd", "3rd", "4th", ... ("" for 1: every seed).
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// killView is a kill-table row with the links to its kill's files.
type killView struct {
	MutantRow
	Page, Trace string // relative to the report; "" when not written
}

type invRow struct {
	Name          string
	SeedsViolated int
	Share         string
	Doc           string
}

type faultRow struct {
	Kind  string
	Count int
}

type illegalEdge struct {
	From, To string
	Count    int
}

type failureLink struct {
	Seed       uint64
	Page       string
	Trace      string // "" when no trace was written
	Invariants string
	First      string
}

func indexView(r *Run) *indexPage {
	p := &indexPage{Style: style, Run: r}
	p.Title = "sluicesim: " + r.World
	if r.Mutant != "" {
		p.Title += " (mutant " + r.Mutant + ")"
	}
	if r.Seeds > 0 {
		p.SeedEnd = r.SeedStart + uint64(r.Seeds) - 1
	}
	if p.Partial = partial(r); p.Partial != nil {
		p.Title += " (PARTIAL)"
	}
	p.Timings = timings(r)
	for _, ic := range r.Invariants {
		share := "0%"
		if r.SeedsRun > 0 {
			share = fmt.Sprintf("%.2f%%", 100*float64(ic.SeedsViolated)/float64(r.SeedsRun))
		}
		p.Invariants = append(p.Invariants, invRow{ic.Name, ic.SeedsViolated, share, ic.Doc})
	}
	for _, t := range r.Faults {
		p.Faults = append(p.Faults, faultRow{t.Kind, t.Count})
		if t.Count == 0 {
			p.FaultsZero++
		}
	}
	p.Coverage = r.Coverage
	for _, c := range r.Coverage {
		if c.Expected && c.Seeds == 0 {
			p.CoverageMissed++
		}
	}
	p.Diagram, p.Illegal, p.Unhit = stateDiagram(&r.Transitions)
	p.Confirm = histogramStats(r.ConfirmSeconds)
	p.ConfirmSVG = barChart(r.ConfirmSeconds, "virtual seconds from creation to confirmed", "operations")
	p.Rebuild = histogramStats(r.Rebuilds)
	p.RebuildSVG = barChart(r.Rebuilds, "envelopes retired per operation", "operations")
	var stepsHist []int
	var width int
	p.Steps, stepsHist, width = stepsHistogram(r.StepsPerSeed)
	p.StepsSVG = barChartFrom(stepsHist, p.Steps.Min, width, "steps per seed", "seeds")
	for i := range r.Failures {
		f := &r.Failures[i]
		var invs []string
		for _, v := range f.Violations {
			if !slices.Contains(invs, v.Invariant) {
				invs = append(invs, v.Invariant)
			}
		}
		first := ""
		if len(f.Violations) > 0 {
			first = f.Violations[0].Message
		}
		link := failureLink{Seed: f.Seed, Page: pageFile(f), Invariants: strings.Join(invs, ", "), First: first}
		if hasTrace(f) {
			link.Trace = f.TraceFile
		}
		p.Failures = append(p.Failures, link)
	}
	p.KillTable = len(r.Mutants) > 0
	p.SeedSections = !p.KillTable && r.SeedsRun > 0
	if p.KillTable {
		p.Title = "sluicesim: mutant kill table"
		killed, catchable := 0, 0
		for _, m := range r.Mutants {
			if m.Uncaught == "" {
				catchable++
				if m.Verdict == "killed" || m.Verdict == "killed-late" {
					killed++
				}
			}
			kv := killView{MutantRow: m}
			for i := range r.Failures {
				if f := &r.Failures[i]; f.Mutant == m.Name {
					kv.Page = pageFile(f)
					if hasTrace(f) {
						kv.Trace = f.TraceFile
					}
					break
				}
			}
			p.Kills = append(p.Kills, kv)
		}
		p.MutantsKill = fmt.Sprintf("%d of %d catchable mutants killed (%d mutants in all)", killed, catchable, len(r.Mutants))
	}
	return p
}

func timings(r *Run) string {
	switch {
	case r.Elapsed <= 0:
		return "wall time not measured"
	case r.SeedsRun == 0 || r.What != "":
		// A kill table or a single run: a rate of seeds says nothing.
		return fmt.Sprintf("%.1fs wall time", r.Elapsed.Seconds())
	}
	return fmt.Sprintf("%.1fs wall time, %.1f seeds/s", r.Elapsed.Seconds(), float64(r.SeedsRun)/r.Elapsed.Seconds())
}
