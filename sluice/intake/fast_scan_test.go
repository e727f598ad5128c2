package intake

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"sluicesim/sluice"
)

// decodeCorpus reads testdata/decode_corpus.txt: request bodies from the
// hostile-client generator and the fuzz targets' corpora.
func decodeCorpus(t testing.TB) [][]byte {
	t.Helper()
	f, err := os.Open("testdata/decode_corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := strconv.Unquote(line)
		if err != nil {
			t.Fatalf("decode_corpus.txt: %q: %v", line, err)
		}
		out = append(out, []byte(s))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameAsTokens checks that decodeSubmission answers body exactly as the
// token reader does, and reports whether the scanner answered it.
func sameAsTokens(t testing.TB, body []byte) (scanned bool) {
	t.Helper()
	got, gotErr := decodeSubmission(body)
	want, wantErr := decodeSubmissionTokens(body)
	if got != want || (gotErr == nil) != (wantErr == nil) || (gotErr != nil && *gotErr != *wantErr) {
		t.Errorf("decodeSubmission(%q) = %+v, %+v; the token reader says %+v, %+v", body, got, gotErr, want, wantErr)
	}
	_, _, scanned = scanSubmission(body)
	return scanned
}

// TestScanSubmissionMatchesTokens: the scanner answers every body it
// answers at all (success or refusal) exactly as the token reader does:
// over hand-picked edges, the corpus, byte-level mutants of both, and
// generated objects. It also checks that the scanner does answer the cases
// it is there for, so that it cannot pass by always deferring.
func TestScanSubmissionMatchesTokens(t *testing.T) {
	tidy := validBody()
	scanned := []string{
		tidy,
		" \t\r\n" + tidy + " \n",
		`{"asset":"USDT-TRC20","amount":"1","to_address":"x","customer":"c","operation_id":"y"}`,
		`{ "operation_id" : "a" , "customer" : "b" , "to_address" : "c" , "amount" : "d" , "asset" : "e" }`,
		`{"operation_id":"","customer":"","to_address":"","amount":"","asset":""}`,
		"{\"operation_id\":\"ä\",\"customer\":\"cüst\",\"to_address\":\"€\",\"amount\":\"1\",\"asset\":\"𝄞\x7f\"}",
		`{}`,
		` { } `,
		`{"operation_id":"x"}`,
		`{"":"x"}`,
		`{"memo":"x"`,
		`{"Amount":"1"}`,
		`{"ämount":"1"}`,
		`{"` + strings.Repeat("k", 100) + `":"v"}`,
		`{"` + strings.Repeat("ü", 40) + `":"v"}`,
		`{"amount":"1","amount":"2"}`,
		`{"amount":"1","amount":"2"` + "\xff",
		tidy + `{}`,
		tidy + `x`,
		tidy + "\n" + tidy,
		`{}]`,
	}
	deferred := []string{
		``,
		`  `,
		`[]`,
		`"x"`,
		`{`,
		`{"amount"`,
		`{"amount":`,
		`{"amount":"1"`,
		`{"amount":"1",}`,
		`{"amount":1}`,
		`{"amount":"1","amount":2}`,
		`{"operation_id":"x","customer":"c\u00fcst"}`,
		`{"amount":null}`,
		`{"amount":"1\u0030"}`,
		`{"amount":"\ud800"}`,
		`{"amount":"1` + "\xff" + `"}`,
		`{"operation_id":"x","customer":"c","to_address":"t","amount":"1` + "\xff" + `","asset":"a"}`,
		"{\"operation_id\":\"x\",\"customer\":\"c\",\"to_address\":\"t\",\"amount\":\"1\",\"asset\":\"a\"\v}",
		`{"amount":"1` + "\xed\xa0\x80" + `"}`,
		`{"amount":"1` + "\x00" + `"}`,
		`{"am\nount":"1"}`,
		`{"amount" "1"}`,
		`{"amount":"1" "asset":"x"}`,
		`{"amount":"1",,"asset":"x"}`,
		`{"amount":"1"]`,
		"\ufeff{}",
	}
	for _, s := range scanned {
		if !sameAsTokens(t, []byte(s)) {
			t.Errorf("scanSubmission(%q) deferred to the token reader; it is the shape the scanner is for", s)
		}
	}
	for _, s := range deferred {
		if sameAsTokens(t, []byte(s)) {
			t.Errorf("scanSubmission(%q) answered; want it left to the token reader", s)
		}
	}

	corpus := decodeCorpus(t)
	for _, s := range append(scanned, deferred...) {
		corpus = append(corpus, []byte(s))
	}
	r := rand.New(rand.NewPCG(17, 17))
	hits := 0
	for _, body := range corpus {
		if sameAsTokens(t, body) {
			hits++
		}
		for range 30 {
			if sameAsTokens(t, mutate(r, body)) {
				hits++
			}
		}
	}
	for range 20000 {
		if sameAsTokens(t, generateObject(r)) {
			hits++
		}
	}
	if hits < 5000 {
		t.Errorf("the scanner answered %d of the bodies tried; want it to answer most plain ones", hits)
	}
}

// FuzzScanSubmission: whatever the body, decodeSubmission answers as the
// token reader does. Run: go test ./sluice/intake -fuzz FuzzScanSubmission.
func FuzzScanSubmission(f *testing.F) {
	for _, body := range decodeCorpus(f) {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sameAsTokens(t, body)
	})
}

// mutateBytes are the bytes a mutant splices in: JSON's structure, its
// white space, escapes, non-ASCII and invalid UTF-8.
const mutateBytes = "{}[]\":, \t\r\n\v\f\\u0aAe-.+\x00\x1f\x7f\xc3\xa4\xff\xed"

// mutate returns a copy of body with one or two byte-level edits.
func mutate(r *rand.Rand, body []byte) []byte {
	b := append([]byte(nil), body...)
	for range 1 + r.IntN(2) {
		switch k := r.IntN(6); {
		case k == 0 && len(b) > 0: // delete a byte
			i := r.IntN(len(b))
			b = append(b[:i], b[i+1:]...)
		case k == 1: // insert a byte
			i := r.IntN(len(b) + 1)
			b = append(b[:i], append([]byte{mutateBytes[r.IntN(len(mutateBytes))]}, b[i:]...)...)
		case k == 2 && len(b) > 0: // replace a byte
			b[r.IntN(len(b))] = mutateBytes[r.IntN(len(mutateBytes))]
		case k == 3 && len(b) > 0: // truncate
			b = b[:r.IntN(len(b))]
		case k == 4 && len(b) > 0: // repeat a span
			i := r.IntN(len(b))
			j := i + r.IntN(len(b)-i+1)
			b = append(b[:j], append(append([]byte(nil), b[i:j]...), b[j:]...)...)
		default: // trailing bytes
			b = append(b, mutateBytes[r.IntN(len(mutateBytes))])
		}
	}
	return b
}

// generateObject returns a JSON-ish object of members drawn to hit the
// scanner's decisions: known, unknown, empty and repeated keys, plain and
// escaped strings, other values, white space, and now and then a broken
// separator or trailing data.
func generateObject(r *rand.Rand) []byte {
	keys := []string{FieldOperationID, FieldCustomer, FieldToAddress, FieldAmount, FieldAsset,
		"", "memo", "Amount", "amount ", "ämount", `am\u006funt`}
	values := []string{`"` + id1 + `"`, `"` + cust + `"`, `"` + addrA + `"`, `"12.50"`, `"` + sluice.Asset + `"`,
		`""`, `"ü"`, `"\n"`, `"a\"b"`, "\"\xff\"", `1.5`, `null`, `true`, `{"v":"1"}`, `["1"]`, `"1e6"`}
	space := func() string {
		return []string{"", "", "", " ", "\n", "\t ", "\r\n  "}[r.IntN(7)]
	}
	var b strings.Builder
	b.WriteString(space() + "{" + space())
	n := r.IntN(8)
	if r.IntN(4) > 0 { // mostly the five fields, in some order, with values that fit
		n = 5
	}
	order := r.Perm(5)
	for m := range n {
		if m > 0 {
			b.WriteString(space() + []string{",", ",", ",", ",", ",", ",", ",", ",", ",", ";", ",,"}[r.IntN(11)] + space())
		}
		k, v := keys[r.IntN(len(keys))], values[r.IntN(len(values))]
		if n == 5 && r.IntN(8) > 0 { // the field, with its own value or another
			k = keys[order[m]]
			if r.IntN(4) > 0 {
				v = values[order[m]]
			}
		}
		fmt.Fprintf(&b, `"%s"%s:%s%s`, k, space(), space(), v)
	}
	b.WriteString(space() + []string{"}", "}", "}", "}", "}", "}", "", "]", "}}", "} x"}[r.IntN(10)] + space())
	return []byte(b.String())
}
