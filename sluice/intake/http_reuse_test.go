package intake

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"sluicesim/sluice"
)

// Goal: readBody reads exactly what io.ReadAll over http.MaxBytesReader
// read, and fails the same way: a body over BodyMax is too large, a read
// error is that error, and the declared length only sizes the buffer (a
// length that lies, too short, too long or unknown, changes nothing).
// Method: every body size around the limit, through readers that return a
// byte at a time, half the asked, data with io.EOF, or an error midway,
// with every kind of declared length, into fresh and dirty buffers.
func TestReadBodyMatchesMaxBytesReader(t *testing.T) {
	errRead := errors.New("connection reset")
	readers := map[string]func([]byte) io.Reader{
		"bytes":    func(b []byte) io.Reader { return bytes.NewReader(b) },
		"one byte": func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
		"half":     func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
		"data eof": func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
		"error": func(b []byte) io.Reader {
			return io.MultiReader(bytes.NewReader(b[:len(b)/2]), iotest.ErrReader(errRead))
		},
	}
	for _, size := range []int{0, 1, 2, 200, bodyBufferSize - 1, bodyBufferSize, bodyBufferSize + 1, BodyMax - 1, BodyMax, BodyMax + 1, BodyMax + 2, 3 * BodyMax} {
		body := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		for name, reader := range readers {
			for _, length := range []int64{int64(size), -1, 0, int64(size) / 2, int64(size) + 7, BodyMax, BodyMax + 1} {
				for _, start := range [][]byte{nil, make([]byte, 0, 16), bytes.Repeat([]byte("x"), 64)[:0]} {
					rec := httptest.NewRecorder()
					want, wantErr := io.ReadAll(http.MaxBytesReader(rec, io.NopCloser(reader(body)), BodyMax))
					got, err := readBody(start, reader(body), length)
					where := fmt.Sprintf("size %d, %s reader, length %d, buffer cap %d", size, name, length, cap(start))
					_, tooLarge := errors.AsType[*http.MaxBytesError](wantErr)
					switch {
					case tooLarge:
						if err != errBodyTooLarge {
							t.Errorf("%s: error %v, want errBodyTooLarge", where, err)
						}
					case err != wantErr:
						t.Errorf("%s: error %v, want %v", where, err, wantErr)
					case err == nil && !bytes.Equal(got, want):
						t.Errorf("%s: read %d bytes, want %d", where, len(got), len(want))
					}
				}
			}
		}
	}
}

// Goal: nothing that decoding a body returns points into the body, which
// the handler hands back to bodyBuffers for the next request to overwrite.
// Method: decode bodies of every kind (plain, escaped, refused at each
// step, read by the scanner or by the token reader), scribble over the
// body, and compare what decoding returned before and after.
func TestDecodedSubmissionOutlivesBody(t *testing.T) {
	bodies := []string{
		validBody(),
		`{"operation_id":"` + id1 + `","customer":"c\u0075st","to_address":"` + addrA + `","amount":"12.50","asset":"USDT"}`,
		`{"operation_id":"` + id1 + `","zzz":"1"}`,
		`{"operation_id":"` + id1 + `","z\u007az":"1"}`,
		`{"operation_id":"` + id1 + `","operation_id":"x"}`,
		`{"operation_id":"` + id1 + `","customer":"` + cust + `","to_address":"` + addrA + `","amount":12.5,"asset":"USDT"}`,
		`{"operation_id":"` + id1 + `"} trailing`,
		`{"operation_id":"` + strings.Repeat("é", 40) + `"}`,
		`{"operation_id":`,
		`["not an object"]`,
	}
	for _, b := range bodies {
		body := []byte(b)
		sub, verr := decodeSubmission(body)
		before := fmt.Sprintf("%#v %#v", sub, verr)
		for i := range body {
			body[i] = 'x'
		}
		if after := fmt.Sprintf("%#v %#v", sub, verr); after != before {
			t.Errorf("decoding %s: after the body is overwritten %s, was %s", b, after, before)
		}
	}
}

