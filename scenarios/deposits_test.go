package scenarios

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/money"
)

// Goal: in a world with deposits made while it runs, the late customer's
// money arrives and is spent, with the honest core clean: deposits land,
// some are answered as replays, its posts are refused before enough has
// arrived and held after, and the world's record of every deposit agrees
// with the account the store keeps (each ref once, at its asked amount).
func TestDepositsWhileRunning(t *testing.T) {
	var deposits, replays, held, refused int
	for seed := uint64(1); seed <= 10; seed++ {
		res := Run(Wire(), seed, Options{keepSnapshot: true})
		if len(res.Violations) > 0 {
			t.Fatalf("seed %d: %v", seed, res.Violations)
		}
		s := res.Snapshot
		var sum money.Amount
		refs := map[string]bool{}
		for _, d := range s.LateDeposits {
			if refs[d.Credit.Ref] {
				t.Errorf("seed %d: deposit %s recorded twice", seed, d.Credit.Ref)
			}
			refs[d.Credit.Ref] = true
			sum += d.Credit.Amount
		}
		for _, a := range s.Accounts {
			if a.Customer == lateCustomer && a.Deposited != sum {
				t.Errorf("seed %d: the store holds %d deposited for %s, the world's deposits sum to %d", seed, a.Deposited, lateCustomer, sum)
			}
		}
		deposits += len(s.LateDeposits)
		replays += tallyOf(res, "deposit-repeat")
		for _, op := range s.Operations {
			if op.Request.Customer == lateCustomer {
				held++
			}
		}
		for _, r := range s.Intake {
			if r.Outcome == model.Unfunded && r.Sent.Customer == string(lateCustomer) {
				refused++
			}
		}
	}
	if deposits == 0 || replays == 0 || held == 0 || refused == 0 {
		t.Errorf("10 wire seeds: %d deposits, %d replays, %d withdrawals held for %s, %d refused for want of funds: want some of each",
			deposits, replays, held, lateCustomer, refused)
	}
}

// requestRewriter passes each credit request's JSON body through rewrite
// before the operator API's handler reads it.
func requestRewriter(rewrite func(body map[string]string)) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == "/v1/credits" {
				var body map[string]string
				b, _ := io.ReadAll(r.Body)
				if json.Unmarshal(b, &body) == nil {
					rewrite(body)
					b, _ = json.Marshal(body)
				}
				r.Body = io.NopCloser(bytes.NewReader(b))
				r.ContentLength = int64(len(b))
			}
			h.ServeHTTP(w, r)
		})
	}
}

// Goal: the world records each deposit as its depositor meant it, never
// as the handler read it: a handler that credits another customer (the
// id folded to lower case, independent bug 43), another amount, or a
// replay under a fresh ref (so a deposit is credited twice) is reported
// by funds, which compares the store's accounts with the world's own
// record. Method: rewrite the credit requests before the handler reads
// them, and want a funds violation within ten wire seeds (a repeated
// deposit comes in about three seeds of four).
func TestDepositsHeldToTheDepositor(t *testing.T) {
	seen := map[string]bool{}
	cases := map[string]func(body map[string]string){
		"customer folded": func(b map[string]string) { b["customer"] = strings.ToLower(b["customer"]) },
		"amount doubled": func(b map[string]string) {
			a, err := money.Parse(b["amount"])
			if err == nil {
				b["amount"] = (2 * a).String()
			}
		},
		// A ref sent before goes to the store as a new one: the replay
		// credits again. (The answer then names the other ref, which
		// the depositor also reports; funds must see it on its own.)
		"replay under a fresh ref": func(b map[string]string) {
			if seen[b["ref"]] {
				b["ref"] += "-again"
			}
			seen[b["ref"]] = true
		},
	}
	for name, rewrite := range cases {
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= 10; seed++ {
				clear(seen)
				// Without slips: a slip carries its credit's ref, and
				// would be the request the rewrite takes for the first.
				res := Run(Wire(), seed, Options{operatorWrap: requestRewriter(rewrite), noSlips: true})
				for _, v := range res.Violations {
					if v.Invariant == model.Funds {
						t.Logf("seed %d: %s", seed, v.Message)
						return
					}
				}
			}
			t.Errorf("10 wire seeds with the credits rewritten: no funds violation")
		})
	}
}

// The late customer's id is one intake and the store take, with capitals
// that a folding bug changes.
func TestLateCustomerHasCapitals(t *testing.T) {
	if why := lateCustomer.Valid(); why != "" {
		t.Fatalf("%s is not a customer id: %s", lateCustomer, why)
	}
	if strings.ToLower(string(lateCustomer)) == string(lateCustomer) {
		t.Errorf("%s has no capitals: a customer id folded to lower case would go unseen", lateCustomer)
	}
}

// The late deposits' refs are distinct as sent and collide in pairs when
// folded to one case, so that a ref folded anywhere (independent bug 65)
// makes two deposits one.
func TestDepositRefsDifferOnlyInCase(t *testing.T) {
	seen, folded := map[string]bool{}, map[string]int{}
	for k := 1; k <= 8; k++ {
		ref := depositRef(k)
		if seen[ref] || sluice.ValidCreditRef(ref) != "" {
			t.Fatalf("ref %d %q repeated or invalid", k, ref)
		}
		seen[ref] = true
		folded[strings.ToLower(ref)]++
	}
	for ref, n := range folded {
		if n != 2 {
			t.Errorf("folded ref %q stands for %d deposits, want 2", ref, n)
		}
	}
	// The first ref has bytes in 0x80-0x9F inside its characters.
	if first := depositRef(1); !strings.ContainsFunc(first, func(r rune) bool { return r > 0x7f }) ||
		!strings.ContainsAny(first, "\u00dc\u2116") {
		t.Errorf("the first ref %q has no character of another script", first)
	}
}
