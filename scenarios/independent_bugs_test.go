package scenarios

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Goal: the bugs written without the checker (testdata/independent-bugs)
// still apply to the code, so that `make independent-bugs` measures the
// checker against all of them. A refactor of sluice that moves the lines a
// patch touches makes it stop applying; the harness then only prints "does
// not apply" for it, and the measurement quietly shrinks (17 of 26 had
// stopped applying by the end of the speed work of issue 17). Such a patch
// must be ported to the new code, its bug unchanged. git apply --check needs
// no repository, only the git binary.
func TestIndependentBugsApply(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is needed to check that the independent bugs apply: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	patches, err := filepath.Glob(filepath.Join(root, "scenarios", "testdata", "independent-bugs", "*.patch"))
	if err != nil {
		t.Fatal(err)
	}
	if len(patches) < 20 {
		t.Fatalf("found %d independent-bug patches, want the catalog (at least 20)", len(patches))
	}
	readme, err := os.ReadFile(filepath.Join(root, "scenarios", "testdata", "independent-bugs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range patches {
		name := strings.TrimSuffix(filepath.Base(p), ".patch")
		cmd := exec.Command(git, "apply", "--check", p)
		cmd.Dir = root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Errorf("%s does not apply to the code (port it, its bug unchanged): %v\n%s", name, err, out.String())
		}
		// Every patch is described: its number leads a row of the table.
		num, _, _ := strings.Cut(name, "-")
		if !bytes.Contains(readme, []byte("\n| "+num+" |")) {
			t.Errorf("%s has no row in testdata/independent-bugs/README.md", name)
		}
	}
}

