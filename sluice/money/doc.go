// Package money holds USDT amounts as integer base units and reads them from
// exact decimal strings.
//
// Amounts never pass through a float. A binary float cannot represent most
// decimal fractions (0.1, 0.29), so a parser built on one can turn the
// amount a client asked for into a neighbouring one, and a withdrawal
// processor must pay exactly what was requested, to the unit. Parse
// therefore reads the decimal digits themselves into a uint64 of base units
// (6 decimals, USDT on TRON), and its grammar is narrow on purpose: every
// form it refuses (signs, exponents, separators, extra decimals, a bare
// point) is one where two honest readers could disagree about the value.
//
// String prints the canonical form, so that equal amounts always have equal
// text; the intake request hash depends on that.
package money
