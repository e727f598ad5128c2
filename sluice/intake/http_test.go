package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
)

// The wire format, declared here independently of the handler's own types so
// that a renamed JSON tag fails a test instead of silently changing the API.
type wireWithdrawal struct {
	OperationID string      `json:"operation_id"`
	Customer    string      `json:"customer"`
	State       string      `json:"state"`
	ToAddress   string      `json:"to_address"`
	Amount      string      `json:"amount"`
	Asset       string      `json:"asset"`
	Txid        string      `json:"txid"`
	Builds      int         `json:"builds"`
	Reason      string      `json:"reason"`
	History     []wireEvent `json:"history"`
}

type wireEvent struct {
	From string `json:"from"`
	To   string `json:"to"`
	At   string `json:"at"`
	Note string `json:"note"`
	Txid string `json:"txid"`
}

type wireError struct {
	Error string `json:"error"`
	Field string `json:"field"`
	Code  string `json:"code"`
}

func newHandler(t *testing.T) (http.Handler, *store.Memory) {
	t.Helper()
	svc, mem, _ := newService(t)
	return NewHandler(svc), mem
}

// payload is a request body for cust with the amount as a JSON string.
func payload(id, to, amount, asset string) string { return payloadFor(id, cust, to, amount, asset) }

// payloadFor is payload for another customer.
func payloadFor(id, customer, to, amount, asset string) string {
	return fmt.Sprintf(`{"operation_id":%q,"customer":%q,"to_address":%q,"amount":%q,"asset":%q}`, id, customer, to, amount, asset)
}

func validBody() string { return payload(id1, addrA, "12.50", sluice.Asset) }

func post(h http.Handler, body string) *httptest.ResponseRecorder {
	return do(h, http.MethodPost, "/v1/withdrawals", body, "application/json")
}

func do(h http.Handler, method, path, body, contentType string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func decode[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("response body %q is not JSON: %v", rec.Body.String(), err)
	}
	return v
}

// wantError checks an error answer: status, JSON shape and the field blamed.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, field string) wireError {
	t.Helper()
	if rec.Code != status {
		t.Errorf("status = %d, want %d (body %s)", rec.Code, status, rec.Body.String())
	}
	e := decode[wireError](t, rec)
	if e.Error == "" {
		t.Errorf("error body %s has no error message", rec.Body.String())
	}
	if got := rec.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q on a %d, want no-store: a shared cache would keep it", got, rec.Code)
	}
	if e.Field != field {
		t.Errorf("field = %q, want %q (body %s)", e.Field, field, rec.Body.String())
	}
	return e
}

func rows(mem *store.Memory) int { return len(mem.Snapshot().Operations) }

func TestPostCreatedThenReplayed(t *testing.T) {
	svc, mem, clock := newService(t)
	h := NewHandler(svc)

	rec := post(h, validBody())
	if rec.Code != http.StatusCreated {
		t.Fatalf("first POST status = %d, want 201 (body %s)", rec.Code, rec.Body.String())
	}
	if got := rec.Header().Get("X-Idempotent-Replay"); got != "" {
		t.Errorf("first POST X-Idempotent-Replay = %q, want none", got)
	}
	if got, want := rec.Header().Get("Location"), "/v1/withdrawals/"+id1; got != want {
		t.Errorf("Location = %q, want %q", got, want)
	}
	created := decode[wireWithdrawal](t, rec)
	if created.OperationID != id1 || created.Customer != cust || created.State != "requested" || created.ToAddress != addrA ||
		created.Amount != "12.5" || created.Asset != sluice.Asset {
		t.Errorf("created body = %+v, want %s for %s requested to %s amount 12.5 %s", created, id1, cust, addrA, sluice.Asset)
	}
	if strings.Contains(rec.Body.String(), `"txid"`) {
		t.Errorf("created body %s has a txid; want it omitted until there is one", rec.Body.String())
	}

	// A worker moves the row on; the retry must report where it is now.
	clock.Advance(time.Second)
	advance(t, mem, id1, sluice.Requested, sluice.Validated, nil)

	rec = post(h, validBody())
	if rec.Code != http.StatusOK {
		t.Fatalf("replay status = %d, want 200 (body %s)", rec.Code, rec.Body.String())
	}
	if got := rec.Header().Get("X-Idempotent-Replay"); got != "true" {
		t.Errorf("replay X-Idempotent-Replay = %q, want true", got)
	}
	replayed := decode[wireWithdrawal](t, rec)
	if replayed.State != "validated" {
		t.Errorf("replay state = %q, want validated (the current row)", replayed.State)
	}
	if replayed.OperationID != id1 || replayed.Customer != cust || replayed.Amount != "12.5" || replayed.ToAddress != addrA {
		t.Errorf("replay body = %+v, want the original withdrawal", replayed)
	}
	if n := rows(mem); n != 1 {
		t.Errorf("rows = %d, want 1", n)
	}
}

