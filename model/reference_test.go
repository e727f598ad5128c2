package model

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
)

// The reference (reference.go) is the model's own reading of a request. The
// table tests pin it to the written contract; the property tests compare it
// with production over many seeded random inputs, most of them near misses
// of valid ones; the planted-bug tests show that each comparison can fail.

// refSamples is how many random inputs each comparison draws.
const refSamples = 20_000

// ---- table tests ----

func TestReferenceUnitsTable(t *testing.T) {
	for _, c := range []struct {
		name, in string
		units    uint64 // 0: refused
	}{
		{"whole", "12", 12_000_000},
		{"one decimal", "1.5", 1_500_000},
		{"trailing zero, same units as 1.5", "1.50", 1_500_000},
		{"six decimals", "1.500000", 1_500_000},
		{"smallest", "0.000001", 1},
		{"lone zero integer part", "0.5", 500_000},
		{"largest", "1000000000", 1_000_000_000_000_000},
		{"largest with zero decimals", "1000000000.000000", 1_000_000_000_000_000},
		{"just under largest", "999999999.999999", 999_999_999_999_999},
		{"just over largest", "1000000000.000001", 0},
		{"over largest", "1000000001", 0},
		{"overflows uint64", "18446744073709551616", 0},
		{"zero", "0", 0},
		{"zero with decimals", "0.000000", 0},
		{"seven decimals, all zero", "1.0000000", 0},
		{"seven decimals", "0.0000001", 0},
		{"exponent", "1e6", 0},
		{"negative", "-1", 0},
		{"plus sign", "+1", 0},
		{"leading space", " 1", 0},
		{"trailing space", "1 ", 0},
		{"leading zero", "01", 0},
		{"leading zero with decimals", "00.5", 0},
		{"point, no decimals", "1.", 0},
		{"no integer part", ".5", 0},
		{"two points", "1.2.3", 0},
		{"comma", "1,5", 0},
		{"underscore", "1_000", 0},
		{"arabic-indic digit", "\u0663", 0},
		{"fullwidth digit", "\uff11", 0},
		{"empty", "", 0},
		{"hex", "0x10", 0},
		{"longer than 64 bytes", strings.Repeat("1", 65), 0},
	} {
		units, why := refUnits(c.in)
		if c.units == 0 {
			if why == "" {
				t.Errorf("%s: refUnits(%q) = %d, want refused", c.name, c.in, units)
			}
			continue
		}
		if why != "" || units != c.units {
			t.Errorf("%s: refUnits(%q) = %d, %q; want %d", c.name, c.in, units, why, c.units)
		}
	}
}

const (
	refContractText = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
	refContractHex  = "41a614f803b6fd780986a42c78ec9c7f77e6ded13c"
	// refZeroText is the well-known TRON "black hole" address.
	refZeroText = "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb"
)

// Goal: the contract's bytes, as the model's own decoder reads them, are the
// ones published for USDT-TRC20.
func TestReferenceAddressContractBytes(t *testing.T) {
	if got := hex.EncodeToString(refUSDTContract[:]); got != refContractHex {
		t.Errorf("USDT contract decodes to %s, want %s", got, refContractHex)
	}
	if got := Base58Address(refUSDTContract); got != refContractText {
		t.Errorf("Base58Address(contract) = %s, want %s", got, refContractText)
	}
	if got := Base58Address(refZeroAddress); got != refZeroText {
		t.Errorf("Base58Address(zero) = %s, want %s", got, refZeroText)
	}
}

// refEncodeWithPrefix encodes 20 fixed bytes behind the given first byte,
// with a correct checksum.
func refEncodeWithPrefix(prefix byte) string {
	a := [21]byte{prefix}
	for i := 1; i < 21; i++ {
		a[i] = byte(7 * i)
	}
	return Base58Address(a)
}

func TestReferenceAddressTable(t *testing.T) {
	valid := refEncodeWithPrefix(0x41)
	badChecksum := []byte(valid) // the last character changed: same length, wrong sum
	if last := &badChecksum[len(badChecksum)-1]; *last == '2' {
		*last = '3'
	} else {
		*last = '2'
	}
	twenty := refBase58Encode(refWithChecksum(make([]byte, 20)))
	twentyTwo := refBase58Encode(refWithChecksum(append([]byte{0x41}, make([]byte, 21)...)))
	for _, c := range []struct {
		name, in string
		ok       bool
	}{
		{"valid", valid, true},
		{"USDT contract (refused only by ReadIntent)", refContractText, true},
		{"zero address (refused only by ReadIntent)", refZeroText, true},
		{"bad checksum", string(badChecksum), false},
		{"valid checksum, prefix 0xa0", refEncodeWithPrefix(0xa0), false},
		{"valid checksum, prefix 0x00 (leading '1')", refEncodeWithPrefix(0x00), false},
		{"valid checksum, 20-byte payload", twenty, false},
		{"valid checksum, 22-byte payload", twentyTwo, false},
		{"extra leading '1' (a zero byte more)", "1" + valid, false},
		{"character 0", "0" + valid[1:], false},
		{"character O", valid[:5] + "O" + valid[6:], false},
		{"character I", valid[:5] + "I" + valid[6:], false},
		{"character l", valid[:5] + "l" + valid[6:], false},
		{"lower-cased", strings.ToLower(valid), false},
		{"dropped character", valid[:len(valid)-1], false},
		{"hex form", "41" + strings.Repeat("00", 20), false},
		{"leading space", " " + valid, false},
		{"empty", "", false},
		{"very long", strings.Repeat("z", 10_000), false},
	} {
		a, why := refAddress(c.in)
		if (why == "") != c.ok {
			t.Errorf("%s: refAddress(%q) reason %q, want ok=%v", c.name, c.in, why, c.ok)
			continue
		}
		if c.ok && Base58Address(a) != c.in {
			t.Errorf("%s: Base58Address(refAddress(%q)) = %q", c.name, c.in, Base58Address(a))
		}
	}
}

