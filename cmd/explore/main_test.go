package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sluicesim/scenarios"
	"sluicesim/sluice"
)

func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// builtExplore builds the command once per test binary: the exit codes of
// a real process are what scripts and make see.
func builtExplore(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "explore-bin")
		if buildErr == nil {
			var out []byte
			if out, buildErr = exec.Command("go", "build", "-o", filepath.Join(buildDir, "explore"), ".").CombinedOutput(); buildErr != nil {
				buildErr = fmt.Errorf("%v\n%s", buildErr, out)
			}
		}
	})
	if buildErr != nil {
		t.Fatalf("build: %v", buildErr)
	}
	return filepath.Join(buildDir, "explore")
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range []string{buildDir, killDir} {
		if d != "" {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// mustExist fails for each file not in dir.
func mustExist(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s lacks %s: %v", dir, n, err)
		}
	}
}

// Friction 1: -report and -json work with -seed, -replay, -shrink and
// -strategy exhaustive: a report with the run's page and trace when it
// failed, the seeds mode's JSON with the mode's own part.
func TestReportAndJSONInEveryMode(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	seed := firstFailing(t, "check-then-insert", 40)
	mode := func(wantCode int, report, mode string, args ...string) map[string]any {
		t.Helper()
		args = append(args, "-report", at(report), "-json", at(report+".json"))
		code, out, errOut := cli(t, args...)
		if code != wantCode || !strings.Contains(out, "report: "+filepath.Join(at(report), "index.html")) {
			t.Fatalf("%q: exit %d, want %d with a report\n%s%s", args, code, wantCode, out, errOut)
		}
		j := readJSON(t, at(report+".json"))
		if j["mode"] != mode {
			t.Errorf("%q: JSON mode %v, want %s", args, j["mode"], mode)
		}
		return j
	}
	mode(exitOK, "pass", "seed", "-world", "pair", "-seed", "4")
	mustExist(t, at("pass"), "index.html")
	trace := fmt.Sprintf("chaos-check-then-insert-seed%d.trace.jsonl", seed)
	j := mode(exitViolation, "seed", "seed", "-mutant", "check-then-insert", "-seed", fmt.Sprint(seed))
	mustExist(t, at("seed"), fmt.Sprintf("seed-%d.html", seed), trace)
	if ff, _ := j["first_failure"].(map[string]any); ff["replay"] != "go run ./cmd/explore -replay "+filepath.Join(at("seed"), trace) {
		t.Errorf("first_failure %v does not replay the report's trace", ff)
	}
	j = mode(exitViolation, "replay", "replay", "-replay", filepath.Join(at("seed"), trace))
	mustExist(t, at("replay"), fmt.Sprintf("seed-%d.html", seed), trace)
	if j["seeds_failed"] != 1.0 || j["replay"] == nil {
		t.Errorf("replay JSON: seeds_failed %v, replay %v", j["seeds_failed"], j["replay"])
	}
	z := at("z.jsonl")
	if code, out, _ := cli(t, "-world", "zombies", "-mutant", "send-before-write-ahead", "-seed", "2", "-trace", z); code != exitViolation {
		t.Fatalf("zombies seed 2 does not fail:\n%s", out)
	}
	j = mode(exitViolation, "shrink", "shrink", "-shrink", z, "-shrink-seeds", "5")
	mustExist(t, at("shrink"), "z.shrunk.jsonl")
	if j["shrink"] == nil || j["first_failure"] == nil {
		t.Errorf("shrink JSON lacks its parts: %v", j)
	}
	j = mode(exitViolation, "exhaustive", "exhaustive", "-world", "pair", "-strategy", "exhaustive", "-mutant", "send-before-write-ahead", "-max-preemptions", "0")
	mustExist(t, at("exhaustive"), "seed-1.html", "pair-send-before-write-ahead-exhaustive.trace.jsonl")
	if ex, _ := j["exhaustive"].(map[string]any); ex["complete"] != true || ex["schedules_failed"].(float64) < 1 {
		t.Errorf("exhaustive JSON: %v", ex)
	}
}