func TestPostEquivalentAmountsReplay(t *testing.T) {
	h, mem := newHandler(t)
	if rec := post(h, payload(id1, addrA, "1.5", sluice.Asset)); rec.Code != http.StatusCreated {
		t.Fatalf("POST 1.5 status = %d, want 201 (body %s)", rec.Code, rec.Body.String())
	}
	// Same instruction, other spellings: more zeros, upper-case id, keys
	// reordered, whitespace.
	for _, body := range []string{
		payload(id1, addrA, "1.50", sluice.Asset),
		payload(id1, addrA, "1.500000", sluice.Asset),
		payload(strings.ToUpper(id1), addrA, "1.5", sluice.Asset),
		fmt.Sprintf("{ \"asset\": %q,\n \"amount\": \"1.5\", \"to_address\": %q, \"customer\": %q, \"operation_id\": %q }\n", sluice.Asset, addrA, cust, id1),
	} {
		rec := post(h, body)
		if rec.Code != http.StatusOK || rec.Header().Get("X-Idempotent-Replay") != "true" {
			t.Errorf("POST %s = %d replay=%q, want 200 replay (body %s)", body, rec.Code,
				rec.Header().Get("X-Idempotent-Replay"), rec.Body.String())
			continue
		}
		if got := decode[wireWithdrawal](t, rec).Amount; got != "1.5" {
			t.Errorf("POST %s amount = %q, want canonical 1.5", body, got)
		}
	}
	if n := rows(mem); n != 1 {
		t.Errorf("rows = %d, want 1", n)
	}
}

func TestPostSameIDDifferentPayloadIs409(t *testing.T) {
	h, mem := newHandler(t)
	ctx := context.Background()
	if rec := post(h, validBody()); rec.Code != http.StatusCreated {
		t.Fatalf("first POST status = %d, want 201", rec.Code)
	}
	before, err := mem.Get(ctx, id1)
	if err != nil {
		t.Fatalf("Get error = %v", err)
	}
	for _, body := range []string{
		payload(id1, addrA, "12.51", sluice.Asset),
		payload(id1, addrB, "12.50", sluice.Asset),
		// other has no account: the id is judged before any funds are,
		// so this is a 409, not a 402.
		payloadFor(id1, other, addrA, "12.50", sluice.Asset),
		payloadFor(id1, strings.ToUpper(cust), addrA, "12.50", sluice.Asset),
	} {
		rec := post(h, body)
		wantError(t, rec, http.StatusConflict, FieldOperationID)
		if strings.Contains(rec.Body.String(), addrA) || strings.Contains(rec.Body.String(), `"`+cust+`"`) {
			t.Errorf("409 body %s reveals the original's recipient or customer", rec.Body.String())
		}
	}
	after, err := mem.Get(ctx, id1)
	if err != nil {
		t.Fatalf("Get error = %v", err)
	}
	if after.Request != before.Request || after.RequestHash != before.RequestHash || after.State != before.State ||
		!after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("row after 409s = %+v, want untouched %+v", after, before)
	}
	if events, _ := mem.Events(ctx, id1); len(events) != 1 {
		t.Errorf("events = %d, want 1", len(events))
	}
}

