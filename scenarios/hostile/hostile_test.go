package hostile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sluicesim/model"
	"sluicesim/scenarios/hostile"
	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
)

func base(r *rand.Rand) hostile.Fields {
	var acct [20]byte
	for i := range acct {
		acct[i] = byte(r.Uint32())
	}
	acct[0] |= 1
	amounts := []string{"1", "1.5", "12.25", "999.999999", "0.1", "1000"}
	customers := []string{"cust-0", "cust-1", "c", "A.b_c:d-e", strings.Repeat("z", sluice.CustomerMax)}
	c := r.IntN(len(customers))
	return hostile.Fields{
		ID:       "0f3a5b7c-1d2e-4f60-8a9b-0c1d2e3f4a5b",
		Customer: customers[c],
		Others:   slices.Delete(slices.Clone(customers), c, c+1),
		To:       tron.AddressFromBytes20(acct).String(),
		Amount:   amounts[r.IntN(len(amounts))],
		Asset:    sluice.Asset,
	}
}

// accepted are the cases whose author meant them to be valid requests. The
// worlds never use this list (the reference reading decides there); it is
// a second, independent opinion that the test holds the reference to.
var accepted = map[string]bool{
	"id-spelling/upper": true, "id-spelling/mixed": true,
	"address/other-account": true, "address/near-zero-account": true,
	"amount/six-decimals": true, "amount/smallest-unit": true,
	"customer/escaped": true, "customer/other-customer": true,
	"body-size/at-limit": true, "body-size/under-limit": true, "body-size/inside-padding-at-limit": true,
	"json-shape/reordered": true, "json-shape/escaped-key": true, "json-shape/escaped-value": true, "json-shape/whitespace-between": true,
	"content-type/absent": true, "content-type/charset-upper": true, "content-type/type-upper": true, "content-type/no-space": true,
}

// either are the cases meant to be valid or not by the draw (a random edit
// of a valid field): the reference alone decides each, and over the draws
// the test needs both outcomes, or the case does not do what it says.
var either = map[string]bool{"amount/damaged": true}

// refusedFor are cases whose bodies are valid JSON refused for the reason
// they are about, not for another flaw the case made by mistake: a
// duplicate key spelled into invalid JSON is refused by every reader, and
// tests nothing of how intake reads valid JSON (the escaped duplicate of
// duplicate-other did, when first written: the reference, reading token by
// token, still named the key twice).
var refusedFor = map[string]string{
	"json-shape/duplicate-same":  "twice",
	"json-shape/duplicate-other": "twice",
}

// TestCasesMeanWhatTheySay draws every case many times and holds three
// readings to one another: the author's intent (accepted), the model's
// reference (ReadPost, ReadIntent) and the real HTTP handler. A case that
// is sometimes valid and sometimes not, a reference that disagrees with the
// author, or an intake that disagrees with the reference fails it.
func TestCasesMeanWhatTheySay(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, cat := range hostile.Categories {
		valid, invalid := 0, 0
		for _, c := range cat.Cases {
			name := cat.Name + "/" + c.Name
			draws, meant := 40, 0
			if either[name] {
				draws = 400
			}
			for range draws {
				b := base(r)
				p := c.Make(b, r)
				raw := model.RawPost{ContentType: p.ContentType, Body: p.Body}
				fields, why := model.ReadPost(raw)
				if why == "" {
					_, why = model.ReadIntent(fields)
				}
				if why == "" {
					meant++
				}
				if r := refusedFor[name]; r != "" && (!json.Valid(p.Body) || !strings.Contains(why, r)) {
					t.Fatalf("%s: the reference refuses %.200q for %q; the case is about a refusal for %q", name, p.Body, why, r)
				}
				if (why == "") != accepted[name] && !either[name] {
					t.Fatalf("%s: the reference reads %q (body %.200q, type %q) as valid=%v, its author meant valid=%v",
						name, why, p.Body, p.ContentType, why == "", accepted[name])
				}
				code := post(t, p, b)
				if want := why == ""; (code == http.StatusCreated) != want || (!want && code != 422 && code != 415) {
					t.Fatalf("%s: intake answered %d to %.200q (type %q); the reference says %q", name, code, p.Body, p.ContentType, why)
				}
				if why == "" {
					valid++
				} else {
					invalid++
				}
			}
			if either[name] && (meant == 0 || meant == draws) {
				t.Errorf("%s: %d of %d draws valid; the case is meant to give both", name, meant, draws)
			}
		}
		if valid == 0 || invalid == 0 {
			t.Errorf("category %s: %d valid and %d invalid requests; each category needs both", cat.Name, valid, invalid)
		}
	}
}

