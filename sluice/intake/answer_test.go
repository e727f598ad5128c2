package intake

import (
	"net/http"
	"strings"
	"testing"

	"sluicesim/sluice"
)

// Goal: an answer's payload hashes exactly as the request that made it,
// written "12.50" or "12.5"; a GET answer reads the same; anything that is
// not a withdrawal is refused.
func TestAnswerPayload(t *testing.T) {
	h, _ := newHandler(t)
	rec := post(h, validBody())
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST = %d", rec.Code)
	}
	want, err := Normalize(Submission{OperationID: id1, Customer: cust, ToAddress: addrA, Amount: "12.5", Asset: sluice.Asset})
	if err != nil {
		t.Fatal(err)
	}
	hash, st, ok := AnswerPayload(rec.Body.Bytes())
	if !ok || hash != want.RequestHash || st != sluice.Requested {
		t.Errorf("AnswerPayload(POST) = %.8s, %s, %v; want %.8s, requested, true", hash, st, ok, want.RequestHash)
	}
	get := do(h, http.MethodGet, "/v1/withdrawals/"+id1, "", "")
	if hash, _, ok := AnswerPayload(get.Body.Bytes()); !ok || hash != want.RequestHash {
		t.Errorf("AnswerPayload(GET) = %.8s, %v; want %.8s", hash, ok, want.RequestHash)
	}
	// The customer is part of the instruction: an answer showing another
	// one is another withdrawal, and one showing none is no withdrawal.
	otherCustomer := strings.Replace(rec.Body.String(), `"customer":"`+cust+`"`, `"customer":"`+other+`"`, 1)
	if hash, _, ok := AnswerPayload([]byte(otherCustomer)); !ok || hash == want.RequestHash {
		t.Errorf("AnswerPayload(another customer) = %.8s, %v; want another hash than %.8s", hash, ok, want.RequestHash)
	}
	noCustomer := strings.Replace(rec.Body.String(), `"customer":"`+cust+`",`, ``, 1)
	if _, _, ok := AnswerPayload([]byte(noCustomer)); ok || noCustomer == rec.Body.String() {
		t.Errorf("AnswerPayload(%s) ok, want refused", noCustomer)
	}
	for _, bad := range []string{``, `{}`, `{"error":"x","field":"amount"}`, `not json`} {
		if _, _, ok := AnswerPayload([]byte(bad)); ok {
			t.Errorf("AnswerPayload(%q) ok, want refused", bad)
		}
	}
}
