package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"sluicesim/scenarios/hostile"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/tron"
)

// The intake-edge mutants. Each breaks one rule of how intake reads a
// request, the kind of leniency a parser picks up by accident, and each is
// caught by exactly one of the hostile-client categories (the tidy clients
// never send what it misreads). Like the other mutants they touch no
// production code: each is a middleware in front of the real handler that
// rewrites the request into what the lenient parser would have read it as.
var intakeMutants = []Mutant{
	{
		Name:     "id-trims-space",
		Category: "id-spelling",
		Breaks:   "the operation id is trimmed of surrounding whitespace before it is checked: \" <uuid>\" is taken for <uuid>",
		handler:  rewriteField("operation_id", func(s string) string { return strings.TrimSpace(s) }),
	},
	{
		Name:     "customer-trims-space",
		Category: "customer",
		Breaks:   "the customer id is trimmed of surrounding whitespace before it is checked: \" cust-0\" pays from cust-0",
		handler:  rewriteField("customer", func(s string) string { return strings.TrimSpace(s) }),
	},
	{
		Name:     "address-checksum-unchecked",
		Category: "address",
		Breaks:   "the recipient's base58check checksum is not verified: a mistyped address is paid",
		handler: rewriteField("to_address", func(s string) string {
			raw := hostile.Unbase58(s)
			if len(raw) != 25 || raw[0] != 0x41 {
				return s
			}
			return tron.Address(raw[:21]).String() // re-encoded with the checksum it should have had
		}),
	},
	{
		Name:     "amount-trailing-zeros",
		Category: "amount",
		Breaks:   "zeros past the sixth decimal are dropped before the decimals are counted: \"1.5000000\" is read as 1.5",
		handler: rewriteField("amount", func(s string) string {
			whole, frac, ok := strings.Cut(s, ".")
			if !ok || len(frac) <= 6 || strings.Trim(frac[6:], "0") != "" {
				return s
			}
			return whole + "." + frac[:6]
		}),
	},
	{
		Name:     "body-truncated",
		Category: "body-size",
		Breaks:   "the handler reads at most the size limit and parses what it got, instead of refusing a longer body",
		handler: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Body != nil {
					r.Body = io.NopCloser(io.LimitReader(r.Body, intake.BodyMax))
				}
				h.ServeHTTP(w, r)
			})
		},
	},
	{
		Name:     "duplicate-key-last-wins",
		Category: "json-shape",
		Breaks:   "a key given twice is not refused; the last value wins (encoding/json's habit)",
		handler: rewriteBody(func(body []byte) []byte {
			if !hasDuplicateKey(body) {
				return body
			}
			var m map[string]json.RawMessage // keeps the last of each key
			if json.Unmarshal(body, &m) != nil {
				return body
			}
			out, _ := json.Marshal(m)
			return out
		}),
	},
	{
		Name:     "content-type-ignored",
		Category: "content-type",
		Breaks:   "the Content-Type is not checked: a text/plain or form body is read as JSON",
		handler: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.Header.Del("Content-Type")
				h.ServeHTTP(w, r)
			})
		},
	},
}

// rewriteBody replaces the request body with f(body).
func rewriteBody(f func([]byte) []byte) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body != nil {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					// A body cut short stays cut short, its length
					// as declared: the mutant breaks one field's
					// reading, not the handler's reading of a body
					// whose connection closed early.
					r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), failingReader{err}))
					h.ServeHTTP(w, r)
					return
				}
				body = f(body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				r.ContentLength = int64(len(body))
			}
			h.ServeHTTP(w, r)
		})
	}
}

// failingReader fails every read with its error.
type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

// rewriteField applies f to one string field of a JSON object body, and
// leaves every other body byte for byte as it was (a body it cannot read,
// or whose field f leaves alone, passes unchanged).
func rewriteField(field string, f func(string) string) func(http.Handler) http.Handler {
	return rewriteBody(func(body []byte) []byte {
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		if d.Decode(&m) != nil {
			return body
		}
		s, ok := m[field].(string)
		if !ok || f(s) == s {
			return body
		}
		m[field] = f(s)
		out, err := json.Marshal(m)
		if err != nil {
			return body
		}
		return out
	})
}

// hasDuplicateKey reports whether the top-level object in body names a key
// twice.
func hasDuplicateKey(body []byte) bool {
	d := json.NewDecoder(bytes.NewReader(body))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return false
		}
		k, _ := t.(string)
		if seen[k] {
			return true
		}
		seen[k] = true
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

// HostileMarkdownTable is the README's table of hostile-client categories:
// each with what it sends and the mutants that only it catches.
func HostileMarkdownTable() string {
	var sb strings.Builder
	sb.WriteString("| category | cases | what the clients send | caught only by |\n| --- | --- | --- | --- |\n")
	for _, c := range hostile.Categories {
		var ms []string
		for _, m := range Mutants {
			if m.Category == c.Name {
				ms = append(ms, "`"+m.Name+"`")
			}
		}
		fmt.Fprintf(&sb, "| %s | %d | %s | %s |\n", c.Name, len(c.Cases), c.Doc, strings.Join(ms, ", "))
	}
	return sb.String()
}
