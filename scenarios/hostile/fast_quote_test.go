package hostile

import (
	"encoding/json"
	"strings"
	"testing"
)

// quoteCases are strings at quote's edges: empty, plain, every ASCII
// character json.Marshal escapes or keeps, multi-byte and invalid UTF-8,
// the line and paragraph separators.
var quoteCases = []string{
	"", "a", "0a1b2c3d-0000-4000-8000-000000000001", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "12.50", "USDT",
	" cust-0", "\t", "\n", "\x00", "\x1f", "\x7f", `"`, `\`, "<", ">", "&", "'", "é", "\u2028", "\u2029", "\xff", "a\xc3",
	strings.Repeat("x", 100),
}

func marshalString(t testing.TB, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Goal: quote writes exactly what json.Marshal writes, for every ASCII
// byte alone and amid text and for the edge cases above.
func TestQuoteMatchesMarshal(t *testing.T) {
	cases := append([]string(nil), quoteCases...)
	for c := range 256 {
		cases = append(cases, string(rune(c)), "ab"+string([]byte{byte(c)})+"cd")
	}
	for _, s := range cases {
		if got, want := quote(s), marshalString(t, s); got != want {
			t.Errorf("quote(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzQuote(f *testing.F) {
	for _, s := range quoteCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := quote(s), marshalString(t, s); got != want {
			t.Errorf("quote(%q) = %s, want %s", s, got, want)
		}
	})
}

// Goal: objectBytes and object write the same object, of the length
// objectLen says, for no members, one, and several.
func TestObjectBytes(t *testing.T) {
	for _, kv := range [][][2]string{
		nil,
		{{`"a"`, `"b"`}},
		pairs(Fields{ID: "id", Customer: "c", To: "t", Amount: "1", Asset: "USDT"}),
		{{`"a"`, `1`}, {`""`, `[]`}, {` "k" `, ` {} `}},
	} {
		got, want := string(objectBytes(kv)), object(kv)
		if got != want || len(want) != objectLen(kv) {
			t.Errorf("objectBytes(%q) = %s, object %s, objectLen %d", kv, got, want, objectLen(kv))
		}
	}
}

// Goal: plainBody is the object of pairs, for values plain and escaped.
func TestPlainBodyMatchesPairs(t *testing.T) {
	for _, v := range quoteCases {
		for _, b := range []Fields{
			{ID: v, Customer: "cust-0", To: "T", Amount: "1.5", Asset: "USDT"},
			{ID: "id", Customer: v, To: v, Amount: v, Asset: v},
			{},
		} {
			if got, want := string(plainBody(b)), object(pairs(b)); got != want {
				t.Errorf("plainBody(%+v) = %s, want %s", b, got, want)
			}
		}
	}
}
