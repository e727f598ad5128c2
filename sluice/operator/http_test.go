package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/tron"
)

const token = "0123456789abcdef-test-token"

func (w *world) handler() http.Handler {
	w.t.Helper()
	metrics := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; version=0.0.4")
		rw.Write([]byte("sluice_test 1\n"))
	})
	h, err := operator.NewHandler(w.svc, token, metrics)
	if err != nil {
		w.t.Fatal(err)
	}
	return h
}

// do sends one request with the right token unless auth is given ("-" for
// none) and returns the status and the body, which must be JSON unless
// the path is /metrics.
func do(t *testing.T, h http.Handler, method, path, body, auth string) (int, map[string]any, http.Header) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	switch auth {
	case "":
		r.Header.Set("Authorization", "Bearer "+token)
	case "-":
	default:
		r.Header.Set("Authorization", auth)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if path == "/metrics" && rec.Code == http.StatusOK {
		return rec.Code, map[string]any{"text": rec.Body.String()}, rec.Header()
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json; body %q", method, path, ct, rec.Body.String())
	}
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("%s %s: body %q is not a JSON object: %v", method, path, rec.Body.String(), err)
	}
	return rec.Code, m, rec.Header()
}

// Goal: every request needs the bearer token, on every path (unknown ones
// and /metrics too): 401 without it or malformed, 403 wrong, and the token
// is refused at startup when it is too short to be a secret.
func TestAuth(t *testing.T) {
	w := newWorld(t, nil)
	h := w.handler()
	for _, c := range []struct {
		name, auth string
		status     int
	}{
		{"no header", "-", http.StatusUnauthorized},
		{"empty", "Bearer ", http.StatusUnauthorized},
		{"basic", "Basic " + token, http.StatusUnauthorized},
		{"no scheme", token, http.StatusUnauthorized},
		{"two tokens", "Bearer " + token + " " + token, http.StatusUnauthorized},
		{"wrong", "Bearer " + strings.ToUpper(token), http.StatusForbidden},
		{"prefix", "Bearer " + token[:len(token)-1], http.StatusForbidden},
		{"longer", "Bearer " + token + "x", http.StatusForbidden},
		{"right", "Bearer " + token, http.StatusOK},
		{"scheme in lower case", "bearer " + token, http.StatusOK},
	} {
		for _, path := range []string{"/v1/queue", "/metrics", "/nope"} {
			want := c.status
			if path == "/nope" && want == http.StatusOK {
				want = http.StatusNotFound
			}
			code, body, hdr := do(t, h, http.MethodGet, path, "", c.auth)
			if code != want {
				t.Errorf("%s on %s: %d %v, want %d", c.name, path, code, body, want)
			}
			if code == http.StatusUnauthorized && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s on %s: 401 without WWW-Authenticate: Bearer", c.name, path)
			}
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/v1/queue", nil)
	r.Header.Add("Authorization", "Bearer "+token)
	r.Header.Add("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("two Authorization headers: %d, want 401", rec.Code)
	}
	// A refused token is still the secret, or nearly (a token read from a
	// file with its newline, say): the refusal goes to a log, so it says
	// what is wrong with the token and never what the token is.
	for _, bad := range []string{"", "short", strings.Repeat("x", operator.TokenMin-1), "has a space in it, long enough", "tab\tin-it-long-enough",
		"5f1c9e2a0b7d43e8a6c1\n", strings.Repeat("9e2a", operator.TokenMax/4+1), "caf\u00e9-5f1c9e2a0b7d43e8"} {
		_, err := operator.NewHandler(w.svc, bad, nil)
		if err == nil {
			t.Errorf("NewHandler with token %q: no error", bad)
			continue
		}
		if secret := strings.TrimSpace(bad); len(secret) >= 6 && strings.Contains(err.Error(), secret[:6]) {
			t.Errorf("NewHandler with a refused token: the error shows the token: %v", err)
		}
	}
}

// Goal: the API end to end: the queue lists a parked operation with its
// actions; a cancel without proof is a 409 that says why; malformed input
// is a 422 naming the field and changes nothing; a credit is 201, its
// replay 200, a conflicting reuse 409; every answer is JSON, unknown paths
// and wrong methods included.
func TestHandler(t *testing.T) {
	w := newWorld(t, nil)
	h := w.handler()
	code, body, _ := do(t, h, http.MethodPost, "/v1/credits", `{"operator":"alice","why":"deposit","ref":"dep-1","customer":"cust-1","amount":"100.50"}`, "")
	if code != http.StatusCreated || body["credited"] != true {
		t.Fatalf("credit: %d %v, want 201 credited", code, body)
	}
	if code, body, _ = do(t, h, http.MethodPost, "/v1/credits", `{"operator":"bob","why":"again","ref":"dep-1","customer":"cust-1","amount":"100.5"}`, ""); code != http.StatusOK || body["credited"] != false {
		t.Errorf("credit replay: %d %v, want 200 not credited", code, body)
	}
	if code, body, _ = do(t, h, http.MethodPost, "/v1/credits", `{"operator":"bob","why":"x","ref":"dep-1","customer":"cust-1","amount":"7"}`, ""); code != http.StatusConflict || body["field"] != "ref" {
		t.Errorf("credit reusing a ref: %d %v, want 409 on ref", code, body)
	}
	code, body, _ = do(t, h, http.MethodGet, "/v1/accounts/cust-1", "", "")
	if code != http.StatusOK || body["balance"] != "100.5" || body["deposited"] != "100.5" {
		t.Errorf("account: %d %v, want 200 with balance 100.5", code, body)
	}
	// Customer ids are case-sensitive: Cust-1 is another customer, read
	// by its own spelling (blind bug 275 lower-cased the path and showed
	// cust-1's numbers), and CUST-1, never credited, has no account.
	if code, body, _ = do(t, h, http.MethodPost, "/v1/credits", `{"operator":"alice","why":"deposit","ref":"dep-2","customer":"Cust-1","amount":"3"}`, ""); code != http.StatusCreated {
		t.Fatalf("credit to Cust-1: %d %v, want 201", code, body)
	}
	if code, body, _ = do(t, h, http.MethodGet, "/v1/accounts/Cust-1", "", ""); code != http.StatusOK || body["customer"] != "Cust-1" || body["balance"] != "3" {
		t.Errorf("account Cust-1: %d %v, want 200, its own balance 3", code, body)
	}
	if code, body, _ = do(t, h, http.MethodGet, "/v1/accounts/CUST-1", "", ""); code != http.StatusNotFound {
		t.Errorf("account CUST-1, never credited: %d %v, want 404", code, body)
	}

	id := w.parkedInBroadcasting("cust-1")
	code, body, _ = do(t, h, http.MethodGet, "/v1/queue", "", "")
	items, _ := body["items"].([]any)
	if code != http.StatusOK || len(items) != 1 {
		t.Fatalf("queue: %d %v, want one item", code, body)
	}
	item := items[0].(map[string]any)
	if item["operation_id"] != string(id) || item["parked"] != true || item["customer"] != "cust-1" || item["park_reason"] == "" {
		t.Errorf("queue item %v, want %s parked for cust-1 with its reason", item, id)
	}

	path := "/v1/operations/" + string(id)
	events := len(w.events(id))
	for _, c := range []struct {
		name, method, path, body string
		status                   int
		field, says              string
	}{
		{"cancel without proof", http.MethodPost, path + "/cancel", `{"operator":"alice","why":"customer asked"}`, http.StatusConflict, "", "cancel refused: txid"},
		{"no operator", http.MethodPost, path + "/cancel", `{"why":"customer asked"}`, http.StatusUnprocessableEntity, "operator", "missing"},
		{"unknown field", http.MethodPost, path + "/cancel", `{"operator":"alice","why":"x","force":"yes"}`, http.StatusUnprocessableEntity, "force", "unknown field"},
		{"duplicate field", http.MethodPost, path + "/cancel", `{"operator":"alice","operator":"eve","why":"x"}`, http.StatusUnprocessableEntity, "operator", "duplicate"},
		{"number", http.MethodPost, path + "/cancel", `{"operator":"alice","why":1}`, http.StatusUnprocessableEntity, "why", "JSON string"},
		{"trailing", http.MethodPost, path + "/retry", `{"operator":"alice","why":"x"} {}`, http.StatusUnprocessableEntity, "body", "trailing"},
		{"not json", http.MethodPost, path + "/retry", `operator=alice`, http.StatusUnprocessableEntity, "body", "malformed"},
		{"resolve without txid", http.MethodPost, path + "/resolve", `{"operator":"alice","why":"x"}`, http.StatusUnprocessableEntity, "txid", "missing"},
		{"resolve bad txid", http.MethodPost, path + "/resolve", `{"operator":"alice","why":"x","txid":"abc"}`, http.StatusUnprocessableEntity, "txid", "64 hex"},
		{"resolve a parked one", http.MethodPost, path + "/resolve", `{"operator":"alice","why":"x","txid":"` + w.get(id).Envelope.Txid.String() + `"}`, http.StatusConflict, "", "only a review"},
		{"bad id", http.MethodPost, "/v1/operations/nope/retry", `{"operator":"alice","why":"x"}`, http.StatusUnprocessableEntity, "operation_id", "UUID"},
		{"unknown id", http.MethodPost, "/v1/operations/00000000-0000-4000-8000-999999999999/retry", `{"operator":"alice","why":"x"}`, http.StatusNotFound, "", "no such operation"},
		{"unknown action", http.MethodPost, path + "/pay", `{"operator":"alice","why":"x"}`, http.StatusNotFound, "", "no such action"},
		{"GET an action", http.MethodGet, path + "/retry", "", http.StatusMethodNotAllowed, "", "use POST"},
		{"DELETE the queue", http.MethodDelete, "/v1/queue", "", http.StatusMethodNotAllowed, "", "use GET"},
		{"queue limit", http.MethodGet, "/v1/queue?limit=0", "", http.StatusUnprocessableEntity, "limit", "whole number"},
		{"queue param", http.MethodGet, "/v1/queue?state=review", "", http.StatusUnprocessableEntity, "state", "unknown query parameter"},
		{"bad customer", http.MethodGet, "/v1/accounts/a%20b", "", http.StatusUnprocessableEntity, "customer", "not a letter"},
		{"no account", http.MethodGet, "/v1/accounts/nobody", "", http.StatusNotFound, "", "no such account"},
		{"credit amount", http.MethodPost, "/v1/credits", `{"operator":"a","why":"b","ref":"r","customer":"c","amount":"1.0000001"}`, http.StatusUnprocessableEntity, "amount", "amount"},
		{"credit number", http.MethodPost, "/v1/credits", `{"operator":"a","why":"b","ref":"r","customer":"c","amount":5}`, http.StatusUnprocessableEntity, "amount", "JSON string"},
		{"credit ref with a NUL", http.MethodPost, "/v1/credits", `{"operator":"a","why":"b","ref":"tx\u0000:0","customer":"c","amount":"5"}`, http.StatusUnprocessableEntity, "ref", "control character"},
		{"credit ref too long", http.MethodPost, "/v1/credits", `{"operator":"a","why":"b","ref":"` + strings.Repeat("r", 129) + `","customer":"c","amount":"5"}`, http.StatusUnprocessableEntity, "ref", "longer than 128 bytes"},
		{"unknown path", http.MethodGet, "/v2/queue", "", http.StatusNotFound, "", "no such endpoint"},
		{"unclean path", http.MethodGet, "/v1//queue", "", http.StatusTemporaryRedirect, "", "/v1/queue"},
		{"POST metrics", http.MethodPost, "/metrics", "", http.StatusMethodNotAllowed, "", "use GET"},
		{"cancel as a form", http.MethodPost, path + "/cancel", "", http.StatusUnsupportedMediaType, "", "not supported"},
		{"credit as a form", http.MethodPost, "/v1/credits", "", http.StatusUnsupportedMediaType, "", "not supported"},
		{"credit bad operator", http.MethodPost, "/v1/credits", `{"operator":"on call","why":"b","ref":"r","customer":"c","amount":"5"}`, http.StatusUnprocessableEntity, "operator", "not a letter"},
		{"credit no customer", http.MethodPost, "/v1/credits", `{"operator":"a","why":"b","ref":"r","customer":"","amount":"5"}`, http.StatusUnprocessableEntity, "customer", "customer"},
	} {
		before := len(w.acts)
		var code int
		var body map[string]any
		if strings.HasSuffix(c.name, "as a form") {
			code, body = doForm(t, h, c.path)
		} else {
			code, body, _ = do(t, h, c.method, c.path, c.body, "")
		}
		msg, _ := body["error"].(string)
		field, _ := body["field"].(string)
		if code != c.status || field != c.field || !strings.Contains(msg, c.says) {
			t.Errorf("%s: %d %v, want %d on field %q saying %q", c.name, code, body, c.status, c.field, c.says)
		}
		checkHeard(t, c.name, c.method, c.path, code, w.acts[before:])
	}
	if n := len(w.events(id)); n != events || !w.get(id).Parked() {
		t.Errorf("refused requests changed the operation: %d events (was %d), parked=%v", n, events, w.get(id).Parked())
	}

	code, body, _ = do(t, h, http.MethodPost, path+"/retry", `{"operator":"alice","why":"bandwidth topped up"}`, "")
	if code != http.StatusOK || body["parked"] != false || body["state"] != "broadcasting" {
		t.Errorf("retry: %d %v, want 200, broadcasting, not parked", code, body)
	}
	w.idle(time.Second)
	if code, body, _ = do(t, h, http.MethodGet, "/metrics", "", ""); code != http.StatusOK || body["text"] != "sluice_test 1\n" {
		t.Errorf("metrics: %d %v, want the metrics handler's answer", code, body)
	}
	if e := w.events(id); e[len(e)-1].Worker != sluice.WorkerID(sluice.OperatorPrefix+"alice") {
		t.Errorf("retry event by %q, want operator:alice", e[len(e)-1].Worker)
	}
}

// doForm posts a form body (not JSON) to path with the token.
func doForm(t *testing.T, h http.Handler, path string) (int, map[string]any) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader("operator=alice&why=x"))
	r.Header.Set("Authorization", "Bearer "+token)
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("POST %s as a form: body %q is not a JSON object: %v", path, rec.Body.String(), err)
	}
	return rec.Code, m
}

