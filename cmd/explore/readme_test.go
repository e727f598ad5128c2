package main

import (
	"flag"
	"os"
	"strings"
	"testing"

	"sluicesim/model"
	"sluicesim/scenarios"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the README's generated tables (invariants, hostile categories)")

// Goal: the README's invariant table is the model's table, not a copy that
// drifts: names, order and one-line docs.
func TestReadmeInvariants(t *testing.T) { readmeSection(t, "invariants", model.MarkdownTable()) }

// Goal: the README lists the hostile-client categories as the generator
// has them, each with the mutant only it catches.
func TestReadmeHostile(t *testing.T) { readmeSection(t, "hostile", scenarios.HostileMarkdownTable()) }

// Goal: the README's fault table is scenarios.Faults.
func TestReadmeFaults(t *testing.T) { readmeSection(t, "faults", scenarios.FaultTableMarkdown()) }

// readmeSection checks (or with -update-readme rewrites) the README text
// between "<!-- name:begin ... -->" and "<!-- name:end -->".
func readmeSection(t *testing.T, name, want string) {
	t.Helper()
	const path = "../../README.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	begin := strings.Index(s, "<!-- "+name+":begin")
	end := strings.Index(s, "<!-- "+name+":end -->")
	if begin < 0 || end < begin {
		t.Fatalf("%s has no %s:begin/end markers", path, name)
	}
	begin += strings.Index(s[begin:], "-->") + len("-->\n")
	if got := s[begin:end]; got != want {
		if *updateReadme {
			if err := os.WriteFile(path, []byte(s[:begin]+want+s[end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("README's %s table differs from the code (run with -update-readme):\nwant:\n%s\ngot:\n%s", name, want, got)
	}
}
