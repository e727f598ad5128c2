package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/slogtest"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
)

// Goal: the text handler keeps slog's rules for handlers (the cases of
// testing/slogtest: attributes, groups, WithAttrs and WithGroup, empty
// attributes and groups, LogValuers, a zero time), so that what a caller
// logs is what the line says.
func TestLineHandlerKeepsSlogsRules(t *testing.T) {
	var buf bytes.Buffer
	slogtest.Run(t, func(*testing.T) slog.Handler {
		buf.Reset()
		return &lineHandler{w: &buf, level: slog.LevelInfo}
	}, func(t *testing.T) map[string]any {
		m, err := parseLine(strings.TrimSuffix(buf.String(), "\n"))
		if err != nil {
			t.Fatalf("line %q: %v", buf.String(), err)
		}
		return m
	})
}

// parseLine reads a lineHandler line back: time (if any), level, a message
// of one word (slogtest's), then key=value pairs, dotted keys as groups.
func parseLine(line string) (map[string]any, error) {
	rest, ok := strings.CutPrefix(line, "sluice: ")
	if !ok {
		return nil, errors.New("no sluice: prefix")
	}
	m := map[string]any{}
	word := func() string {
		w, r, _ := strings.Cut(rest, " ")
		rest = r
		return w
	}
	if regexp.MustCompile(`^\d{4}/\d\d/\d\d `).MatchString(rest) {
		m[slog.TimeKey] = word() + " " + word()
	}
	m[slog.LevelKey] = word()
	m[slog.MessageKey] = word()
	for rest != "" {
		key, value, err := pair(&rest)
		if err != nil {
			return nil, err
		}
		g := m
		parts := strings.Split(key, ".")
		for _, p := range parts[:len(parts)-1] {
			sub, ok := g[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				g[p] = sub
			}
			g = sub
		}
		g[parts[len(parts)-1]] = value
	}
	return m, nil
}

// pair reads one key=value off *s, either side possibly quoted.
func pair(s *string) (string, string, error) {
	token := func(stop byte) (string, error) {
		if strings.HasPrefix(*s, `"`) {
			q, err := strconv.QuotedPrefix(*s)
			if err != nil {
				return "", err
			}
			*s = (*s)[len(q):]
			return strconv.Unquote(q)
		}
		i := strings.IndexByte(*s, stop)
		if i < 0 {
			i = len(*s)
		}
		t := (*s)[:i]
		*s = (*s)[i:]
		return t, nil
	}
	key, err := token('=')
	if err != nil {
		return "", "", err
	}
	if !strings.HasPrefix(*s, "=") {
		return "", "", errors.New("no = after " + key)
	}
	*s = (*s)[1:]
	value, err := token(' ')
	if err != nil {
		return "", "", err
	}
	*s = strings.TrimPrefix(*s, " ")
	return key, value, nil
}

// Goal: a text line reads back as what was logged, whatever the values
// hold (spaces, '=', quotes, newlines, nothing), and a message with a
// newline cannot forge a second line.
func TestLineHandlerQuotes(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(&lineHandler{w: &buf, level: slog.LevelInfo})
	values := []string{"", "plain", "two words", "k=v", `say "x"`, "line\nbreak", "tab\there", "é"}
	args := make([]any, 0, 2*len(values))
	for i, v := range values {
		args = append(args, "k"+strconv.Itoa(i), v)
	}
	args = append(args, "a=b", "odd key", "c d", "odd key")
	log.Info("one\nmessage", args...)
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Fatalf("%d newlines in %q, want one line", n, buf.String())
	}
	rest := buf.String()
	i := strings.Index(rest, `INFO "one\nmessage" `)
	if i < 0 {
		t.Fatalf("line %q: the message is not quoted", rest)
	}
	rest = strings.TrimSuffix(rest[i+len(`INFO "one\nmessage" `):], "\n")
	for i, want := range values {
		k, v, err := pair(&rest)
		if err != nil || k != "k"+strconv.Itoa(i) || v != want {
			t.Errorf("attribute %d read back as %q=%q (%v), want k%d=%q", i, k, v, err, i, want)
		}
	}
	for _, want := range []string{"a=b", "c d"} {
		if k, v, err := pair(&rest); err != nil || k != want || v != "odd key" {
			t.Errorf("attribute read back as %q=%q (%v), want %q=\"odd key\"", k, v, err, want)
		}
	}
}

