package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"

	"sluicesim/model"
	"sluicesim/reports"
	"sluicesim/scenarios"
)

// summary is what -json writes, in every mode. Everything but Timing is the
// same from run to run of the same flags. The seed fields describe the runs
// the facts come from: the range in seeds mode; the one run of -seed,
// -replay and -shrink; and with -strategy exhaustive the first failing
// schedule (none when the search found none), the search's own counts
// being under "exhaustive".
type summary struct {
	Mode     string `json:"mode"` // seeds, seed, replay, shrink, exhaustive
	World    string `json:"world"`
	Mutant   string `json:"mutant,omitempty"`
	Strategy string `json:"strategy"`
	Store    string `json:"store"`
	PCTDepth int    `json:"pct_depth,omitempty"` // strategy pct only
	Swarm    bool   `json:"swarm,omitempty"`     // -swarm: each seed drew its world
	// Model is scenarios.ModelVersion: summaries of other models count
	// other things, and a merge refuses to add them up.
	Model     string `json:"model"`
	SeedStart uint64 `json:"seed_start"`
	Seeds     int    `json:"seeds"`
	Shard     string `json:"shard"`
	SeedsRun  int    `json:"seeds_run"`
	// Interrupted: a signal stopped the run; the seeds run (and Seeds)
	// are the first SeedsRun of the range asked.
	Interrupted  bool            `json:"interrupted,omitempty"`
	SeedsFailed  int             `json:"seeds_failed"`
	PerInvariant map[string]int  `json:"seeds_failed_per_invariant"`
	Violations   []seedViolation `json:"violations"`
	// FailingSeeds are the lowest failing seeds, as many as a report has
	// pages for: a seed can have hundreds of violations, so the list
	// above may name fewer seeds than the report shows.
	FailingSeeds    []uint64       `json:"failing_seeds,omitempty"`
	ViolationsShown int            `json:"violations_listed"`
	Faults          []model.Tally  `json:"faults"`
	Outcomes        model.Outcomes `json:"outcomes"`
	// Histograms are the report's charts, so that merged shards give the
	// report one run of all their seeds gives.
	Histograms reports.State   `json:"histograms"`
	Coverage   []CoverageCount `json:"coverage,omitempty"` // in the catalog's order
	Recheck    *RecheckInfo    `json:"recheck,omitempty"`
	// MissingShards, set only by explore merge -partial, are the shard
	// indices the merge did not have: the counts cover the others only.
	MissingShards []int              `json:"missing_shards,omitempty"`
	FirstFailure  *firstFailure      `json:"first_failure,omitempty"`
	Replay        *replayInfo        `json:"replay,omitempty"`
	Shrink        *shrinkInfo        `json:"shrink,omitempty"`
	Exhaustive    *exhaustiveInfo    `json:"exhaustive,omitempty"`
	Timing        map[string]float64 `json:"timing"`
}

// CoverageCount is how many seeds reached one named condition.
type CoverageCount = reports.CoverageSeeds

// RecheckInfo is what -recheck F did: how many seeds ran twice and how
// many of those differed (tape or verdict).
type RecheckInfo struct {
	Fraction   float64 `json:"fraction"`
	Rechecked  int     `json:"rechecked"`
	Mismatches int     `json:"mismatches"`
}

type seedViolation struct {
	Seed uint64 `json:"seed"`
	model.Violation
}

type firstFailure struct {
	Seed    uint64 `json:"seed"`
	Trace   string `json:"trace"`
	Replay  string `json:"replay"`
	Command string `json:"command,omitempty"` // "" when no seed reproduces it
}

// replayInfo: -replay only writes a summary when the trace reproduced.
type replayInfo struct {
	Trace   string `json:"trace"`
	Choices int    `json:"choices"`
	Events  int    `json:"events"`
}

type shrinkInfo struct {
	From          string   `json:"from"`
	Invariant     string   `json:"invariant"`
	OriginalSteps int      `json:"original_steps"`
	Steps         int      `json:"steps"`
	Runs          int      `json:"runs"`
	Withdrawals   []int    `json:"withdrawals,omitempty"`
	Workers       int      `json:"workers"`
	Edits         []string `json:"edits"`
}