// Friction 2: exhaustive search refuses a world too large to finish unless
// asked, and shows its progress on stderr when -progress is given.
func TestExhaustiveRefusesLargeWorldsAndShowsProgress(t *testing.T) {
	code, out, errOut := cli(t, "-strategy", "exhaustive")
	if code != exitUsage || out != "" || !strings.Contains(errOut, "world chaos has 60 withdrawals and 6 workers") || !strings.Contains(errOut, "-exhaustive-any-world") {
		t.Errorf("exhaustive on chaos: exit %d, stdout %q, stderr %q; want a refusal naming the way out", code, out, errOut)
	}
	code, out, errOut = cli(t, "-strategy", "exhaustive", "-world", "zombies", "-exhaustive-any-world", "-max-schedules", "30", "-max-steps", "2000")
	if code != exitInconclusive || !strings.Contains(out, "NOT complete") {
		t.Errorf("zombies, asked for: exit %d (want %d: a search out of budget is inconclusive)\n%s%s", code, exitInconclusive, out, errOut)
	}
	_, _, errOut = cli(t, "-strategy", "exhaustive", "-world", "pair", "-max-crashes", "0", "-progress")
	if !strings.Contains(errOut, "exhaustive search: ") || !strings.Contains(errOut, " schedules, ") {
		t.Errorf("no progress on stderr with -progress: %q", errOut)
	}
}

// Friction 3: make gate and make mutants-ci run a built binary (go run
// turns every non-zero exit into 1), kept where git ignores it; and the
// built binary's codes are explore's own.
func TestMakeTargetsRunTheBuiltBinary(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	recipe := regexp.MustCompile(`(?m)^(gate|mutants-ci):([^\n]*)\n((?:\t[^\n]*\n)+)`)
	build := regexp.MustCompile(`(?m)^EXPLORE_BIN = (\S+)$`).FindSubmatch(mk)
	found := 0
	for _, m := range recipe.FindAllSubmatch(mk, -1) {
		found++
		if bytes.Contains(m[3], []byte(" run ")) || !bytes.Contains(m[2], []byte("explore-bin")) || !bytes.Contains(m[3], []byte("$(EXPLORE_BIN) ")) {
			t.Errorf("make %s: prerequisites %q, recipe %q; want the built $(EXPLORE_BIN) after explore-bin, no go run", m[1], m[2], m[3])
		}
	}
	if found != 2 || build == nil {
		t.Fatalf("found %d of the gate and mutants-ci recipes, EXPLORE_BIN %q", found, build)
	}
	if out, err := exec.Command("git", "check-ignore", "-q", "../../"+string(build[1])).CombinedOutput(); err != nil {
		t.Errorf("%s is not ignored by git (%v %s): a build would be committed", build[1], err, out)
	}
	bin := builtExplore(t)
	for _, c := range []struct {
		args []string
		want int
	}{{[]string{"-seeds", "0"}, exitUsage}, {[]string{"-world", "calm", "-mutant", "unusable-envelope", "-seed", "1"}, exitViolation}} {
		if err := exec.Command(bin, c.args...).Run(); err == nil || err.(*exec.ExitError).ExitCode() != c.want {
			t.Errorf("built explore %q: %v, want exit %d", c.args, err, c.want)
		}
	}
}

var (
	killOnce                   sync.Once
	killCode                   int
	killOut, killDir, killJSON string
)

// killTable3 runs the kill table once with a budget of 3 seeds, below the
// recorded seeds-to-kill of several mutants, writing -json and -report.
func killTable3(t *testing.T) (code int, out, dir, jsonPath string) {
	killOnce.Do(func() {
		killDir, _ = os.MkdirTemp("", "killtable")
		killJSON = filepath.Join(killDir, "k.json")
		killCode, killOut, _ = cli(t, "-mutants", "-seeds", "3", "-json", killJSON, "-report", filepath.Join(killDir, "report"))
	})
	return killCode, killOut, filepath.Join(killDir, "report"), killJSON
}

