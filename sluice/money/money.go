package money

import "log/slog"

// Amount is a USDT amount in base units (1 USDT = 1,000,000 base units).
//
// A uint64 holds 1.8e13 USDT, far above MaxAmount, so sums of any realistic
// batch cannot overflow; the bound keeps arithmetic exact without big.Int on
// the simulator's hot path.
type Amount uint64

// Decimals is USDT's number of decimal places on TRON.
const Decimals = 6

// Bounds on a single withdrawal, in base units.
const (
	MinAmount Amount = 1                         // 0.000001 USDT
	MaxAmount Amount = 1_000_000_000 * 1_000_000 // 1,000,000,000 USDT
)

// LogValue logs an amount as String writes it, in USDT ("12.5"), whatever
// the handler: slog's JSON handler would otherwise write an Amount passed
// as it is by its kind, a number of base units (12500000), which anyone
// reading the log as USDT takes for a million times the amount (blind bug
// 240: a fund line's amount and balance). The text handler already called
// String; now both agree.
func (a Amount) LogValue() slog.Value { return slog.StringValue(a.String()) }
