package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sluicesim/model"
	"sluicesim/scenarios"
)

// Goal: same flags, same output, apart from the timing line; the summary
// names every invariant and the JSON carries the same facts.
func TestSameFlagsSameSummary(t *testing.T) {
	dir := t.TempDir()
	j1, j2 := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	c1, out1, _ := cli(t, "-world", "pair", "-seeds", "6", "-parallel", "2", "-json", j1)
	c2, out2, _ := cli(t, "-world", "pair", "-seeds", "6", "-parallel", "1", "-json", j2)
	if c1 != exitOK || c2 != exitOK {
		t.Fatalf("exits %d, %d; want 0\n%s", c1, c2, out1)
	}
	if stripTiming(out1) != stripTiming(out2) {
		t.Errorf("summaries differ:\n%s\n---\n%s", out1, out2)
	}
	for _, inv := range []string{"liveness", "txid-ownership", "at-most-once", "conservation", "intake-uniqueness", "audit-log"} {
		if !strings.Contains(out1, inv) {
			t.Errorf("summary lacks invariant %s", inv)
		}
	}
	var s1, s2 map[string]any
	for path, dst := range map[string]*map[string]any{j1: &s1, j2: &s2} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatal(err)
		}
		delete(*dst, "timing")
	}
	b1, _ := json.Marshal(s1)
	b2, _ := json.Marshal(s2)
	if !bytes.Equal(b1, b2) {
		t.Errorf("JSON summaries differ apart from timing:\n%s\n%s", b1, b2)
	}
	if s1["seeds_run"].(float64) != 6 {
		t.Errorf("seeds_run = %v, want 6", s1["seeds_run"])
	}
}

// Goal: shards partition the range.
func TestShardsPartitionTheRange(t *testing.T) {
	_, out, _ := cli(t, "-world", "pair", "-seeds", "5", "-shard", "1/2")
	if !strings.Contains(out, "2 seeds run") {
		t.Errorf("shard 1/2 of 5 seeds: %s", out)
	}
}

// Goal: the same seed gives the same trace bytes in separate processes.
func TestSameSeedSameBytesAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := builtExplore(t)
	var traces [][]byte
	for i := range 2 {
		path := filepath.Join(dir, "t"+string(rune('a'+i))+".jsonl")
		if out, err := exec.Command(bin, "-seed", "9", "-trace", path).CombinedOutput(); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, out)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		traces = append(traces, b)
	}
	if !bytes.Equal(traces[0], traces[1]) {
		t.Error("chaos seed 9 gave different trace bytes in two processes")
	}
}

func stripTiming(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "ran ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// Goal: the catalog lists one mutant a line, name first.
func TestListMutants(t *testing.T) {
	code, out, _ := cli(t, "-list-mutants")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) < 21 {
		t.Fatalf("exit %d, %d lines, want 0 and at least 21 mutants", code, len(lines))
	}
	if !strings.HasPrefix(lines[0], "cas-ignores-token ") {
		t.Errorf("first line %q does not start with the mutant's name", lines[0])
	}
}

