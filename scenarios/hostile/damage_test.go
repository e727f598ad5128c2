package hostile

import (
	"math/rand/v2"
	"testing"
)

// Goal: damage makes at most one edit, an insertion, a deletion or a
// replacement (a doubled character is an insertion), and an empty amount
// gets a character instead of a panic.
func TestDamageIsOneEdit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		a := []string{"1", "12.5", "0.000001", "1000000000"}[r.IntN(4)]
		d := damage(a, r)
		if diff := len(d) - len(a); diff < -1 || diff > 1 {
			t.Fatalf("damage(%q) = %q: more than one edit", a, d)
		}
		if !oneEdit(a, d) {
			t.Fatalf("damage(%q) = %q: not one insertion, deletion or replacement", a, d)
		}
	}
	if d := damage("", r); len(d) != 1 {
		t.Errorf("damage(\"\") = %q, want one character", d)
	}
}

// oneEdit reports whether b is a with at most one character inserted,
// deleted or replaced.
func oneEdit(a, b string) bool {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	switch {
	case len(a) == len(b):
		return i == len(a) || a[i+1:] == b[i+1:]
	case len(a)+1 == len(b):
		return a[i:] == b[i+1:]
	case len(a) == len(b)+1:
		return a[i+1:] == b[i:]
	}
	return false
}