// The live check (cmd/livecheck) reads the text logs of the processes it
// runs by these patterns; they are copied from cmd/livecheck (startedLine
// in restart.go, workerErrorLine in restart.go, killPointLine in procs.go).
var (
	liveStartedLine     = regexp.MustCompile(`(?m) running \d+ workers$`)
	liveWorkerErrorLine = regexp.MustCompile(`(?m) worker \S+-w\d+: `)
)

const liveKillPointLine = "kill point: SIGKILL self after"

// Goal: the lines the live check waits for and counts are still there in
// the default text format: serve's startup line, a failed tick's line, and
// the kill point's line, which stays the last line the process writes (no
// other goroutine can write after it).
func TestLinesTheLiveCheckReads(t *testing.T) {
	if killPointLine != liveKillPointLine {
		t.Errorf("killPointLine = %q, cmd/livecheck looks for %q", killPointLine, liveKillPointLine)
	}

	t.Run("started", func(t *testing.T) {
		logs := &syncWriter{w: &strings.Builder{}}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		ready := make(chan listening, 1)
		cfg := config{storeKind: "memory", lease: time.Second, solidLag: 1, idleSleep: time.Second,
			shutdownMax: time.Second, nodeTimeout: time.Second, nodeAddr: "127.0.0.1:0", logLevel: slog.LevelInfo}
		go func() { done <- serve(ctx, cfg, logs, ready) }()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("serve: %v", err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("serve: %v", err)
		}
		if !liveStartedLine.MatchString(logs.String()) {
			t.Errorf("no line matches %s:\n%s", liveStartedLine, logs.String())
		}
	})

	t.Run("tick failed", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The first line written ends the loop.
		out := &cancelWriter{cancel: cancel}
		w := &sluice.Worker{ID: "77-99-w3", Pipeline: &sluice.Pipeline{
			Store: failingStore{err: errors.New("connection refused")}, Config: sluice.DefaultConfig()}}
		runWorker(ctx, w, time.Millisecond, newLogSink(out, logText, slog.LevelInfo).logger())
		if !liveWorkerErrorLine.Match(out.buf.Bytes()) || !strings.Contains(out.buf.String(), "connection refused") {
			t.Errorf("line %q does not match %s or lacks the error", out.buf.String(), liveWorkerErrorLine)
		}
	})

	t.Run("kill point", func(t *testing.T) {
		var buf bytes.Buffer
		// Even at a level that logs nothing else.
		sink := newLogSink(&buf, logText, slog.LevelError+4)
		sink.logger().Error("not logged at this level")
		sink.lastLine(killPointLine+" signed->broadcasting", "operation_id", "x")
		if sink.mu.TryLock() {
			t.Error("the output is free again after the last line: another goroutine could write after it")
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], liveKillPointLine) {
			t.Errorf("log %q, want the kill point's line alone", buf.String())
		}
	})
}

// cancelWriter records what is written and cancels a context at the first
// write.
type cancelWriter struct {
	buf    bytes.Buffer
	cancel context.CancelFunc
}

func (c *cancelWriter) Write(p []byte) (int, error) {
	c.cancel()
	return c.buf.Write(p)
}

// failingStore fails every call.
type failingStore struct {
	sluice.Store
	err error
}

func (f failingStore) Claim(context.Context, sluice.WorkerID, int) ([]sluice.Operation, error) {
	return nil, f.err
}

func (f failingStore) CAS(context.Context, sluice.Change) (sluice.Operation, error) {
	return sluice.Operation{}, f.err
}

func (f failingStore) Get(context.Context, sluice.OperationID) (sluice.Operation, error) {
	return sluice.Operation{}, f.err
}

