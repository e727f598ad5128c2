package model

import (
	"encoding/json"
	"testing"
	"time"
)

// Goal: every kind of fact has a text, a fact survives the trace file's
// JSON unchanged, and an unknown kind is refused loudly rather than written
// as an empty line.
func TestFactsRoundTrip(t *testing.T) {
	for _, k := range FactKinds {
		f := Fact{Kind: k, Op: "op3", Token: 4, From: "signed", To: "broadcasting", Txid: "1a2b3c4d", Answer: "SUCCESS",
			Dur: 40 * time.Second, Claimed: []ClaimedRow{{Op: "op3", State: "requested", Token: 4}}}
		if f.Text() == "" {
			t.Errorf("%s: empty text", k)
		}
		data, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		back, ok := ReadFact(data)
		if !ok || back.Text() != f.Text() || back.Kind != k {
			t.Errorf("%s: read back as %+v (ok %v)", k, back, ok)
		}
	}
	if _, ok := ReadFact(nil); ok {
		t.Error("an event without data reads as a fact")
	}
	defer func() {
		if recover() == nil {
			t.Error("Text of an unknown kind did not panic")
		}
	}()
	_ = Fact{Kind: "no-such-kind"}.Text()
}
