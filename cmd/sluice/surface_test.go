package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
	"sluicesim/sluice/tron/nodehttp"
)

// Goal: every answer of both listeners is JSON, what the muxes and net/http
// answer on their own included (an unknown path, a method a pattern does
// not take, an unclean path's redirect, a request that outlived the
// handler timeout), keeping the status, Allow and Location they chose, and
// none cacheable.
func TestServiceAnswersJSON(t *testing.T) {
	api := surface(apiHandler(store.NewMemory(&storetest.Clock{}, time.Minute)), time.Minute)
	node := surface((&nodehttp.Server{Node: func(string) tron.Node { return nil }}).Handler(), time.Minute)
	slow := surface(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }), 20*time.Millisecond)
	for _, c := range []struct {
		name         string
		h            http.Handler
		method, path string
		status       int // 0: a redirect
		header       string
		says         string
	}{
		{"api", api, http.MethodGet, "/", http.StatusNotFound, "", "no such endpoint"},
		{"api", api, http.MethodPost, "/v2/withdrawals", http.StatusNotFound, "", "no such endpoint"},
		{"api", api, http.MethodGet, "/v1", http.StatusNotFound, "", "no such endpoint"},
		{"api", api, http.MethodPut, "/v1/withdrawals", http.StatusMethodNotAllowed, "Allow: POST", "use POST"},
		{"api", api, http.MethodPost, "/healthz", http.StatusMethodNotAllowed, "Allow: GET, HEAD", "use GET"},
		{"api", api, http.MethodPost, "//v1/withdrawals", 0, "Location: /v1/withdrawals", "/v1/withdrawals"},
		{"api", api, http.MethodGet, "/v1/x/../../healthz", 0, "Location: /healthz", "/healthz"},
		{"api", api, http.MethodGet, "/healthz", http.StatusOK, "", ""},
		{"node", node, http.MethodGet, "/nope", http.StatusNotFound, "", "no such endpoint"},
		{"node", node, http.MethodGet, nodehttp.PathHead, http.StatusMethodNotAllowed, "Allow: POST", "use POST"},
		{"node", node, http.MethodGet, nodehttp.PathTruth, http.StatusNotFound, "", "no such endpoint"}, // no truth served
		{"node", node, http.MethodGet, "/wallet//getnowblock", 0, "Location: " + nodehttp.PathHead, nodehttp.PathHead},
		{"timeout", slow, http.MethodPost, "/v1/withdrawals", http.StatusServiceUnavailable, "", "timed out"},
	} {
		t.Run(c.name+" "+c.method+" "+c.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			c.h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, strings.NewReader("{}")))
			if c.status == 0 && (rec.Code < 300 || rec.Code >= 400) || c.status != 0 && rec.Code != c.status {
				t.Errorf("status %d, want %d (0: a redirect); body %s", rec.Code, c.status, rec.Body.String())
			}
			if k, v, ok := strings.Cut(c.header, ": "); ok && rec.Header().Get(k) != v {
				t.Errorf("%s: %q, want %q", k, rec.Header().Get(k), v)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json; body %q", ct, rec.Body.String())
			}
			if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q, want no-store: a shared cache would keep it", cc)
			}
			var body map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q is not JSON: %v", rec.Body.String(), err)
			}
			if msg, _ := body["error"].(string); !strings.Contains(msg, c.says) || (c.says == "") != (msg == "") {
				t.Errorf("error %q, want one that says %q", msg, c.says)
			}
		})
	}
}

