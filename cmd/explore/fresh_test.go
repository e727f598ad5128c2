package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"sluicesim/scenarios"
)

// Goal: -seed-start random explores a range nobody chose, and says which,
// on the console and in -json, so that a failure there is re-run by seed.
func TestSeedStartRandomIsPrintedAndRecorded(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "s.json")
	code, out, errOut := cli(t, "-world", "pair", "-seeds", "5", "-seed-start", "random", "-json", jsonPath)
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	m := regexp.MustCompile(`-seed-start random chose (\d+) \(re-run it with -seed-start (\d+) -seeds 5\)`).FindStringSubmatch(out)
	if m == nil || m[1] != m[2] {
		t.Fatalf("no chosen start on the console:\n%s", out)
	}
	start, _ := strconv.ParseUint(m[1], 10, 64)
	if got := readJSON(t, jsonPath)["seed_start"].(float64); uint64(got) != start {
		t.Errorf("JSON seed_start %v, console says %d", got, start)
	}
	if !strings.Contains(out, "seeds "+m[1]+"..") {
		t.Errorf("the range line does not start at %s:\n%s", m[1], out)
	}
}

// Goal: a time budget runs a contiguous range from the start and says how
// many seeds fitted; a budget shorter than one seed still runs one.
func TestDurationRunsAPrefixOfTheRange(t *testing.T) {
	code, out, errOut := cli(t, "-world", "pair", "-seeds", "50", "-duration", "1ns", "-parallel", "2")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"seeds 1..1: 1 seeds run", "time budget 1ns: 1 seeds fitted", "ran 1 seeds"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Goal: forEachSeed's indices are always 0..K-1 when stop cuts the run,
// whatever the interleaving of its goroutines.
func TestForEachSeedStopsWithoutHoles(t *testing.T) {
	for trial := range 200 {
		cut := 1 + trial%37
		var ran [64]bool
		var mu = make(chan struct{}, 1)
		k := forEachSeed(64, 4, func(k int) bool { return k >= cut }, nil, func(k int) {
			mu <- struct{}{}
			ran[k] = true
			<-mu
		})
		if k != cut {
			t.Fatalf("trial %d: ran %d, want %d", trial, k, cut)
		}
		for i, r := range ran {
			if r != (i < cut) {
				t.Fatalf("trial %d: index %d ran=%v with the cut at %d", trial, i, r, cut)
			}
		}
	}
}

// Goal: the determinism re-check reruns a fixed fraction of the seeds and
// names every seed whose second run made other choices, took other steps
// or reached another verdict.
func TestRecheckNamesSeedsThatDiffer(t *testing.T) {
	cfg := scenarios.Pair()
	rs := newRecheckSet(1)
	for seed := uint64(1); seed <= 6; seed++ {
		rs.note(scenarios.Run(cfg, seed, rs.options(seed, scenarios.Options{})))
	}
	n, bad := rs.rerun(cfg, scenarios.Options{}, 2, noWatch)
	if n != 6 || len(bad) != 0 {
		t.Fatalf("honest rerun: %d seeds, mismatches %v", n, bad)
	}
	tape, steps, verdict := rs.first[2], rs.first[4], rs.first[5]
	tape.tape ^= 1
	steps.steps++
	verdict.verdict = `[{"Invariant":"funds"}]`
	rs.first[2], rs.first[4], rs.first[5] = tape, steps, verdict
	_, bad = rs.rerun(cfg, scenarios.Options{}, 2, noWatch)
	if len(bad) != 3 || bad[0].Seed != 2 || bad[1].Seed != 4 || bad[2].Seed != 5 ||
		!strings.Contains(bad[0].What, "tape") || !strings.Contains(bad[1].What, "steps") || !strings.Contains(bad[2].What, "verdict") {
		t.Fatalf("tampered first runs: got %+v", bad)
	}
}

func TestRecheckPicksTheFraction(t *testing.T) {
	for _, f := range []float64{0.01, 0.1, 0.5} {
		n := 0
		for s := uint64(1); s <= 100_000; s++ {
			if recheckPicked(s, f) {
				n++
			}
		}
		if got := float64(n) / 100_000; got < f*0.9 || got > f*1.1 {
			t.Errorf("fraction %g picked %g", f, got)
		}
	}
	if recheckPicked(7, 0) || !recheckPicked(7, 1) {
		t.Error("fractions 0 and 1 are none and all")
	}
}

// Goal: the command re-checks when asked and says so; bad values of the
// new flags are refused with exit 2, naming the flag.
func TestRecheckAndFreshFlags(t *testing.T) {
	code, out, errOut := cli(t, "-world", "pair", "-seeds", "20", "-recheck", "0.5")
	if code != exitOK || !regexp.MustCompile(`determinism re-check \(-recheck 0.5\): \d+ seeds run again after the others, every tape and verdict identical`).MatchString(out) {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-recheck", "2"}, "-recheck 2"},
		{[]string{"-recheck", "-0.1"}, "-recheck -0.1"},
		{[]string{"-recheck", "NaN"}, "-recheck NaN"},
		{[]string{"-seed-start", "18446744073709551615", "-seeds", "3"}, "the range runs past the largest seed"},
		{[]string{"-seed-start", "18446744073709551615", "-duration", "1m"}, "the range runs past the largest seed"},
		{[]string{"-seed-start", "abc"}, `-seed-start "abc"`},
		{[]string{"-seed-start", "random", "-shard", "0/2"}, "-seed-start random with -shard"},
		{[]string{"-duration", "0"}, "-duration 0"},
		{[]string{"-duration", "1m", "-shard", "0/2"}, "-duration with -shard"},
		{[]string{"-duration", "1m", "-mutants"}, "-duration bounds a run of a seed range"},
		{[]string{"-recheck", "0.1", "-seed", "3"}, "-recheck re-runs seeds of a seed range"},
		{[]string{"-swarm", "-strategy", "exhaustive", "-world", "pair"}, "-swarm draws a world per seed"},
		// Flags that would be ignored are refused.
		{[]string{"-list-mutants", "-seeds", "5"}, "-list-mutants prints the catalog and runs nothing: drop -seeds"},
		{[]string{"-list-mutants", "-mutant", "amount-trailing-zeros"}, "drop -mutant"},
		{[]string{"-regressions", "dir", "-mutant", "amount-trailing-zeros"}, "drop -regressions or -mutant"},
		{[]string{"-replay", "x.jsonl", "-swarm"}, "take everything from the trace: drop -swarm"},
		{[]string{"-shrink", "x.jsonl", "-swarm=false"}, "take everything from the trace: drop -swarm"},
		{[]string{"-seed", "3", "-parallel", "2"}, "-parallel applies only with a seed range or -mutants"},
		{[]string{"-replay", "x.jsonl", "-parallel", "2"}, "-parallel applies only with"},
		{[]string{"-strategy", "exhaustive", "-world", "pair", "-parallel", "2"}, "-parallel applies only with"},
		{[]string{"-replay", "x.jsonl", "-seed-timeout", "1m"}, "-seed-timeout applies only with a seed range, -mutants, -seed or -store postgres"},
		{[]string{"-seeds", "3", "-seed-timeout", "-1s"}, "-seed-timeout -1s: want a positive duration, or 0 to wait for ever"},
	} {
		code, _, errOut := cli(t, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// Goal: -require-coverage fails (exit 3, inconclusive) a run too short to
// reach what its world should, naming what it missed, and the summary lists
// every condition of the catalog with its count.
func TestRequireCoverageFailsAShortRun(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "s.json")
	code, out, errOut := cli(t, "-world", "pair", "-seeds", "1", "-require-coverage", "-json", jsonPath)
	if code != exitInconclusive || !strings.Contains(out, "never reached: ") || !strings.Contains(out, "-require-coverage: a run that never reached these") {
		t.Fatalf("exit %d, want 3 naming what was missed:\n%s%s", code, out, errOut)
	}
	cov := readJSON(t, jsonPath)["coverage"].([]any)
	if len(cov) != len(scenarios.CoverageNames()) {
		t.Errorf("summary lists %d conditions, the catalog has %d", len(cov), len(scenarios.CoverageNames()))
	}
	// Without the flag the same run passes, and still says what it missed.
	if code, out, _ := cli(t, "-world", "pair", "-seeds", "1"); code != exitOK || !strings.Contains(out, "never reached: ") {
		t.Errorf("without -require-coverage: exit %d\n%s", code, out)
	}
}

// Goal: a seed range stopped by a signal (Ctrl-C; SIGTERM, which is how a
// cluster stops a pod) keeps what it found: the seeds in flight finish,
// the summary speaks of the seeds run (a prefix of the range) and says it
// was interrupted, the -json summary is written and marked so, and the
// exit is 130, not the 0 of a range run whole. Method: the built binary
// on a range far too long to finish, signalled once its progress shows.
func TestInterruptedRangeKeepsWhatRan(t *testing.T) {
	bin := builtExplore(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			sum := filepath.Join(t.TempDir(), "s.json")
			var out, errOut bytes.Buffer
			cmd, errPipe := startRunning(t, bin, &out, &errOut, "-json", sum)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(errPipe)
			errOut.Write(rest)
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
				t.Fatalf("exit: %v, want %d\nstdout:\n%s\nstderr:\n%s", err, exitInterrupted, out.String(), errOut.String())
			}
			b, err := os.ReadFile(sum)
			if err != nil {
				t.Fatalf("no summary written: %v", err)
			}
			var s summary
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			if !s.Interrupted || s.SeedsRun == 0 || s.Seeds != s.SeedsRun || s.SeedsFailed != 0 {
				t.Errorf("summary: interrupted %v, %d of %d seeds run, %d failed; want interrupted, a prefix run whole, none failed", s.Interrupted, s.SeedsRun, s.Seeds, s.SeedsFailed)
			}
			if want := fmt.Sprintf("INTERRUPTED: the first %d seeds of the range ran", s.SeedsRun); !strings.Contains(out.String(), want) {
				t.Errorf("stdout does not say %q:\n%s", want, out.String())
			}
		})
	}
}