// TestPostRefusedAtTheDoor: every malformed request is a 422 (or 415/405)
// naming its field, and leaves the store without a row.
func TestPostRefusedAtTheDoor(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		status    int
		wantField string
	}{
		{"amount as a JSON float", fmt.Sprintf(`{"operation_id":%q,"customer":"cust-1","to_address":%q,"amount":12.5,"asset":%q}`, id1, addrA, sluice.Asset), 422, FieldAmount},
		{"amount as a JSON integer", fmt.Sprintf(`{"operation_id":%q,"customer":"cust-1","to_address":%q,"amount":12,"asset":%q}`, id1, addrA, sluice.Asset), 422, FieldAmount},
		{"amount as an exponent number", fmt.Sprintf(`{"operation_id":%q,"customer":"cust-1","to_address":%q,"amount":1e6,"asset":%q}`, id1, addrA, sluice.Asset), 422, FieldAmount},
		{"amount null", fmt.Sprintf(`{"operation_id":%q,"customer":"cust-1","to_address":%q,"amount":null,"asset":%q}`, id1, addrA, sluice.Asset), 422, FieldAmount},
		{"amount as an object", fmt.Sprintf(`{"operation_id":%q,"customer":"cust-1","to_address":%q,"amount":{"v":"1"},"asset":%q}`, id1, addrA, sluice.Asset), 422, FieldAmount},
		{"amount seven decimals", payload(id1, addrA, "1.0000000", sluice.Asset), 422, FieldAmount},
		{"amount zero", payload(id1, addrA, "0", sluice.Asset), 422, FieldAmount},
		{"amount above maximum", payload(id1, addrA, "1000000001", sluice.Asset), 422, FieldAmount},
		{"amount with comma", payload(id1, addrA, "1,5", sluice.Asset), 422, FieldAmount},
		{"bad address checksum", payload(id1, badChecksum(), "1", sluice.Asset), 422, FieldToAddress},
		{"address is the usdt contract", payload(id1, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "1", sluice.Asset), 422, FieldToAddress},
		{"address as a number", fmt.Sprintf(`{"operation_id":%q,"customer":"cust-1","to_address":41,"amount":"1","asset":%q}`, id1, sluice.Asset), 422, FieldToAddress},
		{"non-uuid id", payload("order-42", addrA, "1", sluice.Asset), 422, FieldOperationID},
		{"nil uuid", payload("00000000-0000-0000-0000-000000000000", addrA, "1", sluice.Asset), 422, FieldOperationID},
		{"missing customer", fmt.Sprintf(`{"operation_id":%q,"to_address":%q,"amount":"1","asset":%q}`, id1, addrA, sluice.Asset), 422, FieldCustomer},
		{"empty customer", payloadFor(id1, "", addrA, "1", sluice.Asset), 422, FieldCustomer},
		{"customer as a number", fmt.Sprintf(`{"operation_id":%q,"customer":1,"to_address":%q,"amount":"1","asset":%q}`, id1, addrA, sluice.Asset), 422, FieldCustomer},
		{"customer null", fmt.Sprintf(`{"operation_id":%q,"customer":null,"to_address":%q,"amount":"1","asset":%q}`, id1, addrA, sluice.Asset), 422, FieldCustomer},
		{"customer too long", payloadFor(id1, strings.Repeat("c", 65), addrA, "1", sluice.Asset), 422, FieldCustomer},
		{"customer with a space", payloadFor(id1, " "+cust, addrA, "1", sluice.Asset), 422, FieldCustomer},
		{"customer with invalid UTF-8", `{"operation_id":"` + id1 + `","customer":"cust-` + "\xff" + `","to_address":"` + addrA + `","amount":"1","asset":"USDT-TRC20"}`, 422, FieldCustomer},
		{"customer key in another case", fmt.Sprintf(`{"operation_id":%q,"Customer":%q,"to_address":%q,"amount":"1","asset":%q}`, id1, cust, addrA, sluice.Asset), 422, "Customer"},
		{"unknown asset", payload(id1, addrA, "1", "USDT-ERC20"), 422, FieldAsset},
		{"unknown field", fmt.Sprintf(`{"operation_id":%q,"customer":"cust-1","to_address":%q,"amount":"1","asset":%q,"memo":"hi"}`, id1, addrA, sluice.Asset), 422, "memo"},
		{"field in wrong case", fmt.Sprintf(`{"operation_id":%q,"customer":"cust-1","to_address":%q,"AMOUNT":"1","asset":%q}`, id1, addrA, sluice.Asset), 422, "AMOUNT"},
		{"duplicate field", fmt.Sprintf(`{"operation_id":%q,"customer":"cust-1","to_address":%q,"amount":"1","amount":"1000","asset":%q}`, id1, addrA, sluice.Asset), 422, FieldAmount},
		{"missing amount", fmt.Sprintf(`{"operation_id":%q,"customer":"cust-1","to_address":%q,"asset":%q}`, id1, addrA, sluice.Asset), 422, FieldAmount},
		{"missing id", fmt.Sprintf(`{"to_address":%q,"amount":"1","asset":%q}`, addrA, sluice.Asset), 422, FieldOperationID},
		{"empty object", `{}`, 422, FieldOperationID},
		{"empty field name", `{"":"x"}`, 422, FieldBody},
		{"empty body", ``, 422, FieldBody},
		{"malformed JSON", `{"operation_id":`, 422, FieldBody},
		{"not an object", `["a"]`, 422, FieldBody},
		{"bare string", `"hello"`, 422, FieldBody},
		{"trailing object", validBody() + `{}`, 422, FieldBody},
		{"trailing garbage", validBody() + `x`, 422, FieldBody},
		{"two objects on two lines", validBody() + "\n" + validBody(), 422, FieldBody},
		{"oversized body", fmt.Sprintf(`{"operation_id":%q,"customer":"cust-1","to_address":%q,"amount":"1","asset":%q,"pad":%q}`,
			id1, addrA, sluice.Asset, strings.Repeat("x", BodyMax)), 422, FieldBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, mem := newHandler(t)
			rec := post(h, tt.body)
			wantError(t, rec, tt.status, tt.wantField)
			if n := rows(mem); n != 0 {
				t.Errorf("rows = %d after a refused request, want 0", n)
			}
		})
	}
}

