package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
)

// Goal: serve, end to end on loopback: a customer funded at startup (-fund,
// once, however often the flag repeats the same deposit); a withdrawal is
// accepted once, replayed idempotently, refused when its id is reused with
// another payload, paid by the workers on the mock chain, its story told by
// the log; the operator API shows the customer's ledger after it and a
// scrape of /metrics shows the confirmation; and the process shuts down
// cleanly when its context ends (what SIGINT/SIGTERM do).
func TestServeMemory(t *testing.T) {
	exercise(t, config{storeKind: "memory"})
}

// Goal: the same story against PostgreSQL, in a schema of its own.
func TestServePostgres(t *testing.T) {
	base := storetest.DatabaseURL(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "sluice_serve_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	exercise(t, config{storeKind: "postgres", databaseURL: u.String()})
}

// startServing runs serve with cfg and returns where it listens, and a
// stop that ends it and waits for it (also run when the test ends).
func startServing(t *testing.T, cfg config, logs io.Writer) (listening, func()) {
	t.Helper()
	at, cancel, done := launch(t, cfg, logs)
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("serve did not shut down within 15s")
		}
	}
	t.Cleanup(stop)
	return at, stop
}

// launch starts serve with cfg and waits until it listens: its addresses,
// the cancel that stops it (what SIGINT and SIGTERM do), and the channel
// its return arrives on.
func launch(t *testing.T, cfg config, logs io.Writer) (listening, context.CancelFunc, <-chan error) {
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

// testToken is the operator token of the tests that serve.
const testToken = "serve-test-token-0123456789"

func exercise(t *testing.T, cfg config) {
	cfg.addr = "127.0.0.1:0"
	cfg.workers = 3
	cfg.lease = 5 * time.Second
	cfg.solidLag = 1
	cfg.idleSleep = 50 * time.Millisecond
	cfg.shutdownMax = 5 * time.Second
	// Every line, so that the check below that the operator's token is in
	// none of them reads them all.
	cfg.logLevel = slog.LevelDebug

	cfg.api = true
	cfg.nodeTimeout = 5 * time.Second
	cfg.operatorAddr = "127.0.0.1:0"
	cfg.operatorToken = testToken
	// The same deposit twice (as -fund cust-1=100 -fund cust-1=100.0 give
	// it): one credit.
	cfg.funds = []fund{{customer: "cust-1", amount: 100_000_000}, {customer: "cust-1", amount: 100_000_000}}
	logs := &syncWriter{w: &strings.Builder{}}
	at, stop := startServing(t, cfg, logs)
	addr, opAddr := at.api, at.operator
	base := "http://" + addr
	to := tron.AddressFromBytes20([20]byte{0xc1, 0x1e, 0x47}).String()
	const id = "11111111-1111-4111-8111-111111111111"
	body := func(amount string) string {
		return fmt.Sprintf(`{"operation_id":%q,"customer":"cust-1","to_address":%q,"amount":%q,"asset":"USDT-TRC20"}`, id, to, amount)
	}
	post := func(b string) (int, http.Header) {
		t.Helper()
		resp, err := http.Post(base+"/v1/withdrawals", "application/json", strings.NewReader(b))
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header
	}
	if code, _ := post(body("12.50")); code != http.StatusCreated {
		t.Errorf("first POST: %d, want 201", code)
	}
	if code, h := post(body("12.5")); code != http.StatusOK || h.Get("X-Idempotent-Replay") != "true" {
		t.Errorf("replay POST: %d replay=%q, want 200 and true", code, h.Get("X-Idempotent-Replay"))
	}
	if code, _ := post(body("13")); code != http.StatusConflict {
		t.Errorf("conflicting POST: %d, want 409", code)
	}
	if code, _ := post(`{"operation_id":"` + strings.Repeat("x", 64<<10) + `"}`); code < 400 || code >= 500 {
		t.Errorf("oversized POST: %d, want a 4xx", code)
	}

	// Blocks come every 3 s of real time; with a solid lag of 1 the
	// withdrawal is final within a few slots.
	deadline := time.Now().Add(60 * time.Second)
	state := ""
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/v1/withdrawals/" + id)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		var got struct {
			State string `json:"state"`
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("GET: decode: %v", err)
		}
		if state = got.State; state == "confirmed" || state == "failed" || state == "rejected" {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if state != "confirmed" {
		t.Errorf("withdrawal state after waiting: %q, want confirmed", state)
	}

	// The operator API: the ledger after the payment, the credit's log,
	// and a scrape that saw the confirmation. Without the token, nothing.
	opGet := func(path, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+opAddr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := opGet("/v1/accounts/cust-1", testToken); code != http.StatusOK ||
		!strings.Contains(body, `"balance":"87.5"`) || !strings.Contains(body, `"paid":"12.5"`) || !strings.Contains(body, `"held":"0"`) {
		t.Errorf("account after the payment: %d %s, want 87.5 free, 12.5 paid, nothing held", code, body)
	}
	if code, _ := opGet("/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	code, scrape := opGet("/metrics", testToken)
	for _, line := range []string{`sluice_withdrawals_finished{state="confirmed"} 1`, "sluice_confirmation_latency_seconds_count 1",
		`sluice_withdrawal_queue_depth{state="broadcast"} 0`, "sluice_review_size 0", "sluice_stuck_ratio 0"} {
		if code != http.StatusOK || !strings.Contains(scrape, "\n"+line+"\n") {
			t.Errorf("scrape (%d) lacks the line %q", code, line)
		}
	}
	// The workers' node calls are metered (the node-error alert reads
	// them): the one payment took at least a broadcast, a lookup and the
	// heads, and no operator action called the node.
	for _, call := range []string{"broadcast", "lookup", "head_block", "solid_block"} {
		m := regexp.MustCompile(`\nsluice_node_calls_total\{call="` + call + `"\} ([0-9.e+]+)\n`).FindStringSubmatch(scrape)
		if m == nil || m[1] == "0" {
			t.Errorf("scrape counts no %s call to the node, yet the workers paid through it", call)
		}
	}

	stop() // what SIGINT and SIGTERM do: it must end cleanly
	if n := strings.Count(logs.String(), " INFO fund: credited customer=cust-1 amount=100 ref=fund:cust-1:100 "); n != 1 {
		t.Errorf("the log has %d fund credits of cust-1, want 1", n)
	}
	if !strings.Contains(logs.String(), " INFO fund: already credited by an earlier start, nothing new customer=cust-1 ") {
		t.Errorf("the log does not say the repeated -fund credited nothing")
	}
	// The bearer token is a secret: no line, at any level, may carry it
	// (a startup line naming the operator API, or a request's headers).
	if strings.Contains(logs.String(), testToken) {
		t.Errorf("the log carries the operator API's bearer token")
	}
	if !strings.Contains(logs.String(), "THIS IS A MOCK") {
		t.Errorf("startup log does not say the node is a mock:\n%s", logs.String())
	}
	// The log tells the withdrawal's story: created once (the replay and
	// the conflict add nothing), then each transition to confirmed.
	if n := strings.Count(logs.String(), " INFO created operation_id="+id+" "); n != 1 {
		t.Errorf("the log has %d creations of %s, want 1", n, id)
	}
	for _, step := range []string{"requested to=validated", "validated to=signing", "signing to=signed",
		"signed to=broadcasting", "broadcasting to=broadcast", "broadcast to=confirmed"} {
		if !strings.Contains(logs.String(), " INFO transition operation_id="+id+" from="+step+" token=") {
			t.Errorf("the log has no transition of %s from=%s", id, step)
		}
	}
	if t.Failed() {
		t.Logf("serve log:\n%s", logs.String())
	}
}

// Goal: the service clock is the start's wall time plus the monotonic time
// elapsed since, as wallClock promises: its start keeps time.Now's
// monotonic reading (time.Time's String shows it as "m="). A start
// without one (UTC, Round or a copy through a time zone strip it: blind
// bug 238) makes time.Since follow the wall clock, so an NTP step back
// steps the service clock back, and the in-process mock node panics on a
// clock that runs backwards and the memory store's leases move with it.
func TestWallClockKeepsTheMonotonicReading(t *testing.T) {
	c := newWallClock()
	if !strings.Contains(c.start.String(), " m=") {
		t.Fatalf("the clock's start %s has no monotonic reading: its readings follow the wall clock's steps", c.start)
	}
	if a, b := c.Now(), c.Now(); b.Before(a) || a.Location() != time.UTC {
		t.Fatalf("readings %s then %s: want UTC, never going back", a, b)
	}
}

// Goal: a stop (SIGINT or SIGTERM end serve's context) lets a request
// already in flight finish within -shutdown-timeout, as the log line says
// ("in-flight ones get ..."): serve does not return, so the process does
// not exit, while a POST's body is still arriving, and that POST is
// answered. A grace measured from the ended context would be no grace: the
// client's connection would drop with no answer, the withdrawal maybe
// stored, maybe not.
func TestShutdownLetsInFlightRequestsFinish(t *testing.T) {
	cfg := config{addr: "127.0.0.1:0", api: true, workers: 0, storeKind: "memory", lease: 5 * time.Second, solidLag: 1,
		idleSleep: 50 * time.Millisecond, shutdownMax: 10 * time.Second, nodeTimeout: 5 * time.Second,
		funds: []fund{{customer: "cust-1", amount: 100_000_000}}}
	logs := &syncWriter{w: &strings.Builder{}}
	at, cancel, done := launch(t, cfg, logs)
	defer cancel()

	conn, err := net.Dial("tcp", at.api)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	to := tron.AddressFromBytes20([20]byte{0xc1, 0x1e, 0x47}).String()
	body := fmt.Sprintf(`{"operation_id":"22222222-2222-4222-8222-222222222222","customer":"cust-1","to_address":%q,"amount":"1.5","asset":"USDT-TRC20"}`, to)
	if _, err := fmt.Fprintf(conn, "POST /v1/withdrawals HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		at.api, len(body), body[:20]); err != nil {
		t.Fatal(err)
	}
	// The server reads the headers and the handler waits on the body's
	// rest: the request is in flight when the stop comes.
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		t.Fatalf("serve returned (%v) while a request was in flight, %s before its grace ran out", err, cfg.shutdownMax)
	case <-time.After(500 * time.Millisecond):
	}
	if _, err := io.WriteString(conn, body[20:]); err != nil {
		t.Fatalf("the rest of the body: %v", err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the in-flight POST got no answer: %v\nserve log:\n%s", err, logs.String())
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("the in-flight POST: %d, want 201", resp.StatusCode)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Error("serve did not return after its last request was answered")
	}
	if strings.Contains(logs.String(), "WARN shutdown") {
		t.Errorf("the shutdown warned:\n%s", logs.String())
	}
}
