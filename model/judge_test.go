package model

import (
	"strconv"
	"testing"
)

// Goal: refOperationID's reasons, made once in a table, read as they did
// when each was made on the spot: for an id spoiled at each index in turn,
// the reason names that index, and ReadIntent prefixes it with the field.
func TestRefOperationIDReasonsByIndex(t *testing.T) {
	const good = "0f3a5b7c-1d2e-4f60-8a9b-0c1d2e3f4a5b"
	for i := range refUUIDLen {
		id := []byte(good)
		var want string
		if i == 8 || i == 13 || i == 18 || i == 23 {
			id[i] = 'x'
			want = "is not a UUID (no hyphen at index " + strconv.Itoa(i) + ")"
		} else {
			id[i] = 'g'
			want = "is not a UUID (not a hex digit at index " + strconv.Itoa(i) + ")"
		}
		if _, why := refOperationID(string(id)); why != want {
			t.Errorf("refOperationID(%q) says %q, want %q", id, why, want)
		}
		if _, why := ReadIntent(Payload{ID: string(id)}); why != "operation id "+want {
			t.Errorf("ReadIntent(id %q) says %q, want %q", id, why, "operation id "+want)
		}
	}
	for id, want := range map[string]string{"": "is missing", "x": "is not a UUID (not 36 characters)",
		"00000000-0000-0000-0000-000000000000": "is the nil UUID", good: ""} {
		if _, why := refOperationID(id); why != want {
			t.Errorf("refOperationID(%q) says %q, want %q", id, why, want)
		}
	}
}