// TestPostRefusalSaysWhatWasSent: a refusal's reason names what the client
// sent, in an answer of bounded size: a top-level number however long (as
// a float64 one out of range was refused with encoding/json's words, which
// repeated it whole), and a field that decodes to U+FFFD (an invalid UTF-8
// byte, a lone surrogate escape), which was refused for a byte 'ï' the
// client never sent. A surrogate pair, or an escaped backslash before
// "ud800", is text, refused (if at all) for what it is.
func TestPostRefusalSaysWhatWasSent(t *testing.T) {
	withCustomer := func(lit string) string {
		return `{"operation_id":"` + id1 + `","customer":"` + lit + `","to_address":"` + addrA + `","amount":"1","asset":"USDT-TRC20"}`
	}
	tests := []struct {
		name, body, field, reason string
	}{
		{"a long top-level number", strings.Repeat("9", BodyMax), FieldBody, "want a JSON object"},
		{"a top-level number out of range", "1e400", FieldBody, "want a JSON object"},
		{"a long number, then garbage", strings.Repeat("9", 1000) + "x", FieldBody, "want a JSON object"},
		{"invalid UTF-8", withCustomer("cust-\xff"), FieldCustomer, "not valid UTF-8"},
		{"a lone high surrogate", withCustomer(`cust-\ud800`), FieldCustomer, `has a lone surrogate escape (\ud800)`},
		{"a lone low surrogate", withCustomer(`cust-\uDC01x`), FieldCustomer, `has a lone surrogate escape (\uDC01)`},
		{"a high surrogate, then no low one", withCustomer(`cust-\ud800\u0041`), FieldCustomer, `has a lone surrogate escape (\ud800)`},
		{"a high surrogate at the end", withCustomer(`\ud800`), FieldCustomer, `has a lone surrogate escape (\ud800)`},
		{"a surrogate pair", withCustomer(`cust-\ud83d\ude00`), FieldCustomer, "byte 5 ('😀')"},
		{"an escaped backslash, then ud800", withCustomer(`cust-\\ud800`), FieldCustomer, `byte 5 ('\\')`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, mem := newHandler(t)
			rec := post(h, tt.body)
			e := wantError(t, rec, http.StatusUnprocessableEntity, tt.field)
			if !strings.Contains(e.Error, tt.reason) {
				t.Errorf("error %q does not say %q", e.Error, tt.reason)
			}
			if n := rec.Body.Len(); n > 512 {
				t.Errorf("the answer is %d bytes", n)
			}
			if n := rows(mem); n != 0 {
				t.Errorf("rows = %d after a refused request, want 0", n)
			}
		})
	}
}

// TestPostOversizedWithoutContentLength: the limit holds for a streamed body
// too, where no Content-Length warns in advance.
func TestPostOversizedWithoutContentLength(t *testing.T) {
	h, mem := newHandler(t)
	body := `{"pad":"` + strings.Repeat("x", BodyMax) + `"}`
	req := httptest.NewRequest(http.MethodPost, "/v1/withdrawals", struct{ *strings.Reader }{strings.NewReader(body)})
	req.ContentLength = -1
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	wantError(t, rec, http.StatusUnprocessableEntity, FieldBody)
	if n := rows(mem); n != 0 {
		t.Errorf("rows = %d, want 0", n)
	}
}

func TestPostContentType(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		status      int
	}{
		{"absent is fine", "", http.StatusCreated},
		{"json", "application/json", http.StatusCreated},
		{"json utf-8", "application/json; charset=utf-8", http.StatusCreated},
		{"json upper case", "Application/JSON", http.StatusCreated},
		{"form", "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
		{"text", "text/plain", http.StatusUnsupportedMediaType},
		{"json in latin-1", "application/json; charset=latin1", http.StatusUnsupportedMediaType},
		{"unparseable", "application/json; ===", http.StatusUnsupportedMediaType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, mem := newHandler(t)
			rec := do(h, http.MethodPost, "/v1/withdrawals", validBody(), tt.contentType)
			if tt.status != http.StatusCreated {
				wantError(t, rec, tt.status, "")
				if n := rows(mem); n != 0 {
					t.Errorf("rows = %d, want 0", n)
				}
				return
			}
			if rec.Code != tt.status {
				t.Errorf("status = %d, want %d (body %s)", rec.Code, tt.status, rec.Body.String())
			}
		})
	}
}

func TestWrongMethod(t *testing.T) {
	tests := []struct {
		method, path, allow string
	}{
		{http.MethodGet, "/v1/withdrawals", "POST"},
		{http.MethodPut, "/v1/withdrawals", "POST"},
		{http.MethodDelete, "/v1/withdrawals", "POST"},
		{http.MethodPost, "/v1/withdrawals/" + id1, "GET, HEAD"},
		{http.MethodDelete, "/v1/withdrawals/" + id1, "GET, HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			h, mem := newHandler(t)
			rec := do(h, tt.method, tt.path, validBody(), "application/json")
			wantError(t, rec, http.StatusMethodNotAllowed, "")
			if got := rec.Header().Get("Allow"); got != tt.allow {
				t.Errorf("Allow = %q, want %q", got, tt.allow)
			}
			if n := rows(mem); n != 0 {
				t.Errorf("rows = %d, want 0", n)
			}
		})
	}
}