// runningForReal is the README's "Running sluice for real" section, which
// says at more length what serve -h says.
func runningForReal(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Running sluice for real\n")
	if !ok {
		t.Fatal(`README has no "## Running sluice for real" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// Goal: the bounds serve -h and the README state in words (an envelope's
// expiration and the margin before its death counts, the park bounds past
// which a withdrawal goes to review) are the ones serve runs with:
// sluice.DefaultConfig, which serve takes as it is. A default changed
// without the documents, or the documents without the default, fails here:
// an operator reads "an hour parked" and plans the review rota by it.
func TestHelpNamesTheDefaults(t *testing.T) {
	cfg := sluice.DefaultConfig()
	docs := map[string]string{"serve -h": serveHelp(), "README": runningForReal(t)}
	for _, c := range []struct {
		phrase    string
		docs      []string
		got, want any
	}{
		{"its expiration (60 s)", []string{"serve -h", "README"}, cfg.ExpirationWindow, 60 * time.Second},
		{"margin (30 s)", []string{"serve -h", "README"}, cfg.SafetyMargin, 30 * time.Second},
		{"(30 parks,", []string{"serve -h"}, cfg.ParkLimit, 30},
		{"or an hour parked)", []string{"serve -h"}, cfg.ParkFor, time.Hour},
	} {
		for _, doc := range c.docs {
			if !strings.Contains(strings.Join(strings.Fields(docs[doc]), " "), c.phrase) {
				t.Errorf("%s no longer says %q: keep it, or change this test with it", doc, c.phrase)
			}
		}
		if c.got != c.want {
			t.Errorf("the documents say %q, but serve runs with %v", c.phrase, c.got)
		}
	}
}

// Goal: the examples of serve -h and of the README's "Running sluice for
// real" run, as curl would send them, against a live serve (the intake API,
// the mock node and the operator API), each answered with the status its
// README comment names ("# 409 ...") or else a 2xx, in JSON (the metrics in
// Prometheus's text); the README carries every example of the help and
// both name every endpoint of the three APIs and the six metrics; and the
// help's "about a minute" to confirmation is what the mock's defaults give.
//
// The serve has no workers, so that every example meets the withdrawal the
// first one posts as requested, whatever the machine's speed: the README
// says so where it matters (a cancel needs no proof yet). The customers are
// funded as the README's command lines fund them (-fund).
func TestHelpExamplesRun(t *testing.T) {
	section := runningForReal(t)
	help := serveHelp()

	inHelp, inReadme := curlCommands(help), curlExamples(section)
	if len(inHelp) < 11 {
		t.Fatalf("serve -h has %d curl examples, want the intake's, the node's and the operator's", len(inHelp))
	}
	for _, c := range inHelp {
		found := false
		for _, e := range inReadme {
			found = found || e.cmd == c
		}
		if !found {
			t.Errorf("README's section lacks the help's example\n\t%s", c)
		}
	}
	for _, path := range []string{"POST /v1/withdrawals", "/v1/withdrawals/{id}", "/healthz", nodehttp.PathBroadcast,
		nodehttp.PathLookup, nodehttp.PathHead, nodehttp.PathSolid, nodehttp.PathTruth, "X-Node-Caller", "-node-addr", "operator API",
		"-operator-addr", operatorTokenEnv, "Bearer", "GET /v1/queue", "/v1/operations/{id}", "/retry", "/cancel", "/resolve",
		"POST /v1/credits", "/v1/accounts/{customer}", "/metrics", "-fund", "fund:CUSTOMER:AMOUNT",
		"sluice_withdrawal_queue_depth", "sluice_confirmation_latency_seconds", "sluice_stuck_ratio", "sluice_review_size",
		"sluice_ledger_chain_mismatches_total", "deposit lag", "sluice_node_errors_total", "sluice_rebuilds_total",
		"sluice_fenced_writes_total", "sluice_parked_operations"} {
		for doc, text := range map[string]string{"serve -h": help, "README": section} {
			if !strings.Contains(strings.ToLower(strings.Join(strings.Fields(text), " ")), strings.ToLower(path)) {
				t.Errorf("%s does not mention %s", doc, path)
			}
		}
	}
	if lag := time.Duration(mocknode.DefaultSolidLag) * mocknode.SlotInterval; lag < 40*time.Second || lag > 90*time.Second {
		t.Errorf("the mock's default solid lag is %s: not \"about a minute\" as serve -h and the README say", lag)
	}
	for doc, text := range map[string]string{"serve -h": help, "README": section} {
		if !strings.Contains(strings.Join(strings.Fields(text), " "), "about a minute") {
			t.Errorf("%s does not say that confirmation takes about a minute", doc)
		}
	}

	cfg := config{addr: "127.0.0.1:0", nodeAddr: "127.0.0.1:0", operatorAddr: "127.0.0.1:0", operatorToken: exampleToken,
		api: true, workers: 0, storeKind: "memory", lease: 5 * time.Second, solidLag: 1, idleSleep: 50 * time.Millisecond,
		shutdownMax: 5 * time.Second, nodeTimeout: 5 * time.Second}
	// Funded as the README's serve command lines fund them, and no one
	// else: an example may show what an unfunded customer gets.
	for _, m := range regexp.MustCompile(`-fund (\S+)`).FindAllStringSubmatch(section, -1) {
		if f, err := parseFlags([]string{"-fund", m[1]}, io.Discard, io.Discard); err == nil {
			cfg.funds = append(cfg.funds, f.funds...)
		}
	}
	if len(cfg.funds) == 0 {
		t.Fatal("the README's serve command lines fund no customer")
	}
	logs := &syncWriter{w: &strings.Builder{}}
	at, cancel, done := launch(t, cfg, logs)
	defer cancel()
	hosts := map[string]string{exampleAPI: at.api, exampleNode: at.node, exampleOp: at.operator}
	for _, e := range inReadme {
		req, err := curlRequest(e.cmd, hosts)
		if err != nil {
			t.Errorf("%s\n\t%v", e.cmd, err)
			continue
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("%s\n\t%v", e.cmd, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ct := resp.Header.Get("Content-Type")
		typed := ct == "application/json" && json.Valid(b)
		if req.URL.Path == "/metrics" {
			typed = strings.HasPrefix(ct, "text/plain") && strings.Contains(string(b), "sluice_withdrawal_queue_depth")
		}
		status := e.status == resp.StatusCode || e.status == 0 && resp.StatusCode/100 == 2
		if !status || !typed {
			t.Errorf("%s\n\tanswered %d %s %.300q, want %d (0: any 2xx) and JSON (Prometheus text for /metrics)", e.cmd, resp.StatusCode, ct, b, e.status)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	if t.Failed() {
		t.Logf("serve log:\n%s", logs.String())
	}
}

// example is a curl command of the docs and the status its comment says it
// answers (0: none said; any 2xx).
type example struct {
	cmd    string
	status int
}

// curlExamples returns the curl commands of a text, as curlCommands does,
// each with the status of the comment line right after it ("# 409 ...").
func curlExamples(text string) []example {
	var out []example
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(line, "curl ") {
			continue
		}
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(lines[i])
		}
		e := example{cmd: strings.Join(strings.Fields(line), " ")}
		if i+1 < len(lines) {
			if m := regexp.MustCompile(`^# (\d{3}) `).FindStringSubmatch(strings.TrimSpace(lines[i+1]) + " "); m != nil {
				e.status, _ = strconv.Atoi(m[1])
			}
		}
		out = append(out, e)
	}
	return out
}

