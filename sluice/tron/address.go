package tron

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// AddressPrefix is the first byte of every TRON mainnet account address.
const AddressPrefix = 0x41

// Address is a TRON account address: the 0x41 prefix followed by 20 bytes.
// Its text form is base58check (the familiar T... strings).
type Address [21]byte

// USDTContract is the TRC-20 USDT contract on mainnet. USDT has 6 decimals.
var USDTContract = MustParseAddress("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")

// ErrBadAddress is returned (wrapped) for any string that is not a valid
// base58check TRON address.
var ErrBadAddress = errors.New("invalid tron address")

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

var base58Index = func() [256]int8 {
	var idx [256]int8
	for i := range idx {
		idx[i] = -1
	}
	for i := 0; i < len(base58Alphabet); i++ {
		idx[base58Alphabet[i]] = int8(i)
	}
	return idx
}()

// ParseAddress decodes a base58check address and verifies its length,
// prefix and checksum (the first 4 bytes of double-sha256 of the payload).
func ParseAddress(s string) (Address, error) {
	var a Address
	if s == "" {
		return a, fmt.Errorf("empty string: %w", ErrBadAddress)
	}
	if len(s) > 64 {
		return a, fmt.Errorf("too long (%d characters): %w", len(s), ErrBadAddress)
	}
	// Decode into a fixed big-endian number: intake parses an address on
	// every request, and big.Int arithmetic showed up in profiles. 25 bytes
	// (200 bits) is all a valid address holds; anything longer overflows
	// and is refused at the digit that makes it overflow. The number is
	// kept as 32-bit limbs, most significant first, the first holding the
	// top byte only, so each digit costs 7 multiply-adds rather than 25.
	var limbs [7]uint32
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	for i := 0; i < len(s); i++ {
		d := base58Index[s[i]]
		if d < 0 {
			return a, fmt.Errorf("character %q at %d is not base58: %w", s[i], i, ErrBadAddress)
		}
		carry := uint64(d)
		for j := len(limbs) - 1; j >= 0; j-- {
			cur := uint64(limbs[j])*58 + carry
			limbs[j] = uint32(cur)
			carry = cur >> 32
		}
		if carry != 0 || limbs[0] > 0xff {
			return a, fmt.Errorf("decodes to more than 25 bytes, want 25: %w", ErrBadAddress)
		}
	}
	var buf [25]byte
	buf[0] = byte(limbs[0])
	for j := 1; j < len(limbs); j++ {
		binary.BigEndian.PutUint32(buf[1+4*(j-1):], limbs[j])
	}
	// The significant bytes plus one zero byte per leading '1' must make
	// exactly 25 bytes.
	first := 0
	for first < len(buf) && buf[first] == 0 {
		first++
	}
	if n := len(buf) - first + zeros; n != 25 {
		return a, fmt.Errorf("decodes to %d bytes, want 25: %w", n, ErrBadAddress)
	}
	payload, sum := buf[:21], buf[21:]
	if checksum(payload) != [4]byte(sum) {
		return a, fmt.Errorf("checksum mismatch: %w", ErrBadAddress)
	}
	if payload[0] != AddressPrefix {
		return a, fmt.Errorf("prefix 0x%02x, want 0x41: %w", payload[0], ErrBadAddress)
	}
	copy(a[:], payload)
	return a, nil
}

// MustParseAddress is ParseAddress for constants; it panics on a bad address.
func MustParseAddress(s string) Address {
	a, err := ParseAddress(s)
	if err != nil {
		panic(fmt.Sprintf("tron.MustParseAddress(%q): %v", s, err))
	}
	return a
}

// AddressFromBytes20 builds a mainnet address from its 20-byte body (the form
// used inside contract calls and event logs).
func AddressFromBytes20(b [20]byte) Address {
	var a Address
	a[0] = AddressPrefix
	copy(a[1:], b[:])
	return a
}

// Bytes20 is the address without its 0x41 prefix, as the EVM sees it.
func (a Address) Bytes20() [20]byte {
	var b [20]byte
	copy(b[:], a[1:])
	return b
}

// IsZero reports whether a is the zero value (not a valid address).
func (a Address) IsZero() bool { return a == Address{} }

// String is the base58check form.
//
// It runs for every address a request, a trace or a log line shows, so it
// allocates only the string: the 25 bytes are divided by 58^5 (which fits
// in 32 bits) as seven 32-bit limbs, five digits a division, instead of by
// 58 a byte at a time. TestAddressStringMatchesReference holds it to the
// plain byte-at-a-time definition.
func (a Address) String() string {
	var buf [35]byte
	return string(a.Append(buf[:0]))
}

// Append appends the base58check form to b: String without the string,
// for answers written into a buffer.
func (a Address) Append(b []byte) []byte {
	var raw [25]byte
	copy(raw[:], a[:])
	sum := checksum(a[:])
	copy(raw[21:], sum[:])
	// The 200-bit number as limbs, most significant first: the first
	// byte alone, then six 4-byte limbs.
	var limbs [7]uint32
	limbs[0] = uint32(raw[0])
	for i := 1; i < len(limbs); i++ {
		limbs[i] = binary.BigEndian.Uint32(raw[1+4*(i-1):])
	}
	// Digits collected least significant first; 7 divisions give 35
	// digits, the most 25 bytes need, some of them leading zeros.
	const base = 58 * 58 * 58 * 58 * 58
	var digits [35]byte
	n := 0
	start := 0
	for start < len(limbs) && limbs[start] == 0 {
		start++
	}
	for start < len(limbs) {
		var rem uint64
		for j := start; j < len(limbs); j++ {
			cur := rem<<32 | uint64(limbs[j])
			limbs[j] = uint32(cur / base)
			rem = cur % base
		}
		for range 5 {
			digits[n] = byte(rem % 58)
			rem /= 58
			n++
		}
		for start < len(limbs) && limbs[start] == 0 {
			start++
		}
	}
	for n > 0 && digits[n-1] == 0 { // leading zero digits of the number
		n--
	}
	// One '1' per leading zero byte, then the digits most significant
	// first.
	for _, c := range raw {
		if c != 0 {
			break
		}
		b = append(b, '1')
	}
	for i := n - 1; i >= 0; i-- {
		b = append(b, base58Alphabet[digits[i]])
	}
	return b
}

// MarshalText makes addresses appear in base58 form in JSON. The zero
// Address (no address) is written as "" so that it reads back as itself.
func (a Address) MarshalText() ([]byte, error) {
	if a.IsZero() {
		return nil, nil
	}
	return []byte(a.String()), nil
}

// UnmarshalText parses the base58 form; "" is the zero Address.
func (a *Address) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*a = Address{}
		return nil
	}
	p, err := ParseAddress(string(b))
	if err != nil {
		return err
	}
	*a = p
	return nil
}

// checksum is the first 4 bytes of double-sha256 of payload, by value so
// that nothing escapes to the heap.
func checksum(payload []byte) [4]byte {
	h1 := sha256.Sum256(payload)
	h2 := sha256.Sum256(h1[:])
	return [4]byte(h2[:4])
}