// Friction 4: a mutant that survives a budget below its recorded
// seeds-to-kill is not a checker miss: the table says so, names the budget
// to use and exits 3 (inconclusive), not 1.
func TestKillTableBudgetBelowRecordedIsNotAMiss(t *testing.T) {
	code, out, _, j := killTable3(t)
	if code != exitInconclusive {
		t.Fatalf("exit %d, want 3\n%s", code, out)
	}
	slow := uint64(0) // the most seeds any recorded kill took: the budget that judges them all
	for _, n := range recordedKills {
		slow = max(slow, n)
	}
	for _, want := range []string{"check-then-insert              chaos       budget-too-small",
		fmt.Sprintf("not killed in 3 seeds, fewer than the %d its first kill took when recorded: not a checker miss; judge it with -seeds %d or more",
			recordedKills["check-then-insert"], recordedKills["check-then-insert"]),
		"INCONCLUSIVE: ", fmt.Sprintf("survived a budget below the seeds their first kill took when recorded; -seeds %d judges them all", slow)} {
		if !strings.Contains(out, want) {
			t.Errorf("kill table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "checker missed") || strings.Contains(out, "SURVIVED") {
		t.Errorf("a short budget is reported as a checker miss:\n%s", out)
	}
	if k := readJSON(t, j); k["budget_needed"] != float64(slow) {
		t.Errorf("JSON budget_needed %v, want %d", k["budget_needed"], slow)
	}
	// A mutant that survives its recorded number of seeds is a miss (1).
	m := scenarios.Mutant{Name: "check-then-insert"}
	if v := survivorVerdict(m, int(recordedKills[m.Name])); v != verdictSurvived {
		t.Errorf("survived its recorded budget: verdict %s, want survived", v)
	}
	if c := killTableExit([]killRow{{Verdict: verdictSurvived}, {Verdict: verdictBudgetTooSmall, Recorded: 9}}, false); c != exitViolation {
		t.Errorf("a miss beside a short budget exits %d, want 1", c)
	}
}

// Every catchable mutant of the catalog has a recorded seeds-to-kill, and
// every record names a catchable mutant.
func TestRecordedKillsCoverTheCatalog(t *testing.T) {
	catchable := map[string]bool{}
	for _, m := range scenarios.Mutants {
		if m.Uncaught == "" {
			catchable[m.Name] = true
			if recordedKills[m.Name] == 0 {
				t.Errorf("catchable mutant %s has no recorded seeds-to-kill in killbudget.go", m.Name)
			}
		}
	}
	for name := range recordedKills {
		if !catchable[name] {
			t.Errorf("recordedKills names %s, which is not a catchable mutant of the catalog", name)
		}
	}
}

// Friction 5: the kill table's report leads with the kill table, leaves out
// the sections a kill table has nothing for, and links a page and a trace
// per kill, the trace replaying to the kill.
func TestKillTableReportLeadsWithKills(t *testing.T) {
	_, _, dir, _ := killTable3(t)
	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	idx := string(b)
	if h := regexp.MustCompile(`<h2>[^<]*</h2>`).FindAllString(idx, -1); len(h) != 1 || h[0] != "<h2>Mutant kill table</h2>" {
		t.Errorf("kill-table index sections %q, want the kill table alone", h)
	}
	for _, bad := range []string{"seeds run", "never hit"} {
		if strings.Contains(idx, bad) {
			t.Errorf("kill-table index shows %q", bad)
		}
	}
	_, _, _, j := killTable3(t)
	var kills []map[string]any
	for _, r := range readJSON(t, j)["mutants"].([]any) {
		if row := r.(map[string]any); row["killing_seed"] != nil {
			kills = append(kills, row)
		}
	}
	if len(kills) < 10 {
		t.Fatalf("%d kills in 3 seeds: too few to check the links", len(kills))
	}
	for _, row := range kills {
		seed, name := uint64(row["killing_seed"].(float64)), row["mutant"].(string)
		rp := repro{world: row["world"].(string), mutant: name, seed: seed}
		page := fmt.Sprintf("%s-seed-%d.html", name, seed)
		if !strings.Contains(idx, fmt.Sprintf(`<a href="%s">seed %d</a>`, page, seed)) || !strings.Contains(idx, `href="`+rp.traceName()+`"`) ||
			row["trace"] != filepath.Join(dir, rp.traceName()) {
			t.Errorf("%s: the index or the JSON (%v) does not link its page %s and trace %s", name, row["trace"], page, rp.traceName())
		}
		mustExist(t, dir, page, rp.traceName())
	}
	code, out, errOut := cli(t, "-replay", kills[0]["trace"].(string))
	if code != exitViolation || !strings.Contains(out, "reproduces it") || !strings.Contains(out, kills[0]["invariants"].([]any)[0].(string)) {
		t.Errorf("the kill's trace: exit %d\n%s%s", code, out, errOut)
	}
}

// Friction 6: a trace that does not reproduce is refused with exit 2 and
// its first divergence alone, not the verdict of the run it led to.
func TestDivergingReplayIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	if code, out, _ := cli(t, "-world", "pair", "-seed", "4", "-trace", path); code != exitOK {
		t.Fatalf("pair seed 4: exit %d\n%s", code, out)
	}
	b, _ := os.ReadFile(path)
	// Another pick for the first scheduling choice: still a well-formed
	// trace, but not one this run makes.
	first := regexp.MustCompile(`"kind":"sched","n":(\d+),"pick":(\d+)`).FindSubmatchIndex(b)
	pick, _ := strconv.Atoi(string(b[first[4]:first[5]]))
	n, _ := strconv.Atoi(string(b[first[2]:first[3]]))
	edited := slices.Concat(b[:first[4]], []byte(strconv.Itoa((pick+1)%n)), b[first[5]:])
	os.WriteFile(path, edited, 0o644)
	code, out, errOut := cli(t, "-replay", path)
	if code != exitUsage || out != "" || !strings.Contains(errOut, "does NOT reproduce") || !strings.Contains(errOut, "diverged at") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 and the divergence alone", code, out, errOut)
	}
}

