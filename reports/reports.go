package reports

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"os"
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
	Transitions [sluice.Rejected + 1][sluice.Rejected + 1]int
	// ConfirmSeconds[s] counts confirmed operations whose virtual time from
	// creation to confirmation was in [s, s+1) seconds.
	ConfirmSeconds []int
	// Rebuilds[k] counts operations that retired k envelopes.
	Rebuilds []int
	// StepsPerSeed has one entry per seed run, in seed order.
	StepsPerSeed []int

	Mutants  []MutantRow // the kill table, when -mutants ran; in catalog order
	Failures []Failure   // failing seeds, lowest first; the caller caps how many
}

// InvariantCount is one row of the invariant table.
type InvariantCount struct {
	Name          string
	Doc           string // model's one-line doc
	SeedsViolated int
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
}

// Failure is one failing seed and its traced re-run.
type Failure struct {
	Seed       uint64
	Violations []model.Violation
	// Replay and Rerun are shell commands shown verbatim, e.g.
	// "go run ./cmd/explore -replay chaos-seed3.trace.jsonl" and
	// "go run ./cmd/explore -world chaos -mutant m -seed 3 -trace ...".
	Replay, Rerun string
	// Traced is the seed re-run with tracing: it draws the page. Nil gives
	// a page with the violations and commands only.
	Traced *Traced
}

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
	"dur":     fmtDur,
	"seedURL": seedFile,
	"linURL":  linFile,
	"legend":  legend,
	"inc":     func(i int) int { return i + 1 },
}).ParseFS(templateFS, "templates/*.html"))

// style is inlined into every page so that a page stands alone.
var style = func() template.CSS {
	b, err := templateFS.ReadFile("templates/style.css")
	if err != nil {
		panic(err) // embedded at build time
	}
	return template.CSS(b)
}()

func seedFile(seed uint64) string { return fmt.Sprintf("seed-%d.html", seed) }
func linFile(seed uint64) string  { return fmt.Sprintf("seed-%d-linearizability.html", seed) }

// Write renders dir/index.html, dir/seed-N.html for each failure, and
// dir/seed-N-linearizability.html for each failure that violated
// linearizable-intake and carries a linearizability report. It creates dir
// if needed and returns the index's path.
func Write(dir string, r *Run) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	files, err := Render(r)
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "index.html"), nil
}

// File is one rendered page.
type File struct {
	Name string
	Data []byte
}

// Render is Write without the file system: the pages in a fixed order
// (index, then per failure its page and its visualization).
func Render(r *Run) ([]File, error) {
	var out []File
	idx, err := execute("index.html", indexView(r))
	if err != nil {
		return nil, err
	}
	out = append(out, File{"index.html", idx})
	for i := range r.Failures {
		f := &r.Failures[i]
		fv := failureView(r, f)
		b, err := execute("seed.html", fv)
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", f.Seed, err)
		}
		out = append(out, File{seedFile(f.Seed), b})
		if fv.LinLink {
			var buf bytes.Buffer
			if err := f.Traced.Linearizability.Visualize(&buf); err != nil {
				return nil, fmt.Errorf("seed %d: linearizability visualization: %w", f.Seed, err)
			}
			out = append(out, File{linFile(f.Seed), buf.Bytes()})
		}
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
	p.Diagram, p.Illegal, p.Unhit = stateDiagram(&r.Transitions)
	p.Confirm = histogramStats(r.ConfirmSeconds)
	p.ConfirmSVG = barChart(r.ConfirmSeconds, "virtual seconds from creation to confirmed", "operations")
	p.Rebuild = histogramStats(r.Rebuilds)
	p.RebuildSVG = barChart(r.Rebuilds, "envelopes retired per operation", "operations")
	var stepsHist []int
	var width int
	p.Steps, stepsHist, width = stepsHistogram(r.StepsPerSeed)
	p.StepsSVG = barChartFrom(stepsHist, p.Steps.Min, width, "steps per seed", "seeds")
	for _, f := range r.Failures {
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
		p.Failures = append(p.Failures, failureLink{f.Seed, strings.Join(invs, ", "), first})
	}
	if len(r.Mutants) > 0 {
		killed := 0
		for _, m := range r.Mutants {
			if strings.HasPrefix(m.Verdict, "killed") {
				killed++
			}
		}
		p.MutantsKill = fmt.Sprintf("%d of %d mutants killed", killed, len(r.Mutants))
	}
	return p
}

func timings(r *Run) string {
	if r.Elapsed <= 0 {
		return "wall time not measured"
	}
	return fmt.Sprintf("%.1fs wall time, %.1f seeds/s", r.Elapsed.Seconds(), float64(r.SeedsRun)/r.Elapsed.Seconds())
}
