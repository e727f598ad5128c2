package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Goal: a race detector's report in any process's log fails the run, named
// by the process and the access that raced; a log without one adds nothing.
func TestDataRacesFailTheRun(t *testing.T) {
	dir := t.TempDir()
	logs := map[string]string{
		"api": "serving\n==================\nWARNING: DATA RACE\nRead at 0x00c000123 by goroutine 41:\n  sluicesim/sluice/tron/nodehttp.serialized.Lookup()\n      /src/serialized.go:30 +0x44\n\nPrevious write at ...\n==================\nmore\n" +
			"==================\nWARNING: DATA RACE\nWrite at 0x00c000999 by goroutine 7:\n  sluicesim/sluice/tron/mocknode.(*Network).advance()\n==================\n",
		"w1": "worker w1 ticks\nworker w1 ticks\n",
	}
	var ps []*proc
	for _, name := range []string{"api", "w1"} {
		p := &proc{name: name, logPath: filepath.Join(dir, name+".log")}
		if err := os.WriteFile(p.logPath, []byte(logs[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	races := dataRaces(ps)
	if len(races) != 1 || !strings.HasPrefix(races[0], "api (log ") ||
		!strings.Contains(races[0], "2 reports; the first: Read at 0x00c000123 by goroutine 41: sluicesim/sluice/tron/nodehttp.serialized.Lookup()") {
		t.Fatalf("dataRaces = %q, want one line naming api, its 2 reports and the first racing read", races)
	}
	rep := &report{races: races, tally: &tally{}}
	found := false
	for _, f := range rep.failures(defaults()) {
		found = found || strings.HasPrefix(f, "data race: api")
	}
	if !found {
		t.Errorf("failures %q do not name the race", rep.failures(defaults()))
	}
	if got := dataRaces(ps[1:]); len(got) != 0 {
		t.Errorf("a log without a report gave %q", got)
	}
}

// Goal: the operator actions the scrape counts are held to the
// depositor's: a credit refused for a malformed operator name is invalid
// input, and a metric that counts it as refused (independent bug 107) fails
// the run. Method: the scrape's text as sluice serves it.
func TestInvalidCreditsCountedInvalid(t *testing.T) {
	for _, c := range []struct {
		outcome string
		fails   bool
	}{{"invalid", false}, {"refused", true}} {
		text := "# TYPE sluice_operator_actions_total counter\n" +
			`sluice_operator_actions_total{action="credit",outcome="landed"} 5` + "\n" +
			`sluice_operator_actions_total{action="credit",outcome="` + c.outcome + `"} 1` + "\n"
		s, err := parseScrape(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		rep := &report{tally: &tally{}, metrics: s, deposits: &depositor{invalid: 1}}
		found := false
		for _, f := range rep.failures(defaults()) {
			found = found || strings.Contains(f, `sluice_operator_actions_total{action="credit",outcome="invalid"} is 0, but 1 credits`)
		}
		if found != c.fails {
			t.Errorf("the credit counted %s: failed %v, want %v (%q)", c.outcome, found, c.fails, rep.failures(defaults()))
		}
	}
}

// Goal: a secret of the run in any process's log fails the run, named by
// the process and the secret; the secret is found in full or by a quarter
// of it at either end, and a log without it adds nothing.
func TestSecretsInLogsFailTheRun(t *testing.T) {
	const token = "5f1c9e2a0b7d43e8a6c1d2e3f4a5b6c7"
	dir := t.TempDir()
	logs := map[string]string{
		"node":    "level=INFO msg=\"operator API\" auth=\"Bearer " + token + "\"\n",
		"worker1": "level=INFO msg=started token=..." + token[len(token)-8:] + "\n",
		"worker2": "level=INFO msg=started token=4 worker=w2\n",
	}
	var ps []*proc
	for _, name := range []string{"node", "worker1", "worker2"} {
		p := &proc{name: name, logPath: filepath.Join(dir, name+".log")}
		if err := os.WriteFile(p.logPath, []byte(logs[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	leaks := secretsInLogs(ps, map[string]string{"the operator token": token})
	if len(leaks) != 2 || !strings.HasPrefix(leaks[0], "node (log ") || !strings.HasPrefix(leaks[1], "worker1 (log ") ||
		!strings.HasSuffix(leaks[0], "shows the operator token, or a quarter of it") {
		t.Fatalf("secretsInLogs = %q, want the node's and worker1's logs named", leaks)
	}
	rep := &report{leaks: leaks, tally: &tally{}}
	found := 0
	for _, f := range rep.failures(defaults()) {
		if strings.HasPrefix(f, "secret in a log: ") {
			found++
		}
	}
	if found != 2 {
		t.Errorf("failures %q do not name both leaks", rep.failures(defaults()))
	}
	if got := secretsInLogs(ps[2:], map[string]string{"the operator token": token}); len(got) != 0 {
		t.Errorf("a log without the token: %q", got)
	}
}

// Goal: a worker process that logged failed ticks faster than one a
// second (over its starts) fails the run, named; one that backed off, or
// logged none, adds nothing.
func TestTickStormsFailTheRun(t *testing.T) {
	dir := t.TempDir()
	line := "sluice: 2026/12/07 21:00:00.000000 ERROR worker lc-w1: tick failed worker=lc-w1 err=\"store down\"\n"
	logs := map[string]string{
		"worker1": strings.Repeat(line, 60), // 60 in 10 s over 2 starts: a storm
		"worker2": strings.Repeat(line, 12), // 12 in 10 s over 2 starts: one a second
		"worker3": "level=INFO msg=started\n",
	}
	var ps []*proc
	for _, name := range []string{"worker1", "worker2", "worker3"} {
		p := &proc{name: name, logPath: filepath.Join(dir, name+".log"), starts: 2}
		if err := os.WriteFile(p.logPath, []byte(logs[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	storms := tickStorms(ps, 10*time.Second)
	if len(storms) != 1 || !strings.HasPrefix(storms[0], "worker1 (log ") || !strings.Contains(storms[0], "logged 60 failed ticks in 10s over 2 starts") {
		t.Fatalf("tickStorms = %q, want worker1's log named, 60 failed ticks", storms)
	}
	rep := &report{storms: storms, tally: &tally{}}
	found := false
	for _, f := range rep.failures(defaults()) {
		found = found || strings.HasPrefix(f, "no backoff: worker1")
	}
	if !found {
		t.Errorf("failures %q do not name the storm", rep.failures(defaults()))
	}
}