// Friction 7: outputs that cannot be written are refused before the first
// seed runs, naming the flag, the path and the reason.
func TestOutputPathsCheckedBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	missing := filepath.Join(dir, "missing", "x")
	for _, c := range [][]string{
		{"-world", "pair", "-seeds", "3", "-json", missing},
		{"-world", "pair", "-seeds", "3", "-report", filepath.Join(file, "report")},
		{"-world", "pair", "-seed", "3", "-trace", missing},
		{"-mutants", "-seeds", "1", "-json", missing},
		{"-world", "pair", "-strategy", "exhaustive", "-json", dir},
		{"-world", "pair", "-seeds", "3", "-cpuprofile", missing},
		{"-world", "pair", "-seed", "3", "-memprofile", dir},
	} {
		code, out, errOut := cli(t, c...)
		flagName, path := c[len(c)-2], c[len(c)-1]
		if code != exitUsage || out != "" || !strings.Contains(errOut, flagName+" "+path+": cannot write") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 before any run, naming %s %s", c, code, out, errOut, flagName, path)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
		t.Error("checking a -json path created its directory")
	}
}

// -cpuprofile and -memprofile write pprof's gzipped profiles of the whole
// run, in any mode, and change nothing the run prints.
func TestProfilesWritten(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	_, plain, _ := cli(t, "-world", "pair", "-seeds", "20")
	code, out, errOut := cli(t, "-world", "pair", "-seeds", "20", "-cpuprofile", cpu, "-memprofile", mem)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	timing := regexp.MustCompile(`(?m)^ran .*$`)
	if got, want := timing.ReplaceAllString(out, ""), timing.ReplaceAllString(plain, ""); got != want {
		t.Errorf("profiling changed the output:\n%s\nwithout:\n%s", got, want)
	}
	for _, p := range []string{cpu, mem} {
		b, err := os.ReadFile(p)
		if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s: not a gzipped profile (%d bytes, %v)", p, len(b), err)
		}
	}
}

