package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Goal: from the command line, exhaustive search on the two-node world
// takes the route, lag and gossip bounds, prints and records them, finds
// resend-reject-is-terminal, and writes a trace that -replay reproduces;
// those bounds are refused for a one-node world, where they would be
// ignored.
func TestExhaustiveTwoNodesFromTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	trace, js := filepath.Join(dir, "resend.jsonl"), filepath.Join(dir, "s.json")
	code, out, errOut := cli(t, "-world", "pairnodes", "-strategy", "exhaustive", "-mutant", "resend-reject-is-terminal",
		"-max-crashes", "0", "-max-preemptions", "0", "-max-lies", "1", "-max-routes", "2", "-max-gossip-losses", "1",
		"-trace", trace, "-json", js)
	if code != exitViolation {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitViolation, out, errOut)
	}
	for _, want := range []string{"lies <= 1, routes <= 2, lags <= 0, gossip losses <= 1, preemptions <= 0", "at-most-once:", "replay: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Exhaustive map[string]any `json:"exhaustive"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{"max_routes": 2, "max_lags": 0, "max_gossip_losses": 1} {
		if got, ok := s.Exhaustive[k].(float64); !ok || got != want {
			t.Errorf("JSON exhaustive.%s = %v, want %v", k, s.Exhaustive[k], want)
		}
	}
	if code, out, errOut := cli(t, "-replay", trace); code != exitViolation || !strings.Contains(out, "reproduces it") || !strings.Contains(out, "at-most-once:") {
		t.Errorf("replay: exit %d\n%s%s", code, out, errOut)
	}

	code, _, errOut = cli(t, "-world", "pair", "-strategy", "exhaustive", "-max-routes", "1")
	if code != exitUsage || !strings.Contains(errOut, "-max-routes") || !strings.Contains(errOut, "one node") {
		t.Errorf("-max-routes on pair: exit %d, %q; want a usage error naming the flag", code, errOut)
	}
}
