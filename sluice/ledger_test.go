package sluice

import (
	"math"
	"testing"

	"sluicesim/sluice/money"
)

// Goal: Balanced is balance + held + paid = deposited in whole numbers,
// not modulo 2^64: an account whose balance went below zero and wrapped
// round (2^64-1 standing for -1) is not balanced, though its four numbers
// add up modulo 2^64; nor is one whose sum overflows. The largest balanced
// account is.
func TestBalancedDoesNotWrap(t *testing.T) {
	const top = money.Amount(math.MaxUint64)
	for _, c := range []struct {
		name string
		a    Account
		want bool
	}{
		{"balanced", Account{Balance: 5, Held: 3, Paid: 2, Deposited: 10}, true},
		{"a unit short", Account{Balance: 5, Held: 3, Paid: 2, Deposited: 11}, false},
		{"all of it, at the top", Account{Balance: top - 2, Held: 1, Paid: 1, Deposited: top}, true},
		{"balance wrapped below zero", Account{Balance: top, Held: 2, Deposited: 1}, false},
		{"held wrapped below zero", Account{Balance: 3, Held: top - 1, Paid: 0, Deposited: 1}, false},
		{"paid and held past the top", Account{Held: top, Paid: top, Balance: 2, Deposited: 0}, false},
	} {
		if got := c.a.Balanced(); got != c.want {
			t.Errorf("%s: %+v Balanced() = %v, want %v", c.name, c.a, got, c.want)
		}
	}
}
