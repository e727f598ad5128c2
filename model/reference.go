package model

// The model's own reading of a withdrawal request. The oracle must not ask
// production what a client meant (a parser that is wrong in a
// self-consistent way would then agree with itself), so this file
// re-implements the intake contract from its written rules: the UUID form of
// an operation id, the customer id's alphabet, base58check TRON addresses,
// the decimal grammar of amounts, the one asset. It imports nothing from intake, money or tron's
// parsers; reference_test.go compares it with them over many inputs.

import (
	"crypto/sha256"
	"math/bits"
	"strconv"
	"strings"

	"sluicesim/sluice"
)

// Payload is a withdrawal request exactly as a client sent it (or as an
// answer body showed it): raw strings, not yet trusted.
type Payload struct {
	ID, Customer, To, Amount, Asset string
}

// Intent is what a valid payload means, by the model's own reading.
type Intent struct {
	ID sluice.OperationID // canonical lowercase UUID
	// Customer is whose balance pays, exactly as sent: customer ids are
	// neither trimmed nor case-folded, so "Cust-1" and "cust-1" are two.
	Customer sluice.CustomerID
	To       [21]byte // 0x41 + 20 bytes
	Units    uint64   // amount in base units (6 decimals)
	Asset    string
}

// ReadIntent reads p as intake should. reason is "" when p is a valid
// withdrawal request, otherwise a short phrase saying why not (e.g.
// "amount has more than 6 decimals"). The Intent is meaningful only when
// reason == "". Fields are checked in the API's order (id, customer,
// recipient, amount, asset) and the first refusal is returned.
func ReadIntent(p Payload) (Intent, string) { return readIntent(p, nil) }

// readIntent is ReadIntent with the id, when it is not already canonical,
// made in texts (nil: a string of its own).
func readIntent(p Payload, texts *textArena) (Intent, string) {
	id, code := refOperationIDCode(p.ID, texts)
	if code != 0 {
		return Intent{}, refIDReasons[code].field
	}
	if why := refCustomer(p.Customer); why != "" {
		return Intent{}, texts.cat("customer ", why)
	}
	to, why := refAddress(p.To)
	if why != "" {
		return Intent{}, texts.cat("recipient ", why)
	}
	// Both are well-formed addresses, but tokens sent to either are lost.
	switch to {
	case refUSDTContract:
		return Intent{}, "recipient is the USDT contract itself"
	case refZeroAddress:
		return Intent{}, "recipient is the all-zero address"
	}
	units, why := refUnits(p.Amount)
	if why != "" {
		return Intent{}, texts.cat("amount ", why)
	}
	if p.Asset == "" {
		return Intent{}, "asset is missing"
	}
	if p.Asset != sluice.Asset { // case-sensitive: one asset, one spelling
		return Intent{}, "asset is not " + sluice.Asset
	}
	return Intent{ID: id, Customer: sluice.CustomerID(p.Customer), To: to, Units: units, Asset: p.Asset}, ""
}

// SameInstruction reports whether two valid intents are the same instruction
// (id, customer, recipient, units, asset all equal). The customer is part
// of it: the same id, recipient and amount paid from another customer's
// balance is another withdrawal.
func SameInstruction(a, b Intent) bool {
	return a.ID == b.ID && a.Customer == b.Customer && a.To == b.To && a.Units == b.Units && a.Asset == b.Asset
}

// refCustomerMax is the contract's longest customer id, in bytes.
const refCustomerMax = 64

// refCustomer reads a customer id: 1 to 64 bytes, each an ASCII letter or
// digit or one of ". _ : -". Nothing is normalized: a space, a case change
// or a look-alike letter would name another account (or none), and paying
// from an account the client did not name is the one mistake a ledger
// must not make quietly.
func refCustomer(s string) string {
	switch {
	case s == "":
		return "is missing"
	case len(s) > refCustomerMax:
		return "is longer than " + strconv.Itoa(refCustomerMax) + " bytes"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("._:-", c) >= 0) {
			return "has a byte other than a letter, a digit or . _ : - at index " + strconv.Itoa(i)
		}
	}
	return ""
}

// Base58Address encodes a 21-byte TRON address in base58check, the model's
// own encoder (for messages).
func Base58Address(a [21]byte) string {
	return refBase58Encode(refWithChecksum(a[:]))
}

// refUUIDLen is the length of the 8-4-4-4-12 text form of a UUID.
const refUUIDLen = 36

// refOperationID reads an operation id: a UUID in 8-4-4-4-12 hex form, either
// case, returned lowercase so that two spellings are one operation. The nil
// UUID is refused: it is what an unset field serializes to.
func refOperationID(s string) (sluice.OperationID, string) {
	id, why := refOperationIDCode(s, nil)
	return id, refIDReasons[why].why
}

