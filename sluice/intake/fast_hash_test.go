package intake

import (
	"math/rand/v2"
	"testing"

	"sluicesim/sluice/tron"
)

// canonicalAddressHolds checks what Normalize and the answers rely on to
// use a submission's to_address in place of Address.String: whatever
// tron.ParseAddress accepts is spelled exactly as String writes it.
func canonicalAddressHolds(t testing.TB, s string) {
	t.Helper()
	a, err := tron.ParseAddress(s)
	if err != nil {
		return
	}
	if a.String() != s {
		t.Errorf("tron.ParseAddress(%q) accepts it as %s: intake would hash and answer with a spelling that is not the canonical one", s, a)
	}
}

// TestParsedAddressIsCanonical: random addresses, and the spellings around
// them that base58 could read as the same bytes (leading '1's, which are
// zero bytes), parse only in the canonical spelling.
func TestParsedAddressIsCanonical(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		var body [20]byte
		for i := range body {
			body[i] = byte(r.IntN(256))
		}
		if r.IntN(4) == 0 {
			clear(body[:r.IntN(21)]) // leading zero bytes after the prefix
		}
		a := tron.AddressFromBytes20(body)
		s := a.String()
		if got, err := tron.ParseAddress(s); err != nil || got != a {
			t.Fatalf("tron.ParseAddress(%q) = %v, %v; want %v", s, got, err, a)
		}
		for _, v := range []string{s, "1" + s, "11" + s, s[1:], "1" + s[1:]} {
			canonicalAddressHolds(t, v)
		}
		var payload tron.Address // another prefix, checksum right
		copy(payload[:], a[:])
		payload[0] = byte(r.IntN(256))
		canonicalAddressHolds(t, payload.String())
		canonicalAddressHolds(t, "1"+payload.String())
	}
	canonicalAddressHolds(t, tron.Address{}.String())
	canonicalAddressHolds(t, "1"+tron.Address{}.String())
}

// FuzzParsedAddressIsCanonical: TestParsedAddressIsCanonical over any
// string. Run: go test ./sluice/intake -fuzz FuzzParsedAddressIsCanonical.
func FuzzParsedAddressIsCanonical(f *testing.F) {
	f.Add(addrA)
	f.Add("1" + addrA)
	f.Add(tron.USDTContract.String())
	f.Add(tron.Address{}.String())
	f.Fuzz(func(t *testing.T, s string) { canonicalAddressHolds(t, s) })
}