func TestReferenceOperationIDTable(t *testing.T) {
	const lower = "0f8e2b6a-3c4d-4e5f-9a8b-7c6d5e4f3a2b"
	for _, c := range []struct {
		name, in string
		want     sluice.OperationID // "": refused
	}{
		{"lowercase", lower, lower},
		{"upper case canonicalized", strings.ToUpper(lower), lower},
		{"mixed case canonicalized", "0F8e2B6a-3C4d-4E5f-9A8b-7C6d5E4f3A2b", lower},
		{"all digits", "12345678-1234-1234-1234-123456789012", "12345678-1234-1234-1234-123456789012"},
		{"almost nil", "00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000001"},
		{"nil UUID", "00000000-0000-0000-0000-000000000000", ""},
		{"empty", "", ""},
		{"braces", "{" + lower + "}", ""},
		{"urn", "urn:uuid:" + lower, ""},
		{"no hyphens", strings.ReplaceAll(lower, "-", ""), ""},
		{"hyphen moved", "0f8e2b6a3-c4d-4e5f-9a8b-7c6d5e4f3a2b", ""},
		{"not hex", "0f8e2b6g-3c4d-4e5f-9a8b-7c6d5e4f3a2b", ""},
		{"too short", lower[:35], ""},
		{"too long", lower + "0", ""},
		{"trailing space", lower[:35] + " ", ""},
		{"non-ASCII, 36 bytes", "\u00e9" + lower[2:], ""},
		{"fullwidth hex digit", "\uff10" + lower[3:], ""},
	} {
		id, why := refOperationID(c.in)
		if c.want == "" {
			if why == "" {
				t.Errorf("%s: refOperationID(%q) = %q, want refused", c.name, c.in, id)
			}
			continue
		}
		if why != "" || id != c.want {
			t.Errorf("%s: refOperationID(%q) = %q, %q; want %q", c.name, c.in, id, why, c.want)
		}
	}
}

func TestReferenceCustomerTable(t *testing.T) {
	for _, c := range []struct {
		name, in string
		ok       bool
	}{
		{"plain", "cust-1", true},
		{"every kind of allowed byte", "aZ09._:-", true},
		{"one byte", "x", true},
		{"64 bytes", strings.Repeat("c", 64), true},
		{"upper case (another customer, not refused)", "CUST-1", true},
		{"only punctuation", "._:-", true},
		{"empty", "", false},
		{"65 bytes", strings.Repeat("c", 65), false},
		{"leading space", " cust-1", false},
		{"trailing newline", "cust-1\n", false},
		{"tab", "cust\t1", false},
		{"NUL byte", "cust\x001", false},
		{"slash", "cust/1", false},
		{"at sign", "cust@1", false},
		{"plus", "cust+1", false},
		{"non-ASCII letter", "c\u00fcst", false},
		{"fullwidth digit", "cust-\uff11", false},
		{"invalid UTF-8", "cust-\xff", false},
		{"case bit cleared on a digit (0x11)", "cust-\x11", false},
	} {
		if why := refCustomer(c.in); (why == "") != c.ok {
			t.Errorf("%s: refCustomer(%q) = %q, want ok=%v", c.name, c.in, why, c.ok)
		}
	}
}

// refValidPayload is a valid payload for table tests.
func refValidPayload() Payload {
	return Payload{ID: "0f8e2b6a-3c4d-4e5f-9a8b-7c6d5e4f3a2b", Customer: "cust-1", To: refEncodeWithPrefix(0x41), Amount: "12.5", Asset: sluice.Asset}
}