// Friction 8: a failing report leads with its failures, and holds the
// traces its pages name, with replay commands naming them in the report
// directory; nothing is written into the current directory.
func TestFailingReportHoldsItsTraces(t *testing.T) {
	t.Chdir(t.TempDir())
	seed := firstFailing(t, "check-then-insert", 40)
	code, out, errOut := cli(t, "-mutant", "check-then-insert", "-seeds", "2", "-seed-start", fmt.Sprint(seed), "-report", "rep")
	if code != exitViolation {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	trace := fmt.Sprintf("chaos-check-then-insert-seed%d.trace.jsonl", seed)
	replay := "go run ./cmd/explore -replay " + filepath.Join("rep", trace)
	if !strings.Contains(out, "replay: "+replay) {
		t.Errorf("console does not replay the report's trace (%s):\n%s", replay, out)
	}
	if cwd, _ := os.ReadDir("."); len(cwd) != 1 {
		t.Errorf("files written beside the report: %v", cwd)
	}
	idx, _ := os.ReadFile(filepath.Join("rep", "index.html"))
	if f, w := bytes.Index(idx, []byte("<h2>Failures</h2>")), bytes.Index(idx, []byte("<h2>Withdrawals</h2>")); f < 0 || f > w {
		t.Errorf("failures at %d, withdrawals at %d: want the failures first", f, w)
	}
	page, _ := os.ReadFile(filepath.Join("rep", fmt.Sprintf("seed-%d.html", seed)))
	if !bytes.Contains(page, []byte("<pre>"+replay+"</pre>")) || !bytes.Contains(page, []byte(`href="`+trace+`"`)) {
		t.Errorf("seed page does not replay and link the report's trace %s", trace)
	}
	if code, out, _ := cli(t, "-replay", filepath.Join("rep", trace)); code != exitViolation || !strings.Contains(out, "reproduces it") {
		t.Errorf("replaying the report's trace: exit %d\n%s", code, out)
	}
}

// One builder makes every reproduce command and trace name.
func TestReproCommands(t *testing.T) {
	o := &options{strategy: "pct", pctDepth: 3}
	rp := o.reproOf("chaos", "check-then-insert", 19)
	if got, want := rp.rerun(rp.traceName()), "go run ./cmd/explore -world chaos -strategy pct -pct-depth 3 -mutant check-then-insert -seed 19 -trace chaos-check-then-insert-seed19.trace.jsonl"; got != want {
		t.Errorf("rerun:\n got %s\nwant %s", got, want)
	}
	if got := replayCommand("my report/t's.jsonl"); got != `go run ./cmd/explore -replay 'my report/t'\''s.jsonl'` {
		t.Errorf("replay of a path with a space and a quote: %s", got)
	}
	if d, ok := strategyRepro("pct/3"); !ok || d != 3 {
		t.Errorf("strategyRepro(pct/3) = %d, %v", d, ok)
	}
	if _, ok := strategyRepro("exhaustive"); ok {
		t.Error("an exhaustive schedule is not reproduced by seed")
	}
}

// Goal: an exhaustive search whose runs diverged from the paths replayed
// into them says it is NOT exact, in its output and its summary, instead
// of claiming that every outcome was reached. Method: pair searched on a
// store that, inside each claim, releases the live leases other workers
// hold (leaseBreakingStore): a claim step then reads and writes rows its
// footprint does not name. This was the mutant claim-ignores-lease until
// its wrapper named them (found by an independent review: the reduced
// search missed 7 of the full search's 18 histories there, and printed
// "complete within bounds"); the store, which only a test can hand the
// search, keeps the hole open on purpose.
func TestExhaustiveSaysWhenItIsNotExact(t *testing.T) {
	dir := t.TempDir()
	sum := filepath.Join(dir, "s.json")
	var o, e bytes.Buffer
	opts, err := parse([]string{"-world", "pair", "-strategy", "exhaustive", "-max-crashes", "0", "-json", sum, "-trace", filepath.Join(dir, "t.jsonl")}, &e)
	if err != nil {
		t.Fatal(err)
	}
	opts.stores = leaseBreakingStores
	code := runMode(opts, &o, &e)
	out, errOut := o.String(), e.String()
	if code != exitViolation || !strings.Contains(out, "NOT exact: ") || strings.Contains(out, "every outcome within the bounds was reached") {
		t.Fatalf("exit %d, want 1 and NOT exact:\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Exhaustive struct {
			Complete bool
			Diverged int
		}
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Exhaustive.Complete || s.Exhaustive.Diverged == 0 {
		t.Errorf("summary %+v: want not complete, divergences counted", s.Exhaustive)
	}
}

// Goal: -h asked for is answered with the usage and exit 0, as the flag
// package's own commands do; a wrong flag is exit 2.
func TestHelpIsNotAnError(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"-help"}, {"merge", "-h"}} {
		code, _, errOut := cli(t, args...)
		if code != exitOK || !strings.Contains(errOut, "-json") {
			t.Errorf("%v: exit %d, usage %q; want 0 and the usage", args, code, errOut)
		}
	}
	if code, _, _ := cli(t, "-nosuchflag"); code != exitUsage {
		t.Errorf("-nosuchflag: exit %d, want %d", code, exitUsage)
	}
}

