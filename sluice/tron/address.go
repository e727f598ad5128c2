package tron

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
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
	n := new(big.Int)
	radix := big.NewInt(58)
	for i := 0; i < len(s); i++ {
		d := base58Index[s[i]]
		if d < 0 {
			return a, fmt.Errorf("character %q at %d is not base58: %w", s[i], i, ErrBadAddress)
		}
		n.Mul(n, radix)
		n.Add(n, big.NewInt(int64(d)))
	}
	raw := n.Bytes()
	// Leading '1's encode leading zero bytes.
	for i := 0; i < len(s) && s[i] == '1'; i++ {
		raw = append([]byte{0}, raw...)
	}
	if len(raw) != 25 {
		return a, fmt.Errorf("decodes to %d bytes, want 25: %w", len(raw), ErrBadAddress)
	}
	payload, sum := raw[:21], raw[21:]
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
	raw := make([]byte, 0, 25)
	raw = append(raw, a[:]...)
	raw = append(raw, checksum(a[:])...)
	n := new(big.Int).SetBytes(raw)
	radix := big.NewInt(58)
	mod := new(big.Int)
	var out []byte
	for n.Sign() > 0 {
		n.DivMod(n, radix, mod)
		out = append(out, base58Alphabet[mod.Int64()])
	}
	for _, b := range raw {
		if b != 0 {
			break
		}
		out = append(out, '1')
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
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