func TestReadIntentTable(t *testing.T) {
	ok := refValidPayload()
	with := func(edit func(*Payload)) Payload { p := ok; edit(&p); return p }
	for _, c := range []struct {
		name   string
		in     Payload
		prefix string // "" for valid; else how the reason starts
	}{
		{"valid", ok, ""},
		{"upper-case id", with(func(p *Payload) { p.ID = strings.ToUpper(p.ID) }), ""},
		{"missing id", with(func(p *Payload) { p.ID = "" }), "operation id"},
		{"upper-case customer (another one)", with(func(p *Payload) { p.Customer = "CUST-1" }), ""},
		{"longest customer", with(func(p *Payload) { p.Customer = strings.Repeat("c", 64) }), ""},
		{"missing customer", with(func(p *Payload) { p.Customer = "" }), "customer is missing"},
		{"customer too long", with(func(p *Payload) { p.Customer = strings.Repeat("c", 65) }), "customer is longer than 64 bytes"},
		{"customer with a space", with(func(p *Payload) { p.Customer = "cust 1" }), "customer has a byte"},
		{"USDT contract", with(func(p *Payload) { p.To = refContractText }), "recipient is the USDT contract"},
		{"zero address", with(func(p *Payload) { p.To = refZeroText }), "recipient is the all-zero address"},
		{"prefix 0xa0", with(func(p *Payload) { p.To = refEncodeWithPrefix(0xa0) }), "recipient"},
		{"seven decimals", with(func(p *Payload) { p.Amount = "1.0000000" }), "amount has more than 6 decimals"},
		{"lower-case asset", with(func(p *Payload) { p.Asset = "usdt-trc20" }), "asset"},
		{"missing asset", with(func(p *Payload) { p.Asset = "" }), "asset is missing"},
		{"every field bad: id first", Payload{ID: "x", Customer: " ", To: "y", Amount: "z", Asset: "w"}, "operation id"},
		{"customer, to, amount, asset bad: customer first", with(func(p *Payload) { p.Customer, p.To, p.Amount, p.Asset = "", "y", "z", "w" }), "customer"},
		{"to, amount, asset bad: to first", with(func(p *Payload) { p.To, p.Amount, p.Asset = "y", "z", "w" }), "recipient"},
		{"amount, asset bad: amount first", with(func(p *Payload) { p.Amount, p.Asset = "z", "w" }), "amount"},
	} {
		in, why := ReadIntent(c.in)
		switch {
		case c.prefix == "" && why != "":
			t.Errorf("%s: ReadIntent refused: %s", c.name, why)
		case c.prefix == "" && (in.ID != "0f8e2b6a-3c4d-4e5f-9a8b-7c6d5e4f3a2b" || in.Units != 12_500_000 ||
			string(in.Customer) != c.in.Customer || Base58Address(in.To) != ok.To || in.Asset != sluice.Asset):
			t.Errorf("%s: ReadIntent = %+v", c.name, in)
		case c.prefix != "" && !strings.HasPrefix(why, c.prefix):
			t.Errorf("%s: ReadIntent reason %q, want it to start %q", c.name, why, c.prefix)
		}
	}
}

func TestSameInstructionTable(t *testing.T) {
	a, _ := ReadIntent(refValidPayload())
	respelt := refValidPayload()
	respelt.ID, respelt.Amount = strings.ToUpper(respelt.ID), "12.500000"
	b, why := ReadIntent(respelt)
	if why != "" || !SameInstruction(a, b) {
		t.Errorf("a respelling is not the same instruction: %q %+v %+v", why, a, b)
	}
	for _, c := range []struct {
		field string
		edit  func(*Intent)
	}{
		{"id", func(i *Intent) { i.ID = "0f8e2b6a-3c4d-4e5f-9a8b-7c6d5e4f3a2c" }},
		{"customer", func(i *Intent) { i.Customer = "cust-2" }},
		{"customer's letter case", func(i *Intent) { i.Customer = "CUST-1" }},
		{"recipient", func(i *Intent) { i.To[20] ^= 1 }},
		{"units", func(i *Intent) { i.Units++ }},
		{"asset", func(i *Intent) { i.Asset = "other" }},
	} {
		b := a
		c.edit(&b)
		if SameInstruction(a, b) {
			t.Errorf("intents differing in %s are the same instruction", c.field)
		}
	}
}

// ---- generators: valid inputs and their near misses ----

func refRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5111ce)) }

// refFormatUnits writes units as a decimal with decimals digits after the
// point (0 for none), which must be at least what units needs.
func refFormatUnits(units uint64, decimals int) string {
	whole := strconv.FormatUint(units/1_000_000, 10)
	if decimals == 0 {
		return whole
	}
	frac := fmt.Sprintf("%06d", units%1_000_000)
	return whole + "." + frac[:decimals]
}

// refMinDecimals is the fewest decimals that write units exactly.
func refMinDecimals(units uint64) int {
	frac := strings.TrimRight(fmt.Sprintf("%06d", units%1_000_000), "0")
	return len(frac)
}

// refSpellUnits writes units with a random number of trailing zeros.
func refSpellUnits(r *rand.Rand, units uint64) string {
	lo := refMinDecimals(units)
	return refFormatUnits(units, lo+r.IntN(7-lo))
}