// Goal: every fixed message intake answers with fits errorAnswer's room, so
// that writing one allocates once; a longer one (quoting a client's input)
// is still written whole.
func TestErrorAnswersFitTheirRoom(t *testing.T) {
	fixed := []errorBody{
		{Error: errInsufficientFunds, Code: CodeInsufficientFunds},
		{Error: errStoreUnavailable},
		{Error: ErrBusy.Error()},
		{Error: FieldBody + ": " + unknownFieldReason, Field: FieldBody},
		{Error: sluice.ErrPayloadMismatch.Error(), Field: FieldOperationID},
		{Error: "body: exceeds 16384 bytes", Field: FieldBody},
	}
	for _, e := range fixed {
		if n := len(e.json()) + 1; n > errorAnswerSize {
			t.Errorf("answer %q takes %d bytes, more than errorAnswerSize %d", e.Error, n, errorAnswerSize)
		}
	}
	long := errorBody{Error: strings.Repeat("long <message> ", 40), Field: FieldAmount}
	rec := httptest.NewRecorder()
	writeErrorBody(rec, http.StatusUnprocessableEntity, long)
	if got, want := rec.Body.String(), string(long.json())+"\n"; got != want {
		t.Errorf("long answer %q, want %q", got, want)
	}
}

// Goal: the writers and body buffers the handler keeps between requests
// carry nothing from one request into the next. Method: answers that
// replace the body (redirects, 404s, 405s), refusals read from the body
// and JSON answers, each served alone first, then all in sequence forwards
// and backwards and from several goroutines at once, must be the same
// status, headers and bytes every time. (None of them changes the store.)
func TestPooledRequestPartsCarryNothing(t *testing.T) {
	h, _ := newHandler(t)
	type request struct{ method, path, body, contentType string }
	requests := []request{
		{http.MethodPost, "/v1//withdrawals", validBody(), "application/json"},
		{http.MethodGet, "/v1/withdrawals/" + id1, "", ""},
		{http.MethodDelete, "/v1/withdrawals", "", ""},
		{http.MethodPost, "/v1/withdrawals", `{"operation_id":"` + id1 + `","amount":1}`, "application/json"},
		{http.MethodPost, "/v1/withdrawals", strings.Repeat(" ", BodyMax+1), "application/json"},
		{http.MethodPost, "/v1/withdrawals", payload(id1, addrA, "1.0000001", sluice.Asset), "application/json"},
		{http.MethodGet, "/nothing", "", ""},
		{http.MethodPost, "/v1/withdrawals", validBody(), "text/plain"},
		{http.MethodHead, "/v1/withdrawals/x", "", ""},
		{http.MethodPost, "/v1/withdrawals", "", "application/json"},
	}
	answer := func(r request) string {
		rec := do(h, r.method, r.path, r.body, r.contentType)
		var b strings.Builder
		fmt.Fprintf(&b, "%d\n", rec.Code)
		rec.Header().Write(&b)
		b.Write(rec.Body.Bytes())
		return b.String()
	}
	want := make([]string, len(requests))
	for i, r := range requests {
		want[i] = answer(r)
	}
	check := func(order string, i int, got string) {
		if got != want[i] {
			t.Errorf("%s: %s %s answered\n%s\nalone\n%s", order, requests[i].method, requests[i].path, got, want[i])
		}
	}
	for i, r := range requests {
		check("forwards", i, answer(r))
	}
	for i := len(requests) - 1; i >= 0; i-- {
		check("backwards", i, answer(requests[i]))
	}
	var wg sync.WaitGroup
	got := make([][]string, 4)
	for g := range got {
		got[g] = make([]string, len(requests))
		wg.Go(func() {
			for k := range 3 * len(requests) {
				i := (k + g) % len(requests)
				got[g][i] = answer(requests[i])
			}
		})
	}
	wg.Wait()
	for g := range got {
		for i := range requests {
			check(fmt.Sprintf("goroutine %d", g), i, got[g][i])
		}
	}
}
