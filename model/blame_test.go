package model

import (
	"strings"
	"testing"
)

// tidyRaw is a request's body with the five fields of p as plain strings,
// with extra members (raw JSON) appended before the closing brace and the
// field named by replace given a raw value instead.
func tidyRaw(p Payload, replace, value, extra string) *RawPost {
	vals := []string{p.ID, p.Customer, p.To, p.Amount, p.Asset}
	var members []string
	for i, f := range postFields {
		v := `"` + vals[i] + `"`
		if f == replace {
			if value == "" {
				continue // left out
			}
			v = value
		}
		members = append(members, `"`+f+`":`+v)
	}
	return &RawPost{ContentType: "application/json", Body: []byte("{" + strings.Join(members, ",") + extra + "}")}
}

// Goal: BlameOf lists every fault of a request, each where it is, and the
// field a refusal may name follows (independent bug 162 named another
// field for an amount given as an object holding a bracket in a string).
func TestBlameOf(t *testing.T) {
	good := payFor(string(opID(7)), payer, alice, 1_000_000)
	bad := good
	bad.Amount = "1.0000001"
	for _, c := range []struct {
		name   string
		raw    *RawPost
		sent   Payload
		allows []string // every name Allows must accept; every other of the five and "body" it must refuse
	}{
		{"tidy, valid", nil, good, nil},
		{"tidy, amount bad", nil, bad, []string{"amount"}},
		{"tidy, amount and asset bad", nil, func() Payload { p := bad; p.Asset = "usdt"; return p }(), []string{"amount", "asset"}},
		{"amount an object with a bracket in a string", tidyRaw(good, "amount", `{"value":"1.0","note":"see [1"}`, ""), Payload{}, []string{"amount"}},
		{"amount an array", tidyRaw(good, "amount", `["1.0"]`, ""), Payload{}, []string{"amount"}},
		{"customer null", tidyRaw(good, "customer", `null`, ""), Payload{}, []string{"customer"}},
		{"recipient missing", tidyRaw(good, "to_address", "", ""), Payload{}, []string{"to_address"}},
		{"amount twice", tidyRaw(good, "", "", `,"amount":"2"`), Payload{}, []string{"amount"}},
		{"unknown key", tidyRaw(good, "", "", `,"memo":"x"`), Payload{}, []string{"body", "memo"}},
		{"unknown key and a bad asset", tidyRaw(bad, "", "", `,"memo":"x"`), Payload{}, []string{"body", "memo", "amount"}},
		{"trailing data", &RawPost{Body: append(tidyRaw(good, "", "", "").Body, " x"...)}, Payload{}, []string{"body", "Amount"}},
		{"not JSON", &RawPost{Body: []byte(`{"operation_id":`)}, Payload{}, []string{"body"}},
		{"not an object", &RawPost{Body: []byte(`["x"]`)}, Payload{}, []string{"body"}},
		{"a form", &RawPost{ContentType: "application/x-www-form-urlencoded", Body: tidyRaw(good, "", "", "").Body}, Payload{}, []string{"body"}},
		{"a valid body is no one's fault", tidyRaw(good, "", "", ""), Payload{}, nil},
		{"the recipient the contract", nil, func() Payload { p := good; p.To = Base58Address(refUSDTContract); return p }(), []string{"to_address"}},
	} {
		b := BlameOf(c.raw, c.sent)
		for _, name := range append(postFields[:], "body") {
			want := false
			for _, a := range c.allows {
				want = want || a == name
			}
			if got := b.Allows(name); got != want {
				t.Errorf("%s: Allows(%q) = %v, want %v (blame %+v)", c.name, name, got, want, b)
			}
		}
		for _, a := range c.allows {
			if !b.Allows(a) {
				t.Errorf("%s: Allows(%q) = false, want true", c.name, a)
			}
		}
	}
}

