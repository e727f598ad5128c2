package money

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// Goal: an Amount passed to a logger as it is (not its String) logs as
// USDT in every slog handler, JSON included, where its kind alone would
// write base units as a number.
func TestAmountLogsAsUSDT(t *testing.T) {
	for _, c := range []struct {
		name string
		h    func(*bytes.Buffer) slog.Handler
		want string
	}{
		{"json", func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) }, `"amount":"12.5","balance":"0.000001"`},
		{"text", func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) }, `amount=12.5 balance=0.000001`},
	} {
		var b bytes.Buffer
		slog.New(c.h(&b)).Info("fund", "amount", Amount(12_500_000), "balance", MinAmount)
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%s: logged %q, want it to hold %s", c.name, b.String(), c.want)
		}
	}
}
