package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("benchab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("base", "", "the commit to compare the working tree with (required)")
	pkg := fs.String("pkg", "./scenarios", "the package whose benchmarks run")
	bench := fs.String("bench", ".", "a regular expression: the top-level benchmarks to run")
	rounds := fs.Int("rounds", 5, "rounds: each benchmark runs this many times with each binary")
	benchtime := fs.String("benchtime", "200x", "-test.benchtime of every run")
	out := fs.String("out", "", "a directory to write base.txt and new.txt (the kept results, benchstat's input) into")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := check(*base, *bench, *rounds, fs.Args()); err != nil {
		fmt.Fprintf(stderr, "benchab: %v\n", err)
		return 2
	}
	if *out != "" {
		// Before minutes of benchmarks, not after.
		if err := os.MkdirAll(*out, 0o755); err != nil {
			fmt.Fprintf(stderr, "benchab: -out: %v\n", err)
			return 2
		}
	}
	res, err := compare(*base, *pkg, *bench, *benchtime, *rounds, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "benchab: %v\n", err)
		return 2
	}
	if *out != "" {
		if err := res.write(*out); err != nil {
			fmt.Fprintf(stderr, "benchab: %v\n", err)
			return 2
		}
	}
	res.table(stdout)
	return 0
}

func check(base, bench string, rounds int, rest []string) error {
	switch {
	case len(rest) > 0:
		return fmt.Errorf("unexpected arguments %q: every input is a flag", rest)
	case base == "":
		return errors.New("-base is required: the commit to compare the working tree with")
	case rounds < 1:
		return fmt.Errorf("-rounds %d: at least 1", rounds)
	}
	if _, err := regexp.Compile(bench); err != nil {
		return fmt.Errorf("-bench %q is not a regular expression: %v", bench, err)
	}
	return nil
}

// results are the kept lines of every run, by side (0 base, 1 new).
type results struct {
	base, head string   // the commits, for the header
	names      []string // benchmarks in the order first seen
	lines      [2][]result
}

// result is one benchmark result line: its name (sub-benchmark and
// GOMAXPROCS suffix included) and its values by unit.
type result struct {
	name   string
	line   string
	values map[string]float64
	units  []string // in the line's order
}