func refRandomUnits(r *rand.Rand) uint64 {
	switch r.IntN(6) {
	case 0:
		return 1 + r.Uint64N(1_000_000) // under 1 USDT
	case 1:
		return 1_000_000 * (1 + r.Uint64N(1_000_000_000)) // whole USDT
	case 2:
		return []uint64{1, 10, 100_000, 1_000_000, 999_999_999_999_999, 1_000_000_000_000_000}[r.IntN(6)]
	case 3:
		return 1 + r.Uint64N(100_000_000) // under 100 USDT
	default:
		return 1 + r.Uint64N(1_000_000_000_000_000)
	}
}

// refJunk are characters a mutation may insert: grammar breakers, look-alike
// digits, whitespace, multi-byte runes.
var refJunk = []string{"-", "+", "e", "E", " ", "\t", "_", ",", ".", "0", "1", "9", "x", "\x00", "\u0663", "\uff11", "\u00e9", "{", "}", ":"}

// refMutate applies one random edit to s: drop, insert, duplicate or replace
// a byte, flip a letter's case, or prepend/append a character.
func refMutate(r *rand.Rand, s string, alphabet string) string {
	pick := func() string {
		if alphabet != "" && r.IntN(2) == 0 {
			return string(alphabet[r.IntN(len(alphabet))])
		}
		return refJunk[r.IntN(len(refJunk))]
	}
	if s == "" {
		return pick()
	}
	i := r.IntN(len(s))
	switch r.IntN(8) {
	case 0:
		return s[:i] + s[i+1:]
	case 1:
		return s[:i] + pick() + s[i:]
	case 2:
		return s[:i] + s[i:i+1] + s[i:]
	case 3:
		return s[:i] + pick() + s[i+1:]
	case 4: // flip the case of one letter (if s has any)
		b := []byte(s)
		for k := range len(b) {
			j := (i + k) % len(b)
			if c := b[j]; 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
				b[j] ^= 0x20
				break
			}
		}
		return string(b)
	case 5:
		return pick() + s
	case 6:
		return s + pick()
	default:
		return s[:i] // truncate
	}
}

// refNearMiss returns valid, or with probability 3/5 one or two mutations
// of it.
func refNearMiss(r *rand.Rand, valid, alphabet string) string {
	switch r.IntN(5) {
	case 0, 1:
		return valid
	case 2:
		return refMutate(r, refMutate(r, valid, alphabet), alphabet)
	default:
		return refMutate(r, valid, alphabet)
	}
}

func refGenAmount(r *rand.Rand) string {
	if r.IntN(10) == 0 {
		return []string{"0", "0.0", "0.000000", "1.0000000", "0.0000001", "1000000000.000001", "1000000001",
			"18446744073709551616", "99999999999999999999", "1e6", "-1", "01", "1.", ".5", "",
			strings.Repeat("1", 65), "0." + strings.Repeat("0", 63) + "1"}[r.IntN(17)]
	}
	return refNearMiss(r, refSpellUnits(r, refRandomUnits(r)), "0123456789.")
}

func refRandomAddressBytes(r *rand.Rand) [21]byte {
	a := [21]byte{0x41}
	for i := 1; i < 21; i++ {
		a[i] = byte(r.Uint32())
	}
	switch r.IntN(8) {
	case 0: // any first byte, leading zeros included
		a[0] = []byte{0x00, 0xa0, 0x40, 0x42, byte(r.Uint32())}[r.IntN(5)]
	case 1: // runs of zero bytes, which base58 writes as '1's
		for i := 0; i < r.IntN(21); i++ {
			a[i] = 0
		}
	case 2:
		a = refZeroAddress
	}
	return a
}

// refGenAddress draws a string that is a valid address, a near miss of one,
// or a valid base58check string of another length. Valid strings come half
// from the model's encoder and half from production's, so that neither
// encoder alone decides what is tried.
func refGenAddress(r *rand.Rand) string {
	switch r.IntN(20) {
	case 0:
		n := []int{0, 1, 19, 20, 22, 24, 25}[r.IntN(7)]
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if n > 0 {
			b[0] = 0x41
		}
		return refBase58Encode(refWithChecksum(b))
	case 1:
		return refContractText
	}
	a := refRandomAddressBytes(r)
	s := Base58Address(a)
	if r.IntN(2) == 0 {
		s = tron.Address(a).String()
	}
	return refNearMiss(r, s, refBase58Alphabet)
}

func refRandomUUID(r *rand.Rand) string {
	const hexdigits = "0123456789abcdefABCDEF"
	b := make([]byte, 0, 36)
	for i := range 36 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			b = append(b, '-')
			continue
		}
		b = append(b, hexdigits[r.IntN(len(hexdigits))])
	}
	return string(b)
}

func refGenID(r *rand.Rand) string {
	id := refRandomUUID(r)
	switch r.IntN(12) {
	case 0:
		return []string{"00000000-0000-0000-0000-000000000000", "", "00000000-0000-0000-0000-000000000001"}[r.IntN(3)]
	case 1:
		return "{" + id + "}"
	case 2:
		return "urn:uuid:" + id
	case 3:
		return strings.ReplaceAll(id, "-", "")
	case 4: // 36 bytes, but one character is two bytes
		i := r.IntN(35)
		return id[:i] + "\u00e9" + id[i+2:]
	}
	return refNearMiss(r, id, "0123456789abcdefABCDEF-gG")
}

