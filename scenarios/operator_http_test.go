package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/tron"
)

// answerRewriter wraps the operator handler: each answer goes through
// rewrite before the world's operator reads it.
func answerRewriter(rewrite func(r *http.Request, code int, body []byte) (int, []byte)) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			code, body := rewrite(r, rec.Code, rec.Body.Bytes())
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(code)
			w.Write(body)
		})
	}
}

func isAction(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/operations/")
}

func tallyOf(res *Result, kind string) int {
	for _, t := range res.Tally {
		if t.Kind == kind {
			return t.Count
		}
	}
	return 0
}

// The world's operator acts only through the operator API's handler, with
// the token: every act the tally counts as landed is a 200 the handler
// gave, and the queue was read through it. A loop that called the service
// directly again would leave the handler idle and fail this.
func TestOperatorActsThroughTheHandler(t *testing.T) {
	var queues, landed, refused int
	wrap := answerRewriter(func(r *http.Request, code int, body []byte) (int, []byte) {
		if got := r.Header.Get("Authorization"); got != "Bearer "+operatorToken {
			t.Errorf("%s %s without the token (Authorization %q)", r.Method, r.URL, got)
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/queue" && code == http.StatusOK:
			queues++
		case isAction(r) && code == http.StatusOK:
			landed++
		case isAction(r) && code == http.StatusConflict:
			refused++
		}
		return code, body
	})
	var tallied, tallyRefused int
	for seed := uint64(1); seed <= 8; seed++ {
		res := Run(Wire(), seed, Options{operatorWrap: wrap})
		if len(res.Violations) > 0 {
			t.Fatalf("seed %d: %v", seed, res.Violations)
		}
		for _, k := range []string{"operator-retry", "operator-cancel", "operator-resolve", "customer-cancel"} {
			tallied += tallyOf(res, k)
		}
		for _, k := range []string{"operator-retry-refused", "operator-cancel-refused", "operator-resolve-refused", "customer-cancel-refused"} {
			tallyRefused += tallyOf(res, k)
		}
	}
	if queues == 0 || landed == 0 || refused == 0 {
		t.Fatalf("the handler served %d queue pages, %d landed and %d refused actions: the operator does not act through it", queues, landed, refused)
	}
	if tallied != landed {
		t.Errorf("the tally counts %d landed operator acts, the handler answered %d with 200", tallied, landed)
	}
	// A refused resolve without a txid is a 422, also counted refused.
	if tallyRefused < refused {
		t.Errorf("the tally counts %d refused acts, the handler answered %d with 409", tallyRefused, refused)
	}
}

// decisionWaited is a decision's wait in an operator API answer (the
// item's own "waited" is followed by its actions, not by "rebuilds").
var decisionWaited = regexp.MustCompile(`"waited":"[^"]*","rebuilds":`)

