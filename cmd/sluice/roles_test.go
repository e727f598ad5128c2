package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Goal: the process roles are refused when they make no sense or would
// expose the mock's ground truth off the machine.
func TestRoleFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"-node-addr", "127.0.0.1:0"}, true},
		{[]string{"-node-addr", "[::1]:9000", "-api=false", "-workers", "0"}, true},
		{[]string{"-api=false", "-node-url", "http://127.0.0.1:9000"}, true},
		{[]string{"-node-addr", "0.0.0.0:9000"}, false},
		{[]string{"-node-addr", "example.com:9000"}, false},
		{[]string{"-node-addr", "127.0.0.1:1", "-node-url", "http://127.0.0.1:2"}, false},
		{[]string{"-api=false", "-workers", "0"}, false},
		{[]string{"-node-url", "127.0.0.1:9000"}, false},
		{[]string{"-node-url", "http://127.0.0.1:9000", "-node-timeout", "0s"}, false},
	} {
		_, err := parseFlags(c.args, io.Discard, io.Discard)
		if (err == nil) != c.ok {
			t.Errorf("parseFlags(%q): err %v, want ok=%v", c.args, err, c.ok)
		}
	}
}

// Goal: a worker process that reaches its node at a URL with a password
// (a node behind basic auth) names the node in its startup line with the
// password hidden, at every level; the log ends up in log stores.
func TestNodeURLPasswordNotLogged(t *testing.T) {
	base := config{storeKind: "memory", lease: time.Second, solidLag: 1, idleSleep: 50 * time.Millisecond,
		shutdownMax: time.Second, nodeTimeout: time.Second}
	nodeCfg := base
	nodeCfg.nodeAddr = "127.0.0.1:0"
	at, _ := startServing(t, nodeCfg, io.Discard)

	const secret = "node-test-password-3b7d"
	workerCfg := base
	workerCfg.api, workerCfg.workers, workerCfg.logLevel = false, 1, slog.LevelDebug
	workerCfg.nodeURL = "http://sluice:" + secret + "@" + at.node
	logs := &syncWriter{w: &strings.Builder{}}
	_, stop := startServing(t, workerCfg, logs)
	stop()
	if !strings.Contains(logs.String(), "served by another sluice process at http://sluice:xxxxx@"+at.node) {
		t.Errorf("the startup log does not name the node with its password hidden:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the log carries the node URL's password:\n%s", logs.String())
	}
}
