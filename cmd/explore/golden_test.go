package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite cmd/explore/testdata/golden/*.txt from the current output")

// goldenCases are invocations whose whole console output (and JSON, when
// asked for) is kept in testdata/golden: a change of what explore prints is
// then a reviewed diff, not a surprise. Wall-clock timings are masked.
var goldenCases = []struct {
	name string
	args []string
}{
	{"pair-green", []string{"-world", "pair", "-seeds", "20", "-json", "$TMP/s.json"}},
	{"chaos-mutant-fails", []string{"-world", "chaos", "-mutant", "amount-scale", "-seeds", "2", "-trace", "$TMP/t.jsonl", "-json", "$TMP/s.json"}},
	{"single-seed", []string{"-world", "pair", "-seed", "3", "-json", "$TMP/s.json"}},
	{"exhaustive-pair", []string{"-world", "pair", "-strategy", "exhaustive", "-max-schedules", "40", "-json", "$TMP/s.json"}},
	{"list-mutants", []string{"-list-mutants"}},
	{"bad-usage", []string{"-seeds", "-5"}},
	{"unknown-world", []string{"-world", "nowhere"}},
}

// timingLine is a line that reports wall-clock time ("ran 20 seeds in
// 0.2s (...)", "explored in 0.1s (...)"); its numbers change from run to run.
var timingLine = regexp.MustCompile(`(?m)^(ran |explored in ).*$`)

func TestGoldenOutput(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			args := make([]string, len(c.args))
			for i, a := range c.args {
				args[i] = strings.ReplaceAll(a, "$TMP", tmp)
			}
			code, out, errOut := cli(t, args...)
			var b strings.Builder
			fmt.Fprintf(&b, "$ explore %s\nexit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(c.args, " "), code, out, errOut)
			if js, err := os.ReadFile(filepath.Join(tmp, "s.json")); err == nil {
				b.WriteString("--- json\n" + maskJSON(t, js))
			}
			got := strings.ReplaceAll(b.String(), tmp, "$TMP")
			got = timingLine.ReplaceAllString(got, "ran (timing masked)")
			path := filepath.Join("testdata", "golden", c.name+".txt")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/explore -run TestGoldenOutput -update)", err)
			}
			if got != string(want) {
				t.Errorf("explore %s: output differs from %s at %s\n(run go test ./cmd/explore -run TestGoldenOutput -update and review the diff)",
					strings.Join(c.args, " "), path, firstDiff(string(want), got))
			}
		})
	}
}

// maskJSON re-indents a summary with its wall-clock fields removed.
func maskJSON(t *testing.T, js []byte) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatalf("the JSON summary does not parse: %v\n%s", err, js)
	}
	delete(v, "timing")
	delete(v, "seconds")
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// firstDiff names the first line where want and got differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want: %s\n   got: %s", i+1, wl, gl)
		}
	}
	return "(no line differs)"
}
