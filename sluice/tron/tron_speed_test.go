package tron

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// Goal: the precomputed-pad HMAC is crypto/hmac's HMAC-SHA256, for keys
// shorter than, equal to and longer than the block size (which is hashed
// first).
func TestHMACSignerMatchesCryptoHMAC(t *testing.T) {
	raw := RawData{Expiration: 7, Memo: []byte("op/1"), Contract: TriggerSmartContract{Data: EncodeTransfer(USDTContract, 5)}}
	id := raw.Txid()
	for _, n := range []int{0, 1, 20, 63, 64, 65, 200} {
		key := bytes.Repeat([]byte{byte(n + 1)}, n)
		m := hmac.New(sha256.New, key)
		m.Write(id[:])
		want := m.Sum(nil)
		s := NewHMACSigner(key)
		got, err := s.Sign(context.Background(), raw)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("key of %d bytes: Sign = %x, %v; want %x", n, got, err, want)
		}
		if !s.Verify(raw, want) {
			t.Errorf("key of %d bytes: Verify(crypto/hmac's signature) = false", n)
		}
		bad := bytes.Clone(want)
		bad[0] ^= 1
		if s.Verify(raw, bad) || s.Verify(raw, want[:31]) {
			t.Errorf("key of %d bytes: Verify accepted a wrong signature", n)
		}
	}
	// The zero value signs under the empty key, as NewHMACSigner(nil) and
	// the signer before the precomputed key block did.
	m := hmac.New(sha256.New, nil)
	m.Write(id[:])
	want := m.Sum(nil)
	if got, err := new(HMACSigner).Sign(context.Background(), raw); err != nil || !bytes.Equal(got, want) {
		t.Errorf("zero HMACSigner: Sign = %x, %v; want HMAC under the empty key %x", got, err, want)
	}
}

// Goal: Txid is sha256 of Marshal, and Size is its length, whether the
// serialization fits the stack buffer or spills.
func TestTxidIsHashOfMarshal(t *testing.T) {
	for _, n := range []int{0, 1, 40, 200, 225, 226, 1000} {
		raw := RawData{RefBlockBytes: [2]byte{1, 2}, Expiration: 1, Timestamp: 2, FeeLimit: 3,
			Memo: bytes.Repeat([]byte{'m'}, n), Contract: TriggerSmartContract{Owner: USDTContract, Contract: USDTContract, Data: EncodeTransfer(USDTContract, uint64(n))}}
		b := raw.Marshal()
		if got, want := raw.Txid(), Txid(sha256.Sum256(b)); got != want {
			t.Errorf("memo of %d bytes: Txid = %s, want %s", n, got, want)
		}
		if raw.Size() != len(b) {
			t.Errorf("memo of %d bytes: Size = %d, len(Marshal()) = %d", n, raw.Size(), len(b))
		}
	}
}

// Goal: the text forms of a txid are hex.EncodeToString's.
func TestTxidTextIsHex(t *testing.T) {
	var id Txid
	for i := range id {
		id[i] = byte(i*37 + 5)
	}
	if got, want := id.String(), hex.EncodeToString(id[:]); got != want {
		t.Errorf("String = %s, want %s", got, want)
	}
	if got, want := id.Short(), hex.EncodeToString(id[:4]); got != want {
		t.Errorf("Short = %s, want %s", got, want)
	}
}

var sinkString string

func BenchmarkAddressString(b *testing.B) {
	a := AddressFromBytes20([20]byte{0xc0, 1, 2, 3})
	b.ReportAllocs()
	for b.Loop() {
		sinkString = a.String()
	}
}

