package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// runCLI runs the command line as main does. None of the cases here may
// start serving: a case that does is reported rather than left to hang.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(args, &out, &errb) }()
	select {
	case code = <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("sluice %q did not return: it is serving", args)
	}
	return code, out.String(), errb.String()
}

// Goal: sluice -h (and its spellings) describes every command of the table
// on stdout and exits 0; no command, an unknown one, a flag before the
// command or a stray argument is refused with exit 2 on stderr, naming
// what was wrong; serve -h is serve's help on stdout, exit 0.
func TestCommandLine(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"-help"}, {"--help"}, {"help"}} {
		code, out, errs := runCLI(t, args...)
		if code != 0 || errs != "" {
			t.Errorf("sluice %q: exit %d, stderr %q; want 0 and nothing", args, code, errs)
		}
		for _, c := range commands {
			if !strings.Contains(out, c.name+"  "+c.doc) {
				t.Errorf("sluice %q does not list %q with its doc:\n%s", args, c.name, out)
			}
		}
	}

	for _, c := range []struct {
		args []string
		says string // stderr names this
	}{
		{nil, "no command"},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"-workers", "3"}, `unknown flag "-workers"`},
		{[]string{"-h", "serve"}, `unexpected argument "serve"`},
		{[]string{"help", "bogus"}, `unknown command "bogus"`},
		{[]string{"help", "serve", "x"}, `unexpected argument "x"`},
		{[]string{"serve", "extra"}, `unexpected argument "extra"`},
		{[]string{"serve", "-addr", "127.0.0.1:0", "extra", "-workers", "2"}, `unexpected argument "extra"`},
		{[]string{"serve", "-bogus"}, "-bogus"},
		{[]string{"serve", "-workers", "many"}, "-workers"},
		{[]string{"serve", "-log-level", "loud"}, `"loud" for flag -log-level: want debug, info, warn or error`},
		{[]string{"serve", "-log-format", "xml"}, `-log-format "xml": want text or json`},
		{[]string{"serve", "-mock-drop-every", "-1"}, `-mock-drop-every -1: want 0 or more`},
		{[]string{"serve", "-mock-drop-every", "5", "-node-url", "http://127.0.0.1:1"}, `-mock-drop-every needs the mock node in this process`},
		{[]string{"serve", "-mock-short-every", "-2"}, `-mock-short-every -2: want 0 or more`},
		{[]string{"serve", "-mock-short-every", "5", "-node-url", "http://127.0.0.1:1"}, `-mock-short-every needs the mock node in this process`},
	} {
		code, out, errs := runCLI(t, c.args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.says) {
			t.Errorf("sluice %q: exit %d, stdout %q, stderr %q; want 2, nothing, and %q", c.args, code, out, errs, c.says)
		}
	}

	for _, args := range [][]string{{"serve", "-h"}, {"help", "serve"}, {"serve", "-workers", "2", "--help"}} {
		code, out, errs := runCLI(t, args...)
		if code != 0 || errs != "" || !strings.HasPrefix(out, "usage: sluice serve") ||
			!strings.Contains(out, "-log-format") {
			t.Errorf("sluice %q: exit %d, stderr %q, stdout starts %.40q; want 0 and serve's help with its flags",
				args, code, errs, out)
		}
	}
}

// Goal: the log flags are read and checked like the others.
func TestLogFlags(t *testing.T) {
	for _, c := range []struct {
		args   []string
		format string
		level  string
		ok     bool
	}{
		{nil, "text", "INFO", true},
		{[]string{"-log-format", "json", "-log-level", "debug"}, "json", "DEBUG", true},
		{[]string{"-log-level", "WARN"}, "text", "WARN", true},
		{[]string{"-log-level", "error"}, "text", "ERROR", true},
		{[]string{"-log-format", "JSON"}, "", "", false},
		{[]string{"-log-format", ""}, "", "", false},
		{[]string{"-log-level", ""}, "", "", false},
		{[]string{"-log-level", "verbose"}, "", "", false},
	} {
		var errb bytes.Buffer
		cfg, err := parseFlags(c.args, &bytes.Buffer{}, &errb)
		switch {
		case (err == nil) != c.ok:
			t.Errorf("parseFlags(%q): err %v, want ok=%v", c.args, err, c.ok)
		case c.ok && (cfg.logFormat != c.format || cfg.logLevel.String() != c.level):
			t.Errorf("parseFlags(%q): format %q level %s, want %s %s", c.args, cfg.logFormat, cfg.logLevel, c.format, c.level)
		case !c.ok && errb.Len() == 0:
			t.Errorf("parseFlags(%q): refused without a word on stderr", c.args)
		}
	}
}

// Goal: the live check's dropped transactions are what -mock-drop-every
// says: every send of each k-th distinct transaction is refused SERVER_BUSY,
// re-sends included, and nothing else is touched (other transactions,
// lookups, blocks).
func TestDropEvery(t *testing.T) {
	hook := liveFaults(3, 0)
	tx := func(i int) tron.Txid { return tron.Txid{byte(i)} }
	send := func(i int) mocknode.Fault { return hook(mocknode.Call{Kind: mocknode.Broadcast, Txid: tx(i)}) }
	var got []string
	for _, i := range []int{1, 2, 3, 1, 3, 4, 5, 6, 6, 2} {
		got = append(got, send(i).String())
	}
	want := []string{"none", "none", "busy", "none", "busy", "none", "none", "busy", "busy", "none"}
	if !slices.Equal(got, want) {
		t.Errorf("faults %v, want %v", got, want)
	}
	for _, k := range []mocknode.CallKind{mocknode.Lookup, mocknode.Head, mocknode.Solid} {
		if f := hook(mocknode.Call{Kind: k, Txid: tx(3)}); f != mocknode.None {
			t.Errorf("%s of a dropped transaction: fault %s, want none", k, f)
		}
	}
}

// Goal: -mock-short-every refuses the first shortSends sends of each k-th
// distinct transaction for bandwidth and takes the next, never touches a
// transaction -mock-drop-every dropped, and leaves the others alone.
func TestShortEvery(t *testing.T) {
	hook := liveFaults(4, 2)
	tx := func(i int) tron.Txid { return tron.Txid{byte(i)} }
	send := func(i int) string { return hook(mocknode.Call{Kind: mocknode.Broadcast, Txid: tx(i)}).String() }
	// Transactions 1..4 in order: 2 is short, 4 is dropped (not short
	// though 4 is a multiple of 2), 6 is short.
	var got []string
	for _, i := range []int{1, 2, 3, 4, 2, 2, 2, 2, 4, 5, 6} {
		got = append(got, send(i))
	}
	bw := mocknode.BandwidthExhausted.String()
	want := []string{"none", bw, "none", "busy", bw, bw, "none", "none", "busy", "none", bw}
	if !slices.Equal(got, want) {
		t.Errorf("faults %v, want %v", got, want)
	}
	if shortSends != 3 {
		t.Fatalf("shortSends %d: the want above assumes 3", shortSends)
	}
	if f := hook(mocknode.Call{Kind: mocknode.Lookup, Txid: tx(2)}); f != mocknode.None {
		t.Errorf("lookup of a shortened transaction: fault %s, want none", f)
	}
}
