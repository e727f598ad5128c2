package money

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Amount
	}{
		{"whole", "12", 12_000_000},
		{"one decimal", "12.5", 12_500_000},
		{"trailing zero within six decimals", "12.50", 12_500_000},
		{"six decimals", "12.500000", 12_500_000},
		{"smallest unit", "0.000001", 1},
		{"zero before the point", "0.5", 500_000},
		{"one", "1", 1_000_000},
		{"all six decimals used", "123.456789", 123_456_789},
		{"maximum", "1000000000", MaxAmount},
		{"maximum with zero decimals", "1000000000.000000", MaxAmount},
		{"just below maximum", "999999999.999999", MaxAmount - 1},
		{"ten", "10", 10_000_000},
		{"zeros inside the fraction", "1.000100", 1_000_100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q) error = %v, want %d", tt.in, err, tt.want)
			}
			if got != tt.want {
				t.Errorf("Parse(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		reason string // a fragment the reason must contain
	}{
		{"empty", "", "empty"},
		{"plus sign", "+1", "sign"},
		{"minus sign", "-1", "sign"},
		{"negative zero", "-0", "sign"},
		{"exponent", "1e6", "exponent"},
		{"upper case exponent", "1E6", "exponent"},
		{"exponent after decimals", "1.5e3", "exponent"},
		{"seven decimals", "1.0000001", "more than 6 decimal places"},
		{"seven decimals all zero", "1.0000000", "more than 6 decimal places"},
		{"arabic-indic digits", "١٢", "non-ASCII"},
		{"fullwidth digits", "１２", "non-ASCII"},
		{"trailing point", "1.", "missing digits after the decimal point"},
		{"leading point", ".5", "missing integer part"},
		{"bare point", ".", "missing integer part"},
		{"two points", "1.2.3", "more than one decimal point"},
		{"comma thousands", "1,000", "comma"},
		{"comma decimal", "1,5", "comma"},
		{"underscore", "1_000", "underscore"},
		{"hex", "0x10", "hexadecimal"},
		{"upper hex", "0X1F", "hexadecimal"},
		{"leading space", " 1", "whitespace"},
		{"trailing space", "1 ", "whitespace"},
		{"trailing newline", "1\n", "whitespace"},
		{"inner tab", "1\t0", "whitespace"},
		{"leading zeros", "007", "leading zero"},
		{"leading zeros before point", "00.5", "leading zero"},
		{"leading zero before digit", "01.5", "leading zero"},
		{"zero", "0", "below the minimum"},
		{"zero with decimals", "0.000000", "below the minimum"},
		{"zero with one decimal", "0.0", "below the minimum"},
		{"above maximum by one unit", "1000000000.000001", "above the maximum"},
		{"above maximum whole", "1000000001", "above the maximum"},
		{"ten integer digits above maximum", "9999999999.999999", "above the maximum"},
		{"eleven integer digits", "10000000000", "above the maximum"},
		{"uint64 overflow length", "18446744073709551616", "above the maximum"},
		{"overflow-length input", strings.Repeat("9", 10_000), "too long"},
		{"long fraction", "1." + strings.Repeat("0", 100), "too long"},
		{"letters", "ten", "unexpected character"},
		{"infinity", "Inf", "unexpected character"},
		{"nan", "NaN", "unexpected character"},
		{"currency suffix", "12 USDT", "whitespace"},
		{"dollar sign", "$12", "unexpected character"},
		{"json quoted", `"12"`, "unexpected character"},
		{"nul byte", "1\x00", "unexpected character"},
		{"invalid utf-8", "1\xff", "non-ASCII"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %d, want an error", tt.in, got)
			}
			if !errors.Is(err, ErrInvalidAmount) {
				t.Errorf("Parse(%q) error %v is not ErrInvalidAmount", tt.in, err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse(%q) error %T, want *ParseError", tt.in, err)
			}
			if !strings.Contains(pe.Reason, tt.reason) {
				t.Errorf("Parse(%q) reason = %q, want it to mention %q", tt.in, pe.Reason, tt.reason)
			}
			if len(pe.Input) > inputShownMax+len("...") {
				t.Errorf("Parse(%q...) error repeats %d bytes of input, want at most %d",
					tt.in[:min(len(tt.in), 10)], len(pe.Input), inputShownMax)
			}
		})
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name string
		in   Amount
		want string
	}{
		{"smallest unit", 1, "0.000001"},
		{"one", 1_000_000, "1"},
		{"trailing zeros trimmed", 12_500_000, "12.5"},
		{"inner zeros kept", 1_000_100, "1.0001"},
		{"all decimals", 123_456_789, "123.456789"},
		{"maximum", MaxAmount, "1000000000"},
		{"zero", 0, "0"},
		{"tenth", 100_000, "0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.String(); got != tt.want {
				t.Errorf("Amount(%d).String() = %q, want %q", uint64(tt.in), got, tt.want)
			}
		})
	}
}