// checkHeard holds what the service's observer (logs, metrics) heard of
// one request to its answer, by the rule a dashboard reads: a POST to an
// action (retry, cancel, resolve, credit) is heard once, whatever layer
// answered it: invalid for a 415, 422 or 404, refused for a 409; nothing
// else is an action, and is not heard.
func checkHeard(t *testing.T, name, method, path string, code int, heard []operator.Action) {
	t.Helper()
	kind := ""
	switch rest, isOp := strings.CutPrefix(path, "/v1/operations/"); {
	case method != http.MethodPost:
	case path == "/v1/credits":
		kind = "credit"
	case isOp && strings.Count(rest, "/") == 1:
		if k := rest[strings.IndexByte(rest, '/')+1:]; k == "retry" || k == "cancel" || k == "resolve" {
			kind = k
		}
	}
	var want error
	switch code {
	case http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity:
		want = operator.ErrInvalid
	case http.StatusNotFound:
		want = sluice.ErrNotFound
	case http.StatusConflict:
		want = operator.ErrRefused
	}
	switch {
	case kind == "" || want == nil:
		if len(heard) != 0 {
			t.Errorf("%s: answered %d, not an action's refusal, yet the observer heard %d actions: %+v", name, code, len(heard), heard)
		}
	case len(heard) != 1:
		t.Errorf("%s: a %s answered %d was heard %d times by the observer, want once (logs and metrics count it)", name, kind, code, len(heard))
	case heard[0].Kind.String() != kind:
		t.Errorf("%s: the observer heard a %s, want a %s", name, heard[0].Kind, kind)
	case code == http.StatusConflict && heard[0].Err != nil:
		// A 409 is a refusal of one kind or another (the service's, a
		// payload mismatch, the store's); metrics' own test tells them
		// apart.
	case !errors.Is(heard[0].Err, want):
		t.Errorf("%s: answered %d, the observer heard the error %v, want one that is %v", name, code, heard[0].Err, want)
	}
}