// The operator reads the handler's answers as a careful script does: an
// answer the API does not give (a 500, a body that is not JSON, a success
// about another operation, a queue page that skips what is in review) is
// a broken rule the run reports, never a success or silence. Each
// corruption below must fail a wire seed among the first few, and
// TestOperatorActsThroughTheHandler runs the same seeds unharmed.
func TestOperatorReadsAnswersCarefully(t *testing.T) {
	// dropOnce drops the last item of the first page that has a cursor,
	// keeping the cursor: one operation never listed (bug 41's effect).
	cases := map[string]func(r *http.Request, code int, body []byte) (int, []byte){
		"500 to an action": func(r *http.Request, code int, body []byte) (int, []byte) {
			if isAction(r) {
				return http.StatusInternalServerError, []byte(`{"error":"internal"}` + "\n")
			}
			return code, body
		},
		// A refusal (the row's state, a proof the chain does not give)
		// answered as the store's or node's failure: nothing failed.
		"refusal answered 503": func(r *http.Request, code int, body []byte) (int, []byte) {
			if isAction(r) && code == http.StatusConflict {
				return http.StatusServiceUnavailable, []byte(`{"error":"store unavailable"}` + "\n")
			}
			return code, body
		},
		"a deposit answered 503": func(r *http.Request, code int, body []byte) (int, []byte) {
			if r.URL.Path == "/v1/credits" && code == http.StatusCreated {
				return http.StatusServiceUnavailable, []byte(`{"error":"store unavailable"}` + "\n")
			}
			return code, body
		},
		// A refusal the store gave: the service let through a write the
		// store's own checks refused (a foreign txid, a closed hold).
		"store refusal": func(r *http.Request, code int, body []byte) (int, []byte) {
			if isAction(r) && code == http.StatusConflict {
				return code, bytes.Replace(body, []byte(`{"error":`), []byte(`{"code":"store_refused","error":`), 1)
			}
			return code, body
		},
		// Independent bug 74's effect: reviews offered no action.
		"reviews offer nothing": func(r *http.Request, code int, body []byte) (int, []byte) {
			if r.URL.Path == "/v1/queue" && code == http.StatusOK {
				body = bytes.ReplaceAll(body, []byte(`"actions":["cancel","resolve"]`), []byte(`"actions":[]`))
			}
			return code, body
		},
		// Independent bug 75's effect: evidence about another txid.
		"evidence about another txid": func(r *http.Request, code int, body []byte) (int, []byte) {
			if r.URL.Path == "/v1/queue" && code == http.StatusOK {
				body = bytes.ReplaceAll(body, []byte(`"evidence":{"txid":"`), []byte(`"evidence":{"txid":"0`))
			}
			return code, body
		},
		// Independent bug 76's effect: the account's numbers misplaced.
		"a credit's account not the store's": func(r *http.Request, code int, body []byte) (int, []byte) {
			if r.URL.Path == "/v1/credits" && code == http.StatusCreated {
				body = bytes.Replace(body, []byte(`"held":"`), []byte(`"held":"1`), 1)
			}
			return code, body
		},
		"a ref reused with other numbers accepted": func(r *http.Request, code int, body []byte) (int, []byte) {
			if r.URL.Path == "/v1/credits" && code == http.StatusConflict {
				return http.StatusOK, []byte(`{"ref":"x","credited":false,"account":{}}` + "\n")
			}
			return code, body
		},
		// Independent bug 70's effect: a parked operation on no page.
		"a parked item left out": func(r *http.Request, code int, body []byte) (int, []byte) {
			if r.URL.Path != "/v1/queue" || code != http.StatusOK {
				return code, body
			}
			var page map[string]json.RawMessage
			var items []json.RawMessage
			if json.Unmarshal(body, &page) != nil || json.Unmarshal(page["items"], &items) != nil {
				return code, body
			}
			kept := items[:0:0]
			for _, it := range items {
				if !bytes.Contains(it, []byte(`"parked":true`)) {
					kept = append(kept, it)
				}
			}
			b, _ := json.Marshal(kept)
			page["items"] = b
			out, _ := json.Marshal(page)
			return code, out
		},
		// Independent bug 84's effect, and a wait from another clock:
		// every item says it has waited an hour.
		"waited not the log's": func(r *http.Request, code int, body []byte) (int, []byte) {
			if r.URL.Path == "/v1/queue" && code == http.StatusOK {
				body = bytes.ReplaceAll(body, []byte(`"created_at":`), []byte(`"waited":"1h0m0s","created_at":`))
			}
			return code, body
		},
		// Independent bug 132's effect: a decision shows the item's wait
		// so far, not the one its reason was written from.
		"a decision's wait not its own": func(r *http.Request, code int, body []byte) (int, []byte) {
			if r.URL.Path == "/v1/queue" && code == http.StatusOK {
				body = decisionWaited.ReplaceAll(body, []byte(`"waited":"1h0m0s","rebuilds":`))
			}
			return code, body
		},
		// Independent bug 143's effect: an item's txids led by blanks (a
		// slice made with a length, then appended to).
		"txids not the log's": func(r *http.Request, code int, body []byte) (int, []byte) {
			if r.URL.Path == "/v1/queue" && code == http.StatusOK {
				body = bytes.ReplaceAll(body, []byte(`"txids":["`), []byte(`"txids":["","`))
			}
			return code, body
		},
		"landed action not JSON": func(r *http.Request, code int, body []byte) (int, []byte) {
			if isAction(r) && code == http.StatusOK {
				return code, []byte("ok\n")
			}
			return code, body
		},
		"landed action about another operation": func(r *http.Request, code int, body []byte) (int, []byte) {
			if isAction(r) && code == http.StatusOK {
				return code, bytes.Replace(body, []byte(`"operation_id":"`), []byte(`"operation_id":"0`), 1)
			}
			return code, body
		},
		"refusal without its error": func(r *http.Request, code int, body []byte) (int, []byte) {
			if isAction(r) && code == http.StatusConflict {
				return code, []byte("{}\n")
			}
			return code, body
		},
		"queue page loses an item": func(r *http.Request, code int, body []byte) (int, []byte) {
			if r.URL.Path != "/v1/queue" || code != http.StatusOK {
				return code, body
			}
			var page map[string]json.RawMessage
			var items []json.RawMessage
			if json.Unmarshal(body, &page) != nil || json.Unmarshal(page["items"], &items) != nil || len(items) == 0 {
				return code, body
			}
			b, _ := json.Marshal(items[1:])
			page["items"] = b
			out, _ := json.Marshal(page)
			return code, out
		},
	}
	for name, rewrite := range cases {
		t.Run(name, func(t *testing.T) {
			for seed := uint64(1); seed <= operatorReadSeeds; seed++ {
				res := Run(Wire(), seed, Options{operatorWrap: answerRewriter(rewrite)})
				for _, v := range res.Violations {
					if v.Invariant == PanicInvariant && strings.Contains(v.Message, "operator script") {
						t.Logf("seed %d: %.300s", seed, v.Message)
						return
					}
				}
			}
			t.Errorf("%d wire seeds read the corrupted answers without a complaint", operatorReadSeeds)
		})
	}
}