// leaseBreakingStores makes each run's store a leaseBreakingStore.
func leaseBreakingStores(clock sluice.Clock, lease time.Duration) (scenarios.Store, func(), error) {
	s, dispose, err := scenarios.MemoryStores(clock, lease)
	return leaseBreakingStore{s, clock}, dispose, err
}

// leaseBreakingStore releases, before each claim, every live lease on a row
// otherwise due, so that the claim takes rows other workers hold: what
// the claim step reads and writes of those rows is in no footprint.
type leaseBreakingStore struct {
	scenarios.Store
	clock sluice.Clock
}

func (s leaseBreakingStore) Claim(ctx context.Context, worker sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	now := s.clock.Now()
	for _, row := range s.Snapshot().Operations {
		if !row.State.Terminal() && row.ClaimedBy != "" && row.LeaseUntil.After(now) && !row.NotBefore.After(now) {
			if err := s.Release(ctx, row.ID, row.Token, 0); err != nil {
				return nil, err
			}
		}
	}
	return s.Store.Claim(ctx, worker, limit)
}

// A kill later than the seed recorded for it is reported, and leaves the
// table inconclusive (3), only under the settings the records are of.
func TestKilledLateIsInconclusive(t *testing.T) {
	r := recordedKills["check-then-insert"]
	if killedLate("check-then-insert", r, true) || !killedLate("check-then-insert", r+1, true) {
		t.Errorf("recorded %d: a kill at %d counts late %v, at %d %v; want false, true",
			r, r, killedLate("check-then-insert", r, true), r+1, killedLate("check-then-insert", r+1, true))
	}
	if killedLate("check-then-insert", r+1, false) {
		t.Error("a late kill under other settings (another seed start, strategy, store or swarm) is judged")
	}
	if c := killTableExit([]killRow{{Verdict: verdictKilled}, {Verdict: verdictKilledLate, Recorded: 3, SeedsToKill: 9}}, false); c != exitInconclusive {
		t.Errorf("a late kill exits %d, want 3", c)
	}
	if note := survivorNote(killRow{Verdict: verdictKilledLate, Recorded: 3, SeedsToKill: 9}); !strings.Contains(note, "LATE: killed at seed 9, later than the 3 recorded") {
		t.Errorf("the late kill's note: %q", note)
	}
}
