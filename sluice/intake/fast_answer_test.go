package intake

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
)

// detail and eventView are the GET answer as structs, the form the handler
// once marshalled: appendDetail must write what json.Marshal writes for
// them.
type detail struct {
	withdrawal
	Builds  int         `json:"builds"`
	Reason  string      `json:"reason,omitempty"`
	History []eventView `json:"history"`
}

type eventView struct {
	From        string `json:"from"`
	To          string `json:"to"`
	At          string `json:"at"`
	Note        string `json:"note,omitempty"`
	Txid        string `json:"txid,omitempty"`
	RetiredTxid string `json:"retired_txid,omitempty"`
}

// marshalDetail is the GET answer as the handler built it before
// appendDetail.
func marshalDetail(t testing.TB, op sluice.Operation, events []sluice.Event) []byte {
	d := detail{withdrawal: summarize(op, ""), Builds: op.Builds, Reason: op.Reason,
		History: make([]eventView, 0, len(events))}
	for _, e := range events {
		d.History = append(d.History, eventView{
			From:        e.From.String(),
			To:          e.To.String(),
			At:          e.At.UTC().Format(time.RFC3339Nano),
			Note:        e.Note,
			Txid:        txidString(e.Txid),
			RetiredTxid: txidString(e.RetiredTxid),
		})
	}
	return mustMarshal(t, d)
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// answerStrings are the strings that exercise every escaping rule.
var answerStrings = []string{
	"", "a", cust, id1, addrA, "12.5", sluice.Asset, "requested",
	`"`, `\`, `a"b\c`, "/", "<script>&amp;</script>", "\x00\x01\x07\b\t\n\v\f\r\x1b\x1f \x7f",
	"ü", "é€𝄞", "\u2028\u2029", "a\u2028b", "\xff", "a\xffb\xfe", "\xed\xa0\x80", "\uFFFD", "\xc3", "\xe2\x80",
	"must be a UUID (8-4-4-4-12 hex digits), got \"{" + id1 + "}\"",
	`unknown field; the fields are operation_id, customer, to_address, amount, asset`,
	strings.Repeat("x<", 100),
}

// TestAnswersMatchMarshal: every answer written by hand is byte for byte
// what json.Marshal writes for it, for strings that need every kind of
// escaping, and for GET answers with and without txids, notes and reasons.
func TestAnswersMatchMarshal(t *testing.T) {
	for _, s := range answerStrings {
		if got, want := appendJSONString(nil, s), mustMarshal(t, s); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
		if got, want := appendJSONString(nil, []byte(s)), mustMarshal(t, s); string(got) != string(want) {
			t.Errorf("appendJSONString([]byte(%q)) = %s, want %s", s, got, want)
		}
		for _, e := range []errorBody{{Error: s}, {Error: s, Field: s}, {Error: s, Code: s}, {Error: "x", Field: s, Code: s}} {
			if got, want := e.appendJSON(nil), mustMarshal(t, e); string(got) != string(want) {
				t.Errorf("%+v.appendJSON = %s, want %s", e, got, want)
			}
		}
		for i := range 7 {
			w := withdrawal{OperationID: id1, Customer: cust, State: "requested", ToAddress: addrA, Amount: "12.5", Asset: sluice.Asset}
			*[]*string{&w.OperationID, &w.Customer, &w.State, &w.ToAddress, &w.Amount, &w.Asset, &w.Txid}[i] = s
			if got, want := w.appendJSON(nil), mustMarshal(t, w); string(got) != string(want) {
				t.Errorf("%+v.appendJSON = %s, want %s", w, got, want)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		op, events := randomOperation(r)
		if got, want := appendDetail(nil, op, events), marshalDetail(t, op, events); string(got) != string(want) {
			t.Errorf("appendDetail = %s\nwant           %s", got, want)
		}
		for _, to := range []string{"", addrA, op.Request.To.String(), pick(r)} {
			if got, want := appendOperation(nil, op, to), mustMarshal(t, summarize(op, to)); string(got) != string(want) {
				t.Errorf("appendOperation(%q) = %s\nwant                %s", to, got, want)
			}
		}
	}
}

// pick is one of answerStrings.
func pick(r *rand.Rand) string { return answerStrings[r.IntN(len(answerStrings))] }

// randomOperation is an operation and an event log drawn to vary every
// member of a GET answer.
func randomOperation(r *rand.Rand) (sluice.Operation, []sluice.Event) {
	txid := func() tron.Txid {
		var t tron.Txid
		if r.IntN(2) == 0 {
			for i := range t {
				t[i] = byte(r.IntN(256))
			}
		}
		return t
	}
	zones := []*time.Location{time.UTC, time.FixedZone("x", 5*3600+1800), time.FixedZone("y", -7*3600)}
	at := func() time.Time {
		return time.Unix(r.Int64N(1<<34)-1<<33, []int64{0, 1, 1000, 123456789, 500000000}[r.IntN(5)]).In(zones[r.IntN(len(zones))])
	}
	op := sluice.Operation{
		ID:       sluice.OperationID(pick(r)),
		State:    sluice.State(r.IntN(20)),
		Request:  sluice.Request{Customer: sluice.CustomerID(pick(r)), To: tron.AddressFromBytes20([20]byte{byte(r.IntN(256)), 7}), Amount: money.Amount(r.Uint64N(uint64(money.MaxAmount) + 1)), Asset: pick(r)},
		Envelope: sluice.Envelope{Txid: txid()},
		// A third each: the first build and a few rebuilds, any count a
		// budget allows (RebuildsMax + 1 builds), any int: the answer
		// writes digits, never one character per count.
		Builds: []int{r.IntN(5), r.IntN(sluice.RebuildsMax + 2), r.Int()}[r.IntN(3)],
	}
	if r.IntN(2) == 0 {
		op.Reason = pick(r)
	}
	var events []sluice.Event
	for range r.IntN(6) {
		e := sluice.Event{From: sluice.State(r.IntN(20)), To: sluice.State(r.IntN(20)), At: at(), Txid: txid(), RetiredTxid: txid()}
		if r.IntN(2) == 0 {
			e.Note = pick(r)
		}
		events = append(events, e)
	}
	return op, events
}

// FuzzAnswersMatchMarshal: TestAnswersMatchMarshal over any strings. Run:
// go test ./sluice/intake -fuzz FuzzAnswersMatchMarshal.
func FuzzAnswersMatchMarshal(f *testing.F) {
	for _, s := range answerStrings {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := appendJSONString(nil, a), mustMarshal(t, a); string(got) != string(want) {
			t.Errorf("appendJSONString(%q) = %s, want %s", a, got, want)
		}
		e := errorBody{Error: a, Field: b, Code: a}
		if got, want := e.appendJSON(nil), mustMarshal(t, e); string(got) != string(want) {
			t.Errorf("%+v.appendJSON = %s, want %s", e, got, want)
		}
		w := withdrawal{OperationID: a, Customer: b, State: a, ToAddress: b, Amount: a, Asset: b, Txid: a}
		if got, want := w.appendJSON(nil), mustMarshal(t, w); string(got) != string(want) {
			t.Errorf("%+v.appendJSON = %s, want %s", w, got, want)
		}
		op := sluice.Operation{ID: sluice.OperationID(a), Request: sluice.Request{Customer: sluice.CustomerID(b), Asset: a}, Reason: b}
		events := []sluice.Event{{Note: a}, {Note: b, At: time.Unix(int64(len(a))<<20, int64(len(b)))}}
		if got, want := appendDetail(nil, op, events), marshalDetail(t, op, events); string(got) != string(want) {
			t.Errorf("appendDetail = %s\nwant           %s", got, want)
		}
		for _, to := range []string{"", addrA, op.Request.To.String(), a} {
			if got, want := appendOperation(nil, op, to), mustMarshal(t, summarize(op, to)); string(got) != string(want) {
				t.Errorf("appendOperation(%q) = %s\nwant                %s", to, got, want)
			}
		}
	})
}