// startRunning starts the built binary on a pair range far too long to
// finish, with the extra flags, and returns once seeds are running (its
// progress line shows), with its stderr read so far in errOut and the rest
// to read from the pipe.
func startRunning(t *testing.T, bin string, out, errOut *bytes.Buffer, extra ...string) (*exec.Cmd, io.Reader) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-world", "pair", "-seeds", "100000000", "-progress"}, extra...)...)
	cmd.Stdout = out
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitForProgress(t, errPipe, errOut)
	return cmd, errPipe
}

// waitForProgress reads a run's stderr into errOut until its progress line
// shows, that is, until seeds are running.
func waitForProgress(t *testing.T, stderr io.Reader, errOut *bytes.Buffer) {
	t.Helper()
	buf := make([]byte, 4096)
	for !strings.Contains(errOut.String(), "seeds/s") {
		n, err := stderr.Read(buf)
		errOut.Write(buf[:n])
		if err != nil {
			t.Fatalf("no progress before stderr ended: %v\n%s", err, errOut.String())
		}
	}
}

// Goal: a run killed midway leaves an existing -cpuprofile and -json as
// they were: outputs are written whole when the run is done, never begun
// in place (found by an independent review: -cpuprofile emptied the old
// profile as the run started). Method: the built binary, killed (SIGKILL,
// nothing to catch) once its progress shows.
func TestKilledRunLeavesOldOutputs(t *testing.T) {
	bin := builtExplore(t)
	dir := t.TempDir()
	prof, sum := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "s.json")
	for _, p := range []string{prof, sum} {
		if err := os.WriteFile(p, []byte("the old one"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut bytes.Buffer
	cmd, errPipe := startRunning(t, bin, &out, &errOut, "-cpuprofile", prof, "-json", sum)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, errPipe)
	cmd.Wait()
	for _, p := range []string{prof, sum} {
		if b, err := os.ReadFile(p); err != nil || string(b) != "the old one" {
			t.Errorf("%s after a killed run: %q, %v; want the old one", filepath.Base(p), b, err)
		}
	}
}

// noWatch is the watchdog of a test's re-check: none.
func noWatch(func(k int) uint64) *seedWatch { return nil }

// Goal: a seed that never finishes ends the run with its name, the command
// that runs it alone and every goroutine's stack, instead of a silent wait
// for ever; the seeds before and beside it run, and it fires once.
func TestSeedWatchNamesAHang(t *testing.T) {
	var out strings.Builder
	fired := make(chan int, 2)
	w := &seedWatch{timeout: 20 * time.Millisecond, out: &out,
		name: func(k int) string { return fmt.Sprintf("run %d", k) },
		exit: func(code int) {
			select {
			case fired <- code:
			default: // the test fails on the second below
			}
		}}
	var ran atomic.Int64
	released := make(chan struct{})
	n := forEachSeed(8, 2, nil, w, func(k int) {
		if k == 5 {
			select { // hangs until the watch fires
			case code := <-fired:
				if code != exitHung {
					t.Errorf("exit %d, want %d", code, exitHung)
				}
			case <-time.After(time.Minute):
				t.Error("a seed hung a minute and the watch never fired")
			}
			// Still hung for a few more of the watch's looks: it must
			// not fire again.
			time.Sleep(5 * w.timeout)
			close(released)
		}
		ran.Add(1)
	})
	<-released
	if n != 8 || ran.Load() != 8 {
		t.Fatalf("claimed %d, ran %d; want 8 and 8", n, ran.Load())
	}
	msg := out.String()
	for _, want := range []string{"explore: run 5 has run ", "without finishing (-seed-timeout 20ms; ", "Every goroutine's stack follows; exit 4.", "goroutine ", "TestSeedWatchNamesAHang"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the watch's message lacks %q:\n%.2000s", want, msg)
		}
	}
	if c := strings.Count(msg, "without finishing"); c != 1 {
		t.Errorf("fired %d times, want once", c)
	}
	select {
	case <-fired:
		t.Error("fired again")
	default:
	}
}

