package scenarios

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
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