func compare(base, pkg, bench, benchtime string, rounds int, progress io.Writer) (*results, error) {
	root, err := git("", "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, errors.New("not inside a git repository: " + err.Error())
	}
	commit, err := git(root, "rev-parse", "--verify", "--quiet", base+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("-base %q is not a commit of this repository", base)
	}
	head, _ := git(root, "rev-parse", "--short", "HEAD")
	tmp, err := os.MkdirTemp("", "benchab-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	tree := filepath.Join(tmp, "base")
	if _, err := git(root, "worktree", "add", "--detach", tree, commit); err != nil {
		return nil, fmt.Errorf("checking out %s: %v", base, err)
	}
	defer git(root, "worktree", "remove", "--force", tree)
	// The package path is relative to the working directory, which is in
	// the repository; the worktree has the same layout from its root.
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(root, cwd)
	if err != nil {
		return nil, err
	}
	bins := [2]string{filepath.Join(tmp, "base.test"), filepath.Join(tmp, "new.test")}
	dirs := [2]string{filepath.Join(tree, rel), cwd}
	for side := range bins {
		fmt.Fprintf(progress, "building %s at %s\n", pkg, [2]string{"base " + base, "the working tree"}[side])
		cmd := exec.Command("go", "test", "-c", "-o", bins[side], pkg)
		cmd.Dir = dirs[side]
		if b, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building %s at %s: %v\n%s", pkg, [2]string{base, "the working tree"}[side], err, b)
		}
	}
	var lists [2][]string
	for side, bin := range bins {
		b, err := exec.Command(bin, "-test.list", bench).Output()
		if err != nil {
			return nil, fmt.Errorf("listing the benchmarks of %s: %v", bin, err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Benchmark") {
				lists[side] = append(lists[side], l)
			}
		}
	}
	var names []string
	for _, n := range lists[1] {
		if slices.Contains(lists[0], n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no benchmark of %s matches -bench %q at both %s and the working tree", pkg, bench, base)
	}
	res := &results{base: commit[:min(len(commit), 12)], head: head}
	for r := range rounds {
		order := []int{0, 1}
		if r%2 == 1 {
			order = []int{1, 0}
		}
		for _, name := range names {
			for _, side := range order {
				fmt.Fprintf(progress, "round %d/%d: %s, %s\n", r+1, rounds, name, [2]string{"base", "new"}[side])
				b, err := exec.Command(bins[side], "-test.run", "^$", "-test.bench", "^"+regexp.QuoteMeta(name)+"$",
					"-test.benchtime", benchtime, "-test.count", "2", "-test.benchmem").CombinedOutput()
				if err != nil {
					return nil, fmt.Errorf("%s (%s): %v\n%s", name, [2]string{"base", "new"}[side], err, b)
				}
				kept := keepLast(parseLines(b))
				if len(kept) == 0 {
					return nil, fmt.Errorf("%s (%s) printed no result:\n%s", name, [2]string{"base", "new"}[side], b)
				}
				for _, k := range kept {
					if !slices.Contains(res.names, k.name) {
						res.names = append(res.names, k.name)
					}
				}
				res.lines[side] = append(res.lines[side], kept...)
			}
		}
	}
	return res, nil
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		if s := strings.TrimSpace(stderr.String()); s != "" {
			return "", errors.New(s)
		}
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// parseLines reads the result lines of go test -bench output: a name, an
// iteration count, then value-unit pairs.
func parseLines(out []byte) []result {
	var rs []result
	for _, l := range strings.Split(string(out), "\n") {
		if r, ok := parseLine(l); ok {
			rs = append(rs, r)
		}
	}
	return rs
}

func parseLine(l string) (result, bool) {
	f := strings.Fields(l)
	if len(f) < 4 || len(f)%2 != 0 || !strings.HasPrefix(f[0], "Benchmark") {
		return result{}, false
	}
	if _, err := strconv.Atoi(f[1]); err != nil {
		return result{}, false
	}
	r := result{name: f[0], line: strings.TrimSpace(l), values: map[string]float64{}}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return result{}, false
		}
		r.values[f[i+1]] = v
		r.units = append(r.units, f[i+1])
	}
	return r, true
}

// keepLast keeps each benchmark's last result (of -count 2: the second).
func keepLast(rs []result) []result {
	var out []result
	for i, r := range rs {
		later := slices.ContainsFunc(rs[i+1:], func(x result) bool { return x.name == r.name })
		if !later {
			out = append(out, r)
		}
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// table prints, per benchmark and unit, the medians of both sides, their
// ratio and the spread of each (min-max), in the benchmarks' order.
func (res *results) table(w io.Writer) {
	fmt.Fprintf(w, "base %s against the working tree (HEAD %s); medians of the kept runs\n\n", res.base, res.head)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\tunit\tbase\tnew\tnew/base\tbase range\tnew range\truns")
	for _, name := range res.names {
		var vals [2]map[string][]float64
		var units []string
		for side := range vals {
			vals[side] = map[string][]float64{}
			for _, r := range res.lines[side] {
				if r.name != name {
					continue
				}
				for _, u := range r.units {
					vals[side][u] = append(vals[side][u], r.values[u])
					if !slices.Contains(units, u) {
						units = append(units, u)
					}
				}
			}
		}
		for _, u := range units {
			a, b := vals[0][u], vals[1][u]
			if len(a) == 0 || len(b) == 0 {
				continue
			}
			ma, mb := median(a), median(b)
			ratio := "-"
			if ma != 0 {
				ratio = fmt.Sprintf("%.3f", mb/ma)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s-%s\t%s-%s\t%d\n", name, u, num(ma), num(mb), ratio,
				num(slices.Min(a)), num(slices.Max(a)), num(slices.Min(b)), num(slices.Max(b)), len(a))
		}
	}
	tw.Flush()
}

func num(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// write puts each side's kept lines in dir as base.txt and new.txt.
func (res *results) write(dir string) error {
	for side, file := range [2]string{"base.txt", "new.txt"} {
		var b strings.Builder
		for _, r := range res.lines[side] {
			b.WriteString(r.line + "\n")
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(b.String()), 0o644); err != nil {
			return fmt.Errorf("-out: %v", err)
		}
	}
	return nil
}