// Goal: the watchdog is on in a seed range by default and ends a run whose
// seeds outlast it with exit 4, naming a seed and the command that runs it
// alone (here every chaos seed outlasts a millisecond).
func TestSeedTimeoutEndsTheRun(t *testing.T) {
	bin := builtExplore(t)
	cmd := exec.Command(bin, "-seeds", "2000", "-seed-timeout", "1ms", "-store", "memory")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitHung {
		t.Fatalf("err %v, want exit %d; stderr:\n%.1000s", err, exitHung, stderr.String())
	}
	if !regexp.MustCompile(`explore: seed \d+ of world chaos \(memory store; run it alone: go run \./cmd/explore -world chaos -seed \d+\) has run `).MatchString(stderr.String()) {
		t.Errorf("stderr does not name the seed and its command:\n%.1000s", stderr.String())
	}
	if strings.Contains(stdout.String(), "seeds run") {
		t.Errorf("a summary of a range with a hole:\n%s", stdout.String())
	}
}

// Goal: the command that re-runs a seed of a run on PostgreSQL runs it on
// PostgreSQL: a bug of that store passes on the memory store.
func TestReproKeepsTheStore(t *testing.T) {
	for _, c := range []struct{ store, want string }{
		{"postgres", "go run ./cmd/explore -world chaos -store postgres -seed 3 -trace t.jsonl"},
		{"memory", "go run ./cmd/explore -world chaos -seed 3 -trace t.jsonl"},
	} {
		o := &options{storeKind: c.store, strategy: "random"}
		if got := o.reproOf("chaos", "", 3).rerun("t.jsonl"); got != c.want {
			t.Errorf("store %s: %q, want %q", c.store, got, c.want)
		}
	}
}