// refCustomerAlphabet is every byte a customer id may hold.
const refCustomerAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-"

// refRandomCustomer is a valid customer id of 1 to 64 bytes, short ones
// more often.
func refRandomCustomer(r *rand.Rand) string {
	n := 1 + r.IntN(12)
	if r.IntN(8) == 0 {
		n = 1 + r.IntN(64)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = refCustomerAlphabet[r.IntN(len(refCustomerAlphabet))]
	}
	return string(b)
}

// refGenCustomer draws a valid customer id, a near miss of one (junk bytes
// included), or one at or just past the length limit.
func refGenCustomer(r *rand.Rand) string {
	switch r.IntN(10) {
	case 0:
		return []string{"", strings.Repeat("c", 64), strings.Repeat("c", 65), strings.Repeat("9", 63) + "\x00",
			"cust-1 ", "\ufeffcust-1", "cust\u20101", "cust-\x11"}[r.IntN(8)]
	}
	return refNearMiss(r, refRandomCustomer(r), refCustomerAlphabet+"/@+ \t")
}

func refGenAsset(r *rand.Rand) string {
	if r.IntN(6) != 0 {
		return sluice.Asset
	}
	return []string{"", "usdt-trc20", "USDT", "USDT-TRC20 ", " USDT-TRC20", "USDT_TRC20", "USDT-TRC2O", "USDT-ERC20", "TRX"}[r.IntN(9)]
}

// refGenPayload draws a valid payload with at most one field redrawn from
// its near-miss generator, or now and then four redrawn fields.
func refGenPayload(r *rand.Rand) Payload {
	p, _ := refValidRandomPayload(r)
	switch r.IntN(8) {
	case 0:
		p.ID = refGenID(r)
	case 1:
		p.To = refGenAddress(r)
	case 2:
		p.Amount = refGenAmount(r)
	case 3:
		p.Asset = refGenAsset(r)
	case 4:
		p = Payload{ID: refGenID(r), Customer: refGenCustomer(r), To: refGenAddress(r), Amount: refGenAmount(r), Asset: refGenAsset(r)}
	case 5:
		p.Customer = refGenCustomer(r)
	}
	return p
}

// refValidRandomPayload is a payload the contract accepts, and its units.
func refValidRandomPayload(r *rand.Rand) (Payload, uint64) {
	a := refRandomAddressBytes(r)
	a[0] = 0x41
	a[1] |= 1 // not the zero address, and (by a mile) not the contract
	units := refRandomUnits(r)
	return Payload{ID: refRandomUUID(r), Customer: refRandomCustomer(r), To: Base58Address(a), Amount: refSpellUnits(r, units), Asset: sluice.Asset}, units
}

// refRespellID flips the case of a random subset of the id's letters.
func refRespellID(r *rand.Rand, id string) string {
	b := []byte(id)
	for i, c := range b {
		if ('a' <= c && c <= 'f' || 'A' <= c && c <= 'F') && r.IntN(2) == 0 {
			b[i] = c ^ 0x20
		}
	}
	return string(b)
}

// refFlipCase flips the case of every letter of s, or appends one byte to
// an s without letters: a valid customer id other than s.
func refFlipCase(s string) string {
	b := []byte(s)
	letters := false
	for i, c := range b {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
			b[i], letters = c^0x20, true
		}
	}
	if !letters && len(b) < 64 {
		return s + "x"
	}
	if !letters {
		return "x" + s[1:]
	}
	return string(b)
}

// refGenPair draws two valid payloads that are often the same instruction
// spelt differently, or differ in exactly one field.
func refGenPair(r *rand.Rand) (Payload, Payload) {
	p, units := refValidRandomPayload(r)
	other, otherUnits := refValidRandomPayload(r)
	q := p
	switch r.IntN(11) {
	case 0: // byte-identical
	case 1, 10: // the same instruction, spelt differently
		q.ID, q.Amount = refRespellID(r, p.ID), refSpellUnits(r, units)
	case 8:
		q.Customer = other.Customer
	case 9: // the customer's letter case flipped: another customer
		q.Customer = refFlipCase(p.Customer)
	case 2:
		q.ID = other.ID
	case 3:
		q.To = other.To
	case 4: // one base unit apart (refRandomUnits never draws 0)
		if units < 1_000_000_000_000_000 {
			q.Amount = refSpellUnits(r, units+1)
		} else {
			q.Amount = refSpellUnits(r, units-1)
		}
	case 5:
		q.Amount = refSpellUnits(r, otherUnits)
	case 6: // respelt, and another recipient
		q.ID, q.Amount, q.To = refRespellID(r, p.ID), refSpellUnits(r, units), other.To
	default: // respelt id, other amount
		q.ID, q.Amount = refRespellID(r, p.ID), refSpellUnits(r, otherUnits)
	}
	if r.IntN(2) == 0 {
		return q, p
	}
	return p, q
}

