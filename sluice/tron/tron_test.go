package tron

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

const usdtText = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"

// The USDT contract address parses, has the 0x41 prefix, and prints back to
// the same text.
func TestParseAddressUSDT(t *testing.T) {
	a, err := ParseAddress(usdtText)
	if err != nil {
		t.Fatalf("ParseAddress(%q): %v", usdtText, err)
	}
	if a[0] != AddressPrefix {
		t.Errorf("prefix 0x%02x, want 0x41", a[0])
	}
	if got := a.String(); got != usdtText {
		t.Errorf("String() = %q, want %q", got, usdtText)
	}
	if a != USDTContract {
		t.Errorf("parsed %x, USDTContract is %x", a, USDTContract)
	}
	// The 20-byte body is the well-known EVM address of the contract.
	if got, want := hex.EncodeToString(a[1:]), "a614f803b6fd780986a42c78ec9c7f77e6ded13c"; got != want {
		t.Errorf("body %s, want %s", got, want)
	}
	if got := AddressFromBytes20(a.Bytes20()); got != a {
		t.Errorf("AddressFromBytes20(Bytes20()) = %x, want %x", got, a)
	}
}

// Every malformed input fails with an error wrapping ErrBadAddress, and the
// reason is the one the row names.
func TestParseAddressRejects(t *testing.T) {
	wrongPrefix := Address{0x42, 1, 2, 3}.String() // valid checksum, prefix 0x42
	zeroPrefix := Address{}.String()               // valid checksum, leading '1's
	tests := []struct {
		name   string
		in     string
		reason string
	}{
		{"empty", "", "empty"},
		{"last character changed", usdtText[:len(usdtText)-1] + "u", "checksum"},
		{"first body character changed", "TS7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "checksum"},
		{"zero", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj60", "not base58"},
		{"capital O", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLjOt", "not base58"},
		{"capital I", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLjIt", "not base58"},
		{"lower l", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLjlt", "not base58"},
		{"space", " TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", "not base58"},
		{"non-ascii", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6é", "not base58"},
		{"too short", usdtText[:20], "want 25"},
		// 33 characters can still decode to 25 bytes; the checksum catches it.
		{"one character short", usdtText[:len(usdtText)-1], "checksum"},
		{"one character long", usdtText + "1", "want 25"},
		{"leading 1 added", "1" + usdtText, "want 25"},
		{"far too long", strings.Repeat("z", 65), "too long"},
		{"wrong prefix", wrongPrefix, "prefix"},
		{"zero address", zeroPrefix, "prefix"},
		{"hex form", "41a614f803b6fd780986a42c78ec9c7f77e6ded13c", "not base58"},
		{"hex form without zeros", "41a614f8", "want 25"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseAddress(tt.in)
			if err == nil {
				t.Fatalf("ParseAddress(%q) = %s, want an error", tt.in, a)
			}
			if !errors.Is(err, ErrBadAddress) {
				t.Errorf("ParseAddress(%q) error %v does not wrap ErrBadAddress", tt.in, err)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("ParseAddress(%q) error %q, want it to mention %q", tt.in, err, tt.reason)
			}
			if a != (Address{}) {
				t.Errorf("ParseAddress(%q) returned %x with its error, want the zero address", tt.in, a)
			}
		})
	}
}

func TestMustParseAddressPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Errorf("MustParseAddress of a bad address did not panic")
		}
	}()
	MustParseAddress("T")
}

// Addresses appear in JSON in base58 form and read back.
func TestAddressJSON(t *testing.T) {
	in := struct{ A Address }{USDTContract}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"A":"` + usdtText + `"}`; string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
	var out struct{ A Address }
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Errorf("round trip = %+v, %v; want %+v", out, err, in)
	}
	if err := json.Unmarshal([]byte(`{"A":"Tnope"}`), &out); !errors.Is(err, ErrBadAddress) {
		t.Errorf("unmarshal of a bad address: %v, want ErrBadAddress", err)
	}
}

// FuzzParseAddress: ParseAddress never panics, and whatever it accepts prints
// back to exactly the input (base58check of a 0x41-prefixed payload has one
// spelling) and parses again to the same address.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{usdtText, "", "1", "T", "11111111111111111111111111", Address{}.String(),
		Address{0x42}.String(), strings.Repeat("z", 64), "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u", "0OIl"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddress(s)
		if err != nil {
			if !errors.Is(err, ErrBadAddress) {
				t.Fatalf("ParseAddress(%q) error %v does not wrap ErrBadAddress", s, err)
			}
			return
		}
		if a[0] != AddressPrefix {
			t.Fatalf("ParseAddress(%q) accepted prefix 0x%02x", s, a[0])
		}
		if got := a.String(); got != s {
			t.Fatalf("ParseAddress(%q).String() = %q", s, got)
		}
		if b, err := ParseAddress(a.String()); err != nil || b != a {
			t.Fatalf("re-parse of %q = %x, %v; want %x", a.String(), b, err, a)
		}
	})
}

func sampleRaw() RawData {
	return RawData{
		RefBlockBytes: [2]byte{0x12, 0x34},
		RefBlockHash:  [8]byte{1, 2, 3, 4, 5, 6, 7, 8},
		Expiration:    1_735_689_660_000,
		Timestamp:     1_735_689_600_123,
		FeeLimit:      100_000_000,
		Memo:          []byte("op-7/build-1"),
		Contract: TriggerSmartContract{
			Owner:    AddressFromBytes20([20]byte{0x11}),
			Contract: USDTContract,
			Data:     EncodeTransfer(AddressFromBytes20([20]byte{0xa1}), 1_500_000),
		},
	}
}

// The txid is sha256 of the canonical raw data: equal fields give equal
// txids, any field change gives another, the signature takes no part.
func TestTxid(t *testing.T) {
	base := sampleRaw()
	if got, want := base.Txid(), Txid(sha256.Sum256(base.Marshal())); got != want {
		t.Errorf("Txid() = %s, want sha256(Marshal()) = %s", got, want)
	}
	if a, b := sampleRaw(), sampleRaw(); a.Txid() != b.Txid() || !bytes.Equal(a.Marshal(), b.Marshal()) {
		t.Errorf("two builds with the same fields differ")
	}

	changes := []struct {
		name   string
		change func(*RawData)
	}{
		{"timestamp", func(r *RawData) { r.Timestamp++ }},
		{"expiration", func(r *RawData) { r.Expiration++ }},
		{"fee limit", func(r *RawData) { r.FeeLimit++ }},
		{"memo", func(r *RawData) { r.Memo = []byte("op-7/build-2") }},
		{"memo dropped", func(r *RawData) { r.Memo = nil }},
		{"ref block bytes", func(r *RawData) { r.RefBlockBytes[1]++ }},
		{"ref block hash", func(r *RawData) { r.RefBlockHash[7]++ }},
		{"amount", func(r *RawData) { r.Contract.Data = EncodeTransfer(AddressFromBytes20([20]byte{0xa1}), 1_500_001) }},
		{"recipient", func(r *RawData) { r.Contract.Data = EncodeTransfer(AddressFromBytes20([20]byte{0xa2}), 1_500_000) }},
		{"owner", func(r *RawData) { r.Contract.Owner[20]++ }},
		{"contract", func(r *RawData) { r.Contract.Contract[20]++ }},
		// Length prefixes keep field boundaries: moving a byte from the
		// memo's end into the contract's place must not collide.
		{"memo byte moved", func(r *RawData) { r.Memo = append(r.Memo, r.Contract.Owner[0]) }},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			r := sampleRaw()
			c.change(&r)
			if r.Txid() == base.Txid() {
				t.Errorf("changing the %s kept txid %s", c.name, base.Txid())
			}
		})
	}

	t.Run("memo cannot swallow the fields after it", func(t *testing.T) {
		// Without the memo's length prefix, a memo ending in r1's owner,
		// contract and data length, followed by fields cut from r1's data,
		// would serialize to r1's exact bytes: two different raw datas, one
		// txid. Build that second raw data and require a different txid.
		r1 := sampleRaw()
		d1 := make([]byte, 100)
		for i := range d1 {
			d1[i] = byte(i + 1)
		}
		const shift = 21 + 21 + 4 // owner, contract, data length
		binary.BigEndian.PutUint32(d1[42:46], uint32(len(d1)-shift))
		r1.Contract.Data = d1
		r2 := r1
		r2.Memo = append(append([]byte(nil), r1.Memo...), r1.Contract.Owner[:]...)
		r2.Memo = append(r2.Memo, r1.Contract.Contract[:]...)
		r2.Memo = binary.BigEndian.AppendUint32(r2.Memo, uint32(len(d1)))
		r2.Contract.Owner = Address(d1[0:21])
		r2.Contract.Contract = Address(d1[21:42])
		r2.Contract.Data = d1[shift:]
		if r1.Txid() == r2.Txid() {
			t.Errorf("memo %q and memo %q serialize alike: field boundaries are lost", r1.Memo, r2.Memo)
		}
	})

	t.Run("signature takes no part", func(t *testing.T) {
		a := Transaction{Raw: sampleRaw(), Signature: []byte{1, 2, 3}}
		b := Transaction{Raw: sampleRaw(), Signature: []byte{9}}
		c := Transaction{Raw: sampleRaw()}
		if a.Txid() != b.Txid() || a.Txid() != c.Txid() || a.Txid() != base.Txid() {
			t.Errorf("txids %s %s %s, want all %s", a.Txid(), b.Txid(), c.Txid(), base.Txid())
		}
	})
}

func TestTxidText(t *testing.T) {
	id := sampleRaw().Txid()
	s := id.String()
	if len(s) != 64 || strings.ToLower(s) != s {
		t.Errorf("String() = %q, want 64 lowercase hex characters", s)
	}
	if id.Short() != s[:8] {
		t.Errorf("Short() = %q, want %q", id.Short(), s[:8])
	}
	back, err := ParseTxid(s)
	if err != nil || back != id {
		t.Errorf("ParseTxid(String()) = %s, %v; want %s", back, err, id)
	}
	b, _ := json.Marshal(id)
	var fromJSON Txid
	if err := json.Unmarshal(b, &fromJSON); err != nil || fromJSON != id {
		t.Errorf("json round trip = %s, %v; want %s", fromJSON, err, id)
	}
	// Over-long hex is refused, not decoded past the 32 bytes (a node's or
	// an operator's txid of 66 or 128 characters must be an error, never a
	// panic in the worker reading the answer), and so is a 0x prefix.
	for _, bad := range []string{"", s[:63], s + "0", s + s[:2], s + s, "0x" + s, "0x" + s[2:], strings.Repeat("g", 64)} {
		if _, err := ParseTxid(bad); err == nil {
			t.Errorf("ParseTxid(%q) succeeded, want an error", bad)
		}
		var fromJSON Txid
		if err := json.Unmarshal([]byte(`"`+bad+`"`), &fromJSON); err == nil {
			t.Errorf("json.Unmarshal of %q into a Txid succeeded, want an error", bad)
		}
	}
	if (Txid{}).IsZero() != true || id.IsZero() {
		t.Errorf("IsZero wrong")
	}
}

// transfer(address,uint256) encodes as selector a9059cbb, the recipient
// left-padded to 32 bytes, the amount as a 32-byte big-endian integer.
func TestEncodeDecodeTransfer(t *testing.T) {
	if got := hex.EncodeToString(TransferSelector[:]); got != "a9059cbb" {
		t.Errorf("selector %s, want a9059cbb", got)
	}
	to := AddressFromBytes20([20]byte{0xa1, 0xb2, 19: 0xff})
	for _, amount := range []uint64{0, 1, 1_500_000, 1<<64 - 1} {
		data := EncodeTransfer(to, amount)
		if len(data) != 68 || !bytes.Equal(data[:4], TransferSelector[:]) {
			t.Fatalf("EncodeTransfer = %x, want 68 bytes starting a9059cbb", data)
		}
		gotTo, gotAmount, err := DecodeTransfer(data)
		if err != nil || gotTo != to || gotAmount != amount {
			t.Errorf("DecodeTransfer(EncodeTransfer(%s, %d)) = %s, %d, %v", to, amount, gotTo, gotAmount, err)
		}
	}
	want := "a9059cbb" + "000000000000000000000000" + hex.EncodeToString(to[1:]) +
		strings.Repeat("0", 64-6) + "16e360" // 1_500_000 = 0x16e360
	if got := hex.EncodeToString(EncodeTransfer(to, 1_500_000)); got != want {
		t.Errorf("EncodeTransfer =\n%s\nwant\n%s", got, want)
	}

	good := EncodeTransfer(to, 5)
	bad := []struct {
		name string
		mod  func([]byte) []byte
	}{
		{"empty", func([]byte) []byte { return nil }},
		{"short", func(b []byte) []byte { return b[:67] }},
		{"long", func(b []byte) []byte { return append(b, 0) }},
		{"other selector", func(b []byte) []byte { b[0] = 0x09; return b }},
		{"dirty address padding", func(b []byte) []byte { b[4] = 1; return b }},
		{"amount beyond uint64", func(b []byte) []byte { b[59] = 1; return b }},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			data := c.mod(append([]byte(nil), good...))
			if _, _, err := DecodeTransfer(data); !errors.Is(err, ErrNotTransfer) {
				t.Errorf("DecodeTransfer(%x) error %v, want ErrNotTransfer", data, err)
			}
		})
	}
}

// A successful TRC-20 transfer's log: topic0 the Transfer event, topics 1 and
// 2 the padded from and to, data the amount, address the contract's 20 bytes.
func TestTransferLog(t *testing.T) {
	if got := hex.EncodeToString(TransferTopic[:]); got != "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef" {
		t.Errorf("TransferTopic = %s", got)
	}
	from := AddressFromBytes20([20]byte{0x11})
	to := AddressFromBytes20([20]byte{0xa1, 19: 0x01})
	l := TransferLog(USDTContract, from, to, 1_500_000)
	if l.Address != USDTContract.Bytes20() {
		t.Errorf("log address %x, want the contract's 20 bytes %x", l.Address, USDTContract.Bytes20())
	}
	tr, ok := ParseTransferLog(l)
	want := Transfer{Contract: USDTContract, From: from, To: to, Amount: 1_500_000}
	if !ok || tr != want {
		t.Errorf("ParseTransferLog(TransferLog(...)) = %+v, %v; want %+v", tr, ok, want)
	}

	bad := []struct {
		name string
		mod  func(*Log)
	}{
		{"no topics", func(l *Log) { l.Topics = nil }},
		{"two topics", func(l *Log) { l.Topics = l.Topics[:2] }},
		{"four topics", func(l *Log) { l.Topics = append(l.Topics, [32]byte{}) }},
		{"other event", func(l *Log) { l.Topics[0][0] ^= 1 }},
		{"short data", func(l *Log) { l.Data = l.Data[:31] }},
		{"no data", func(l *Log) { l.Data = nil }},
		{"dirty from padding", func(l *Log) { l.Topics[1][0] = 1 }},
		{"dirty to padding", func(l *Log) { l.Topics[2][11] = 1 }},
		{"amount beyond uint64", func(l *Log) { l.Data[23] = 1 }},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			l := TransferLog(USDTContract, from, to, 1)
			l.Topics = append([][32]byte(nil), l.Topics...)
			l.Data = append([]byte(nil), l.Data...)
			c.mod(&l)
			if tr, ok := ParseTransferLog(l); ok {
				t.Errorf("ParseTransferLog accepted a malformed log: %+v", tr)
			}
		})
	}
}

// Block.Ref gives the TAPoS fields: the low 16 bits of the number and bytes
// 8..16 of the id.
func TestBlockRef(t *testing.T) {
	var id [32]byte
	for i := range id {
		id[i] = byte(i)
	}
	b := Block{Number: 0x0102_3456, ID: id}
	refBytes, refHash := b.Ref()
	if refBytes != [2]byte{0x34, 0x56} {
		t.Errorf("ref bytes %x, want 3456", refBytes)
	}
	if refHash != [8]byte{8, 9, 10, 11, 12, 13, 14, 15} {
		t.Errorf("ref hash %x, want id[8:16]", refHash)
	}
}

// The HMAC mock signer is deterministic and its signatures verify only for the
// same key and the same raw data.
func TestHMACSigner(t *testing.T) {
	ctx := context.Background()
	key := []byte("hot key")
	s := NewHMACSigner(key)
	raw := sampleRaw()
	sig1, err := s.Sign(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	sig2, _ := s.Sign(ctx, raw)
	if !bytes.Equal(sig1, sig2) {
		t.Errorf("two signatures of the same raw data differ")
	}
	key[0] = 'X' // the signer keeps its own copy
	if sig3, _ := s.Sign(ctx, raw); !bytes.Equal(sig1, sig3) {
		t.Errorf("mutating the caller's key slice changed the signature")
	}

	other := sampleRaw()
	other.Timestamp++
	tampered := append([]byte(nil), sig1...)
	tampered[0] ^= 1
	tests := []struct {
		name string
		v    Verifier
		raw  RawData
		sig  []byte
		want bool
	}{
		{"own signature", s, raw, sig1, true},
		{"tampered", s, raw, tampered, false},
		{"truncated", s, raw, sig1[:31], false},
		{"empty", s, raw, nil, false},
		{"other raw data", s, other, sig1, false},
		{"other key", NewHMACSigner([]byte("other key")), raw, sig1, false},
	}
	for _, tt := range tests {
		if got := tt.v.Verify(tt.raw, tt.sig); got != tt.want {
			t.Errorf("%s: Verify = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Read classifies every code as TRON.md's table says; anything else is
// ambiguous.
func TestRead(t *testing.T) {
	tests := []struct {
		code Code
		want Reading
	}{
		{CodeSuccess, Accepted},
		{CodeDupTransactionError, Accepted},
		{CodeServerBusy, NotTaken},
		{CodeNoConnection, NotTaken},
		{CodeBlockUnsolidified, NotTaken},
		{CodeNotEnoughEffectiveConnection, Ambiguous},
		{CodeOtherError, Ambiguous},
		{CodeSigError, HardReject},
		{CodeTooBigTransactionError, HardReject},
		{CodeContractValidateError, HardReject},
		{CodeContractExeError, HardReject},
		{CodeBandwidthError, HardReject},
		{CodeTaposError, NotProof},
		{CodeTransactionExpirationError, NotProof},
		{"TRANSACTION_QUEUED", Ambiguous},
		{"", Ambiguous},
		{"success", Ambiguous}, // codes are case-sensitive
		{"BANDWIDTH_ERROR", Ambiguous},
	}
	for _, tt := range tests {
		if got := Read(tt.code); got != tt.want {
			t.Errorf("Read(%q) = %s, want %s", tt.code, got, tt.want)
		}
	}
	if CodeBandwidthError != "BANDWITH_ERROR" {
		t.Errorf("CodeBandwidthError = %q, want TRON's spelling BANDWITH_ERROR", CodeBandwidthError)
	}
}

// Intrinsic holds the hard rejects that are properties of the bytes alone,
// answered alike by every node at any time: a signature that does not
// verify, and a size over java-tron's TRANSACTION_MAX_BYTE_SIZE, a constant
// of the protocol (BigTransactionValidator compares the serialized size with
// it), not a node's setting. Every other hard reject depends on the
// answering node's view (bandwidth, the contract's state), and a code that
// is not a hard reject is never intrinsic. A first send refused for its
// bytes fails the withdrawal at once, the hold released; any other refusal
// parks it, so a wrong answer here parks bad bytes until review, or fails a
// send another node may have taken.
func TestIntrinsic(t *testing.T) {
	intrinsic := map[Code]bool{CodeSigError: true, CodeTooBigTransactionError: true}
	for _, c := range []Code{CodeSuccess, CodeDupTransactionError, CodeServerBusy, CodeNoConnection,
		CodeBlockUnsolidified, CodeNotEnoughEffectiveConnection, CodeOtherError, CodeSigError,
		CodeTooBigTransactionError, CodeContractValidateError, CodeContractExeError, CodeBandwidthError,
		CodeTaposError, CodeTransactionExpirationError, "TRANSACTION_QUEUED", ""} {
		if got := Intrinsic(c); got != intrinsic[c] {
			t.Errorf("Intrinsic(%q) = %t, want %t", c, got, intrinsic[c])
		}
		if intrinsic[c] && Read(c) != HardReject {
			t.Errorf("%q is intrinsic but reads %s, not a hard reject", c, Read(c))
		}
	}
}

func TestStrings(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range []string{Accepted.String(), NotTaken.String(), Ambiguous.String(), HardReject.String(),
		NotProof.String(), Unknown.String(), Pending.String(), Included.String()} {
		if strings.Contains(s, "?") || seen[s] {
			t.Errorf("name %q is a fallback or a duplicate", s)
		}
		seen[s] = true
	}
	if Reading(0).String() != "reading(?)" || Status(0).String() != "status(?)" {
		t.Errorf("zero values do not print as unknown")
	}
}

// The zero Address (no address) must survive a JSON round trip, so structs
// with an unset address field can be read back.
func TestZeroAddressTextRoundTrip(t *testing.T) {
	var zero Address
	b, err := zero.MarshalText()
	if err != nil || len(b) != 0 {
		t.Fatalf("zero.MarshalText() = %q, %v; want empty", b, err)
	}
	got := USDTContract
	if err := got.UnmarshalText(b); err != nil || !got.IsZero() {
		t.Errorf("UnmarshalText(%q) = %v, %v; want the zero address", b, got, err)
	}
	b, _ = USDTContract.MarshalText()
	if err := got.UnmarshalText(b); err != nil || got != USDTContract {
		t.Errorf("USDT round trip = %v, %v", got, err)
	}
}

// Goal: the fixed-buffer base58 codec agrees with the textbook big-integer
// one on many addresses, including ones with leading zero bytes after the
// prefix.
func TestBase58MatchesBigIntCodec(t *testing.T) {
	for i := range 2000 {
		var body [20]byte
		for j := range body {
			body[j] = byte((i*131 + j*7919) >> (j % 5))
		}
		if i%3 == 0 {
			body[0], body[1] = 0, 0
		}
		a := AddressFromBytes20(body)
		sum := checksum(a[:])
		want := bigIntBase58(append(a[:], sum[:]...))
		if got := a.String(); got != want {
			t.Fatalf("String() = %s, want %s", got, want)
		}
		back, err := ParseAddress(want)
		if err != nil || back != a {
			t.Fatalf("ParseAddress(%s) = %v, %v", want, back, err)
		}
	}
}

// Goal: String agrees with the big-integer codec for every Address value,
// not only mainnet ones: any first byte (the zero Address, other
// networks' prefixes), runs of leading zero bytes of every length, and the
// extremes. Method: seeded random bytes with a random number of leading
// zeros, plus all-zero and all-0xff.
func TestAddressStringMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []Address{{}, {0x41}, {0: 0x00, 20: 0x01}}
	var ff Address
	for i := range ff {
		ff[i] = 0xff
	}
	cases = append(cases, ff)
	for range 5000 {
		var a Address
		for i := range a {
			a[i] = byte(r.Uint32())
		}
		for i := range r.IntN(len(a) + 1) {
			a[i] = 0
		}
		cases = append(cases, a)
	}
	for _, a := range cases {
		sum := checksum(a[:])
		want := bigIntBase58(append(a[:], sum[:]...))
		if got := a.String(); got != want {
			t.Fatalf("Address(%x).String() = %s, want %s", a[:], got, want)
		}
	}
}

func bigIntBase58(raw []byte) string {
	n := new(big.Int).SetBytes(raw)
	mod, radix := new(big.Int), big.NewInt(58)
	var out []byte
	for n.Sign() > 0 {
		n.DivMod(n, radix, mod)
		out = append([]byte{base58Alphabet[mod.Int64()]}, out...)
	}
	for _, b := range raw {
		if b != 0 {
			break
		}
		out = append([]byte{'1'}, out...)
	}
	return string(out)
}
