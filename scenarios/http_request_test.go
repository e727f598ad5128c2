package scenarios

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"sluicesim/model"
	"sluicesim/sluice/intake"
)

// requestPaths are paths of every kind a world sends or a hostile id makes
// of one: plain, escaped, with a query, a fragment, dots, odd bytes.
var requestPaths = []string{
	"/v1/withdrawals",
	"/v1/withdrawals/0a1b2c3d-0000-4000-8000-000000000001",
	"/v1/withdrawals/" + url.PathEscape(" 0a1b2c3d-0000-4000-8000-000000000001"),
	"/v1/withdrawals/" + url.PathEscape("{id}"),
	"/v1/withdrawals/" + url.PathEscape("a/b"),
	"/v1/withdrawals/" + url.PathEscape("é"),
	"/v1/withdrawals/" + url.PathEscape("%zz"),
	"/v1/withdrawals/x?y=1",
	"/v1/withdrawals/x#frag",
	"/v1/./withdrawals/../x",
	"/v1//withdrawals",
	"/",
	"/~user/a_b-c.d",
	"/a:b@c!d$e&f'g(h)i*j+k,l;m=n",
	"/%41",
}

// Goal: requestURL's shortcut for plain paths gives the URL the parser
// gives, for every path the worlds send and a fuzzed few more.
func TestRequestURLMatchesParse(t *testing.T) {
	for _, path := range requestPaths {
		requestURLMatches(t, path)
	}
}

func FuzzRequestURL(f *testing.F) {
	for _, path := range requestPaths {
		f.Add(path)
	}
	f.Fuzz(func(t *testing.T, path string) {
		if _, err := url.ParseRequestURI(path); err != nil {
			return // requestURL panics on what no world sends
		}
		requestURLMatches(t, path)
	})
}

func requestURLMatches(t *testing.T, path string) {
	t.Helper()
	want, err := url.ParseRequestURI(path)
	if err != nil {
		t.Fatalf("ParseRequestURI(%q): %v", path, err)
	}
	if got := requestURL(http.MethodGet, path); !reflect.DeepEqual(got, *want) {
		t.Errorf("requestURL(%q) = %#v, want %#v", path, got, *want)
	}
}

// Goal: a request built again in the same inbound is the request built
// fresh, whatever the one before it was and whatever a handler did to it
// (the intake mutants replace its body and delete its headers).
func TestInboundRebuiltIsFresh(t *testing.T) {
	type args struct {
		method, path string
		body         []byte
		contentType  string
	}
	requests := []args{
		{http.MethodPost, "/v1/withdrawals", []byte(`{"a":"b"}`), "application/json"},
		{http.MethodGet, "/v1/withdrawals/" + url.PathEscape(" odd id"), nil, ""},
		{http.MethodPost, "/v1/withdrawals", []byte(`x`), "text/plain; charset=latin1"},
		{http.MethodPost, "/v1/withdrawals", nil, ""},
		{http.MethodGet, "/v1/withdrawals/abc", nil, ""},
	}
	ctx := context.Background()
	var in inbound
	for round := range 2 {
		for _, a := range requests {
			got := in.build(ctx, a.method, a.path, a.body, a.contentType)
			want := serverRequest(ctx, a.method, a.path, a.body, a.contentType)
			if got.Method != want.Method || got.RequestURI != want.RequestURI || got.ContentLength != want.ContentLength ||
				!reflect.DeepEqual(*got.URL, *want.URL) || !reflect.DeepEqual(got.Header, want.Header) ||
				got.Proto != want.Proto || got.Context() != want.Context() {
				t.Errorf("round %d: %s %s built again = %+v, fresh %+v", round, a.method, a.path, got, want)
			}
			gotBody, _ := io.ReadAll(got.Body)
			wantBody, _ := io.ReadAll(want.Body)
			if string(gotBody) != string(wantBody) {
				t.Errorf("round %d: %s %s body %q, fresh %q", round, a.method, a.path, gotBody, wantBody)
			}
			// What a handler may do to the request it is given.
			got.Header.Del("Content-Type")
			got.Header.Set("X-Mutant", "1")
			got.Body = http.NoBody
			got.URL.Path = "/elsewhere"
		}
	}
}