type exhaustiveInfo struct {
	Crashes      int  `json:"max_crashes"`
	Pauses       int  `json:"max_pauses"`
	Lies         int  `json:"max_lies"`
	Preemptions  int  `json:"max_preemptions"` // -1: no bound
	StepsMax     int  `json:"max_steps"`
	SchedulesMax int  `json:"max_schedules"`
	Reduction    bool `json:"reduction"`
	Complete     bool `json:"complete"`
	// Diverged: runs that did not ask what their replayed path said; any
	// makes the search not exact, and Complete false.
	Diverged  int `json:"diverged,omitempty"`
	Schedules int `json:"schedules"`
	Pruned    int `json:"pruned"`
	// Settled are the schedules the reduction showed, without running
	// them, to reach what a run already reached (0 without reduction).
	Settled         int `json:"settled"`
	SchedulesFailed int `json:"schedules_failed"`

	// The bounds only a world of several nodes asks about: set for such a
	// world, left out for one node (whose summary reads as it always has).
	Routes       *int `json:"max_routes,omitempty"`
	Lags         *int `json:"max_lags,omitempty"`
	GossipLosses *int `json:"max_gossip_losses,omitempty"`
}

const violationsListedMax = 1000

// fill sets the parts of the summary that come from the aggregate and
// returns the kept failing seeds, lowest first.
func (s *summary) fill(agg *reports.Aggregate) []*reports.Seed {
	s.PerInvariant, s.SeedsFailed = agg.PerInvariant(), agg.FailedCount()
	failures := agg.Failures()
	for _, res := range failures {
		for _, v := range res.Violations {
			if len(s.Violations) < violationsListedMax {
				s.Violations = append(s.Violations, seedViolation{Seed: res.Seed, Violation: v})
			}
		}
	}
	s.Faults, s.Outcomes, s.ViolationsShown = agg.Faults(), agg.Outcomes(), len(s.Violations)
	s.Model, s.Histograms = scenarios.ModelVersion, agg.State()
	s.FailingSeeds = nil
	for _, res := range failures[:min(len(failures), reportPagesMax)] {
		s.FailingSeeds = append(s.FailingSeeds, res.Seed)
	}
	return failures
}

// timing is the summary's one part that differs between runs.
func timing(seconds float64, runs int, agg *reports.Aggregate) map[string]float64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	// In use depends on where the collector happens to be (up to the
	// exploration's heap floor); live, what the last collection kept, is
	// the figure that stays flat over a long run.
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	return map[string]float64{
		"seconds":          seconds,
		"seeds_per_second": float64(runs) / seconds,
		"heap_inuse_mib":   float64(ms.HeapInuse) / (1 << 20),
		"heap_live_mib":    float64(live[0].Value.Uint64()) / (1 << 20),
		"goroutines":       float64(runtime.NumGoroutine()),
		"check_share":      agg.CheckShare(),
	}
}

// writeJSON writes v to path, if there is one.
func writeJSON(path string, v any) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFile(path, func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err }); err != nil {
		return fmt.Errorf("-json: %w", err)
	}
	return nil
}