// refOperationIDCode is refOperationID with the reason as a code, an index
// into refIDReasons (0: none), whose phrases are made once; a lowercased id
// is made in texts (nil: a string of its own).
func refOperationIDCode(s string, texts *textArena) (sluice.OperationID, int) {
	if s == "" {
		return "", refIDMissing
	}
	if len(s) != refUUIDLen {
		return "", refIDLength
	}
	var out [refUUIDLen]byte
	for i := 0; i < refUUIDLen; i++ {
		c := s[i]
		hyphen := i == 8 || i == 13 || i == 18 || i == 23
		switch {
		case hyphen && c == '-':
			out[i] = c
		case hyphen:
			return "", refIDNoHyphen + i
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
			out[i] = c
		case 'A' <= c && c <= 'F':
			out[i] = c - 'A' + 'a'
		default:
			return "", refIDNotHex + i
		}
	}
	if string(out[:]) == "00000000-0000-0000-0000-000000000000" {
		return "", refIDNil
	}
	if string(out[:]) == s {
		return sluice.OperationID(s), 0 // already canonical: no copy
	}
	return sluice.OperationID(texts.str(out[:])), 0
}

// The codes of refOperationIDCode's reasons: a few fixed ones, then one
// for each index a hyphen or a hex digit can be missing at.
const (
	refIDMissing  = 1
	refIDLength   = 2
	refIDNil      = 3
	refIDNoHyphen = 4                          // + the index
	refIDNotHex   = refIDNoHyphen + refUUIDLen // + the index
)

// refIDReasons are the reasons by code: refOperationID's (why), and the
// same for the operation id field of a payload (field).
var refIDReasons = func() (r [refIDNotHex + refUUIDLen]struct{ why, field string }) {
	set := func(code int, why string) { r[code].why, r[code].field = why, "operation id "+why }
	set(refIDMissing, "is missing")
	set(refIDLength, "is not a UUID (not 36 characters)")
	set(refIDNil, "is the nil UUID")
	for i := range refUUIDLen {
		set(refIDNoHyphen+i, "is not a UUID (no hyphen at index "+strconv.Itoa(i)+")")
		set(refIDNotHex+i, "is not a UUID (not a hex digit at index "+strconv.Itoa(i)+")")
	}
	return r
}()

// refBase58Alphabet is Bitcoin's base58 alphabet, which TRON uses: no 0, O,
// I or l, so that no two characters look alike.
const refBase58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// refAddress reads a base58check TRON address: 25 bytes, a 21-byte payload
// starting 0x41 and a 4-byte checksum. It does not refuse the USDT contract
// or the zero address (ReadIntent does), so that it can be compared with a
// plain address parser.
func refAddress(s string) ([21]byte, string) {
	var a [21]byte
	if s == "" {
		return a, "is missing"
	}
	var raw [25]byte
	if why := refBase58DecodeInto(s, raw[:]); why != "" {
		return a, why
	}
	copy(a[:], raw[:21])
	if refChecksum(a[:]) != [4]byte(raw[21:]) {
		return a, "has a bad checksum"
	}
	if a[0] != 0x41 {
		return a, "is not a TRON address (first byte not 0x41)"
	}
	return a, ""
}

// refBase58Decode decodes s, which must come to exactly want bytes. Each
// leading '1' is a leading zero byte; the remaining digits are one
// big-endian base-58 number, accumulated in the last n bytes of the output
// (out = out*58 + digit). The number only grows as digits are read, so
// decoding stops as soon as it is too long: a hostile string costs at most
// want bytes of work per digit, and one allocation.
func refBase58Decode(s string, want int) ([]byte, string) {
	out := make([]byte, want)
	if why := refBase58DecodeInto(s, out); why != "" {
		return nil, why
	}
	return out, ""
}

// refBase58DecodeInto is refBase58Decode into out (want is len(out), and
// out starts zeroed); out holds the bytes when the reason is "". The
// number is kept in 32-bit limbs, least significant first, while it is
// read (the same number, the same checks after each digit, four bytes at a
// time).
func refBase58DecodeInto(s string, out []byte) string {
	want := len(out)
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	if zeros > want {
		return refTooLong(want)
	}
	var buf [8]uint32
	limbs := buf[:0]
	if want > 4*len(buf) {
		limbs = make([]uint32, 0, (want+3)/4)
	}
	n := 0 // significant bytes of the number so far
	for i := zeros; i < len(s); i++ {
		digit := refBase58Digits[s[i]]
		if digit < 0 {
			return "has a character outside the base58 alphabet"
		}
		carry := uint64(digit) // limbs = limbs*58 + digit
		for j := range limbs {
			carry += uint64(limbs[j]) * 58
			limbs[j] = uint32(carry)
			carry >>= 32
		}
		if carry > 0 {
			limbs = append(limbs, uint32(carry))
		}
		if len(limbs) > 0 {
			n = 4*(len(limbs)-1) + (bits.Len32(limbs[len(limbs)-1])+7)/8
		}
		// The number only grows: once too long, it stays so.
		if zeros+n > want {
			return refTooLong(want)
		}
	}
	if zeros+n != want {
		return refTooLong(want)
	}
	for j := range n { // big-endian, in the last n bytes
		out[want-1-j] = byte(limbs[j/4] >> (8 * (j % 4)))
	}
	return ""
}