// curlCommands returns the curl command lines of a text, continuation
// lines joined and spaces collapsed.
func curlCommands(text string) []string {
	var out []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(line, "curl ") {
			continue
		}
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(lines[i])
		}
		out = append(out, strings.Join(strings.Fields(line), " "))
	}
	return out
}

// curlRequest builds the request curl would send for cmd, with the hosts
// of the examples replaced. It knows the options the examples may use and
// refuses any other, so that an example cannot say what this test does not
// check. As curl does, -d without -X is a POST, and -d without a
// Content-Type sends application/x-www-form-urlencoded.
func curlRequest(cmd string, hosts map[string]string) (*http.Request, error) {
	words, err := shellWords(strings.TrimPrefix(cmd, "curl "))
	if err != nil {
		return nil, err
	}
	method, url, body := "", "", ""
	var data bool
	header := http.Header{}
	for i := 0; i < len(words); i++ {
		w := words[i]
		arg := func() (string, error) {
			if i+1 == len(words) {
				return "", fmt.Errorf("%s without a value", w)
			}
			i++
			return words[i], nil
		}
		var v string
		switch w {
		case "-s", "-i", "-S", "-sS":
			continue
		case "-X", "-H", "-d":
			if v, err = arg(); err != nil {
				return nil, err
			}
		default:
			if strings.HasPrefix(w, "-") || url != "" {
				return nil, fmt.Errorf("curl option or argument %q: the test does not know it", w)
			}
			url = w
			continue
		}
		switch w {
		case "-X":
			method = v
		case "-H":
			k, hv, ok := strings.Cut(v, ": ")
			if !ok {
				return nil, fmt.Errorf("header %q: want Name: value", v)
			}
			header.Set(k, hv)
		case "-d":
			body, data = v, true
		}
	}
	for from, to := range hosts {
		url = strings.Replace(url, "http://"+from+"/", "http://"+to+"/", 1)
	}
	if url == "" {
		return nil, errors.New("no URL")
	}
	if method == "" {
		method = http.MethodGet
		if data {
			method = http.MethodPost
		}
	}
	if data && header.Get("Content-Type") == "" {
		header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = header
	return req, nil
}

// shellWords splits s as a shell would, for the quoting the examples use:
// single quotes only.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, started := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			in, started = !in, true
		case r == '"' && !in, r == '$' && !in, r == '\\':
			return nil, fmt.Errorf("%q outside single quotes: the test reads single quotes only", r)
		case r == ' ' && !in:
			if started {
				words = append(words, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteRune(r)
			started = true
		}
	}
	if in {
		return nil, errors.New("unclosed single quote")
	}
	if started {
		words = append(words, cur.String())
	}
	return words, nil
}

// Goal: a request that outlives handlerTimeout gets its 503 ("retry it
// with the same operation_id") before the connection's write deadline,
// counted from the end of the request's headers, cuts it off: a client cut
// off with no answer cannot tell whether its POST was stored, and one that
// retries with a new id pays twice (blind bug 324 raised handlerTimeout to
// 30 s past writeTimeout's 15). The deadline must leave room for a body
// read slowly within readTimeout's share and the answer's own write.
func TestHandlerTimeoutAnswersBeforeTheWriteDeadline(t *testing.T) {
	const room = 2 * time.Second // for the timeout answer to be written
	if handlerTimeout+room > writeTimeout {
		t.Fatalf("handlerTimeout %s + %s to write the 503 is past writeTimeout %s: a slow request is cut off unanswered", handlerTimeout, room, writeTimeout)
	}
	if srv := newHTTPServer(http.NotFoundHandler(), &logSink{w: io.Discard}); srv.WriteTimeout != writeTimeout {
		t.Fatalf("the server's WriteTimeout is %s, not writeTimeout %s", srv.WriteTimeout, writeTimeout)
	}
}