func TestGet(t *testing.T) {
	svc, mem, clock := newService(t)
	h := NewHandler(svc)
	if rec := post(h, validBody()); rec.Code != http.StatusCreated {
		t.Fatalf("POST status = %d, want 201", rec.Code)
	}
	clock.Advance(1500 * time.Millisecond)
	advance(t, mem, id1, sluice.Requested, sluice.Validated, nil)
	clock.Advance(time.Second)
	env := testEnvelope()
	advance(t, mem, id1, sluice.Validated, sluice.Signing, env)

	t.Run("known", func(t *testing.T) {
		for _, id := range []string{id1, strings.ToUpper(id1)} {
			rec := do(h, http.MethodGet, "/v1/withdrawals/"+id, "", "")
			if rec.Code != http.StatusOK {
				t.Fatalf("GET %s status = %d, want 200 (body %s)", id, rec.Code, rec.Body.String())
			}
			got := decode[wireWithdrawal](t, rec)
			if got.OperationID != id1 || got.Customer != cust || got.State != "signing" || got.Amount != "12.5" || got.ToAddress != addrA ||
				got.Asset != sluice.Asset || got.Txid != env.Txid.String() || got.Builds != 1 {
				t.Errorf("GET %s = %+v, want %s for %s signing 12.5 to %s txid %s builds 1", id, got, id1, cust, addrA, env.Txid)
			}
			wantHistory := []wireEvent{
				{From: "none", To: "requested", At: "2026-01-01T00:00:00Z", Note: "created"},
				{From: "requested", To: "validated", At: "2026-01-01T00:00:01.5Z", Note: "test"},
				{From: "validated", To: "signing", At: "2026-01-01T00:00:02.5Z", Note: "test", Txid: env.Txid.String()},
			}
			if len(got.History) != len(wantHistory) {
				t.Fatalf("history = %+v, want %+v", got.History, wantHistory)
			}
			for i := range wantHistory {
				if got.History[i] != wantHistory[i] {
					t.Errorf("history[%d] = %+v, want %+v", i, got.History[i], wantHistory[i])
				}
			}
		}
	})
	t.Run("unknown", func(t *testing.T) {
		rec := do(h, http.MethodGet, "/v1/withdrawals/"+id2, "", "")
		wantError(t, rec, http.StatusNotFound, FieldOperationID)
	})
	t.Run("malformed id", func(t *testing.T) {
		rec := do(h, http.MethodGet, "/v1/withdrawals/not-a-uuid", "", "")
		wantError(t, rec, http.StatusUnprocessableEntity, FieldOperationID)
	})
	t.Run("unknown path", func(t *testing.T) {
		rec := do(h, http.MethodGet, "/v1/withdrawals/"+id1+"/extra", "", "")
		wantError(t, rec, http.StatusNotFound, "")
	})
}

// TestStoreFailureIs503: a failing store is a 503 with Retry-After and a
// fixed message (the request may have been recorded: retry with the same
// id); nothing of the store's error text reaches the client.
func TestStoreFailureIs503(t *testing.T) {
	secret := "dial tcp 10.0.0.5:5432: connection refused"
	h := NewHandler(&Service{Store: &failingStore{err: errors.New(secret)}})
	for _, rec := range []*httptest.ResponseRecorder{
		post(h, validBody()),
		do(h, http.MethodGet, "/v1/withdrawals/"+id1, "", ""),
	} {
		e := wantError(t, rec, http.StatusServiceUnavailable, "")
		if strings.Contains(rec.Body.String(), "10.0.0.5") || strings.Contains(rec.Body.String(), "dial") {
			t.Errorf("503 body %s leaks the store's error", rec.Body.String())
		}
		if e.Error != errStoreUnavailable {
			t.Errorf("503 error = %q, want %q", e.Error, errStoreUnavailable)
		}
		if got := rec.Header().Get("Retry-After"); got != "1" {
			t.Errorf("503 Retry-After = %q, want 1", got)
		}
	}
}

// TestStoreRefusalIs500: the store refusing, by its own checks, an
// operation intake accepted is a 500 with code "store_refused" and a fixed
// message, and no Retry-After: a retry would be refused again.
func TestStoreRefusalIs500(t *testing.T) {
	refusal := fmt.Errorf("%w: amount 0 is not positive (at 10.0.0.5)", sluice.ErrInvalidOperation)
	h := NewHandler(&Service{Store: &failingStore{err: refusal}})
	rec := post(h, validBody())
	e := wantError(t, rec, http.StatusInternalServerError, "")
	if e.Code != CodeStoreRefused || e.Error != errStoreRefused {
		t.Errorf("500 body = %+v, want code %q and the fixed message", e, CodeStoreRefused)
	}
	if strings.Contains(rec.Body.String(), "10.0.0.5") {
		t.Errorf("500 body %s leaks the store's error", rec.Body.String())
	}
	if got := rec.Header().Get("Retry-After"); got != "" {
		t.Errorf("500 Retry-After = %q, want none", got)
	}
}

