package main

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseLine(t *testing.T) {
	r, ok := parseLine("BenchmarkChaosSeed-2   \t     200\t   3777668 ns/op\t    443827 check-ns/op\t 1907668 B/op\t    3980 allocs/op")
	if !ok {
		t.Fatal("a result line was not read")
	}
	want := map[string]float64{"ns/op": 3777668, "check-ns/op": 443827, "B/op": 1907668, "allocs/op": 3980}
	if r.name != "BenchmarkChaosSeed-2" || !maps.Equal(r.values, want) || !slices.Equal(r.units, []string{"ns/op", "check-ns/op", "B/op", "allocs/op"}) {
		t.Errorf("got %s %v %v", r.name, r.values, r.units)
	}
	for _, l := range []string{
		"goos: linux",
		"BenchmarkChaosSeed",
		"BenchmarkChaosSeed-2 \t 200",
		"BenchmarkChaosSeed-2 \t many \t 3 ns/op",
		"BenchmarkChaosSeed-2 \t 200 \t fast ns/op",
		"BenchmarkChaosSeed-2 \t 200 \t 3 ns/op \t 4",
		"PASS",
	} {
		if _, ok := parseLine(l); ok {
			t.Errorf("%q read as a result", l)
		}
	}
}

func TestKeepLastAndMedian(t *testing.T) {
	out := "BenchmarkA-2 1 10 ns/op\nBenchmarkA/x-2 1 7 ns/op\nBenchmarkA-2 1 20 ns/op\nBenchmarkA/x-2 1 8 ns/op\n"
	kept := keepLast(parseLines([]byte(out)))
	if len(kept) != 2 || kept[0].name != "BenchmarkA-2" || kept[0].values["ns/op"] != 20 || kept[1].values["ns/op"] != 8 {
		t.Errorf("kept %+v, want the second result of each", kept)
	}
	for _, c := range []struct {
		v    []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{5}, 5}} {
		if got := median(c.v); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}

// Goal: bad input is refused with exit 2 and a sentence naming it, before
// anything is built or run.
func TestRefusesBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "-base is required"},
		{[]string{"-base", "HEAD", "-rounds", "0"}, "-rounds 0"},
		{[]string{"-base", "HEAD", "-bench", "(["}, "not a regular expression"},
		{[]string{"-base", "HEAD", "extra"}, "unexpected arguments"},
		{[]string{"-base", "no-such-commit-xyz", "-out", out}, `-base "no-such-commit-xyz" is not a commit`},
		{[]string{"-base", "HEAD", "-out", "/dev/null/x"}, "-out"},
		{[]string{"-nonsense"}, "flag provided but not defined"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
		if stdout.Len() > 0 {
			t.Errorf("%q: wrote %q to stdout", c.args, stdout.String())
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) > 0 {
		t.Errorf("a refused run wrote %d files into -out", len(entries))
	}
}

// Goal: a comparison of two builds runs every matching benchmark with both
// binaries, each round, keeps one result per run, and prints both medians,
// the ratio and the spread per unit (the custom one too); -out gets the
// kept lines for benchstat; a pattern matching nothing is refused.
func TestCompareTinyPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a package twice; skipped with -short")
	}
	if err := exec.Command("git", "rev-parse", "--verify", "--quiet", "HEAD:cmd/benchab/testdata/tiny/tiny_test.go").Run(); err != nil {
		t.Fatalf("cmd/benchab/testdata/tiny is not committed at HEAD (commit it: the base build checks HEAD out): %v", err)
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-base", "HEAD", "-pkg", "./testdata/tiny", "-rounds", "3", "-benchtime", "20x", "-out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	table := stdout.String()
	for _, want := range []string{"BenchmarkSum-", "BenchmarkSizes/small-", "BenchmarkSizes/large-", "bytes/op", "allocs/op", "new/base"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	for _, l := range strings.Split(table, "\n") {
		if f := strings.Fields(l); len(f) == 8 && strings.HasPrefix(f[0], "BenchmarkSizes/large") && f[1] == "bytes/op" {
			if f[2] != "100" || f[3] != "100" || f[4] != "1.000" || f[7] != "3" {
				t.Errorf("large bytes/op row %q: want medians 100 and 100, ratio 1.000, 3 runs", l)
			}
		}
	}
	for _, side := range []string{"base.txt", "new.txt"} {
		b, err := os.ReadFile(filepath.Join(out, side))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(parseLines(b)); n != 9 {
			t.Errorf("%s holds %d results, want 9 (3 rounds of 3 benchmarks)", side, n)
		}
	}
	if !strings.Contains(stderr.String(), "round 3/3") {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"-base", "HEAD", "-pkg", "./testdata/tiny", "-bench", "NoSuch"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "no benchmark") {
		t.Errorf("-bench matching nothing: exit %d, %q", code, stderr.String())
	}
}
