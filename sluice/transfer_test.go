package sluice_test

import (
	"strings"
	"testing"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// Goal: TransferMismatch accepts exactly one USDT Transfer log, from the hot
// wallet to the recipient for the amount, and names what else it sees. Every
// USDT Transfer log counts, whoever it is from: a second one inside the call
// means more moved than was asked, and a person must look (independent bug
// 326 counted only the hot wallet's, so an exact log beside a stranger's
// USDT transfer confirmed, and a stranger's alone read "no USDT Transfer
// log"). Other contracts' logs are ignored whatever they claim.
// Method: a table of log lists against one request.
func TestTransferMismatch(t *testing.T) {
	addr := func(b byte) tron.Address { return tron.AddressFromBytes20([20]byte{19: b}) }
	hot, to, stranger, foreign := addr(1), addr(2), addr(3), addr(4)
	req := sluice.Request{To: to, Amount: 10_000_000}
	exact := tron.TransferLog(tron.USDTContract, hot, to, 10_000_000)
	for _, c := range []struct {
		name string
		logs []tron.Log
		want string // "" for exact; otherwise a phrase the reason holds
	}{
		{"exact", []tron.Log{exact}, ""},
		{"exact beside another contract's logs", []tron.Log{tron.TransferLog(foreign, stranger, to, 5), exact}, ""},
		{"none", nil, "no USDT Transfer log"},
		{"another token's only", []tron.Log{tron.TransferLog(foreign, hot, to, 10_000_000)}, "no USDT Transfer log"},
		{"a stranger's USDT transfer only", []tron.Log{tron.TransferLog(tron.USDTContract, stranger, to, 10_000_000)}, "from " + stranger.String()},
		{"exact beside a stranger's USDT transfer", []tron.Log{exact, tron.TransferLog(tron.USDTContract, stranger, addr(5), 1)}, "2 USDT Transfer logs"},
		{"a fee-on-transfer", []tron.Log{tron.TransferLog(tron.USDTContract, hot, stranger, 1), exact}, "2 USDT Transfer logs"},
		{"short", []tron.Log{tron.TransferLog(tron.USDTContract, hot, to, 5_000_000)}, "for 5000000 units"},
		{"another recipient", []tron.Log{tron.TransferLog(tron.USDTContract, hot, stranger, 10_000_000)}, "to " + stranger.String()},
	} {
		got := sluice.TransferMismatch(hot, req, c.logs)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
