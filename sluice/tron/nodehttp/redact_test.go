package nodehttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice/tron"
)

// Goal: a node's URL is shown with its password as xxxxx, whether it parses
// or not, and NewClient's refusal of a bad URL names it so: the error is
// logged (serve) and printed (the audit), and a node behind basic auth is
// reached at http://user:password@host.
func TestRedactURL(t *testing.T) {
	const pw = "n0de-secret"
	for _, c := range []struct{ raw, want string }{
		{"http://127.0.0.1:9000", "http://127.0.0.1:9000"},
		{"http://sluice:" + pw + "@127.0.0.1:9000/tron", "http://sluice:xxxxx@127.0.0.1:9000/tron"},
		{"https://sluice@node.example", "https://sluice@node.example"},
		// Unparsable (a bad port, a stray '%'), the password still hidden.
		{"http://sluice:" + pw + "@127.0.0.1:notaport", "http://sluice:xxxxx@127.0.0.1:notaport"},
		{"http://sluice:" + pw + "@127.0.0.1:9000/%zz", "http://sluice:xxxxx@127.0.0.1:9000/%zz"},
		{"http://a@b:" + pw + "@127.0.0.1:notaport", "http://a@b:xxxxx@127.0.0.1:notaport"},
		// A password typed with a raw '/': the URL does not parse.
		{"http://sluice:n0de/secret@127.0.0.1:9000", "http://sluice:xxxxx@127.0.0.1:9000"},
		{"not a url", "not a url"},
	} {
		if got := RedactURL(c.raw); got != c.want {
			t.Errorf("RedactURL(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
	for _, raw := range []string{"http://sluice:" + pw + "@127.0.0.1:notaport", "ftp://sluice:" + pw + "@127.0.0.1:1",
		"http://sluice:" + pw + "@127.0.0.1:1/?q=1"} {
		_, err := NewClient(raw, Options{})
		if err == nil {
			t.Errorf("NewClient(%q) accepted it", raw)
			continue
		}
		if strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), "sluice:xxxxx@127.0.0.1") {
			t.Errorf("NewClient(%q): %v; want the URL named with its password hidden", raw, err)
		}
	}
}

// Goal: a node's password appears in no error of the client's calls, which
// the workers log, the operator API answers (503) and the audit prints:
// an answer other than 200, an answer that does not decode, a refused
// connection. The errors name the call, not the node's URL with its
// credentials.
func TestClientErrorsHideThePassword(t *testing.T) {
	const pw = "n0de-secret"
	withPassword := func(u string) string { return strings.Replace(u, "http://", "http://sluice:"+pw+"@", 1) }
	answer := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(status)
			io.WriteString(w, body)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for name, base := range map[string]string{
		"502":                answer(http.StatusBadGateway, `{"error":"upstream down"}`),
		"504":                answer(http.StatusGatewayTimeout, `{"error":"upstream slow"}`),
		"not JSON":           answer(http.StatusOK, `<html>`),
		"connection refused": closed.URL,
	} {
		c, err := NewClient(withPassword(base), Options{Timeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		_, errB := c.Broadcast(ctx, tron.Transaction{})
		_, errL := c.Lookup(ctx, tron.Txid{1})
		_, errH := c.HeadBlock(ctx)
		_, errS := c.SolidBlock(ctx)
		_, errT := c.Truth(ctx)
		for call, err := range map[string]error{"Broadcast": errB, "Lookup": errL, "HeadBlock": errH, "SolidBlock": errS, "Truth": errT} {
			if err == nil {
				t.Errorf("%s: %s succeeded", name, call)
			} else if strings.Contains(err.Error(), pw) {
				t.Errorf("%s: %s's error carries the node's password: %v", name, call, err)
			}
		}
	}
}