// Goal: a credit goes to the customer id exactly as written: customer ids
// are case-sensitive (intake never folds them), so "Acme-7" and "acme-7"
// are two accounts, and a credit for one must not reach the other.
// (Independent bug 43 lower-cased the id on the way in.)
func TestCreditKeepsTheCustomersCase(t *testing.T) {
	w := newWorld(t, nil)
	h := w.handler()
	if code, body, _ := do(t, h, http.MethodPost, "/v1/credits", `{"operator":"alice","why":"deposit","ref":"dep-7","customer":"Acme-7","amount":"500"}`, ""); code != http.StatusCreated {
		t.Fatalf("credit: %d %v, want 201", code, body)
	}
	if got := w.account("Acme-7"); got.Balance != 500*1_000_000 {
		t.Errorf("Acme-7's account after its credit: %+v, want a balance of 500 USDT", got)
	}
	if got, err := w.store.Account(w.ctx, "acme-7"); err == nil {
		t.Errorf("acme-7 (another customer) was credited: %+v", got)
	} else if !errors.Is(err, sluice.ErrNotFound) {
		t.Fatal(err)
	}
}

// resolveFails is a store whose Resolve answers err without writing.
type resolveFails struct {
	sluice.Store
	err error
}

func (s resolveFails) Resolve(context.Context, sluice.Resolution) (sluice.Operation, error) {
	return sluice.Operation{}, s.err
}

