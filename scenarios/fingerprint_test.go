package scenarios

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateFingerprints = flag.Bool("update-fingerprints", false, "rewrite testdata/fingerprints.txt from the current code")

// fingerprintSeeds is how many seeds of each world the fingerprints pin.
const fingerprintSeeds = 4

// Goal: optimisation changes nothing a user can see. Every world (and every
// mutant on its world) is pinned, seed by seed, by the hash of its traced
// run's trace file and by the hash of its untraced run's tape, verdict,
// outcomes and stats, as exploration sees them. A change to the kernel, the
// store, the node or the model that is meant to be only faster must leave
// testdata/fingerprints.txt as it is; a change to a world or the model's
// reading rewrites it with -update-fingerprints and says so in its commit.
func TestFingerprints(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every world and mutant")
	}
	var buf bytes.Buffer
	line := func(cfg Config, seed uint64) {
		traced := Run(cfg, seed, Options{Tracing: true})
		plain := Run(cfg, seed, Options{keepTape: true})
		summary, err := json.Marshal(struct {
			Tape     any
			Verdict  any
			Outcomes any
			Stats    any
			Tally    any
			Steps    int
			Virtual  int64
		}{plain.tape, plain.Violations, plain.Outcomes, plain.Stats, plain.Tally, plain.Steps, int64(plain.Virtual)})
		if err != nil {
			t.Fatal(err)
		}
		name := cfg.Name
		if cfg.Mutant != "" {
			name += "/" + cfg.Mutant
		}
		fmt.Fprintf(&buf, "%s %d trace=%.16s run=%.16x violations=%d\n", name, seed,
			traced.Trace.Hash(), sha256.Sum256(summary), len(plain.Violations))
	}
	for _, name := range WorldNames() {
		cfg, _ := World(name)
		for seed := uint64(1); seed <= fingerprintSeeds; seed++ {
			line(cfg, seed)
		}
	}
	for _, m := range Mutants {
		cfg, _ := World(m.World)
		if m.World == "" {
			cfg = Chaos()
		}
		cfg.Mutant = m.Name
		for seed := uint64(1); seed <= 2; seed++ {
			line(cfg, seed)
		}
	}
	const file = "testdata/fingerprints.txt"
	if *updateFingerprints {
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (create it with -update-fingerprints)", err)
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(buf.String(), "\n")
	differ := 0
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			if differ++; differ <= 20 {
				t.Errorf("line %d:\n want %s\n  got %s", i+1, w, g)
			}
		}
	}
	if differ > 0 {
		t.Errorf("%d lines differ from %s; if the change is meant to alter the worlds, rerun with -update-fingerprints", differ, file)
	}
}
