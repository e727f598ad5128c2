package main

import (
	"context"
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
	run := func(cfg config, logs io.Writer) (listening, context.CancelFunc, chan error) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		ready := make(chan listening, 1)
		done := make(chan error, 1)
		go func() { done <- serve(ctx, cfg, logs, ready) }()
		select {
		case at := <-ready:
			return at, cancel, done
		case err := <-done:
			cancel()
			t.Fatalf("serve ended before listening: %v", err)
		case <-time.After(20 * time.Second):
			cancel()
			t.Fatal("serve did not start within 20s")
		}
		return listening{}, cancel, done
	}
	stop := func(cancel context.CancelFunc, done chan error) {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("serve did not shut down within 15s")
		}
	}
	base := config{storeKind: "memory", lease: time.Second, solidLag: 1, idleSleep: 50 * time.Millisecond,
		shutdownMax: time.Second, nodeTimeout: time.Second}
	nodeCfg := base
	nodeCfg.nodeAddr = "127.0.0.1:0"
	at, cancelNode, nodeDone := run(nodeCfg, io.Discard)
	defer stop(cancelNode, nodeDone)

	const secret = "node-test-password-3b7d"
	workerCfg := base
	workerCfg.api, workerCfg.workers, workerCfg.logLevel = false, 1, slog.LevelDebug
	workerCfg.nodeURL = "http://sluice:" + secret + "@" + at.node
	logs := &syncWriter{w: &strings.Builder{}}
	_, cancelWorker, workerDone := run(workerCfg, logs)
	stop(cancelWorker, workerDone)
	if !strings.Contains(logs.String(), "served by another sluice process at http://sluice:xxxxx@"+at.node) {
		t.Errorf("the startup log does not name the node with its password hidden:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the log carries the node URL's password:\n%s", logs.String())
	}
}