// ---- comparisons: each takes the production function as a parameter ----

// refAnswer describes one side's answer in a disagreement.
func refAnswer(ok bool, v any) string {
	if !ok {
		return "refused"
	}
	return fmt.Sprintf("accepted %v", v)
}

func refWhy(why string, v any) string {
	if why != "" {
		return "refused (" + why + ")"
	}
	return fmt.Sprintf("accepted %v", v)
}

// compareUnits reads n random amounts with refUnits and prod and lists
// every disagreement.
func compareUnits(n int, seed uint64, prod func(string) (uint64, bool)) []string {
	r := refRand(seed)
	var out []string
	for range n {
		s := refGenAmount(r)
		ref, why := refUnits(s)
		got, ok := prod(s)
		if (why == "") != ok || ok && ref != got {
			out = append(out, fmt.Sprintf("amount %q: reference %s, production %s", s, refWhy(why, ref), refAnswer(ok, got)))
		}
	}
	return out
}

// compareAddresses reads n random address strings with refAddress and prod.
func compareAddresses(n int, seed uint64, prod func(string) ([21]byte, bool)) []string {
	r := refRand(seed)
	var out []string
	for range n {
		s := refGenAddress(r)
		ref, why := refAddress(s)
		got, ok := prod(s)
		if (why == "") != ok || ok && ref != got {
			out = append(out, fmt.Sprintf("address %q: reference %s, production %s",
				s, refWhy(why, hex.EncodeToString(ref[:])), refAnswer(ok, hex.EncodeToString(got[:]))))
		}
	}
	return out
}

// compareEncodings writes n random 21-byte values with Base58Address and
// prod, and checks the model's decoder reads its own encoding back.
func compareEncodings(n int, seed uint64, prod func([21]byte) string) []string {
	r := refRand(seed)
	var out []string
	for range n {
		a := refRandomAddressBytes(r)
		ref, got := Base58Address(a), prod(a)
		if ref != got {
			out = append(out, fmt.Sprintf("encode %x: reference %q, production %q", a, ref, got))
		}
		if back, why := refBase58Decode(ref, 25); why != "" || string(back) != string(refWithChecksum(a[:])) {
			out = append(out, fmt.Sprintf("encode %x: reference %q does not decode back (%s)", a, ref, why))
		}
	}
	return out
}

// compareIDs reads n random ids with refOperationID and prod.
func compareIDs(n int, seed uint64, prod func(string) (sluice.OperationID, bool)) []string {
	r := refRand(seed)
	var out []string
	for range n {
		s := refGenID(r)
		ref, why := refOperationID(s)
		got, ok := prod(s)
		if (why == "") != ok || ok && ref != got {
			out = append(out, fmt.Sprintf("id %q: reference %s, production %s", s, refWhy(why, ref), refAnswer(ok, got)))
		}
	}
	return out
}

// compareCustomers reads n random customer ids with refCustomer and prod.
func compareCustomers(n int, seed uint64, prod func(string) bool) []string {
	r := refRand(seed)
	var out []string
	for range n {
		s := refGenCustomer(r)
		why := refCustomer(s)
		if ok := prod(s); (why == "") != ok {
			out = append(out, fmt.Sprintf("customer %q: reference %s, production %s", s, refWhy(why, s), refAnswer(ok, s)))
		}
	}
	return out
}

// compareIntents reads n random payloads with ReadIntent and prod.
func compareIntents(n int, seed uint64, prod func(Payload) (Intent, bool)) []string {
	r := refRand(seed)
	var out []string
	for range n {
		p := refGenPayload(r)
		ref, why := ReadIntent(p)
		got, ok := prod(p)
		if (why == "") != ok || ok && ref != got {
			out = append(out, fmt.Sprintf("payload %+v: reference %s, production %s", p, refWhy(why, ref), refAnswer(ok, got)))
		}
	}
	return out
}

// compareHashEquivalence draws n pairs of valid payloads and checks that
// hash equality is exactly SameInstruction: equal hashes for the same
// instruction however spelt, different hashes for different ones.
func compareHashEquivalence(n int, seed uint64, hash func(Payload) (string, bool)) []string {
	r := refRand(seed)
	var out []string
	for range n {
		p, q := refGenPair(r)
		a, whyA := ReadIntent(p)
		b, whyB := ReadIntent(q)
		hp, okP := hash(p)
		hq, okQ := hash(q)
		if whyA != "" || whyB != "" || !okP || !okQ {
			out = append(out, fmt.Sprintf("pair %+v / %+v: a payload was refused (reference %q %q, production %v %v)",
				p, q, whyA, whyB, okP, okQ))
			continue
		}
		if same, equal := SameInstruction(a, b), hp == hq; same != equal {
			out = append(out, fmt.Sprintf("pair %+v / %+v: reference same instruction %v, production equal hashes %v",
				p, q, same, equal))
		}
	}
	return out
}

