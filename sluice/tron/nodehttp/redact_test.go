package nodehttp

import (
	"strings"
	"testing"
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