// post sends p to intake over a fresh store in which b's customer and its
// others are funded for any amount, as the worlds fund theirs: a valid
// request is created, never refused for want of funds.
func post(t *testing.T, p hostile.Post, b hostile.Fields) int {
	t.Helper()
	mem := store.NewMemory(&storetest.Clock{}, time.Minute)
	for i, c := range append([]string{b.Customer}, b.Others...) {
		credit := sluice.Credit{Ref: fmt.Sprintf("fund-%d", i), Customer: sluice.CustomerID(c), Amount: money.MaxAmount}
		if _, _, err := mem.Credit(context.Background(), credit); err != nil {
			t.Fatalf("funding %q: %v", c, err)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/v1/withdrawals", bytes.NewReader(p.Body))
	if p.ContentType != "" {
		req.Header.Set("Content-Type", p.ContentType)
	}
	rec := httptest.NewRecorder()
	intake.NewHandler(&intake.Service{Store: mem}).ServeHTTP(rec, req)
	return rec.Code
}

func TestCorpusIsReproducible(t *testing.T) {
	b := base(rand.New(rand.NewPCG(3, 4)))
	one := hostile.Corpus(b, rand.New(rand.NewPCG(5, 6)))
	two := hostile.Corpus(b, rand.New(rand.NewPCG(5, 6)))
	if !reflect.DeepEqual(one, two) {
		t.Fatal("the same seed made two different corpora")
	}
	n := 0
	for _, c := range hostile.Categories {
		n += len(c.Cases)
	}
	if len(one) != n {
		t.Fatalf("corpus has %d posts, the catalog %d cases", len(one), n)
	}
}

func TestDrawKeepsToItsCategories(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	b := base(r)
	for range 200 {
		if p := hostile.Draw(r, []string{"amount", "content-type"}, b); p.Category != "amount" && p.Category != "content-type" {
			t.Fatalf("drew %s/%s from amount and content-type", p.Category, p.Case)
		}
	}
}

// TestBodyMaxIsTheContract pins the three copies of the limit: the API's,
// the generator's and the reference's.
func TestBodyMaxIsTheContract(t *testing.T) {
	if hostile.BodyMax != intake.BodyMax || model.PostBodyMax != intake.BodyMax {
		t.Fatalf("body limits: hostile %d, model %d, intake %d", hostile.BodyMax, model.PostBodyMax, intake.BodyMax)
	}
}

// TestCustomerMaxIsTheContract pins the generator's customer length limit
// to sluice's, and checks that the reference agrees on both sides of it.
func TestCustomerMaxIsTheContract(t *testing.T) {
	if hostile.CustomerMax != sluice.CustomerMax {
		t.Fatalf("customer limits: hostile %d, sluice %d", hostile.CustomerMax, sluice.CustomerMax)
	}
	p := model.Payload{ID: "0f3a5b7c-1d2e-4f60-8a9b-0c1d2e3f4a5b", To: tron.AddressFromBytes20([20]byte{0xc0, 1}).String(), Amount: "1", Asset: sluice.Asset}
	for _, c := range []struct {
		n  int
		ok bool
	}{{hostile.CustomerMax, true}, {hostile.CustomerMax + 1, false}} {
		p.Customer = strings.Repeat("c", c.n)
		if _, why := model.ReadIntent(p); (why == "") != c.ok {
			t.Errorf("a customer of %d bytes: the reference says %q, want valid=%v", c.n, why, c.ok)
		}
	}
}

// TestOtherCustomerIsAnotherFundedOne: the other-customer case sends one of
// the funded others, never the customer itself or one nobody funded, so
// that in the worlds it is created or a conflict, not refused for funds.
func TestOtherCustomerIsAnotherFundedOne(t *testing.T) {
	cat, _ := hostile.Lookup("customer")
	r := rand.New(rand.NewPCG(9, 10))
	for _, c := range cat.Cases {
		if c.Name != "other-customer" {
			continue
		}
		for range 100 {
			b := base(r)
			fields, why := model.ReadPost(model.RawPost{ContentType: "application/json", Body: c.Make(b, r).Body})
			if why != "" || fields.Customer == b.Customer || !slices.Contains(b.Others, fields.Customer) {
				t.Fatalf("other-customer sent %q (%s) for %q; want one of %q", fields.Customer, why, b.Customer, b.Others)
			}
		}
		return
	}
	t.Fatal("the customer category has no other-customer case")
}