// writeFile writes path through write into a temporary file beside it,
// renamed into place when complete: a run that fails or is killed while
// writing leaves the earlier file, not half of a new one. A path that is
// a device or a pipe (-json /dev/stdout) has no file to replace and is
// written as it is; a symbolic link's target is replaced, not the link.
func writeFile(path string, write func(io.Writer) error) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	err = f.Chmod(0o644) // CreateTemp makes it private; the outputs are not
	if err == nil {
		err = write(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// finishOne writes -json and -report for a mode that shows one run; extra
// adds the mode's own part of the summary. The exit status is 2 when an
// output could not be written, else code.
func finishOne(o *options, one *oneRun, extra func(*summary), code int, stdout, stderr io.Writer) int {
	if o.report != "" {
		if err := writeOneRunReport(o, one, stdout); err != nil {
			fmt.Fprintln(stderr, "explore:", err)
			return exitUsage
		}
	}
	if o.json == "" {
		return code
	}
	agg, n, seed := one.aggregate()
	sum := summary{Mode: one.mode, World: one.world, Mutant: one.mutant, Strategy: one.strategy, Store: o.storeKind,
		SeedStart: seed, Seeds: n, Shard: "0/1", SeedsRun: n}
	sum.fill(agg)
	if o.strategy == "pct" {
		sum.PCTDepth = o.pctDepth
	}
	if one.res != nil && one.res.Failed() {
		sum.FirstFailure = &firstFailure{Seed: one.res.Seed, Trace: one.trace, Command: one.rerun}
		if one.trace != "" {
			sum.FirstFailure.Replay = replayCommand(one.trace)
		}
	}
	if extra != nil {
		extra(&sum)
	}
	sum.Timing = timing(one.elapsed.Seconds(), n, agg)
	if err := writeJSON(o.json, sum); err != nil {
		fmt.Fprintln(stderr, "explore:", err)
		return exitUsage
	}
	return code
}

// checkOutputs makes sure, before the first seed runs, that every output
// the flags name can be written: a typo must not throw a long run away at
// its end. It leaves nothing behind (a refused run creates nothing): a
// file's directory must take a temporary file (writeFile renames one into
// place), and an existing file must open for writing (it is not
// truncated); a report directory is checked by reports.CheckDir, which
// creates nothing either.
func checkOutputs(o *options) error {
	for _, f := range []struct{ flag, path string }{{"json", o.json}, {"trace", o.trace},
		{"cpuprofile", o.cpuProfile}, {"memprofile", o.memProfile}} {
		if f.path == "" {
			continue
		}
		if err := checkWritable(f.path); err != nil {
			return fmt.Errorf("-%s %s: cannot write there: %w", f.flag, f.path, err)
		}
	}
	// Two outputs written to one file would leave only the last one
	// written, and an output on the trace -replay or -shrink reads would
	// destroy it (its shrunk form replacing it).
	named := []struct{ flag, path string }{{"replay", o.replay}, {"shrink", o.shrink}, {"json", o.json}, {"trace", o.trace},
		{"cpuprofile", o.cpuProfile}, {"memprofile", o.memProfile}}
	for i, a := range named {
		for _, b := range named[i+1:] {
			if a.path != "" && b.path != "" && onePath(a.path, b.path) {
				return fmt.Errorf("-%s and -%s name one file (%s): give each its own", a.flag, b.flag, b.path)
			}
		}
	}
	if o.report != "" {
		if err := checkReportDir(o.report); err != nil {
			return fmt.Errorf("-report %s: cannot write a report there: %w", o.report, err)
		}
		// A report replaces its directory as a whole: a file written into
		// it would be lost with the next report, or (written after this
		// one) make it a directory the next report refuses to replace.
		for _, f := range []struct{ flag, path string }{{"json", o.json}, {"trace", o.trace},
			{"cpuprofile", o.cpuProfile}, {"memprofile", o.memProfile}, {"regressions", o.regressions}} {
			if f.path != "" && within(f.path, o.report) {
				return fmt.Errorf("-%s %s: cannot write there: it is inside -report %s, which each report replaces as a whole; write it beside the report (with -report and no -trace, the report holds the trace)", f.flag, f.path, o.report)
			}
		}
	}
	return nil
}

// onePath says whether a and b name one regular file (or one that does
// not exist yet), by their absolute paths with links resolved. A device
// or a pipe (/dev/null, /dev/stdout) may take several outputs.
func onePath(a, b string) bool {
	resolve := func(p string) (string, bool) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if st, err := os.Stat(p); err == nil && !st.Mode().IsRegular() {
			return "", false
		}
		abs, err := filepath.Abs(p)
		return abs, err == nil
	}
	ra, okA := resolve(a)
	rb, okB := resolve(b)
	return okA && okB && ra == rb
}

// within says whether path is dir or under it (by their absolute paths).
func within(path, dir string) bool {
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func checkWritable(path string) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	st, err := os.Stat(path)
	existed := err == nil
	if existed && st.IsDir() {
		return errors.New("it is a directory")
	}
	if existed {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return bareErr(err)
		}
		f.Close()
		if !st.Mode().IsRegular() {
			return nil // a device or a pipe is written in place
		}
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".explore-write-check-*")
	if err != nil {
		return bareErr(err)
	}
	f.Close()
	return os.Remove(f.Name())
}

func checkReportDir(dir string) error {
	return bareErr(reports.CheckDir(dir))
}

// bareErr drops the path from a file-system error: the message that
// wraps it names the flag and the path already.
func bareErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