func BenchmarkParseAddress(b *testing.B) {
	s := USDTContract.String()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseAddress(s); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRaw() RawData {
	return RawData{Expiration: 1, Timestamp: 2, FeeLimit: 3, Memo: []byte("00000000-0000-4000-8000-000000000001/1"),
		Contract: TriggerSmartContract{Owner: USDTContract, Contract: USDTContract, Data: EncodeTransfer(USDTContract, 5)}}
}

func BenchmarkTxid(b *testing.B) {
	raw := benchRaw()
	b.ReportAllocs()
	for b.Loop() {
		_ = raw.Txid()
	}
}

func BenchmarkTxidString(b *testing.B) {
	id := benchRaw().Txid()
	b.ReportAllocs()
	for b.Loop() {
		sinkString = id.String() + id.Short()
	}
}

func BenchmarkHMACSign(b *testing.B) {
	s := NewHMACSigner([]byte("sluicesim hot wallet"))
	raw := benchRaw()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sig, _ := s.Sign(ctx, raw)
		if !s.Verify(raw, sig) {
			b.Fatal("verify failed")
		}
	}
}

// Goal: ParseAddress answers every string exactly as the byte-at-a-time
// decoder it replaced did: the same address, or the same error text.
// Method: valid addresses, each with characters changed, inserted or
// dropped, leading '1's added, and random strings over the alphabet (with
// a stray character now and then), against that decoder kept here.
func TestParseAddressMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var inputs []string
	for range 3000 {
		var a Address
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		if r.IntN(2) == 0 {
			a[0] = AddressPrefix
		}
		for i := range r.IntN(4) {
			a[i] = 0
		}
		s := a.String()
		inputs = append(inputs, s, "1"+s, s[1:], s+"1", s[:len(s)/2]+"z"+s[len(s)/2+1:])
		b := []byte(s)
		b[r.IntN(len(b))] = base58Alphabet[r.IntN(58)]
		inputs = append(inputs, string(b))
		n := 1 + r.IntN(64)
		rs := make([]byte, n)
		for i := range rs {
			rs[i] = base58Alphabet[r.IntN(58)]
			if r.IntN(50) == 0 {
				rs[i] = "0OIl+ \x00"[r.IntN(7)]
			}
		}
		inputs = append(inputs, string(rs))
	}
	inputs = append(inputs, "", strings.Repeat("1", 25), strings.Repeat("z", 34), strings.Repeat("z", 35), strings.Repeat("2", 65))
	for _, s := range inputs {
		got, gotErr := ParseAddress(s)
		want, wantErr := referenceParseAddress(s)
		if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("ParseAddress(%q) = %x, %v; want %x, %v", s, got, gotErr, want, wantErr)
		}
	}
}

// referenceParseAddress is ParseAddress as it was before the limbs.
func referenceParseAddress(s string) (Address, error) {
	var a Address
	if s == "" {
		return a, fmt.Errorf("empty string: %w", ErrBadAddress)
	}
	if len(s) > 64 {
		return a, fmt.Errorf("too long (%d characters): %w", len(s), ErrBadAddress)
	}
	var buf [25]byte
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	for i := 0; i < len(s); i++ {
		d := base58Index[s[i]]
		if d < 0 {
			return a, fmt.Errorf("character %q at %d is not base58: %w", s[i], i, ErrBadAddress)
		}
		carry := int(d)
		for j := len(buf) - 1; j >= 0; j-- {
			carry += 58 * int(buf[j])
			buf[j] = byte(carry)
			carry >>= 8
		}
		if carry != 0 {
			return a, fmt.Errorf("decodes to more than 25 bytes, want 25: %w", ErrBadAddress)
		}
	}
	first := 0
	for first < len(buf) && buf[first] == 0 {
		first++
	}
	if n := len(buf) - first + zeros; n != 25 {
		return a, fmt.Errorf("decodes to %d bytes, want 25: %w", n, ErrBadAddress)
	}
	payload, sum := buf[:21], buf[21:]
	h1 := sha256.Sum256(payload)
	h2 := sha256.Sum256(h1[:])
	if !bytes.Equal(h2[:4], sum) {
		return a, fmt.Errorf("checksum mismatch: %w", ErrBadAddress)
	}
	if payload[0] != AddressPrefix {
		return a, fmt.Errorf("prefix 0x%02x, want 0x41: %w", payload[0], ErrBadAddress)
	}
	copy(a[:], payload)
	return a, nil
}