// Goal: a client that gets intake's 500 "store_refused" stops the run:
// intake accepted a request its store's own checks refused, which no honest
// pair does. Method: the first created withdrawal's answer rewritten to it.
func TestStoreRefusalStopsTheRun(t *testing.T) {
	done := false
	rewrite := answerRewriter(func(r *http.Request, code int, body []byte) (int, []byte) {
		if done || r.Method != http.MethodPost || code != http.StatusCreated {
			return code, body
		}
		done = true
		return http.StatusInternalServerError, []byte(`{"error":"the store refused","code":"` + intake.CodeStoreRefused + `"}` + "\n")
	})
	res := Run(Chaos(), 1, Options{wrapHandler: rewrite})
	for _, v := range res.Violations {
		if v.Invariant == PanicInvariant && strings.Contains(v.Message, "the store refused an operation intake accepted") {
			return
		}
	}
	t.Errorf("a 500 store_refused passed without a complaint: %v", res.Violations)
}

// operatorReadSeeds is how many wire seeds TestOperatorReadsAnswersCarefully
// gives each corruption to be read (it stops at the first complaint): some
// need an item with evidence on a queue page, which not every seed has.
// 12 sufficed until census-fault (session 29) moved wire's tapes; then
// "evidence about another txid" is first read at seed 16.
const operatorReadSeeds = 40

