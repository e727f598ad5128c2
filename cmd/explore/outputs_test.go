package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// names lists dir's entries.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// A passing run's report into the directory of a failing run's replaces
// it as a whole: no failure page or trace of the earlier run is left
// beside an index that says nothing failed, and nothing of the writing
// (no temporary directory) is left beside the report.
func TestReportReplacesTheEarlierOne(t *testing.T) {
	parent := t.TempDir()
	rep := filepath.Join(parent, "rep")
	code, out, errOut := cli(t, "-world", "pair", "-mutant", "claim-ignores-lease", "-seeds", "3", "-report", rep)
	if code != exitViolation {
		t.Fatalf("failing run: exit %d\n%s%s", code, out, errOut)
	}
	if len(names(t, rep)) < 3 {
		t.Fatalf("the failing run's report has %v: want failure pages and traces", names(t, rep))
	}
	code, out, errOut = cli(t, "-world", "pair", "-seeds", "3", "-report", rep)
	if code != exitOK {
		t.Fatalf("passing run: exit %d\n%s%s", code, out, errOut)
	}
	if got := names(t, rep); !slices.Equal(got, []string{"index.html"}) {
		t.Errorf("after a passing run the report holds %v: want its index alone", got)
	}
	if got := names(t, parent); !slices.Equal(got, []string{"rep"}) {
		t.Errorf("beside the report: %v", got)
	}
}

// A directory that is not a report is not replaced: a typo in -report
// must not delete a user's files. It is refused before anything runs,
// naming what it holds, and left as it was.
func TestReportRefusesADirectoryItDidNotWrite(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string // name -> content; "/" suffix: a directory
		says  string
	}{
		{"a file of the user's", map[string]string{"index.html": "<title>sluicesim: x</title>", "notes.txt": "mine"}, "it holds notes.txt"},
		{"a directory inside", map[string]string{"index.html": "<title>sluicesim: x</title>", "sub/": ""}, "it holds sub"},
		{"another index", map[string]string{"index.html": "<title>my site</title>"}, "its index.html is not a report's"},
		{"pages without an index", map[string]string{"page.html": "<title>sluicesim: x</title>"}, "it has no index.html"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "rep")
			os.Mkdir(dir, 0o755)
			for name, content := range c.files {
				if d, ok := strings.CutSuffix(name, "/"); ok {
					os.Mkdir(filepath.Join(dir, d), 0o755)
					continue
				}
				os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
			}
			before := names(t, dir)
			code, out, errOut := cli(t, "-world", "pair", "-seeds", "2", "-report", dir)
			if code != exitUsage || out != "" || !strings.Contains(errOut, "-report "+dir+": cannot write a report there") ||
				!strings.Contains(errOut, "not a report explore wrote: "+c.says) {
				t.Errorf("exit %d, stdout %q, stderr %q: want 2 before any run, saying %q", code, out, errOut, c.says)
			}
			if got := names(t, dir); !slices.Equal(got, before) {
				t.Errorf("the directory now holds %v, not %v", got, before)
			}
		})
	}
	// An empty directory is a report's to take.
	dir := t.TempDir()
	if code, _, errOut := cli(t, "-world", "pair", "-seeds", "2", "-report", dir); code != exitOK {
		t.Errorf("an empty directory: exit %d: %s", code, errOut)
	}
}

// A refused run creates nothing: not the report directory (nor its
// parents), not the summary. The trace is read after the outputs are
// checked, so the check must not create what it checks.
func TestRefusedRunCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("not a trace\n"), 0o644)
	code, out, errOut := cli(t, "-replay", bad, "-report", filepath.Join(dir, "newrep", "sub"), "-json", filepath.Join(dir, "s.json"))
	if code != exitUsage {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitUsage, out, errOut)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"bad.jsonl"}) {
		t.Errorf("a refused run left %v", got)
	}
}

// An output inside the report directory would go with the next report
// (each replaces its directory): it is refused before the run.
func TestOutputInsideTheReportRefused(t *testing.T) {
	rep := t.TempDir()
	for _, f := range []string{"-trace", "-json"} {
		path := filepath.Join(rep, "out.jsonl")
		code, out, errOut := cli(t, "-world", "pair", "-seed", "3", "-report", rep, f, path)
		if code != exitUsage || out != "" || !strings.Contains(errOut, f+" "+path+": cannot write there: it is inside -report "+rep) {
			t.Errorf("%s inside the report: exit %d, stdout %q, stderr %q", f, code, out, errOut)
		}
		if got := names(t, rep); len(got) > 0 {
			t.Errorf("%s inside the report: wrote %v", f, got)
		}
	}
	if !within(filepath.Join(rep, "a", "b"), rep) || !within(rep, rep) || within(rep+"x", rep) || within(filepath.Join(rep, "..", "t"), rep) {
		t.Error("within is wrong")
	}
}

// writeFile replaces a file only with a complete one: a write that fails
// halfway leaves the earlier file as it was, and no temporary file.
func TestWriteFileIsAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	os.WriteFile(path, []byte("earlier"), 0o644)
	err := writeFile(path, func(w io.Writer) error {
		io.WriteString(w, "half of a new")
		return errors.New("disk full")
	})
	if err == nil {
		t.Fatal("a failed write reported no error")
	}
	if b, _ := os.ReadFile(path); string(b) != "earlier" {
		t.Errorf("after a failed write the file holds %q", b)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"s.json"}) {
		t.Errorf("a failed write left %v", got)
	}
	if err := writeFile(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("the file holds %q, want new", b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 as before", st.Mode().Perm())
	}

	// A symbolic link stays one: its target is replaced.
	target := filepath.Join(dir, "target.json")
	link := filepath.Join(dir, "link.json")
	os.WriteFile(target, []byte("old"), 0o644)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(link, func(w io.Writer) error { _, err := io.WriteString(w, "via link"); return err }); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file (%v)", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "via link" {
		t.Errorf("the link's target holds %q", b)
	}

	// A pipe (or a device: -json /dev/stdout) is written to, not replaced.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	got := make(chan string)
	go func() {
		b, _ := os.ReadFile(fifo)
		got <- string(b)
	}()
	if err := writeFile(fifo, func(w io.Writer) error { _, err := io.WriteString(w, "through the pipe"); return err }); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(fifo); st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatal("the pipe was replaced by a file") // its reader waits on
	}
	if s := <-got; s != "through the pipe" {
		t.Errorf("the pipe's reader got %q", s)
	}
}
