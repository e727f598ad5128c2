package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
)

// noNode is a node no credit calls.
type noNode struct{ tron.Node }

const testToken = "0123456789abcdef-livecheck-test"

// Goal: the depositor holds every answer to what it asked: a deposit is
// one however many attempts carried it (an answer lost after the store
// credited it is sent again and answered as a repeat), an answered one
// sent again must be a repeat, and an answer for another account, or a
// repeat credited again, fails the run. Each deposit is placed after the
// newest event read before its first attempt, and at a tick after its
// answer. Method: the depositor's real code against the operator API's
// real handler over the memory store, behind a front that may lie.
func TestDepositsJudged(t *testing.T) {
	for _, c := range []struct {
		name  string
		front func(w http.ResponseWriter, r *http.Request, body []byte, real http.Handler) bool
		wrong string // "" for none
	}{
		{"honest", nil, ""},
		{"an answer lost after the credit", func() func(http.ResponseWriter, *http.Request, []byte, http.Handler) bool {
			var mu sync.Mutex
			lost := map[string]bool{}
			return func(w http.ResponseWriter, r *http.Request, body []byte, real http.Handler) bool {
				mu.Lock()
				defer mu.Unlock()
				ref := string(body[bytes.Index(body, []byte(`"ref":"`))+7:])
				ref = ref[:strings.IndexByte(ref, '"')]
				if lost[ref] {
					return false
				}
				lost[ref] = true
				real.ServeHTTP(httptest.NewRecorder(), r) // credited; the answer is lost
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			}
		}(), ""},
		// Independent bug 43's effect: the handler lower-cases the customer.
		{"another customer's account", func(w http.ResponseWriter, r *http.Request, body []byte, real http.Handler) bool {
			r.Body = io.NopCloser(bytes.NewReader(bytes.Replace(body, []byte(late), []byte(strings.ToLower(string(late))), 1)))
			real.ServeHTTP(w, r)
			return true
		}, `account "live-late"`},
		{"a repeat credited again", func(w http.ResponseWriter, r *http.Request, body []byte, real http.Handler) bool {
			rec := httptest.NewRecorder()
			real.ServeHTTP(rec, r)
			if rec.Code != http.StatusOK {
				return false
			}
			w.WriteHeader(http.StatusCreated)
			w.Write(bytes.Replace(rec.Body.Bytes(), []byte(`"credited":false`), []byte(`"credited":true`), 1))
			return true
		}, "want 200 credited=false (a repeat)"},
		// Independent bug 107's effect at the API: a malformed operator
		// name answered as the store's refusal.
		{"a malformed operator refused as a conflict", func(w http.ResponseWriter, r *http.Request, body []byte, real http.Handler) bool {
			if !bytes.Contains(body, []byte(`"live check!"`)) {
				return false
			}
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"error":"refused","code":"store_refused"}` + "\n"))
			return true
		}, "want 422 naming the operator field"},
		// Independent bug 83's effect: a ref credited before is taken as
		// a repeat whatever customer it now names.
		{"a conflicting ref taken as a repeat", func(w http.ResponseWriter, r *http.Request, body []byte, real http.Handler) bool {
			rec := httptest.NewRecorder()
			real.ServeHTTP(rec, r)
			if rec.Code != http.StatusConflict {
				w.WriteHeader(rec.Code) // the real answer, once: the call landed
				w.Write(rec.Body.Bytes())
				return true
			}
			w.WriteHeader(http.StatusOK)
			w.Write([]byte(`{"ref":"x","credited":false,"account":{"customer":"live-0"}}` + "\n"))
			return true
		}, "want 409: the ref names another deposit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := store.NewMemory(&storetest.Clock{}, time.Minute)
			real, err := operator.NewHandler(&operator.Service{Store: mem, Node: noNode{}}, testToken, nil)
			if err != nil {
				t.Fatal(err)
			}
			front := lyingFront(real, c.front)
			defer front.Close()
			h := newHistory(front.URL, 5*time.Second)
			seq := int64(0)
			d := &depositor{url: front.URL, token: testToken, hc: front.Client(), h: h,
				newest: func(context.Context) (int64, error) { seq += 10; return seq, nil }}
			each := money.Amount(25 * 1_000_000)
			d.run(t.Context(), 50*time.Millisecond, each)

			wrong := strings.Join(d.wrong, "; ")
			switch {
			case c.wrong == "" && wrong != "":
				t.Errorf("honest answers judged wrong: %s", wrong)
			case c.wrong != "" && !strings.Contains(wrong, c.wrong):
				t.Errorf("wrong answers %q, want one saying %q", wrong, c.wrong)
			}
			if c.wrong != "" {
				return
			}
			if d.invalid != 1 {
				t.Errorf("%d credits by a malformed operator refused as invalid, want 1", d.invalid)
			}
			if len(d.made) != lateDeposits || d.repeated != 1 || d.conflicts != 2 {
				t.Fatalf("%d deposits made, %d repeated, %d conflicting refused; want %d, 1 and 2", len(d.made), d.repeated, d.conflicts, lateDeposits)
			}
			prev := model.LateDeposit{}
			for i, m := range d.made {
				if m.Credit.Customer != late || m.Credit.Amount != each || m.AfterSeq <= prev.AfterSeq || m.Tick <= prev.Tick {
					t.Errorf("deposit %d %+v after %+v: want %s's, %s each, placed in order", i, m, prev, late, each)
				}
				prev = m
			}
			acct, err := mem.Account(t.Context(), late)
			if err != nil || acct.Deposited != lateDeposits*each {
				t.Errorf("the store's account %+v (%v): want %s deposited once per deposit", acct, err, lateDeposits*each)
			}
		})
	}
}

// Goal: the acceptance counts a late withdrawal refused for want of funds
// and never stored as decided, and only such a one: a late plan with no row
// and no 402 is missing.
func TestLateNeverStored(t *testing.T) {
	plans := newPlans(20, rand.New(rand.NewPCG(5, 6)))
	var lates []plan
	for _, p := range plans {
		if p.orig.sent.Customer == string(late) {
			lates = append(lates, p)
		}
	}
	if len(lates) != 4 {
		t.Fatalf("%d of 20 plans are %s's, want 4", len(lates), late)
	}
	ops := []sluice.Operation{{ID: sluice.OperationID(lates[0].id)}}
	intake := []model.IntakeRecord{
		{ID: lates[0].id, Outcome: model.Unfunded},                  // refused, then stored: stored
		{ID: strings.ToUpper(lates[1].id), Outcome: model.Unfunded}, // refused, never stored
		{ID: lates[2].id, Outcome: model.Failed},                    // no answer, never stored: missing
	}
	if n := lateNeverStored(plans, ops, intake); n != 1 {
		t.Errorf("lateNeverStored = %d, want 1", n)
	}
}

// lyingFront serves real behind lie, which may answer a request itself
// (true) or leave it to real (false); it reads the request's body first and
// hands it over, the request's own body rewound.
func lyingFront(real http.Handler, lie func(w http.ResponseWriter, r *http.Request, body []byte, real http.Handler) bool) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if lie != nil && lie(w, r, body, real) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		real.ServeHTTP(w, r)
	}))
}