// TestRoundTrip checks Parse(a.String()) == a over the edges of the range
// and a deterministic spread through it (a multiplicative walk, so every
// digit position and every fraction length gets exercised).
func TestRoundTrip(t *testing.T) {
	check := func(a Amount) {
		t.Helper()
		s := a.String()
		got, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%d.String() = %q) error = %v", uint64(a), s, err)
		}
		if got != a {
			t.Fatalf("Parse(%d.String() = %q) = %d, want %d", uint64(a), s, got, a)
		}
	}
	for a := MinAmount; a < MinAmount+1_100_000; a++ {
		check(a)
	}
	for a := MaxAmount - 1_100_000; a <= MaxAmount; a++ {
		check(a)
	}
	for x := uint64(1); x <= uint64(MaxAmount); x = x*3 + 7 {
		check(Amount(x))
		check(Amount(uint64(MaxAmount) / x))
	}
}

// grammar is the oracle's reading of the accepted syntax: the doc comment
// of Parse, written as a regular expression.
var grammar = regexp.MustCompile(`^(0|[1-9][0-9]*)(\.[0-9]{1,6})?$`)

// oracle is an independent, slow reading of an amount: the regular
// expression for syntax and math/big for the value, no hand-written digit
// arithmetic shared with Parse.
func oracle(s string) (Amount, bool) {
	if !grammar.MatchString(s) {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, false
	}
	r.Mul(r, big.NewRat(unit, 1))
	if !r.IsInt() {
		return 0, false
	}
	n := r.Num()
	if n.Cmp(big.NewInt(int64(MinAmount))) < 0 || n.Cmp(new(big.Int).SetUint64(uint64(MaxAmount))) > 0 {
		return 0, false
	}
	return Amount(n.Uint64()), true
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"12", "12.5", "12.50", "0.000001", "1000000000", "1000000000.000001",
		"1.0000000", "007", "00.5", "0.5", "1.", ".5", "1e6", "-1", "+1", "0x10",
		"1,000", "1_000", " 1", "١", "１", "0", "0.000000", "18446744073709551616",
		"999999999.999999", "9999999999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		want, ok := oracle(s)
		if ok != (err == nil) {
			t.Fatalf("Parse(%q) error = %v, oracle accepts = %v", s, err, ok)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidAmount) {
				t.Fatalf("Parse(%q) error %v is not ErrInvalidAmount", s, err)
			}
			return
		}
		if a != want {
			t.Fatalf("Parse(%q) = %d, oracle says %d", s, a, want)
		}
		canon := a.String()
		back, err := Parse(canon)
		if err != nil || back != a {
			t.Fatalf("Parse(%q) = %d; Parse(%q) = %d, %v; want the same amount", s, a, canon, back, err)
		}
		if again := back.String(); again != canon {
			t.Fatalf("canonical form of %q is %q, but it re-prints as %q", s, canon, again)
		}
		// Padding with zeros up to six decimals is the same amount, so the
		// same canonical form (this is why "1.5" and "1.50" hash equal).
		padded := s
		if !strings.Contains(padded, ".") {
			padded += "."
		}
		for len(padded)-strings.IndexByte(padded, '.')-1 < Decimals {
			padded += "0"
			p, err := Parse(padded)
			if err != nil {
				t.Fatalf("Parse(%q) accepted but Parse(%q) error = %v", s, padded, err)
			}
			if p.String() != canon {
				t.Fatalf("canonical form of %q = %q, of %q = %q; want equal", s, canon, padded, p.String())
			}
		}
	})
}

// Goal: String (and Append) write what the strconv and strings version they
// replaced wrote, for every kind of amount, and String allocates once at
// most. Method: both over edges and random values, including above
// MaxAmount, which String must still print.
func TestStringMatchesFormatUint(t *testing.T) {
	old := func(a Amount) string {
		whole, frac := uint64(a)/unit, uint64(a)%unit
		w := strconv.FormatUint(whole, 10)
		if frac == 0 {
			return w
		}
		f := strconv.FormatUint(frac, 10)
		f = strings.Repeat("0", Decimals-len(f)) + f
		return w + "." + strings.TrimRight(f, "0")
	}
	vals := []Amount{0, 1, 9, 10, 100_000, 999_999, 1_000_000, 1_000_001, 1_100_000, 99_000_000, 100_000_000,
		MaxAmount, MaxAmount - 1, math.MaxUint64, math.MaxUint64 - 999_999}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		vals = append(vals, Amount(r.Uint64()), Amount(r.Uint64N(uint64(MaxAmount))), Amount(r.Uint64N(1000)*1000))
	}
	for _, a := range vals {
		if got, want := a.String(), old(a); got != want {
			t.Fatalf("Amount(%d).String() = %q, want %q", uint64(a), got, want)
		}
		if got, want := string(a.Append([]byte("x"))), "x"+old(a); got != want {
			t.Fatalf("Amount(%d).Append = %q, want %q", uint64(a), got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = Amount(12_345_678).String() }); n > 1 {
		t.Errorf("String: %v allocations, want at most 1", n)
	}
}