// TestConcurrentIdenticalPosts: 32 identical POSTs released at once through
// the handler make one row, one creation event, one 201 and 31 replays.
// Run under -race; the store's atomic Insert is what is being relied on.
func TestConcurrentIdenticalPosts(t *testing.T) {
	const n = 32
	mem := store.NewMemory(&storetest.Clock{}, lease)
	fund(t, mem, cust, funded)
	h := NewHandler(&Service{Store: newRendezvous(t, mem, n)})
	recs := make([]*httptest.ResponseRecorder, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Go(func() {
			start.Wait()
			recs[i] = post(h, validBody())
		})
	}
	start.Done()
	done.Wait()

	var created, replays int
	for i, rec := range recs {
		switch {
		case rec.Code == http.StatusCreated:
			created++
		case rec.Code == http.StatusOK && rec.Header().Get("X-Idempotent-Replay") == "true":
			replays++
		default:
			t.Errorf("POST %d = %d replay=%q, want 201 or 200 replay (body %s)", i, rec.Code,
				rec.Header().Get("X-Idempotent-Replay"), rec.Body.String())
			continue
		}
		if got := decode[wireWithdrawal](t, rec); got.OperationID != id1 || got.Amount != "12.5" || got.ToAddress != addrA {
			t.Errorf("POST %d body = %+v, want %s 12.5 to %s", i, got, id1, addrA)
		}
	}
	if created != 1 || replays != n-1 {
		t.Errorf("created = %d, replays = %d; want 1 and %d", created, replays, n-1)
	}
	snap := mem.Snapshot()
	if len(snap.Operations) != 1 {
		t.Errorf("rows = %d, want 1", len(snap.Operations))
	}
	creations := 0
	for _, e := range snap.Events {
		if e.From == sluice.None {
			creations++
		}
	}
	if creations != 1 || len(snap.Events) != 1 {
		t.Errorf("events = %d with %d creations, want exactly 1 creation event", len(snap.Events), creations)
	}
}

