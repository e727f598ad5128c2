package main

import (
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Goal: serve stops gracefully on SIGTERM, the signal systemd, docker stop
// and Kubernetes send: it finishes what is in flight, logs "stopped" and
// exits 0. Method: runServe (its own signal handling, not a cancelled
// context as the other tests use) in this process, and SIGTERM sent to this
// process once it serves. The test listens for SIGTERM too, so that a serve
// that does not catch it (blind bug 322 caught SIGINT only) leaves the test
// binary alive to report it: serve then never stops.
func TestServeStopsGracefullyOnSIGTERM(t *testing.T) {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)
	logs := &syncWriter{w: &strings.Builder{}}
	done := make(chan int, 1)
	go func() {
		done <- runServe([]string{"-addr", "127.0.0.1:0", "-workers", "2", "-idle-sleep", "20ms", "-shutdown-timeout", "5s"}, io.Discard, logs)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), "running 2 workers") {
		select {
		case code := <-done:
			t.Fatalf("serve ended with %d before serving:\n%s", code, logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start within 20s:\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited %d after SIGTERM, want 0:\n%s", code, logs)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not stop within 10s of SIGTERM:\n%s", logs)
	}
	if out := logs.String(); !strings.Contains(out, "shutting down") || !strings.Contains(out, "stopped") {
		t.Errorf("serve's log after SIGTERM has no graceful shutdown:\n%s", out)
	}
}
