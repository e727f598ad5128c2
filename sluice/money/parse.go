package money

import (
	"errors"
	"strconv"
)

// ErrInvalidAmount is matched (errors.Is) by every error Parse returns.
var ErrInvalidAmount = errors.New("invalid amount")

// ParseError says why a string is not an amount.
type ParseError struct {
	// Input is the refused string, cut to inputShownMax bytes so that an
	// oversized request cannot make an oversized error message or log line.
	Input  string
	Reason string
}

func (e *ParseError) Error() string {
	return "invalid amount " + strconv.Quote(e.Input) + ": " + e.Reason
}

// Is makes errors.Is(err, ErrInvalidAmount) true for every *ParseError.
func (e *ParseError) Is(target error) bool { return target == ErrInvalidAmount }

const (
	// intDigitsMax is the number of integer digits of MaxAmount in whole
	// USDT (1000000000). A longer integer part (leading zeros are refused)
	// is above the maximum, and checking the count first means the
	// accumulation below can never overflow a uint64.
	intDigitsMax = 10
	// inputLenMax bounds the work and the error text for any input. The
	// longest acceptable string is "1000000000.000000" (17 bytes); the
	// slack lets a slightly long input still get its precise reason.
	inputLenMax = 64
	// inputShownMax is how much of a refused input an error repeats.
	inputShownMax = 40
)

// unit is one whole USDT in base units.
const unit = 1_000_000

// Parse reads an exact decimal USDT amount into base units.
//
// The accepted grammar is deliberately narrow:
//
//	amount = ( "0" | [1-9][0-9]* ) [ "." [0-9]{1,6} ]
//
// with a value between MinAmount and MaxAmount. Everything else is refused
// rather than guessed at: signs, exponents, separators, whitespace, hex,
// non-ASCII digits, a bare point on either side ("1.", ".5"), redundant
// leading zeros ("007") and zero itself.
//
// More than six decimals are refused even when the extra digits are zeros
// ("1.0000000"): USDT has six, and a client sending a seventh is using a
// wrong scale somewhere; rounding or silently dropping digits of a money
// amount is how one party ends up paying a different sum than the other
// asked for. Trailing zeros within six decimals are fine ("1.50" is 1.5).
//
// Amounts are strings rather than JSON numbers for the same reason: a
// binary float cannot hold 0.1, and a parser that goes through one can turn
// 0.29 into 0.28999999.
func Parse(s string) (Amount, error) {
	fail := func(reason string) (Amount, error) {
		in := s
		if len(in) > inputShownMax {
			in = in[:inputShownMax] + "..."
		}
		return 0, &ParseError{Input: in, Reason: reason}
	}
	if s == "" {
		return fail("empty")
	}
	if len(s) > inputLenMax {
		return fail("too long (" + strconv.Itoa(len(s)) + " bytes)")
	}
	// Name the first character that has no place in an amount; the reasons
	// are specific because a client fixing its serializer needs to know
	// which habit (locale, exponent, sign) to turn off.
	point := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
		case c == '.':
			if point >= 0 {
				return fail("more than one decimal point")
			}
			point = i
		case c == '+' || c == '-':
			return fail("sign not allowed")
		case c == 'e' || c == 'E':
			return fail("exponent not allowed")
		case (c == 'x' || c == 'X') && i == 1 && s[0] == '0':
			return fail("hexadecimal not allowed")
		case c == ',':
			return fail("comma not allowed (no thousands separators, the decimal point is '.')")
		case c == '_':
			return fail("underscore not allowed")
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			return fail("whitespace not allowed")
		case c >= 0x80:
			return fail("non-ASCII character at byte " + strconv.Itoa(i) + " (only the digits 0-9 are allowed)")
		default:
			return fail("unexpected character " + strconv.QuoteRune(rune(c)) + " at byte " + strconv.Itoa(i))
		}
	}
	intPart, fracPart := s, ""
	if point >= 0 {
		intPart, fracPart = s[:point], s[point+1:]
		if intPart == "" {
			return fail("missing integer part (write 0.5, not .5)")
		}
		if fracPart == "" {
			return fail("missing digits after the decimal point")
		}
		if len(fracPart) > Decimals {
			return fail("more than 6 decimal places")
		}
	}
	if len(intPart) > 1 && intPart[0] == '0' {
		return fail("leading zero")
	}
	if len(intPart) > intDigitsMax {
		return fail("above the maximum of " + MaxAmount.String())
	}
	var whole, frac uint64
	for i := 0; i < len(intPart); i++ {
		whole = whole*10 + uint64(intPart[i]-'0')
	}
	for i := 0; i < Decimals; i++ {
		frac *= 10
		if i < len(fracPart) {
			frac += uint64(fracPart[i] - '0')
		}
	}
	// whole < 10^10, so whole*unit < 10^16 < 2^64: no overflow.
	a := Amount(whole*unit + frac)
	if a < MinAmount {
		return fail("below the minimum of " + MinAmount.String())
	}
	if a > MaxAmount {
		return fail("above the maximum of " + MaxAmount.String())
	}
	return a, nil
}

// String is the canonical decimal form: no trailing zeros and no trailing
// point ("12.5", "1", "0.000001"). Parse(a.String()) == a for every amount
// between MinAmount and MaxAmount, and equal amounts always print the same,
// which is what the request hash relies on.
func (a Amount) String() string {
	if uint64(a)%unit == 0 {
		return strconv.FormatUint(uint64(a)/unit, 10) // no allocation below 100
	}
	var buf [32]byte // 14 digits of the largest whole part, a point, 6 digits
	return string(a.Append(buf[:0]))
}

// Append appends a.String() to b. It writes in place, without the
// intermediate strings (digits, padding, trimming) String once made: amounts
// are written into every request hash and answer.
func (a Amount) Append(b []byte) []byte {
	whole, frac := uint64(a)/unit, uint64(a)%unit
	b = strconv.AppendUint(b, whole, 10)
	if frac == 0 {
		return b
	}
	// Decimals digits with leading zeros, then trailing zeros cut.
	b = append(b, '.')
	var digits [Decimals]byte
	for i := Decimals - 1; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := Decimals
	for digits[n-1] == '0' {
		n--
	}
	return append(b, digits[:n]...)
}