func (f failingStore) Insert(context.Context, sluice.NewOperation) (sluice.Operation, bool, error) {
	return sluice.Operation{}, false, f.err
}

// Goal: in the JSON format every line is one JSON object, and the store
// wrappers log what the brief of the logs promises, with the operation id:
// a creation; a landed transition (from, to, token, worker, txid, note); a
// fenced write (warn); a wait (debug); a store failure the API hides
// behind its 503 (warn, with the error); a write the store refused as a bug
// (error) and one that failed otherwise (warn), each with the error.
func TestStoreLogs(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	logger := newLogSink(&buf, logJSON, slog.LevelDebug).logger()
	mem := store.NewMemory(&storetest.Clock{}, time.Minute)
	if _, _, err := mem.Credit(ctx, sluice.Credit{Ref: "dep", Customer: "cust-1", Amount: 100_000_000}); err != nil {
		t.Fatal(err)
	}
	svc := &intake.Service{Store: intakeLog{Store: mem, log: logger}}
	const id = "11111111-1111-4111-8111-111111111111"
	to := tron.AddressFromBytes20([20]byte{0xc1, 0x1e, 0x47}).String()
	if _, err := svc.Submit(ctx, intake.Submission{OperationID: id, Customer: "cust-1", ToAddress: to, Amount: "12.50", Asset: sluice.Asset}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Submit(ctx, intake.Submission{OperationID: id, Customer: "cust-1", ToAddress: to, Amount: "12.5", Asset: sluice.Asset}); err != nil {
		t.Fatal(err) // a replay: nothing new to log
	}

	wl := workerLog{Store: mem, worker: "w-1", log: logger}
	ops, err := wl.Claim(ctx, "w-1", 1)
	if err != nil || len(ops) != 1 {
		t.Fatalf("claim: %v, %d ops", err, len(ops))
	}
	tok := ops[0].Token
	if _, err := wl.CAS(ctx, sluice.Change{ID: id, Token: tok, Worker: "w-1", From: sluice.Requested, To: sluice.Validated, Note: "validated"}); err != nil {
		t.Fatal(err)
	}
	if _, err := wl.CAS(ctx, sluice.Change{ID: id, Token: tok + 1, Worker: "w-1", From: sluice.Validated, To: sluice.Signing, Note: "stale"}); !errors.Is(err, sluice.ErrFenced) {
		t.Fatalf("CAS under a stale token: %v, want fenced", err)
	}
	if err := wl.Release(ctx, id, tok, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	broken := &intake.Service{Store: intakeLog{Store: failingStore{err: errors.New("dial tcp: refused")}, log: logger}}
	if _, err := broken.Submit(ctx, intake.Submission{OperationID: id, Customer: "cust-1", ToAddress: to, Amount: "1", Asset: sluice.Asset}); err == nil {
		t.Fatal("submit against a failing store succeeded")
	}
	if _, _, err := broken.Lookup(ctx, id); err == nil {
		t.Fatal("lookup against a failing store succeeded")
	}
	// An unknown id is the client's business, not a failure to log.
	if _, _, err := svc.Lookup(ctx, "22222222-2222-4222-8222-222222222222"); !errors.Is(err, sluice.ErrNotFound) {
		t.Fatalf("lookup of an unknown id: %v, want not found", err)
	}

	// A write the store refused as a bug (a txid another operation owns,
	// an illegal move) is an error, not a fence: blind bug 243 logged a
	// txid collision at warn as a routine race. A write that failed
	// otherwise may have landed.
	next := sluice.Change{ID: id, Token: tok, Worker: "w-1", From: sluice.Validated, To: sluice.Signing, Note: "built"}
	for _, err := range []error{fmt.Errorf("store: %w", sluice.ErrTxidTaken), fmt.Errorf("store: %w", sluice.ErrIllegalTransition), errors.New("conn reset")} {
		if _, got := (workerLog{Store: failingStore{err: err}, worker: "w-1", log: logger}).CAS(ctx, next); got != err {
			t.Fatalf("CAS through the log: err %v, want the store's %v", got, err)
		}
	}

	var got []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", line, err)
		}
		got = append(got, m)
	}
	want := []map[string]any{
		{"level": "INFO", "msg": "created", "operation_id": id, "customer": "cust-1", "to_address": to, "amount": money.Amount(12_500_000).String(), "asset": sluice.Asset},
		{"level": "DEBUG", "msg": "claimed", "operation_id": id, "state": "requested", "token": float64(tok), "worker": "w-1"},
		{"level": "INFO", "msg": "transition", "operation_id": id, "from": "requested", "to": "validated", "token": float64(tok), "worker": "w-1", "note": "validated"},
		{"level": "WARN", "operation_id": id, "from": "validated", "to": "signing", "token": float64(tok + 1), "worker": "w-1"},
		{"level": "DEBUG", "msg": "wait", "operation_id": id, "token": float64(tok), "worker": "w-1", "after": float64(3 * time.Second)},
		{"level": "WARN", "msg": "intake: store failed", "call": "insert", "operation_id": id, "err": "dial tcp: refused"},
		{"level": "WARN", "msg": "intake: store failed", "call": "get", "operation_id": id, "err": "dial tcp: refused"},
		{"level": "ERROR", "msg": "write refused: a bug", "operation_id": id, "from": "validated", "to": "signing", "err": "store: " + sluice.ErrTxidTaken.Error()},
		{"level": "ERROR", "msg": "write refused: a bug", "operation_id": id, "err": "store: " + sluice.ErrIllegalTransition.Error()},
		{"level": "WARN", "msg": "write failed: it may or may not have landed", "operation_id": id, "err": "conn reset"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i, w := range want {
		for k, v := range w {
			if got[i][k] != v {
				t.Errorf("line %d: %s = %#v, want %#v\n%s", i, k, got[i][k], v, buf.String())
			}
		}
	}
	if msg, _ := got[3]["msg"].(string); !strings.HasPrefix(msg, "fenced") {
		t.Errorf("line 3: msg %q, want the fenced write", msg)
	}
}

// Goal: what a worker step decided beyond its transition, and every
// operator action, is logged with the operation id at the level the help
// promises: a decision (info; a wait at debug), a park (warn, with its
// reason), a review (warn, with its cause), an operator action that landed
// (info, who, why, from, to, a cancel's evidence), refused (info, why) or
// failed (warn).
func TestStepAndActionLogs(t *testing.T) {
	var buf bytes.Buffer
	logger := newLogSink(&buf, logJSON, slog.LevelDebug).logger()
	steps, acts := stepLog{log: logger}, actionLog{log: logger}
	const id = sluice.OperationID("11111111-1111-4111-8111-111111111111")
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	row := func(s sluice.State) sluice.Operation { return sluice.Operation{ID: id, State: s} }
	parked := row(sluice.Broadcasting)
	parked.ParkReason, parked.Parks, parked.NotBefore = "first send refused by the node: BANDWITH_ERROR", 1, at
	review := row(sluice.Review)
	review.Reason = "receipt SUCCESS in solid block #9, but no USDT Transfer log"
	ev := &sluice.Evidence{Txid: tron.Txid{7}, Lookup: tron.Unknown, SolidNumber: 9, LookupSolid: 9}

	steps.Observe(sluice.Observation{Worker: "w1", Before: row(sluice.Broadcast), After: row(sluice.Signing),
		Decision: &sluice.Decision{Action: sluice.Rebuild, Reason: "txid proven dead", Waited: time.Minute, Rebuilds: 0}})
	steps.Observe(sluice.Observation{Worker: "w1", Before: row(sluice.Broadcasting), After: row(sluice.Broadcasting),
		Decision: &sluice.Decision{Action: sluice.Wait, Reason: "no proof of death yet"}})
	steps.Observe(sluice.Observation{Worker: "w1", Before: row(sluice.Signed), After: parked, Park: parked.ParkReason})
	steps.Observe(sluice.Observation{Worker: "w1", Before: row(sluice.Broadcast), After: review})
	steps.Observe(sluice.Observation{Worker: "w1", Before: row(sluice.Broadcast), After: row(sluice.Broadcast),
		Err: sluice.ErrFenced}) // workerLog's to tell
	acts.ObserveAction(operator.Action{Kind: operator.Cancel, Operator: "alice", Why: "ticket 4411", ID: id,
		Before: row(sluice.Review), After: row(sluice.Failed), Evidence: ev})
	acts.ObserveAction(operator.Action{Kind: operator.ResolvePaid, Operator: "bob", Why: "paid", ID: id,
		Before: row(sluice.Broadcast), Err: &operator.Refusal{Kind: operator.ResolvePaid, ID: id, Reason: "only a review"}})
	acts.ObserveAction(operator.Action{Kind: operator.Credit, Operator: "carol", Why: "wire 881",
		Credit: sluice.Credit{Ref: "wire-881", Customer: "cust-1", Amount: 250_000_000}, Credited: true,
		Account: sluice.Account{Customer: "cust-1", Balance: 250_000_000}})
	acts.ObserveAction(operator.Action{Kind: operator.Retry, Operator: "dave", Why: "topped up", ID: id,
		Err: errors.New("connection reset")})

	var got []map[string]any
	for line := range strings.Lines(buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", line, err)
		}
		got = append(got, m)
	}
	want := []map[string]any{
		{"level": "INFO", "msg": "decision", "operation_id": string(id), "action": "rebuild", "state": "broadcast", "worker": "w1"},
		{"level": "DEBUG", "msg": "decision", "operation_id": string(id), "action": "wait"},
		{"level": "WARN", "msg": "parked", "operation_id": string(id), "reason": parked.ParkReason, "parks": float64(1), "state": "broadcasting"},
		{"level": "WARN", "operation_id": string(id), "cause": "logs", "from": "broadcast", "reason": review.Reason},
		{"level": "INFO", "msg": "operator action", "operation_id": string(id), "action": "cancel", "operator": "alice",
			"why": "ticket 4411", "from": "review", "to": "failed", "evidence": ev.String()},
		{"level": "INFO", "msg": "operator action refused", "operation_id": string(id), "action": "resolve", "operator": "bob"},
		{"level": "INFO", "msg": "operator action", "action": "credit", "operator": "carol", "customer": "cust-1",
			"ref": "wire-881", "amount": "250", "credited": true, "balance": "250"},
		{"level": "WARN", "operation_id": string(id), "action": "retry", "operator": "dave", "err": "connection reset"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i, w := range want {
		for k, v := range w {
			if got[i][k] != v {
				t.Errorf("line %d: %s = %#v, want %#v", i, k, got[i][k], v)
			}
		}
	}
	if msg, _ := got[3]["msg"].(string); !strings.HasPrefix(msg, "review") {
		t.Errorf("line 3: msg %q, want the review", msg)
	}
	if msg, _ := got[5]["err"].(string); !strings.Contains(msg, "only a review") {
		t.Errorf("line 5: err %q, want the refusal's reason", msg)
	}
}

// Goal: a worker whose tick failed pauses before the next (errorPause),
// so that a database that is down or coming back is not hammered and the
// log not flooded (blind bug 323 shadowed the pause and spun). Method: a
// store that fails every claim, the worker loop run for 300 ms: one
// failed tick logged, not more.
func TestWorkerBacksOffAfterAFailedTick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var out syncWriter
	out.w = &strings.Builder{}
	w := &sluice.Worker{ID: "77-99-w3", Pipeline: &sluice.Pipeline{
		Store: failingStore{err: errors.New("connection refused")}, Config: sluice.DefaultConfig()}}
	runWorker(ctx, w, time.Millisecond, newLogSink(&out, logText, slog.LevelInfo).logger())
	if n := len(liveWorkerErrorLine.FindAllIndex([]byte(out.String()), -1)); n != 1 {
		t.Errorf("%d failed ticks logged in 300 ms, want 1 (a second's pause after each):\n%.500s", n, out.String())
	}
}