// TestConcurrentConflictingPosts: 16 POSTs of two payloads under one id,
// released at once. One wins (201); each other answer is a replay of the
// winner's payload (if it sent that payload) or a 409 (if it sent the
// other); the row is the winner's, intact. Repeated over twenty ids, with a
// fresh rendezvous each, so the race is run many times and the winner varies.
func TestConcurrentConflictingPosts(t *testing.T) {
	const n = 16
	bodies := func(id string) [2]string {
		return [2]string{payload(id, addrA, "1.5", sluice.Asset), payload(id, addrB, "2", sluice.Asset)}
	}
	wantAmount := [2]string{"1.5", "2"}
	wantTo := [2]string{addrA, addrB}
	mem := store.NewMemory(&storetest.Clock{}, lease)
	fund(t, mem, cust, funded)
	for round := range 20 {
		h := NewHandler(&Service{Store: newRendezvous(t, mem, n)})
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", round+1, round+1)
		b := bodies(id)
		recs := make([]*httptest.ResponseRecorder, n)
		var start, done sync.WaitGroup
		start.Add(1)
		for i := range n {
			done.Go(func() {
				start.Wait()
				recs[i] = post(h, b[i%2])
			})
		}
		start.Done()
		done.Wait()

		winner := -1
		for i, rec := range recs {
			if rec.Code == http.StatusCreated {
				if winner >= 0 {
					t.Fatalf("round %d: POSTs %d and %d both got 201", round, winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no POST got 201", round)
		}
		w := winner % 2
		for i, rec := range recs {
			if i == winner {
				continue
			}
			if i%2 == w {
				if rec.Code != http.StatusOK || rec.Header().Get("X-Idempotent-Replay") != "true" {
					t.Errorf("round %d POST %d (winner's payload) = %d, want 200 replay (body %s)", round, i, rec.Code, rec.Body.String())
					continue
				}
				if got := decode[wireWithdrawal](t, rec); got.Amount != wantAmount[w] || got.ToAddress != wantTo[w] {
					t.Errorf("round %d POST %d replay = %+v, want the winner's %s to %s", round, i, got, wantAmount[w], wantTo[w])
				}
			} else {
				wantError(t, rec, http.StatusConflict, FieldOperationID)
			}
		}
		row, err := mem.Get(context.Background(), sluice.OperationID(id))
		if err != nil {
			t.Fatalf("round %d: Get error = %v", round, err)
		}
		if row.Request.Amount.String() != wantAmount[w] || row.Request.To.String() != wantTo[w] ||
			row.RequestHash != RequestHash(row.ID, row.Request) {
			t.Errorf("round %d: row = %+v, want the winner's payload %s to %s with its hash", round, row, wantAmount[w], wantTo[w])
		}
	}
	if n := rows(mem); n != 20 {
		t.Errorf("rows = %d, want 20 (one per round)", n)
	}
}

// rendezvous holds the answers to the first n store calls until all n calls
// have been made, then lets them return together; later calls pass straight
// through. Behind the handler's goroutines it turns "the requests might
// overlap" into "every request's first store call happens before any request
// acts on what it learned": a service that checked before inserting (Get,
// then Insert) would let all n see no row and all n report creating it, on
// every run rather than on an unlucky one.
type rendezvous struct {
	sluice.Store
	t       *testing.T
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func newRendezvous(t *testing.T, st sluice.Store, n int) *rendezvous {
	return &rendezvous{Store: st, t: t, n: n, all: make(chan struct{})}
}

func (r *rendezvous) wait() {
	r.mu.Lock()
	if r.arrived >= r.n {
		r.mu.Unlock()
		return
	}
	r.arrived++
	if r.arrived == r.n {
		close(r.all)
	}
	r.mu.Unlock()
	select {
	case <-r.all:
	case <-time.After(10 * time.Second):
		// Some request never reached the store: report it rather than hang.
		r.mu.Lock()
		defer r.mu.Unlock()
		r.t.Errorf("rendezvous: only %d of %d store calls arrived", r.arrived, r.n)
	}
}

func (r *rendezvous) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	defer r.wait()
	return r.Store.Insert(ctx, op)
}

func (r *rendezvous) Get(ctx context.Context, id sluice.OperationID) (sluice.Operation, error) {
	defer r.wait()
	return r.Store.Get(ctx, id)
}

// FuzzHandler: no body makes the handler panic, answer outside its
// documented codes, or answer in anything but JSON; whatever it accepts is
// stored in canonical form.
func FuzzHandler(f *testing.F) {
	f.Add(validBody())
	f.Add(payload(id1, addrA, "1e6", sluice.Asset))
	f.Add(payloadFor(id1, other, addrA, "1", sluice.Asset))
	f.Add(fmt.Sprintf(`{"operation_id":%q,"customer":7,"to_address":%q,"amount":"1","asset":%q}`, id1, addrA, sluice.Asset))
	f.Add(`{"operation_id":1,"amount":1.5}`)
	f.Add(`{"amount":"1","amount":"2"}`)
	f.Add(`[]`)
	f.Add(`{"operation_id":"` + id1 + `"}` + `{}`)
	f.Add("{\"operation_id\":\"\xff\"}")
	f.Fuzz(func(t *testing.T, body string) {
		h, mem := newHandler(t)
		rec := post(h, body)
		switch rec.Code {
		case http.StatusCreated:
			got := decode[wireWithdrawal](t, rec)
			if got.State != "requested" {
				t.Errorf("created state = %q, want requested", got.State)
			}
			if n := rows(mem); n != 1 {
				t.Errorf("rows = %d after 201, want 1", n)
			}
		case http.StatusUnprocessableEntity:
			if e := decode[wireError](t, rec); e.Error == "" || e.Field == "" {
				t.Errorf("422 body %s: want an error and a field", rec.Body.String())
			}
			if n := rows(mem); n != 0 {
				t.Errorf("rows = %d after 422, want 0", n)
			}
		case http.StatusPaymentRequired:
			// Only cust is funded: any other well-formed customer has no
			// account.
			if e := decode[wireError](t, rec); e.Code != CodeInsufficientFunds {
				t.Errorf("402 body %s: want code %s", rec.Body.String(), CodeInsufficientFunds)
			}
			if n := rows(mem); n != 0 {
				t.Errorf("rows = %d after 402, want 0", n)
			}
		default:
			t.Errorf("status = %d for a fresh store, want 201, 402 or 422 (body %s)", rec.Code, rec.Body.String())
		}
	})
}

// TestEveryAnswerIsJSON: paths the API does not have, and paths that are not
// clean (which http.ServeMux answers itself, before any handler, with a
// redirect in HTML or with no body), are answered in JSON like everything
// else, keeping the status and the Location the mux chose, and create
// nothing.
func TestEveryAnswerIsJSON(t *testing.T) {
	tests := []struct {
		method, path string
		status       int    // 0: any redirect
		location     string // for a redirect
	}{
		{http.MethodGet, "/", http.StatusNotFound, ""},
		{http.MethodGet, "/v2/withdrawals", http.StatusNotFound, ""},
		{http.MethodPost, "/v1/withdrawal", http.StatusNotFound, ""},
		{http.MethodGet, "/v1/withdrawals/", http.StatusNotFound, ""},
		{http.MethodGet, "/v1/withdrawals/" + id1 + "/extra", http.StatusNotFound, ""},
		{http.MethodDelete, "/favicon.ico", http.StatusNotFound, ""},
		{http.MethodHead, "/nothing", http.StatusNotFound, ""},
		{http.MethodPost, "/v1//withdrawals", 0, "/v1/withdrawals"},
		{http.MethodGet, "/v1//withdrawals", 0, "/v1/withdrawals"},
		{http.MethodGet, "/v1/./withdrawals/" + id1, 0, "/v1/withdrawals/" + id1},
		{http.MethodGet, "/v1/x/../withdrawals/" + id1, 0, "/v1/withdrawals/" + id1},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			h, mem := newHandler(t)
			rec := do(h, tt.method, tt.path, validBody(), "application/json")
			switch {
			case tt.status == 0 && (rec.Code < 300 || rec.Code >= 400):
				t.Errorf("status = %d, want a redirect (body %s)", rec.Code, rec.Body.String())
			case tt.status != 0 && rec.Code != tt.status:
				t.Errorf("status = %d, want %d (body %s)", rec.Code, tt.status, rec.Body.String())
			}
			if got := rec.Header().Get("Location"); got != tt.location {
				t.Errorf("Location = %q, want %q", got, tt.location)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json (body %q)", ct, rec.Body.String())
			}
			// A redirect and a 404 are cacheable by default (RFC 9110):
			// net/http's own must be kept out of a shared cache as ours are.
			if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", cc)
			}
			// A HEAD answer's body is net/http's to drop; its type is ours.
			if tt.method != http.MethodHead {
				e := decode[wireError](t, rec)
				if !strings.Contains(e.Error, tt.path) {
					t.Errorf("error %q does not name the path %s", e.Error, tt.path)
				}
				if tt.location != "" && !strings.Contains(e.Error, tt.location) {
					t.Errorf("error %q does not name the canonical path %s", e.Error, tt.location)
				}
			}
			if n := rows(mem); n != 0 {
				t.Errorf("rows = %d, want 0", n)
			}
		})
	}
}