// Goal: the node's answers prove a txid dead for the person's cancel only
// when both reached the service's client, the lookup is about that txid,
// found it with a failed receipt, in a block at or below the solid block
// (independent bug 169 refused such cancels for good).
func TestDeathShown(t *testing.T) {
	txid := tron.Txid{7}
	proven := func() *actor {
		return &actor{stepLookup: tron.TxInfo{Txid: txid, Status: tron.Included, Receipt: "REVERT", BlockNumber: 90, Solid: true},
			stepSolid: tron.Block{Number: 90}, stepLookupOK: true, stepLookupGot: true, stepSolidOK: true, stepSolidGot: true}
	}
	if why := proven().deathShown(txid.String()); !strings.Contains(why, "receipt REVERT in block #90, the solid block #90") {
		t.Errorf("a failed receipt at the solid block: %q, want it shown", why)
	}
	for name, spoil := range map[string]func(a *actor){
		"another txid":           func(a *actor) { a.stepLookup.Txid = tron.Txid{8} },
		"success":                func(a *actor) { a.stepLookup.Receipt = tron.ReceiptSuccess },
		"above the solid block":  func(a *actor) { a.stepSolid.Number = 89 },
		"pending":                func(a *actor) { a.stepLookup.Status = tron.Pending },
		"lookup lost on the way": func(a *actor) { a.stepLookupGot = false },
		"no solid block served":  func(a *actor) { a.stepSolidOK = false },
		"no block number":        func(a *actor) { a.stepLookup.BlockNumber = 0 },
	} {
		a := proven()
		spoil(a)
		if why := a.deathShown(txid.String()); why != "" {
			t.Errorf("%s: %q, want no proof", name, why)
		}
	}
}

// Goal: a landed resolution as paid is reported when the node's answers
// to it, both received, show the txid's inclusion unsolid: its node's word
// or a block above the solid block fetched first (independent bug 215
// trusted the word alone); answers that show it solid, or that the actor
// lacks, report nothing.
func TestSolidityUnshown(t *testing.T) {
	txid := tron.Txid{7}
	solid := func() *actor {
		return &actor{stepLookup: tron.TxInfo{Txid: txid, Status: tron.Included, Receipt: tron.ReceiptSuccess, BlockNumber: 90, Solid: true},
			stepSolid: tron.Block{Number: 90}, stepLookupOK: true, stepLookupGot: true, stepSolidOK: true, stepSolidGot: true}
	}
	if why := solid().solidityUnshown(txid.String()); why != "" {
		t.Errorf("an inclusion at the solid block: %q, want it shown solid", why)
	}
	for name, c := range map[string]struct {
		spoil func(a *actor)
		want  string
	}{
		"above the solid block":  {func(a *actor) { a.stepSolid.Number = 89 }, "block #90 is above the solid block #89"},
		"not solid by its node":  {func(a *actor) { a.stepLookup.Solid = false }, "block #90 is not solid"},
		"another txid":           {func(a *actor) { a.stepLookup.Txid, a.stepSolid.Number = tron.Txid{8}, 89 }, ""},
		"pending":                {func(a *actor) { a.stepLookup.Status, a.stepLookup.Solid = tron.Pending, false }, ""},
		"lookup lost on the way": {func(a *actor) { a.stepLookupGot, a.stepSolid.Number = false, 89 }, ""},
		"no solid block served":  {func(a *actor) { a.stepSolidOK, a.stepSolid.Number = false, 89 }, ""},
	} {
		a := solid()
		c.spoil(a)
		why := a.solidityUnshown(txid.String())
		if c.want == "" && why != "" || c.want != "" && !strings.Contains(why, c.want) {
			t.Errorf("%s: %q, want %q", name, why, c.want)
		}
	}
}

// Goal: the world's handler runs with a token of exactly the documented
// minimum, so that a handler refusing its own minimum fails every world
// that has an operator (independent bug 185 was a CheckToken that did).
func TestOperatorTokenIsTheMinimum(t *testing.T) {
	if len(operatorToken) != operator.TokenMin {
		t.Errorf("operatorToken is %d bytes, want operator.TokenMin (%d): the boundary is what a wrong CheckToken gets wrong", len(operatorToken), operator.TokenMin)
	}
	if err := operator.CheckToken(operatorToken); err != nil {
		t.Errorf("CheckToken(operatorToken): %v", err)
	}
}

