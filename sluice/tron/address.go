package tron

import (
	"bytes"
	"crypto/sha256"
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
	// Decode into a fixed big-endian buffer: intake parses an address on
	// every request, and big.Int arithmetic showed up in profiles. 25 bytes
	// is all a valid address holds; anything longer overflows and is refused.
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
	if !bytes.Equal(checksum(payload), sum) {
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
func (a Address) String() string {
	var raw [25]byte
	copy(raw[:], a[:])
	copy(raw[21:], checksum(a[:]))
	// Repeated division of the big-endian number by 58, digits collected
	// least significant first; 25 bytes need at most 35 digits.
	var digits [35]byte
	n := 0
	num := raw
	start := 0
	for start < len(num) && num[start] == 0 {
		start++
	}
	for start < len(num) {
		rem := 0
		for j := start; j < len(num); j++ {
			cur := rem<<8 | int(num[j])
			num[j] = byte(cur / 58)
			rem = cur % 58
		}
		digits[n] = base58Alphabet[rem]
		n++
		for start < len(num) && num[start] == 0 {
			start++
		}
	}
	out := make([]byte, 0, n+1)
	for _, b := range raw {
		if b != 0 {
			break
		}
		out = append(out, '1')
	}
	for i := n - 1; i >= 0; i-- {
		out = append(out, digits[i])
	}
	return string(out)
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

func checksum(payload []byte) []byte {
	h1 := sha256.Sum256(payload)
	h2 := sha256.Sum256(h1[:])
	return h2[:4]
}
