package intake

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"sluicesim/sluice"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
)

// BenchmarkHandlerPost measures one request through handler.ServeHTTP as the
// simulator's worlds send it (scenarios/servers.go: a request built
// directly, a fresh recorder), over a funded in-memory store:
//
//   - created: a new operation id each time (201);
//   - replay: the same valid body again (200, X-Idempotent-Replay);
//   - conflict: a used id with another amount (409);
//   - malformed: a duplicate key (422 from the JSON reading);
//   - number: the amount as a JSON number (422 from the JSON reading, by
//     way of encoding/json's tokens);
//   - invalid: well-formed JSON with a bad amount (422 from Normalize);
//   - get: GET of an existing operation (200 with its history);
//   - get-missing: GET of an operation not created (404).
//
// The request's and the recorder's own allocations are in every number
// (they are what a world pays per request too); harness measures them
// alone.
func BenchmarkHandlerPost(b *testing.B) {
	ctx := context.Background()
	mem := store.NewMemory(&storetest.Clock{}, lease)
	if _, _, err := mem.Credit(ctx, sluice.Credit{Ref: "bench", Customer: cust, Amount: funded}); err != nil {
		b.Fatal(err)
	}
	var h http.Handler
	serve := func(b *testing.B, method, path string, body []byte, want int) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, path, rd)
		if err != nil {
			b.Fatal(err)
		}
		req.RequestURI = path
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			b.Fatalf("%s %s %s: status %d, want %d: %s", method, path, body, rec.Code, want, rec.Body)
		}
	}
	valid := []byte(payload(id1, addrA, "12.50", sluice.Asset))

	// harness is the request and the recorder alone, answered by a handler
	// that does nothing: subtract it to see what intake costs.
	h = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	b.Run("harness", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			serve(b, http.MethodPost, "/v1/withdrawals", valid, http.StatusOK)
		}
	})

	h = NewHandler(&Service{Store: mem})
	serve(b, http.MethodPost, "/v1/withdrawals", valid, http.StatusCreated)

	// made numbers the ids created over every run of "created": the
	// framework runs it several times over this one store (growing b.N,
	// and again for each -count), so an id built from b.N alone came back
	// as a replay on the second -count and failed `make bench`.
	made := 0
	b.Run("created", func(b *testing.B) {
		bodies := make([][]byte, b.N)
		for i := range bodies {
			made++
			id := fmt.Sprintf("00000000-0000-4000-8000-%012x", made)
			bodies[i] = []byte(payload(id, addrA, "0.000001", sluice.Asset))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			serve(b, http.MethodPost, "/v1/withdrawals", bodies[i], http.StatusCreated)
		}
	})
	for _, bc := range []struct {
		name   string
		method string
		path   string
		body   []byte
		want   int
	}{
		{"replay", http.MethodPost, "/v1/withdrawals", valid, http.StatusOK},
		{"conflict", http.MethodPost, "/v1/withdrawals", []byte(payload(id1, addrA, "12.51", sluice.Asset)), http.StatusConflict},
		{"malformed", http.MethodPost, "/v1/withdrawals", []byte(fmt.Sprintf(
			`{"operation_id":%q,"customer":"cust-1","to_address":%q,"amount":"1","amount":"1000","asset":%q}`, id1, addrA, sluice.Asset)),
			http.StatusUnprocessableEntity},
		{"number", http.MethodPost, "/v1/withdrawals", []byte(fmt.Sprintf(
			`{"operation_id":%q,"customer":"cust-1","to_address":%q,"amount":12.5,"asset":%q}`, id1, addrA, sluice.Asset)),
			http.StatusUnprocessableEntity},
		{"invalid", http.MethodPost, "/v1/withdrawals", []byte(payload(id1, addrA, "1.0000001", sluice.Asset)), http.StatusUnprocessableEntity},
		{"get", http.MethodGet, "/v1/withdrawals/" + id1, nil, http.StatusOK},
		{"get-missing", http.MethodGet, "/v1/withdrawals/" + id2, nil, http.StatusNotFound},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				serve(b, bc.method, bc.path, bc.body, bc.want)
			}
		})
	}
}