// Goal: an Invalid answer naming a field that is not at fault is a
// violation of intake-uniqueness; naming the fault, or any fault of a
// request wrong in two places, or nothing, is not.
func TestRefusalNamesAFault(t *testing.T) {
	good := payFor(string(opID(42)), payer, alice, 1_000_000)
	twoBad := good
	twoBad.Amount, twoBad.Asset = "-1", "USDT"
	nested := tidyRaw(good, "amount", `{"value":"1.0","note":"see [1"}`, "")
	for _, c := range []struct {
		name  string
		raw   *RawPost
		sent  Payload
		field string
		wrong bool
	}{
		{"the fault named", nested, Payload{}, "amount", false},
		{"nothing named", nested, Payload{}, "", false},
		{"another field named", nested, Payload{}, "operation_id", true},
		{"the body named for a field's fault", nested, Payload{}, "body", true},
		{"a key named for a field's fault", nested, Payload{}, "],", true},
		{"the second of two faults", nil, twoBad, "asset", false},
		{"a third field with two faults", nil, twoBad, "customer", true},
		{"an unknown key named by itself", tidyRaw(good, "", "", `,"memo":"x"`), Payload{}, "memo", false},
	} {
		b := clean(t)
		if c.raw != nil {
			c.sent = good // the id the record is filed under; Raw is what is judged
		}
		b.record("c42", c.sent, Invalid, 0)
		r := &b.s.Intake[len(b.s.Intake)-1]
		r.Raw, r.Field = c.raw, c.field
		got := describe(CheckIntakeUniqueness(&b.s))
		switch {
		case !c.wrong && got != "":
			t.Errorf("%s: want clean, got:\n%s", c.name, got)
		case c.wrong && !strings.Contains(got, "refused naming the field "+`"`+c.field+`"`):
			t.Errorf("%s: want a refusal naming %q judged wrong, got:\n%s", c.name, c.field, got)
		}
	}
}

// Goal: the world reads a refusal's field without an allocation for the
// API's names, and any spelling encoding/json reads.
func TestReadRefusalField(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":"amount: has more than 6 decimals","field":"amount"}`: "amount",
		`{"error":"x","field":"body","code":"too_big"}`:                 "body",
		`{"field":"memo","error":"unknown field"}`:                      "memo",
		`{"error":"no field"}`:                                          "",
		`{"error":"x","field":"\u0061mount"}`:                           "amount",
		`not json`:                                                      "",
		` { "error" : "x" , "field" : "asset" } `:                       "asset",
		`{"error":"x","field":"to_address","extra":{"nested":[1,2]}}`:   "to_address",
	} {
		if got := ReadRefusalField([]byte(body)); got != want {
			t.Errorf("ReadRefusalField(%s) = %q, want %q", body, got, want)
		}
	}
	body := []byte(`{"error":"amount: has more than 6 decimals","field":"amount"}`)
	if n := testing.AllocsPerRun(100, func() { ReadRefusalField(body) }); n != 0 {
		t.Errorf("ReadRefusalField allocates %v times for an API field, want 0", n)
	}
}

// Goal: reasonField reads the field out of every reason ReadIntent and
// ReadPost give (as the index files them), so that the check's fast path
// agrees with BlameOf on requests wrong in one place.
func TestReasonField(t *testing.T) {
	good := payFor(string(opID(7)), payer, alice, 1_000_000)
	with := func(f func(*Payload)) Payload { p := good; f(&p); return p }
	for _, c := range []struct {
		p    Payload
		want string
	}{
		{with(func(p *Payload) { p.ID = "x" }), "operation_id"},
		{with(func(p *Payload) { p.Customer = "a b" }), "customer"},
		{with(func(p *Payload) { p.To = "T" }), "to_address"},
		{with(func(p *Payload) { p.To = Base58Address(refZeroAddress) }), "to_address"},
		{with(func(p *Payload) { p.Amount = "0" }), "amount"},
		{with(func(p *Payload) { p.Asset = "" }), "asset"},
		{with(func(p *Payload) { p.Asset = "TRX" }), "asset"},
	} {
		_, why := ReadIntent(c.p)
		if got := reasonField(why); got != c.want {
			t.Errorf("reasonField(%q) = %q, want %q", why, got, c.want)
		}
	}
	for _, c := range []struct {
		raw  *RawPost
		want string
	}{
		{tidyRaw(good, "amount", `["1"]`, ""), "amount"},
		{tidyRaw(good, "customer", "", ""), "customer"},
		{tidyRaw(good, "", "", `,"asset":"USDT"`), "asset"},
		{tidyRaw(good, "", "", `,"memo":"x"`), "body"},
		{&RawPost{Body: []byte("[]")}, "body"},
		{&RawPost{ContentType: "text/plain", Body: tidyRaw(good, "", "", "").Body}, "body"},
	} {
		_, why := ReadPost(*c.raw)
		if got := reasonField("request " + why); got != c.want {
			t.Errorf("reasonField(%q) = %q, want %q", "request "+why, got, c.want)
		}
		if !BlameOf(c.raw, Payload{}).Allows(c.want) {
			t.Errorf("%s: BlameOf does not allow %q, the first fault's field", c.raw.Body, c.want)
		}
	}
}