// refBase58Digits is each byte's value as a base58 digit, -1 for a byte
// outside the alphabet.
var refBase58Digits = func() (d [256]int8) {
	for i := range d {
		d[i] = -1
	}
	for i := 0; i < len(refBase58Alphabet); i++ {
		d[refBase58Alphabet[i]] = int8(i)
	}
	return d
}()

func refTooLong(want int) string { return "does not decode to " + strconv.Itoa(want) + " bytes" }

// refBase58Encode is the inverse of refBase58Decode for any byte string.
func refBase58Encode(b []byte) string {
	zeros := 0
	for zeros < len(b) && b[zeros] == 0 {
		zeros++
	}
	var digits []byte // base-58 digits, least significant first
	for _, v := range b[zeros:] {
		carry := int(v) // digits = digits*256 + v
		for j := range digits {
			carry += int(digits[j]) << 8
			digits[j] = byte(carry % 58)
			carry /= 58
		}
		for ; carry > 0; carry /= 58 {
			digits = append(digits, byte(carry%58))
		}
	}
	out := make([]byte, 0, zeros+len(digits))
	for range zeros {
		out = append(out, '1')
	}
	for j := len(digits) - 1; j >= 0; j-- {
		out = append(out, refBase58Alphabet[digits[j]])
	}
	return string(out)
}

// refWithChecksum returns payload followed by its checksum (refChecksum).
func refWithChecksum(payload []byte) []byte {
	sum := refChecksum(payload)
	return append(append([]byte{}, payload...), sum[:]...)
}

// refChecksum is the first 4 bytes of sha256(sha256(payload)).
func refChecksum(payload []byte) [4]byte {
	first := sha256.Sum256(payload)
	second := sha256.Sum256(first[:])
	return [4]byte(second[:4])
}

// refMustAddress decodes a known-good address, for constants.
func refMustAddress(s string) [21]byte {
	a, why := refAddress(s)
	if why != "" {
		panic("model: bad address constant " + s + ": " + why)
	}
	return a
}

var (
	// refUSDTContract is the USDT-TRC20 token contract, decoded by the
	// model's own decoder (its bytes are pinned in a test).
	refUSDTContract = refMustAddress("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")
	// refZeroAddress is 0x41 followed by 20 zero bytes: a valid string, but
	// what an unset field serializes to, and tokens sent there are burnt.
	refZeroAddress = [21]byte{0x41}
)

const (
	refAmountMaxLen = 64                    // longer is not an amount, whatever it says
	refUnitsPerUSDT = 1_000_000             // USDT-TRC20 has 6 decimals
	refMaxUnits     = 1_000_000_000_000_000 // 1,000,000,000 USDT
)

// refUnits reads an amount in USDT, ("0" | [1-9][0-9]*) ["." [0-9]{1,6}],
// into base units. The grammar is strict so that every amount has one
// meaning: no sign, exponent, whitespace or leading zeros, and no more than
// 6 decimals even if the extra ones are zeros (a client sending them does
// not mean what we would pay).
func refUnits(s string) (uint64, string) {
	if s == "" {
		return 0, "is missing"
	}
	if len(s) > refAmountMaxLen {
		return 0, "is longer than " + strconv.Itoa(refAmountMaxLen) + " bytes"
	}
	whole, frac, point := s, "", false
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			whole, frac, point = s[:i], s[i+1:], true
			break
		}
	}
	if whole == "" {
		return 0, "has no digits before the point"
	}
	if !refAllDigits(whole) || !refAllDigits(frac) { // a second '.' lands here too
		return 0, "is not a plain decimal number"
	}
	if len(whole) > 1 && whole[0] == '0' {
		return 0, "has a leading zero"
	}
	if point && frac == "" {
		return 0, "has a point but no decimals"
	}
	if len(frac) > 6 {
		return 0, "has more than 6 decimals"
	}
	// 1,000,000,000 has 10 digits; refusing longer whole parts here keeps
	// the arithmetic below far from overflowing a uint64.
	if len(whole) > 10 {
		return 0, "exceeds 1000000000 USDT"
	}
	var units uint64
	for i := 0; i < len(whole); i++ {
		units = units*10 + uint64(whole[i]-'0')
	}
	units *= refUnitsPerUSDT
	scale := uint64(refUnitsPerUSDT / 10) // the first decimal is 100,000 units
	for i := 0; i < len(frac); i++ {
		units += uint64(frac[i]-'0') * scale
		scale /= 10
	}
	if units == 0 {
		return 0, "is zero"
	}
	if units > refMaxUnits {
		return 0, "exceeds 1000000000 USDT"
	}
	return units, ""
}

// refAllDigits reports whether s is ASCII digits only ("" is).
func refAllDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