// Goal: a refused cancel is reported unasked only while the row is in
// review by the world's record and the node answered the actor neither a
// solid block nor a lookup (independent bug 228 refused every review with
// a txid without asking).
func TestReviewRefusedUnasked(t *testing.T) {
	const id sluice.OperationID = "op"
	for name, c := range map[string]struct {
		state        sluice.State
		solid, looks bool
		want         bool
	}{
		"in review, the node never asked": {sluice.Review, false, false, true},
		"in review, a solid block served": {sluice.Review, true, false, false},
		"in review, a lookup served":      {sluice.Review, false, true, false},
		"no longer in review":             {sluice.Failed, false, false, false},
	} {
		a := &actor{w: &world{views: map[sluice.OperationID]rowView{id: {state: c.state}}}, stepSolidOK: c.solid, stepLookupOK: c.looks}
		if got := a.reviewRefusedUnasked(id); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

// Goal: a 503 to an action whose write landed, and whose answer reached the
// service, stops the run: only a read after it can have failed, and the
// person must hear the action is done (independent bug 329 answered the
// handler's failed read-back as 503, so the person acted again into a 409
// about their own cancel). A 503 with the write's answer lost, or with no
// write, is the store's honest "nothing known".
// Method: unavailable on a hand-made actor and a 503 body.
func TestUnavailableAfterALandedWrite(t *testing.T) {
	body := []byte(`{"error":"store unavailable","code":"store_unavailable"}` + "\n")
	for name, c := range map[string]struct {
		answered, failed bool
		want             string // "" for no complaint
	}{
		"the write landed and was answered, a read after failed": {true, true, "yet the API answered 503"},
		"the write's answer lost":                                {false, true, ""},
		"nothing failed under it":                                {false, false, "no store or node call of the request failed"},
	} {
		w := &world{tally: map[string]int{}}
		w.s = sim.New(sim.NewRandom(1), sim.Options{StepsMax: 1})
		o := &operatorScript{w: w, a: &actor{w: w, storeFailed: c.failed, resolveAnswered: c.answered}}
		got := func() (msg string) {
			defer func() {
				if r := recover(); r != nil {
					msg = fmt.Sprint(r)
				}
			}()
			o.unavailable("POST /v1/operations/x/cancel", http.StatusServiceUnavailable, body)
			return ""
		}()
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want a complaint containing %q", name, got, c.want)
		}
	}
}

// Goal: a retry the API refuses while the operation is still live (not in
// review, not final), without the store fencing its write, stops the run:
// retry hands any live operation back to the workers (independent bug 328
// refused every row not parked, so one a worker had claimed after its park
// could not be handed back).
// Method: every retry answered 409 before the handler sees it, as a
// service that refuses it at its first read would; some wire seed among
// the first few must fail with the rule's message. The real handler passes
// the same seeds (TestOperatorActsThroughTheHandler).
func TestRetryRefusedOnALiveRow(t *testing.T) {
	refuse := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isAction(r) && strings.HasSuffix(r.URL.Path, "/retry") && r.Header.Get("Content-Type") == "application/json" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusConflict)
				w.Write([]byte(`{"error":"retry refused: it is not parked: a worker is driving it"}` + "\n"))
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	for seed := uint64(1); seed <= operatorReadSeeds; seed++ {
		res := Run(Wire(), seed, Options{operatorWrap: refuse, noSlips: true})
		for _, v := range res.Violations {
			if strings.Contains(v.Message, "a retry of an operation still") {
				t.Logf("seed %d: %.300s", seed, v.Message)
				return
			}
		}
	}
	t.Errorf("%d wire seeds took refused retries of live operations without a complaint", operatorReadSeeds)
}