// ---- production, adapted to the comparisons' shapes ----

func prodUnits(s string) (uint64, bool) {
	a, err := money.Parse(s)
	return uint64(a), err == nil
}

func prodAddress(s string) ([21]byte, bool) {
	a, err := tron.ParseAddress(s)
	return [21]byte(a), err == nil
}

func prodEncode(a [21]byte) string { return tron.Address(a).String() }

func prodID(s string) (sluice.OperationID, bool) {
	id, err := intake.ParseOperationID(s)
	return id, err == nil
}

func prodCustomer(s string) bool { return sluice.CustomerID(s).Valid() == "" }

func prodNormalize(p Payload) (sluice.NewOperation, error) {
	return intake.Normalize(intake.Submission{OperationID: p.ID, Customer: p.Customer, ToAddress: p.To, Amount: p.Amount, Asset: p.Asset})
}

func prodIntent(p Payload) (Intent, bool) {
	op, err := prodNormalize(p)
	if err != nil {
		return Intent{}, false
	}
	return Intent{ID: op.ID, Customer: op.Request.Customer, To: [21]byte(op.Request.To), Units: uint64(op.Request.Amount), Asset: op.Request.Asset}, true
}

func prodHash(p Payload) (string, bool) {
	op, err := prodNormalize(p)
	return op.RequestHash, err == nil
}

// refWantAgree fails t if a comparison found disagreements, showing ten.
func refWantAgree(t *testing.T, what string, ds []string) {
	t.Helper()
	if len(ds) == 0 {
		return
	}
	shown := ds[:min(len(ds), 10)]
	t.Errorf("%s: %d of %d disagree with production, e.g.:\n  %s", what, len(ds), refSamples, strings.Join(shown, "\n  "))
}

// ---- property tests ----

func TestReferenceUnitsMatchProduction(t *testing.T) {
	refWantAgree(t, "refUnits vs money.Parse", compareUnits(refSamples, 1, prodUnits))
}

func TestReferenceAddressMatchesProduction(t *testing.T) {
	refWantAgree(t, "refAddress vs tron.ParseAddress", compareAddresses(refSamples, 2, prodAddress))
}

func TestReferenceAddressEncodingMatchesProduction(t *testing.T) {
	refWantAgree(t, "Base58Address vs tron.Address.String", compareEncodings(refSamples, 3, prodEncode))
}

func TestReferenceOperationIDMatchesProduction(t *testing.T) {
	refWantAgree(t, "refOperationID vs intake.ParseOperationID", compareIDs(refSamples, 4, prodID))
}

func TestReferenceCustomerMatchesProduction(t *testing.T) {
	refWantAgree(t, "refCustomer vs sluice.CustomerID.Valid", compareCustomers(refSamples, 8, prodCustomer))
}

func TestReadIntentMatchesNormalize(t *testing.T) {
	refWantAgree(t, "ReadIntent vs intake.Normalize", compareIntents(refSamples, 5, prodIntent))
}

func TestSameInstructionMatchesRequestHash(t *testing.T) {
	refWantAgree(t, "SameInstruction vs RequestHash equality", compareHashEquivalence(refSamples, 6, prodHash))
}

// Goal: the generators are not vacuous: each draws plenty of inputs the
// reference accepts and plenty it refuses, and the pairs include both same
// and different instructions, differing in the recipient alone among them.
func TestReferenceGeneratorsCoverBothSides(t *testing.T) {
	const n = 2_000
	share := func(name string, accepted int) {
		t.Helper()
		if accepted < n/5 || accepted > n*4/5 {
			t.Errorf("%s: reference accepts %d of %d; want between 20%% and 80%%", name, accepted, n)
		}
	}
	var units, addrs, ids, customers, intents int
	reasons := map[string]bool{}
	r := refRand(7)
	for range n {
		if _, why := refUnits(refGenAmount(r)); why == "" {
			units++
		}
		if _, why := refAddress(refGenAddress(r)); why == "" {
			addrs++
		} else {
			reasons[why] = true
		}
		if _, why := refOperationID(refGenID(r)); why == "" {
			ids++
		}
		if why := refCustomer(refGenCustomer(r)); why == "" {
			customers++
		}
		if _, why := ReadIntent(refGenPayload(r)); why == "" {
			intents++
		}
	}
	t.Logf("reference accepts of %d: amounts %d, addresses %d, ids %d, customers %d, payloads %d", n, units, addrs, ids, customers, intents)
	share("amounts", units)
	share("addresses", addrs)
	share("ids", ids)
	share("customers", customers)
	share("payloads", intents)
	for _, why := range []string{"has a bad checksum", "is not a TRON address (first byte not 0x41)",
		"does not decode to 25 bytes", "has a character outside the base58 alphabet"} {
		if !reasons[why] {
			t.Errorf("no generated address was refused because it %s", why)
		}
	}
	var same, different, recipientOnly, customerOnly int
	for range n {
		p, q := refGenPair(r)
		a, _ := ReadIntent(p)
		b, _ := ReadIntent(q)
		switch {
		case SameInstruction(a, b):
			same++
		case a.ID == b.ID && a.Units == b.Units && a.Customer == b.Customer && a.To != b.To:
			recipientOnly++
			different++
		case a.ID == b.ID && a.Units == b.Units && a.To == b.To && a.Customer != b.Customer:
			customerOnly++
			different++
		default:
			different++
		}
	}
	t.Logf("pairs of %d: %d same instruction, %d different (%d in the recipient only, %d in the customer only)", n, same, different, recipientOnly, customerOnly)
	if same < n/5 || different < n/5 || recipientOnly < n/20 || customerOnly < n/20 {
		t.Errorf("pairs: %d same, %d different (%d in the recipient only, %d in the customer only) of %d", same, different, recipientOnly, customerOnly, n)
	}
}

