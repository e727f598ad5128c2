package intake

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"sluicesim/sluice"
)

// parseOperationIDBefore is ParseOperationID as it was before it stopped
// copying canonical ids and building its refusal up front: the reference
// the faster one must agree with, answer and error alike.
func parseOperationIDBefore(s string) (sluice.OperationID, error) {
	if s == "" {
		return "", &ValidationError{FieldOperationID, "missing"}
	}
	bad := &ValidationError{FieldOperationID, "must be a UUID (8-4-4-4-12 hex digits), got " + strconv.Quote(truncate(s))}
	if len(s) != uuidLen {
		return "", bad
	}
	b := []byte(s)
	for i, c := range b {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", bad
			}
			continue
		}
		switch {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			b[i] = c + ('a' - 'A')
		default:
			return "", bad
		}
	}
	id := string(b)
	if id == "00000000-0000-0000-0000-000000000000" {
		return "", &ValidationError{FieldOperationID, "the nil UUID is not an operation id"}
	}
	return sluice.OperationID(id), nil
}

func sameOperationID(t testing.TB, s string) {
	t.Helper()
	got, gotErr := ParseOperationID(s)
	want, wantErr := parseOperationIDBefore(s)
	if got != want || (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Errorf("ParseOperationID(%q) = %q, %v; want %q, %v", s, got, gotErr, want, wantErr)
	}
}

// TestParseOperationIDMatchesBefore: ids in every case mix, with a byte
// spoiled, shortened or lengthened, parse as they did.
func TestParseOperationIDMatchesBefore(t *testing.T) {
	const alphabet = "0123456789abcdefABCDEFgG-{} \x00\xff"
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range []string{"", id1, id2, "5EAFC0DE-ABCD-4BCD-8BCD-ABCDEF012345", "00000000-0000-0000-0000-000000000000",
		"{" + id1 + "}", id1[:35], id1 + "0", "5eafc0deXabcd-4bcd-8bcd-abcdef012345"} {
		sameOperationID(t, s)
	}
	for range 20000 {
		b := []byte(id1)
		for i := range b {
			if b[i] != '-' && r.IntN(2) == 0 {
				b[i] = "0123456789abcdefABCDEF"[r.IntN(22)]
			}
		}
		switch r.IntN(4) {
		case 0:
			b[r.IntN(len(b))] = alphabet[r.IntN(len(alphabet))]
		case 1:
			b = b[:r.IntN(len(b))]
		case 2:
			b = append(b, alphabet[r.IntN(len(alphabet))])
		}
		sameOperationID(t, string(b))
	}
}