// TestJSONAnswers: the wrapper replaces exactly the answers that are not
// JSON, keeps their status and headers, drops what the handler writes after
// (so no text leaks after the JSON), and leaves JSON and bodiless answers
// alone, byte for byte.
func TestJSONAnswers(t *testing.T) {
	serve := func(inner http.HandlerFunc, method string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		JSONAnswers(inner).ServeHTTP(rec, httptest.NewRequest(method, "/x", nil))
		return rec
	}
	t.Run("text error", func(t *testing.T) {
		rec := serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			http.Error(w, "boom: internal detail", http.StatusBadGateway)
		}, http.MethodGet)
		e := wantError(t, rec, http.StatusBadGateway, "")
		if e.Error != "bad gateway" || strings.Contains(rec.Body.String(), "internal detail") {
			t.Errorf("body %q, want only the status in words", rec.Body.String())
		}
		if rec.Header().Get("Retry-After") != "7" {
			t.Errorf("Retry-After = %q, want the handler's 7", rec.Header().Get("Retry-After"))
		}
		if got, want := rec.Header().Get("Content-Length"), fmt.Sprint(rec.Body.Len()); got != want {
			t.Errorf("Content-Length = %s, want %s", got, want)
		}
	})
	t.Run("body without a type", func(t *testing.T) {
		rec := serve(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("<html>hello</html>"))
		}, http.MethodGet)
		decode[wireError](t, rec)
		if strings.Contains(rec.Body.String(), "hello") {
			t.Errorf("body %q keeps the handler's HTML", rec.Body.String())
		}
	})
	t.Run("json passes", func(t *testing.T) {
		const body = `{"a":1}` + "\n"
		rec := serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusTeapot)
			w.Write([]byte(body))
		}, http.MethodGet)
		if rec.Code != http.StatusTeapot || rec.Body.String() != body {
			t.Errorf("answer = %d %q, want %d %q untouched", rec.Code, rec.Body.String(), http.StatusTeapot, body)
		}
	})
	t.Run("no content passes", func(t *testing.T) {
		rec := serve(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		}, http.MethodGet)
		if rec.Code != http.StatusNoContent || rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "" {
			t.Errorf("answer = %d %q type %q, want a bare 204", rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"))
		}
	})
}

// Goal: a POST the customer's balance does not cover is a 402 whose body
// is exactly the documented one (a fixed message and the stable code
// "insufficient_funds", no field, nothing of the account), stores nothing,
// and leaves the id free: the same body succeeds once the customer is
// funded. A replay is never a 402.
func TestPostInsufficientFundsIs402(t *testing.T) {
	h, mem := newHandler(t)
	body := payloadFor(id1, other, addrA, "12.50", sluice.Asset)
	for _, funds := range []money.Amount{0, 12_499_999} {
		if funds > 0 {
			fund(t, mem, other, funds)
		}
		rec := post(h, body)
		e := wantError(t, rec, http.StatusPaymentRequired, "")
		if e.Code != CodeInsufficientFunds {
			t.Errorf("funds %s: code = %q, want %q", funds, e.Code, CodeInsufficientFunds)
		}
		want := `{"error":"` + errInsufficientFunds + `","code":"insufficient_funds"}` + "\n"
		if got := rec.Body.String(); got != want {
			t.Errorf("funds %s: body = %s, want %s", funds, got, want)
		}
		if rec.Header().Get("Location") != "" || rec.Header().Get("X-Idempotent-Replay") != "" {
			t.Errorf("funds %s: 402 with Location %q, X-Idempotent-Replay %q; want neither", funds,
				rec.Header().Get("Location"), rec.Header().Get("X-Idempotent-Replay"))
		}
		if n := rows(mem); n != 0 {
			t.Errorf("funds %s: rows = %d after a 402, want 0", funds, n)
		}
	}
	fund(t, mem, other, 1)
	if rec := post(h, body); rec.Code != http.StatusCreated {
		t.Fatalf("POST once funded = %d, want 201 (body %s)", rec.Code, rec.Body.String())
	}
	if rec := post(h, body); rec.Code != http.StatusOK || rec.Header().Get("X-Idempotent-Replay") != "true" {
		t.Errorf("replay with the balance spent = %d, want 200 replay (body %s)", rec.Code, rec.Body.String())
	}
	if got := decode[wireWithdrawal](t, do(h, http.MethodGet, "/v1/withdrawals/"+id1, "", "")); got.Customer != other {
		t.Errorf("GET customer = %q, want %q", got.Customer, other)
	}
}
