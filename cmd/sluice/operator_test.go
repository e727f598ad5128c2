package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/metrics"
	"sluicesim/sluice/money"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
)

// Goal: -operator-addr refuses to start without a valid token in the
// environment, saying where the token goes; a valid one is read from there
// and never from a flag.
func TestOperatorFlags(t *testing.T) {
	for _, c := range []struct {
		name, token string
		args        []string
		says        string // "" : accepted
	}{
		{"off", "", nil, ""},
		{"no token", "", []string{"-operator-addr", "127.0.0.1:0"}, "-operator-addr 127.0.0.1:0 needs the operator API's bearer token in $SLUICE_OPERATOR_TOKEN"},
		{"short token", "123456789012345", []string{"-operator-addr", "127.0.0.1:0"}, "$SLUICE_OPERATOR_TOKEN: operator token is 15 bytes, want at least 16"},
		{"token with a space", "0123456789 abcdef", []string{"-operator-addr", "127.0.0.1:0"}, "space"},
		{"token with its file's newline", "5f1c9e2a0b7d43e8a6c1\n", []string{"-operator-addr", "127.0.0.1:0"}, "byte 20 is a space, control or non-ASCII byte"},
		{"valid", "0123456789abcdef", []string{"-operator-addr", "127.0.0.1:0"}, ""},
		{"token unused without the listener", "short", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(operatorTokenEnv, c.token)
			var errb bytes.Buffer
			cfg, err := parseFlags(c.args, io.Discard, &errb)
			switch {
			case c.says == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.says != "" && (err == nil || !strings.Contains(errb.String(), c.says)):
				t.Errorf("err %v, stderr %q; want a refusal that says %q", err, errb.String(), c.says)
			case c.says == "" && cfg.operatorToken != c.token:
				t.Errorf("token %q, want %q from the environment", cfg.operatorToken, c.token)
			case c.says != "" && c.token != "" && strings.Contains(errb.String(), c.token[:8]):
				// The refusal is logged: it says what is wrong with the
				// token, never the token, which may be the real one but
				// for a stray byte.
				t.Errorf("the refusal shows the token: %q", errb.String())
			}
		})
	}
}

// Goal: -fund reads CUSTOMER=AMOUNT with the API's own amount grammar,
// repeats, and names its credits fund:CUSTOMER:AMOUNT with the canonical
// amount, so that two spellings of one deposit are one credit; a malformed
// one is refused naming what is wrong.
func TestFundFlag(t *testing.T) {
	cfg, err := parseFlags([]string{"-fund", "cust-1=100", "-fund", "cust-1=100.0", "-fund", "live-2=12.50"}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		customer sluice.CustomerID
		amount   money.Amount
		ref      string
	}{
		{"cust-1", 100_000_000, "fund:cust-1:100"},
		{"cust-1", 100_000_000, "fund:cust-1:100"},
		{"live-2", 12_500_000, "fund:live-2:12.5"},
	}
	if len(cfg.funds) != len(want) {
		t.Fatalf("%d funds, want %d", len(cfg.funds), len(want))
	}
	for i, w := range want {
		if f := cfg.funds[i]; f.customer != w.customer || f.amount != w.amount || f.ref() != w.ref {
			t.Errorf("fund %d: %s %d ref %q, want %s %d ref %q", i, f.customer, f.amount, f.ref(), w.customer, w.amount, w.ref)
		}
	}
	for _, c := range []struct{ arg, says string }{
		{"cust-1", "want CUSTOMER=AMOUNT"},
		{"=5", `customer ""`},
		{"a b=5", `customer "a b"`},
		{"cust-1=1.0000001", `amount "1.0000001"`},
		{"cust-1=-5", `amount "-5"`},
		{"cust-1=", `amount ""`},
	} {
		var errb bytes.Buffer
		if _, err := parseFlags([]string{"-fund", c.arg}, io.Discard, &errb); err == nil || !strings.Contains(errb.String(), c.says) {
			t.Errorf("-fund %q: err %v, stderr %q; want a refusal that says %q", c.arg, err, errb.String(), c.says)
		}
	}
}

// Goal: the operator listener as serve wires it (bounded, not retyped)
// answers JSON everywhere but /metrics, whose Prometheus text survives the
// timeout handler's header copy, and refuses a request without the token
// before it routes it.
func TestOperatorListenerAnswers(t *testing.T) {
	mem := store.NewMemory(&storetest.Clock{}, time.Minute)
	meter := metrics.New(mem)
	svc := &operator.Service{Store: mem, Node: failingNode{}, Clock: &storetest.Clock{}, Config: sluice.DefaultConfig()}
	h, err := operator.NewHandler(svc, testToken, meter)
	if err != nil {
		t.Fatal(err)
	}
	srv := bounded(h, time.Minute, operatorTimeoutBody)
	for _, c := range []struct {
		path, token string
		status      int
		ctype       string
	}{
		{"/nope", "", http.StatusUnauthorized, "application/json"},
		{"/metrics", "", http.StatusUnauthorized, "application/json"},
		{"/nope", testToken, http.StatusNotFound, "application/json"},
		{"/v1//queue", testToken, http.StatusTemporaryRedirect, "application/json"},
		{"/v1/queue", testToken, http.StatusOK, "application/json"},
		{"/metrics", testToken, http.StatusOK, "text/plain"},
	} {
		r := httptest.NewRequest(http.MethodGet, c.path, nil)
		if c.token != "" {
			r.Header.Set("Authorization", "Bearer "+c.token)
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, r)
		if rec.Code != c.status || !strings.HasPrefix(rec.Header().Get("Content-Type"), c.ctype) {
			t.Errorf("GET %s (token %v): %d %s, want %d %s", c.path, c.token != "", rec.Code, rec.Header().Get("Content-Type"), c.status, c.ctype)
		}
		if c.ctype == "application/json" && !json.Valid(rec.Body.Bytes()) {
			t.Errorf("GET %s: body %q is not JSON", c.path, rec.Body.String())
		}
	}
}

// failingNode is a node that never answers.
type failingNode struct{ tron.Node }