// Goal: exhaustive search completes a small bounded space, says so with
// the count, and explores fewer schedules with reduction than without.
func TestExhaustive(t *testing.T) {
	count := func(args ...string) string {
		code, out, errOut := cli(t, append([]string{"-world", "pair", "-strategy", "exhaustive", "-max-crashes", "0", "-max-lies", "0", "-max-preemptions", "1"}, args...)...)
		if code != exitOK || !strings.Contains(out, "complete within bounds: ") {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		i := strings.Index(out, "complete within bounds: ")
		return strings.Fields(out[i+len("complete within bounds: "):])[0]
	}
	reduced, full := count(), count("-no-reduction")
	r, _ := strconv.Atoi(reduced)
	f, _ := strconv.Atoi(full)
	if r == 0 || f <= r {
		t.Errorf("schedules with reduction %d, without %d: want fewer with", r, f)
	}
	// No preemption bound: every interleaving of the fault-free world, up to
	// commuting steps; more than one preemption allows.
	u, _ := strconv.Atoi(count("-max-preemptions", "-1"))
	if u <= r {
		t.Errorf("schedules with no preemption bound %d, with one %d: want more", u, r)
	}
}

// Goal: the summary says how the withdrawals ended, so that a calm run that
// confirms everything says so, and a core that pays nobody exits 1 on
// progress; a self-consistent wrong amount scale exits 1 via the oracle.
func TestOutcomesAndProgress(t *testing.T) {
	code, out, errOut := cli(t, "-world", "calm", "-seeds", "3")
	if code != exitOK {
		t.Fatalf("calm: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"withdrawals (all seeds): 180 requested, 180 accepted: 180 confirmed, 0 failed", "every valid withdrawal was confirmed", "  progress "} {
		if !strings.Contains(out, want) {
			t.Errorf("calm output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = cli(t, "-world", "calm", "-mutant", "unusable-envelope", "-seeds", "2", "-trace", filepath.Join(t.TempDir(), "u.jsonl"))
	if code != exitViolation {
		t.Fatalf("unusable-envelope: exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"0 confirmed, 120 failed (unjustified 120)", "NOTHING was confirmed", "progress: op "} {
		if !strings.Contains(out, want) {
			t.Errorf("unusable-envelope output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = cli(t, "-mutant", "amount-scale", "-seeds", "1", "-trace", filepath.Join(t.TempDir(), "a.jsonl"))
	if code != exitViolation || !strings.Contains(out, "conservation: ") {
		t.Errorf("amount-scale: exit %d, want 1 with a conservation violation\n%s%s", code, out, errOut)
	}
}

// Goal: -seed writes a trace that -replay reproduces; a corrupted copy of
// the same trace is refused with exit 2.
func TestSeedTraceReplay(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	if code, out, errOut := cli(t, "-world", "pair", "-seed", "4", "-trace", path); code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := cli(t, "-replay", path)
	if code != exitOK || !strings.Contains(out, "reproduces it") {
		t.Fatalf("replay exit %d\n%s%s", code, out, errOut)
	}
	b, _ := os.ReadFile(path)
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, b[:len(b)/2], 0o644)
	if code, _, errOut := cli(t, "-replay", bad); code != exitUsage || !strings.Contains(errOut, "bad trace file") {
		t.Errorf("replay of a truncated trace: exit %d, %q", code, errOut)
	}
}

// Goal: a violation exits 1, names the invariant, writes the trace and,
// for linearizability, porcupine's visualization next to it; the trace
// replays to the same verdict.
func TestViolationExits1WithTraceAndVisualization(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.jsonl")
	seed := firstFailing(t, "check-then-insert", 40)
	code, out, errOut := cli(t, "-mutant", "check-then-insert", "-seeds", strconv.FormatUint(seed, 10), "-trace", path)
	if code != exitViolation {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"linearizable-intake", fmt.Sprintf("first failing seed: %d", seed), "linearizability visualization: ",
		fmt.Sprintf("-mutant check-then-insert -seed %d", seed)} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	html, err := os.ReadFile(filepath.Join(dir, "f.linearizability.html"))
	if err != nil || !bytes.Contains(html, []byte("<html")) {
		t.Errorf("visualization: %v (%d bytes)", err, len(html))
	}
	code, out, _ = cli(t, "-replay", path)
	if code != exitViolation || !strings.Contains(out, "reproduces it") || !strings.Contains(out, "intake-uniqueness") {
		t.Errorf("replay exit %d:\n%s", code, out)
	}
}

// Goal: explore -report writes the report and says where; a failing run
// gets a page per failing seed.
func TestReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	seed := firstFailing(t, "check-then-insert", 40)
	// The trace beside the report: a report replaces its directory whole.
	code, out, errOut := cli(t, "-mutant", "check-then-insert", "-seeds", "1", "-seed-start", strconv.FormatUint(seed, 10), "-report", dir, "-trace", filepath.Join(dir, "..", "t.jsonl"))
	if code != exitViolation {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "report: "+filepath.Join(dir, "index.html")) {
		t.Errorf("output does not say where the report is:\n%s", out)
	}
	for _, f := range []string{"index.html", fmt.Sprintf("seed-%d.html", seed), fmt.Sprintf("seed-%d-linearizability.html", seed)} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("report lacks %s: %v", f, err)
		}
	}
}

// Goal: bad usage and unreadable input exit 2 with an error naming what was
// wrong, and run nothing.
func TestBadUsageExits2(t *testing.T) {
	dir := t.TempDir()
	foreign := filepath.Join(dir, "foreign.jsonl")
	os.WriteFile(foreign, []byte(`{"hello":"world"}`+"\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"zero seeds", []string{"-seeds", "0"}, "-seeds 0"},
		{"unknown world", []string{"-world", "nope"}, `unknown world "nope"`},
		{"bad shard", []string{"-shard", "3/2"}, `-shard "3/2"`},
		{"shard syntax", []string{"-shard", "x"}, `-shard "x"`},
		{"strategy", []string{"-strategy", "dfs"}, `-strategy "dfs"`},
		{"exhaustive with seeds", []string{"-strategy", "exhaustive", "-seeds", "5"}, "enumerates schedules, not seeds"},
		{"negative bound", []string{"-strategy", "exhaustive", "-max-crashes", "-1"}, "must not be negative"},
		{"preemptions below -1", []string{"-strategy", "exhaustive", "-max-preemptions", "-2"}, "-max-preemptions -1 means no bound"},
		{"pct depth", []string{"-strategy", "pct", "-pct-depth", "0"}, "-pct-depth 0"},
		{"stray argument", []string{"10000"}, `unexpected argument "10000"`},
		{"bad seed", []string{"-seed", "abc"}, `-seed "abc"`},
		{"seed and seeds", []string{"-seed", "3", "-seeds", "10"}, "-seed runs one seed"},
		{"replay and world", []string{"-replay", "x", "-world", "pair"}, "drop -world"},
		{"unknown flag", []string{"-bogus"}, "bogus"},
		{"missing trace", []string{"-replay", filepath.Join(dir, "none.jsonl")}, "no such file"},
		{"foreign trace", []string{"-replay", foreign}, "not a sluicesim-trace/1 file"},
		{"zero parallel", []string{"-parallel", "0"}, "-parallel 0"},
		{"unknown mutant", []string{"-mutant", "nope"}, `unknown mutant "nope"`},
		{"unknown store", []string{"-store", "mysql"}, `-store "mysql"`},
		{"postgres replay", []string{"-store", "postgres", "-replay", "x"}, "drop -replay"},
		{"postgres exhaustive", []string{"-store", "postgres", "-strategy", "exhaustive"}, "exhaustive search runs on the memory store"},
		{"replay writes no trace", []string{"-replay", "x", "-trace", "y"}, "drop -trace"},
		{"bound without exhaustive", []string{"-max-crashes", "2"}, "-max-crashes applies only with -strategy exhaustive"},
		{"depth without pct", []string{"-pct-depth", "2"}, "-pct-depth applies only with -strategy pct"},
		{"kill table exhaustive", []string{"-mutants", "-strategy", "exhaustive"}, "-mutants runs seeds"},
		{"list with outputs", []string{"-list-mutants", "-json", "x.json"}, "-list-mutants prints the catalog and runs nothing"},
	}
	t.Run("postgres without DATABASE_URL", func(t *testing.T) {
		t.Setenv("DATABASE_URL", "")
		code, _, errOut := cli(t, "-store", "postgres", "-seeds", "1")
		if code != exitUsage || !strings.Contains(errOut, "-store postgres needs DATABASE_URL") {
			t.Errorf("exit %d, stderr %q; want 2 naming DATABASE_URL", code, errOut)
		}
	})
	t.Run("postgres unreachable", func(t *testing.T) {
		t.Setenv("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
		code, _, errOut := cli(t, "-store", "postgres", "-seeds", "1")
		if code != exitUsage || !strings.Contains(errOut, "-store postgres: postgres: connect") {
			t.Errorf("exit %d, stderr %q; want 2 naming the failed connection", code, errOut)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := cli(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want 2; stdout %q", code, out)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr = %q, want it to mention %q", errOut, tt.want)
			}
		})
	}
}

// firstFailing is the lowest chaos seed (at most max) on which mutant
// breaks linearizable-intake, found by running the world directly: the
// command-line tests then follow the world as it changes instead of
// pinning a seed number.
func firstFailing(t *testing.T, mutant string, max uint64) uint64 {
	t.Helper()
	cfg := scenarios.Chaos()
	cfg.Mutant = mutant
	cfg.Swarm = swarmDefault(cfg.Name) // as explore runs chaos without -swarm
	for seed := uint64(1); seed <= max; seed++ {
		for _, v := range scenarios.Run(cfg, seed, scenarios.Options{}).Violations {
			if v.Invariant == model.LinearizableIntake {
				return seed
			}
		}
	}
	t.Fatalf("%s breaks linearizable-intake on no chaos seed up to %d", mutant, max)
	return 0
}

// Goal: when the first failing seed's trace cannot be written (here the
// working directory it goes to was removed), explore says so and names no
// replay of a file that is not there, in its output or its summary; the
// violation stays the verdict and the re-run command is still given.
func TestUnwrittenTraceIsNotOfferedForReplay(t *testing.T) {
	dir := t.TempDir()
	sum := filepath.Join(dir, "s.json")
	gone := filepath.Join(dir, "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, "-world", "zombies", "-mutant", "claim-ignores-lease", "-seeds", "2", "-json", sum)
	if code != exitViolation || !strings.Contains(errOut, "writing the trace") {
		t.Fatalf("exit %d, stderr %q; want 1 and the write's failure", code, errOut)
	}
	if strings.Contains(out, "-replay") || !strings.Contains(out, "replay: none") || !strings.Contains(out, "re-run: ") {
		t.Errorf("the output offers a replay of a trace never written, or no re-run:\n%s", out)
	}
	b, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		First struct{ Trace, Replay, Command string } `json:"first_failure"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.First.Trace != "" || s.First.Replay != "" || s.First.Command == "" {
		t.Errorf("summary's first failure %+v: want no trace, no replay, a re-run command", s.First)
	}
}

// Goal: two outputs naming one file, or an output naming the trace or the
// shard summary being read, are refused before anything runs, and the file
// is left as it was (found by an independent review: -trace X -json X
// printed a replay command for a file holding the JSON; -shrink IN -trace
// IN replaced the failing trace with the shrunk one; merge -json on a shard
// overwrote it). A device (/dev/null) may take several outputs.
func TestOutputsNamingOneFileAreRefused(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	keep := func(name string) string {
		if err := os.WriteFile(at(name), []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
		return at(name)
	}
	link := at("link.json")
	if err := os.Symlink(keep("shard.json"), link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-world", "pair", "-seed", "1", "-trace", keep("x"), "-json", at("x")}, "-json and -trace name one file"},
		{[]string{"-world", "pair", "-seed", "1", "-json", keep("p"), "-cpuprofile", at("p")}, "-json and -cpuprofile name one file"},
		{[]string{"-shrink", keep("in.jsonl"), "-trace", at("in.jsonl")}, "-shrink and -trace name one file"},
		{[]string{"-replay", keep("r.jsonl"), "-json", at("r.jsonl")}, "-replay and -json name one file"},
		{[]string{"merge", "-json", link, at("shard.json")}, "is one of the shard summaries merged"},
		{[]string{"merge", "-trace", keep("s2.json"), at("s2.json")}, "is one of the shard summaries merged"},
	} {
		code, _, errOut := cli(t, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	for _, name := range []string{"x", "p", "in.jsonl", "r.jsonl", "shard.json", "s2.json"} {
		if b, err := os.ReadFile(at(name)); err != nil || string(b) != "keep me" {
			t.Errorf("%s was changed by a refused run: %q, %v", name, b, err)
		}
	}
	if code, _, errOut := cli(t, "-world", "pair", "-seed", "1", "-trace", os.DevNull, "-json", os.DevNull); code != exitOK {
		t.Errorf("two outputs to %s: exit %d, %s; want 0", os.DevNull, code, errOut)
	}
}