// Goal: an action whose question to the node went unanswered is a 503 that
// says so (code "node_unavailable": nothing changed, ask again), never the
// store's "may or may not have landed", and writes nothing.
func TestNodeOutageIsNotAStoreOutage(t *testing.T) {
	for _, path := range []string{"cancel", "resolve"} {
		t.Run(path, func(t *testing.T) {
			var w *world
			var id sluice.OperationID
			if path == "cancel" {
				w = newWorld(t, nil)
				w.fund("cust-1", "100")
				id = w.parkedInBroadcasting("cust-1")
			} else {
				w = newWorld(t, func(c *sluice.Config) { c.ParkLimit = 1 })
				w.fund("cust-1", "100")
				id = w.reviewAfterParking("cust-1")
			}
			row, err := w.store.Get(w.ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			w.svc.Node = deadNode{}
			events := len(w.events(id))
			body := `{"operator":"alice","why":"x","txid":"` + row.Envelope.Txid.String() + `"}`
			if path == "cancel" {
				body = `{"operator":"alice","why":"x"}`
			}
			code, ans, hdr := do(t, w.handler(), http.MethodPost, "/v1/operations/"+string(id)+"/"+path, body, "")
			msg, _ := ans["error"].(string)
			if got, _ := ans["code"].(string); code != http.StatusServiceUnavailable || got != operator.CodeNodeUnavailable || !strings.Contains(msg, "nothing changed") {
				t.Errorf("%d %v, want 503 code %q saying nothing changed", code, ans, operator.CodeNodeUnavailable)
			}
			if hdr.Get("Retry-After") == "" {
				t.Error("a 503 without Retry-After")
			}
			if n := len(w.events(id)); n != events {
				t.Errorf("%d events, was %d", n, events)
			}
		})
	}
}

// deadNode answers nothing.
type deadNode struct{}

func (deadNode) Broadcast(context.Context, tron.Transaction) (tron.BroadcastResult, error) {
	return tron.BroadcastResult{}, tron.ErrTimeout
}
func (deadNode) Lookup(context.Context, tron.Txid) (tron.TxInfo, error) {
	return tron.TxInfo{}, tron.ErrTimeout
}
func (deadNode) HeadBlock(context.Context) (tron.Block, error) { return tron.Block{}, tron.ErrTimeout }
func (deadNode) SolidBlock(context.Context) (tron.Block, error) {
	return tron.Block{}, tron.ErrTimeout
}

// Goal: a write the store's own checks refused is answered as what it is,
// a 409 that changed nothing (code "store_refused"), and only a failure to
// reach the store is a 503 "may or may not have landed": a person on call
// told 503 reads the operation and acts again, on a question that already
// has its answer.
func TestStoreRefusalIsAConflict(t *testing.T) {
	for _, c := range []struct {
		name   string
		err    error
		status int
		code   string
		says   string
	}{
		{"illegal transition", fmt.Errorf("resolve x parked->validated: %w", sluice.ErrIllegalTransition), http.StatusConflict, operator.CodeStoreRefused, "nothing changed: resolve 00000000"},
		{"hold closed", fmt.Errorf("hold of x is already released: %w", sluice.ErrHoldClosed), http.StatusConflict, operator.CodeStoreRefused, "nothing changed"},
		{"hold action", sluice.ErrHoldAction, http.StatusConflict, operator.CodeStoreRefused, "nothing changed"},
		{"txid taken", sluice.ErrTxidTaken, http.StatusConflict, operator.CodeStoreRefused, "nothing changed"},
		{"invalid change", sluice.ErrInvalidChange, http.StatusConflict, operator.CodeStoreRefused, "nothing changed"},
		{"connection lost", errors.New("read tcp: connection reset by peer"), http.StatusServiceUnavailable, "", "may or may not have landed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, nil)
			w.fund("cust-1", "100")
			id := w.parkedInBroadcasting("cust-1")
			w.svc.Store = resolveFails{Store: w.store, err: c.err}
			events := len(w.events(id))
			code, body, hdr := do(t, w.handler(), http.MethodPost, "/v1/operations/"+string(id)+"/retry", `{"operator":"alice","why":"x"}`, "")
			msg, _ := body["error"].(string)
			got, _ := body["code"].(string)
			if code != c.status || got != c.code || !strings.Contains(msg, c.says) {
				t.Errorf("%d %v, want %d code %q saying %q", code, body, c.status, c.code, c.says)
			}
			if retry := hdr.Get("Retry-After") != ""; retry != (c.status == http.StatusServiceUnavailable) {
				t.Errorf("Retry-After %q on a %d: only a 503 asks to come back", hdr.Get("Retry-After"), code)
			}
			if n := len(w.events(id)); n != events {
				t.Errorf("%d events, was %d", n, events)
			}
		})
	}
}
