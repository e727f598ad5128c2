package model

import (
	"strings"
	"testing"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// Goal: a request shown as the row holds it passes, allocating nothing, in
// any spelling the model reads as the same (trailing zeros); a request
// differing in any one field is told apart, naming the field.
func TestRequestShown(t *testing.T) {
	row := sluice.Request{Customer: "Cust-1", To: tron.Address{0x41, 0xa1, 19: 0x07}, Amount: 12_500_000, Asset: sluice.Asset}
	shown := func() Payload {
		return Payload{ID: "0000002a-0000-4000-8000-000000000007", Customer: "Cust-1",
			To: Base58Address([21]byte(row.To)), Amount: "12.5", Asset: sluice.Asset}
	}
	for _, amount := range []string{"12.5", "12.500000", "12.50"} {
		p := shown()
		p.Amount = amount
		if why := RequestShown(p, row); why != "" {
			t.Errorf("amount %q: %s", amount, why)
		}
	}
	p := shown()
	if n := testing.AllocsPerRun(100, func() { RequestShown(p, row) }); n != 0 {
		t.Errorf("a request shown as the row holds it: %v allocations", n)
	}
	for _, c := range []struct {
		field string
		slip  func(*Payload)
	}{
		{"amount", func(p *Payload) { p.Amount = "12500000" }}, // 155: base units
		{"amount", func(p *Payload) { p.Amount = "12.500001" }},
		{"customer", func(p *Payload) { p.Customer = "cust-1" }},
		{"to_address", func(p *Payload) { p.To = Base58Address([21]byte{0x41, 0xa1, 19: 0x08}) }},
		{"asset", func(p *Payload) { p.Asset = "USDT-TRC10" }},
		{"no client could have made", func(p *Payload) { p.Amount = "" }},
	} {
		p := shown()
		c.slip(&p)
		if why := RequestShown(p, row); !strings.Contains(why, c.field) {
			t.Errorf("a request differing in %s: %q, not naming it", c.field, why)
		}
	}
}