// ---- the comparisons can fail: planted bugs ----

const refPlantedSamples = 2_000

// Goal: a parser that reads amounts at the wrong scale is caught.
func TestReferenceUnitsComparisonCatchesWrongScale(t *testing.T) {
	wrongScale := func(s string) (uint64, bool) {
		u, ok := prodUnits(s)
		return u * 10, ok
	}
	ds := compareUnits(refPlantedSamples, 1, wrongScale)
	if len(ds) == 0 {
		t.Fatal("compareUnits found no disagreement with a parser that multiplies by 10")
	}
	t.Logf("%d disagreements, e.g. %s", len(ds), ds[0])
}

// Goal: a request hash that ignores the recipient is caught: two payloads
// that differ only in where the money goes hash alike.
func TestSameInstructionComparisonCatchesHashIgnoringRecipient(t *testing.T) {
	noRecipient := func(p Payload) (string, bool) {
		op, err := prodNormalize(p)
		if err != nil {
			return "", false
		}
		sum := sha256.Sum256([]byte(string(op.ID) + "\x00" + strconv.FormatUint(uint64(op.Request.Amount), 10) + "\x00" + op.Request.Asset))
		return hex.EncodeToString(sum[:]), true
	}
	ds := compareHashEquivalence(refPlantedSamples, 6, noRecipient)
	if len(ds) == 0 {
		t.Fatal("compareHashEquivalence found no disagreement with a hash that ignores the recipient")
	}
	t.Logf("%d disagreements, e.g. %s", len(ds), ds[0])
}

// Goal: a request hash that ignores the customer is caught: the same
// withdrawal paid from another customer's balance hashes alike.
func TestSameInstructionComparisonCatchesHashIgnoringCustomer(t *testing.T) {
	noCustomer := func(p Payload) (string, bool) {
		op, err := prodNormalize(p)
		if err != nil {
			return "", false
		}
		op.Request.Customer = ""
		return intake.RequestHash(op.ID, op.Request), true
	}
	ds := compareHashEquivalence(refPlantedSamples, 6, noCustomer)
	if len(ds) == 0 {
		t.Fatal("compareHashEquivalence found no disagreement with a hash that ignores the customer")
	}
	t.Logf("%d disagreements, e.g. %s", len(ds), ds[0])
}

// Goal: a customer check that trims whitespace (accepting a spelling of an
// account the client did not name) is caught.
func TestReferenceCustomerComparisonCatchesTrimming(t *testing.T) {
	trimming := func(s string) bool { return prodCustomer(strings.TrimSpace(s)) }
	ds := compareCustomers(refPlantedSamples, 8, trimming)
	if len(ds) == 0 {
		t.Fatal("compareCustomers found no disagreement with a check that trims whitespace")
	}
	t.Logf("%d disagreements, e.g. %s", len(ds), ds[0])
}

// Goal: an id parser that accepts the right ids but does not lowercase them
// (so "ABC..." and "abc..." would be two operations) is caught.
func TestReferenceOperationIDComparisonCatchesMissingLowercase(t *testing.T) {
	noLower := func(s string) (sluice.OperationID, bool) {
		if _, ok := prodID(s); !ok {
			return "", false
		}
		return sluice.OperationID(s), true
	}
	ds := compareIDs(refPlantedSamples, 4, noLower)
	if len(ds) == 0 {
		t.Fatal("compareIDs found no disagreement with a parser that does not lowercase")
	}
	t.Logf("%d disagreements, e.g. %s", len(ds), ds[0])
}

// Goal: a planted disagreement reads as one line naming the input and both
// answers.
func TestReferenceDisagreementIsOneLine(t *testing.T) {
	refuseAll := func(string) (uint64, bool) { return 0, false }
	ds := compareUnits(50, 1, refuseAll)
	if len(ds) == 0 {
		t.Fatal("no disagreement with a parser that refuses everything")
	}
	for _, d := range ds {
		if strings.Contains(d, "\n") || !strings.Contains(d, "reference accepted") || !strings.Contains(d, "production refused") {
			t.Errorf("disagreement %q is not one line naming both answers", d)
		}
	}
}