// Goal: every bug written without the checker has a row in the kill table
// that .ci/independent-kill.sh checks in CI (testdata/independent-bugs/
// caught.tsv), and every row is one the script can run: a patch added
// without a row, or a row naming a world that does not exist, would
// otherwise check nothing. Whether the row still catches its bug is the
// script's job (it builds each patch); this test only reads the table.
func TestIndependentBugsHaveAKillRow(t *testing.T) {
	dir := filepath.Join("testdata", "independent-bugs")
	patches, err := filepath.Glob(filepath.Join(dir, "*.patch"))
	if err != nil {
		t.Fatal(err)
	}
	table, err := os.ReadFile(filepath.Join(dir, "caught.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	problems := checkKillTable(string(table), patches)
	for _, p := range problems {
		t.Error(p)
	}
}

// checkKillTable returns what is wrong with a caught.tsv text against the
// patch files it must cover.
func checkKillTable(table string, patches []string) []string {
	var problems []string
	want := map[string]bool{}
	for _, p := range patches {
		want[strings.TrimSuffix(filepath.Base(p), ".patch")] = true
	}
	seen := map[string]bool{}
	for i, line := range strings.Split(table, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		where := "caught.tsv line " + strconv.Itoa(i+1)
		cols := strings.Split(line, "\t")
		if len(cols) != 3 {
			problems = append(problems, where+": want 3 tab-separated columns (patch, kind, arguments), got "+strconv.Itoa(len(cols)))
			continue
		}
		name, kind, args := cols[0], cols[1], strings.Fields(cols[2])
		if !want[name] {
			problems = append(problems, where+": "+name+" is no patch")
		}
		if seen[name] {
			problems = append(problems, where+": a second row for "+name)
		}
		seen[name] = true
		switch kind {
		case "world", "postgres", "hang":
			if len(args) != 2 || !slices.Contains(WorldNames(), args[0]) {
				problems = append(problems, where+": "+kind+" wants a world and a seed, got "+strconv.Quote(cols[2]))
				break
			}
			if n, err := strconv.Atoi(args[1]); err != nil || n < 1 {
				problems = append(problems, where+": "+kind+" "+args[0]+": the seed "+strconv.Quote(args[1])+" is not a positive number")
			}
		case "coverage":
			if len(args) != 3 || !slices.Contains(WorldNames(), args[0]) || !slices.Contains(CoverageNames(), args[2]) {
				problems = append(problems, where+": coverage wants a world, a seed count and a coverage condition, got "+strconv.Quote(cols[2]))
				break
			}
			if n, err := strconv.Atoi(args[1]); err != nil || n < 1 {
				problems = append(problems, where+": coverage "+args[0]+": the seed count "+strconv.Quote(args[1])+" is not a positive number")
			}
		case "test", "race":
			if len(args) != 2 || !sluicePackage(args[0]) {
				problems = append(problems, where+": "+kind+" wants a package of sluice (or of its command) and a -run pattern, got "+strconv.Quote(cols[2]))
			}
		case "checker":
			if len(args) != 2 || !strings.HasPrefix(args[0], "sluicesim/") || sluicePackage(args[0]) {
				problems = append(problems, where+": checker wants a package of the checker's (not sluice's) and a -run pattern, got "+strconv.Quote(cols[2]))
			}
		case "live":
			if len(args) != 1 || (args[0] != "livecheck" && args[0] != "livecheck-race") {
				problems = append(problems, where+": live wants livecheck or livecheck-race, got "+strconv.Quote(cols[2]))
			}
		case "livecheck", "harmless", "survivor":
			if len(args) == 0 {
				problems = append(problems, where+": "+kind+" wants a reason")
			}
		default:
			problems = append(problems, where+": unknown kind "+strconv.Quote(kind))
		}
	}
	for _, p := range patches {
		name := strings.TrimSuffix(filepath.Base(p), ".patch")
		if !seen[name] {
			problems = append(problems, name+" has no row in caught.tsv (measure it: .ci/independent-kill.sh -update PATCH)")
		}
	}
	return problems
}

// The table's checks themselves can fail: each broken table is refused.
func TestCheckKillTableRefuses(t *testing.T) {
	patches := []string{"testdata/independent-bugs/01-a.patch", "testdata/independent-bugs/02-b.patch"}
	good := "# comment\n01-a\tworld\twire 4\n02-b\ttest\tsluicesim/sluice/store ^TestX$\n"
	if p := checkKillTable(good, patches); len(p) != 0 {
		t.Fatalf("a good table refused: %v", p)
	}
	for _, bad := range []string{
		"01-a\tworld\twire 4\n",                                                        // 02-b has no row
		good + "03-c\tworld\twire 1\n",                                                 // no such patch
		good + "01-a\tworld\twire 5\n",                                                 // a second row
		"01-a\tworld\tnowhere 4\n02-b\ttest\tsluicesim/sluice x\n",                     // no such world
		"01-a\tworld\twire 0\n02-b\ttest\tsluicesim/sluice x\n",                        // seed 0
		"01-a\tworld wire 4\n02-b\ttest\tsluicesim/sluice x\n",                         // spaces for tabs
		"01-a\tseen\twire 4\n02-b\ttest\tsluicesim/sluice x\n",                         // unknown kind
		"01-a\tharmless\t\n02-b\ttest\tsluicesim/sluice x\n",                           // no reason
		"01-a\ttest\t./model x\n02-b\ttest\tsluicesim/sluice x\n",                      // not sluice's test
		"01-a\tchecker\tsluicesim/sluice/store x\n02-b\ttest\tsluicesim/sluice x\n",    // sluice's, not the checker's
		"01-a\tlive\tlivecheck-quiet\n02-b\ttest\tsluicesim/sluice x\n",                // not a deterministic live check
		"01-a\tcoverage\twire 100 node:nowhere\n02-b\ttest\tsluicesim/sluice x\n",      // no such condition
		"01-a\tcoverage\twire 100\n02-b\ttest\tsluicesim/sluice x\n",                   // no condition
		"01-a\tcoverage\twire 0 node:call-cancelled\n02-b\ttest\tsluicesim/sluice x\n", // seed count 0
	} {
		if p := checkKillTable(bad, patches); len(p) == 0 {
			t.Errorf("table accepted:\n%s", bad)
		}
	}
}

// sluicePackage says whether pkg is sluice's own: its packages, and the
// production command with the audit it runs (cmd/sluice, cmd/internal),
// whose tests are sluice's too. The checker's are the rest.
func sluicePackage(pkg string) bool {
	return pkg == "sluicesim/sluice" || strings.HasPrefix(pkg, "sluicesim/sluice/") ||
		pkg == "sluicesim/cmd/sluice" || strings.HasPrefix(pkg, "sluicesim/cmd/internal/")
}