// Goal: clientOperationID is the Sprintf it replaces, at the edges of both
// numbers and past twelve digits.
func TestClientOperationID(t *testing.T) {
	for _, r := range []uint32{0, 1, 0xf, 0x10, 0xdeadbeef, 1<<32 - 1} {
		for _, n := range []int{0, 1, 9, 10, 15, 16, 60, 255, 256, 1<<48 - 1, 1 << 48, 1<<62 + 5} {
			if got, want := clientOperationID(r, n), fmt.Sprintf("%08x-0000-4000-8000-%012x", r, n); got != want {
				t.Errorf("clientOperationID(%#x, %d) = %s, want %s", r, n, got, want)
			}
		}
	}
}

// Goal: a tidy client's body is json.Marshal's, byte for byte, for the
// fields tidy clients send and for fields json.Marshal escapes.
func TestTidyBodyMatchesMarshal(t *testing.T) {
	subs := []intake.Submission{
		{OperationID: "0a1b2c3d-0000-4000-8000-000000000001", Customer: "cust-0", ToAddress: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", Amount: "12.5", Asset: "USDT"},
		{OperationID: "{x}", Customer: "", ToAddress: "", Amount: "1e6", Asset: "TRX"},
		{OperationID: "a<b>&c", Customer: `q"uote\`, ToAddress: "tab\there", Amount: "é", Asset: "\u2028\xff"},
	}
	for c := range 128 {
		subs = append(subs, intake.Submission{OperationID: "id" + string(rune(c)), Customer: string(rune(c)), Amount: "1"})
	}
	for _, sub := range subs {
		if got, want := string(tidyBody(sub)), string(tidyBodyMarshal(sub)); got != want {
			t.Errorf("tidyBody(%+v) = %s, want %s", sub, got, want)
		}
	}
}

// Goal: what a client reads from an answer does not point into the
// answer's body, which its call reuses for a later request's answer once
// the client releases it (world.release). Method: read answers of every
// kind the readers take (plain, escaped, with a history, not an answer),
// scribble over the body, compare.
func TestReadAnswerKeepsNoBody(t *testing.T) {
	bodies := []string{
		`{"operation_id":"0a1b2c3d-0000-4000-8000-000000000001","customer":"cust-0","state":"requested","to_address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","amount":"1.5","asset":"USDT"}`,
		`{"operation_id":"0a1b2c3d-0000-4000-8000-000000000001","customer":"c\u0075st","state":"confirmed","to_address":"TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t","amount":"1.5","asset":"USDT","txid":"ab","builds":1,` +
			`"history":[{"from":"none","to":"requested","at":"2026-01-01T00:00:00Z"},{"from":"requested","to":"signed","at":"2026-01-01T00:00:01Z","txid":"ab","note":"x\ny"}]}`,
		`{"error":"not found","field":"operation_id"}`,
	}
	for _, b := range bodies {
		body := []byte(b)
		p, st, h, ok := model.ReadAnswer(body)
		before := fmt.Sprintf("%#v %v %#v %v", p, st, h, ok)
		for i := range body {
			body[i] = 'x'
		}
		if after := fmt.Sprintf("%#v %v %#v %v", p, st, h, ok); after != before {
			t.Errorf("reading %s: after the body is overwritten %s, was %s", b, after, before)
		}
	}
}

// Goal: clientNames cuts the names the clients had from one string.
func TestClientNames(t *testing.T) {
	for _, n := range []int{1, 9, 10, 99, 100, 12345} {
		for _, mark := range []string{"", "'", "*", "~"} {
			name, first, get := clientNames(n, mark)
			want := fmt.Sprintf("c%d%s", n, mark)
			if name != want || first != "srv-"+want+".0" || get != "srv-"+want+".get" {
				t.Errorf("clientNames(%d, %q) = %q %q %q, want %q and its servers", n, mark, name, first, get, want)
			}
		}
	}
}
