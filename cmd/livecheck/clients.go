package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
)

// post is one request body, the payload it carries in the client's own
// strings (what the oracle judges against), and its normalized hash ("" if
// invalid; the plan's own tests use it to check that the plan sends what it
// means to).
type post struct {
	id   string // as sent
	body []byte
	sent model.Payload
	hash string
	// unfunded: a valid request for broke, whom nobody funded; intake
	// must refuse it for want of funds (402) and store nothing.
	unfunded bool
}

// plan is everything the clients send for one withdrawal.
type plan struct {
	n        int
	id       string // canonical
	orig     post
	twin     *post // the same instruction written differently, posted concurrently
	conflict *post // another amount, or another customer, under the same id
	concConf bool  // the conflict races the original instead of following it
	upper    *post // the same instruction with the id in upper case, later
	replay   bool  // the original again, later
	invalid  *post // an invalid body under the same id, later
	read     bool  // GET after the posts
}

// tally counts what the clients sent and what they were told.
type tally struct {
	mu           sync.Mutex
	outcomes     map[model.Outcome]int
	dupSent      int // posts repeating an id's instruction (twins, upper case, replays; not retries)
	conflictSent int // posts of another instruction under a used id
	invalidSent  int
	unfundedSent int // valid posts for broke
	// lateCreated and lateUnfunded count late's posts answered created
	// and refused for want of funds.
	lateCreated, lateUnfunded int
	// wrongFunds lists answers about funds that cannot be right whatever
	// the model can see: a 402 to a funded customer (each is funded for
	// every withdrawal the run could make), or a withdrawal created for
	// broke. Either fails the run.
	wrongFunds    []string
	retries       int
	reads         int
	transportErrs int
	// answers counts every answer by class (answerClass), posts and reads.
	answers map[string]int
	// validFailed lists valid requests that got a 5xx other than a
	// retryable 503, or no answer at all; validUnanswered counts valid
	// posts that never got an answer other than those, retries included.
	// Either fails the run: intake must answer every valid request.
	validFailed     []string
	validUnanswered int
	// unanswered tells, for each of those posts, what every attempt got
	// and when (on the clock of the outages), for the summary.
	unanswered []string
	// duringOutage counts, by class, the answers to requests that
	// overlapped a PostgreSQL restart (outages). The 5xx among them
	// (excused) are not held against the run: the database was away. A
	// post's retries must still end in an answer (validUnanswered);
	// recovered counts the valid posts whose retry did. No answer at all
	// is never excused: the API process itself must stay up.
	duringOutage map[string]int
	excused      int
	recovered    int
}

// answerClass names an answer for the summary: "2xx", the 4xx code,
// "503" (retryable: the client retries), "5xx", or "transport" (none).
func answerClass(code int, ok bool) string {
	switch {
	case !ok:
		return "transport"
	case code >= 200 && code < 300:
		return "2xx"
	case code == http.StatusServiceUnavailable:
		return "503"
	case code >= 500:
		return "5xx"
	}
	return strconv.Itoa(code)
}

// history is the client side of the run: records and their logical clock.
type history struct {
	base    string
	hc      *http.Client
	clock   atomic.Int64
	mu      sync.Mutex
	intake  []model.IntakeRecord
	reads   []model.ReadRecord
	t       tally
	outages *outages // PostgreSQL restarts; nil when there are none
}

func newHistory(base string, timeout time.Duration) *history {
	return &history{
		base: base,
		hc: &http.Client{Timeout: timeout, Transport: &http.Transport{
			Proxy: nil, MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second,
		}},
		t:       tally{outcomes: map[model.Outcome]int{}, answers: map[string]int{}, duringOutage: map[string]int{}},
		outages: &outages{},
	}
}

// tick is the logical clock: one total order over every call and return
// point, consistent with real time (an answer received before a call is
// made gets the lower number).
func (h *history) tick() int64 { return h.clock.Add(1) }

// customers are whom the clients withdraw for. The API process credits
// each with funding(n) at its start (sluice serve -fund); broke is never
// credited.
var customers = []sluice.CustomerID{"live-0", "live-1", "live-2", "live-3"}

const broke sluice.CustomerID = "live-broke"

// amountMax bounds a withdrawal's amount (1,000 USDT; see newPlans).
const amountMax = money.Amount(100_000 * 10_000)

// funding is what each customer is credited with for n withdrawals: twice
// what the run could take from any one of them (every withdrawal drawn for
// it, each of the largest amount, and a conflict under another customer's
// id winning each race), so that a refusal for want of funds of a funded
// customer is always intake's error. It is capped at the largest credit.
func funding(n int) money.Amount {
	if n+1 > int(money.MaxAmount/(2*amountMax)) {
		return money.MaxAmount
	}
	return 2 * money.Amount(n+1) * amountMax
}

// fundFlags are the serve flags that fund every customer, and the credits
// they make (the ref is serve's, "fund:CUSTOMER:AMOUNT").
func fundFlags(n int) ([]string, []sluice.Credit) {
	var args []string
	var credits []sluice.Credit
	for _, c := range customers {
		a := funding(n)
		args = append(args, "-fund", string(c)+"="+a.String())
		credits = append(credits, sluice.Credit{Ref: "fund:" + string(c) + ":" + a.String(), Customer: c, Amount: a})
	}
	return args, credits
}

// newPlans draws n withdrawals and what to send for each.
func newPlans(n int, r *mrand.Rand) []plan {
	plans := make([]plan, n)
	for i := range plans {
		k := i + 1
		id := newUUID()
		to := randomAddress(r)
		// Whole cents, so that the amount can always be written with a
		// trailing zero more ("1.5" and "1.50").
		amount := money.Amount((1 + r.Int64N(int64(amountMax/10_000))) * 10_000)
		c := r.IntN(len(customers))
		cust := customers[c]
		if k%lateEvery == 0 {
			cust = late // funded only while the clients post (depositor)
		}
		p := plan{n: k, id: id, orig: submission(id, cust, to, amount.String())}
		if k%4 == 0 {
			t := submission(id, cust, to, amount.String()+pad(amount))
			p.twin = &t
		}
		if k%6 == 0 {
			// Every third conflict is the same payment from another
			// customer's balance: another withdrawal, so a 409 too.
			other := submission(id, cust, to, (amount + 1).String())
			if k%18 == 0 {
				other = submission(id, customers[(c+1)%len(customers)], to, amount.String())
			}
			p.conflict = &other
			p.concConf = k%12 == 0
		}
		if k%9 == 0 {
			u := submission(strings.ToUpper(id), cust, to, amount.String())
			p.upper = &u
		}
		p.replay = k%10 == 0
		if k%15 == 0 {
			bad := submission(id, cust, to, "1e6") // a JSON-number-looking amount: refused at the door
			p.invalid = &bad
		}
		p.read = k%3 == 0
		plans[i] = p
	}
	return plans
}

// invalidPosts are requests no withdrawal may come of: invalid ones, and
// (every fifth) valid ones for broke, each under a fresh id.
func invalidPosts(n int, r *mrand.Rand) []post {
	out := make([]post, 0, n)
	for i := range n {
		to := randomAddress(r)
		cust := customers[r.IntN(len(customers))]
		switch i % 5 {
		case 0:
			out = append(out, submission(fmt.Sprintf("not-a-uuid-%d", i), cust, to, "1"))
		case 1:
			out = append(out, submission(newUUID(), cust, to, "-5"))
		case 2:
			p := submission(newUUID(), cust, to, "1")
			p.body = bytes.Replace(p.body, []byte(`"USDT-TRC20"`), []byte(`"TRX"`), 1)
			p.hash, p.sent.Asset = "", "TRX"
			out = append(out, p)
		case 3:
			// A customer id with a space: not the funded one it names.
			out = append(out, submission(newUUID(), " "+cust, to, "1"))
		default:
			p := submission(newUUID(), broke, to, "1")
			p.unfunded = true
			out = append(out, p)
		}
	}
	return out
}

func submission(id string, customer sluice.CustomerID, to tron.Address, amount string) post {
	sub := intake.Submission{OperationID: id, Customer: string(customer), ToAddress: to.String(), Amount: amount, Asset: sluice.Asset}
	body, _ := json.Marshal(map[string]string{
		"operation_id": sub.OperationID, "customer": sub.Customer, "to_address": sub.ToAddress, "amount": sub.Amount, "asset": sub.Asset,
	})
	hash := ""
	if op, err := intake.Normalize(sub); err == nil {
		hash = op.RequestHash
	}
	return post{id: id, body: body, hash: hash,
		sent: model.Payload{ID: sub.OperationID, Customer: sub.Customer, To: sub.ToAddress, Amount: sub.Amount, Asset: sub.Asset}}
}

func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func randomAddress(r *mrand.Rand) tron.Address {
	var b [20]byte
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[0] = 0xc0 // never the hot wallet's or the contract's first byte
	return tron.AddressFromBytes20(b)
}

// pad returns trailing zeros that keep amount's meaning ("1.5" -> "1.50").
func pad(a money.Amount) string {
	s := a.String()
	if i := strings.IndexByte(s, '.'); i >= 0 {
		if len(s)-i-1 < money.Decimals {
			return "0"
		}
		return ""
	}
	return ".0"
}

// run executes one plan: the racing posts at once, then the later ones in
// order, then a read.
func (h *history) run(ctx context.Context, p plan, retries int) {
	name := fmt.Sprintf("p%d", p.n)
	var wg sync.WaitGroup
	wg.Go(func() { h.post(ctx, name+".orig", p.orig, retries) })
	if p.twin != nil {
		h.count(func(t *tally) { t.dupSent++ })
		wg.Go(func() { h.post(ctx, name+".twin", *p.twin, retries) })
	}
	if p.conflict != nil && p.concConf {
		h.count(func(t *tally) { t.conflictSent++ })
		wg.Go(func() { h.post(ctx, name+".conflict", *p.conflict, retries) })
	}
	wg.Wait()
	if p.conflict != nil && !p.concConf {
		h.count(func(t *tally) { t.conflictSent++ })
		h.post(ctx, name+".conflict", *p.conflict, retries)
	}
	if p.invalid != nil {
		h.count(func(t *tally) { t.invalidSent++ })
		h.post(ctx, name+".invalid", *p.invalid, 0)
	}
	if p.upper != nil {
		h.count(func(t *tally) { t.dupSent++ })
		h.post(ctx, name+".upper", *p.upper, retries)
	}
	if p.replay {
		h.count(func(t *tally) { t.dupSent++ })
		h.post(ctx, name+".replay", p.orig, retries)
	}
	if p.read {
		h.get(ctx, name+".get", p.id)
	}
}

func (h *history) count(f func(*tally)) {
	h.t.mu.Lock()
	f(&h.t)
	h.t.mu.Unlock()
}

// post sends one body, retrying a failed answer (a 5xx or no answer) with
// the same body; every attempt is a record. A valid body (by the model's own
// reading) must be answered: a 5xx other than a retryable 503, or no answer,
// is counted against the run, and so is a valid post whose retries all
// failed.
func (h *history) post(ctx context.Context, client string, p post, retries int) {
	_, invalid := model.ReadIntent(p.sent)
	answered, excused := false, false
	var trail []string // each attempt: when it was called, and its answer's class
	defer func() {
		if invalid == "" && !answered {
			h.count(func(t *tally) {
				t.validUnanswered++
				t.unanswered = append(t.unanswered, fmt.Sprintf("POST %s (%s): %s", p.id, client, strings.Join(trail, ", ")))
			})
		}
		if invalid == "" && answered && excused {
			h.count(func(t *tally) { t.recovered++ })
		}
	}()
	for attempt := 0; attempt <= retries; attempt++ {
		if attempt > 0 {
			h.count(func(t *tally) { t.retries++ })
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(attempt) * 300 * time.Millisecond):
			}
		}
		rec := model.IntakeRecord{Client: fmt.Sprintf("%s.%d", client, attempt), ID: p.id, Sent: p.sent}
		called := time.Now()
		code, hdr, body, ok := h.do(ctx, http.MethodPost, "/v1/withdrawals", p.body, &rec.Call, &rec.Return)
		class := answerClass(code, ok)
		outage := h.outages.overlaps(called, time.Now())
		trail = append(trail, fmt.Sprintf("%s at %s%s", class, called.Format("15:04:05.000"), map[bool]string{true: " (outage)"}[outage]))
		h.count(func(t *tally) {
			t.answers[class]++
			if outage {
				t.duringOutage[class]++
			}
			switch {
			case invalid != "" || (class != "5xx" && class != "transport"):
			case outage && class == "5xx":
				t.excused++
				excused = true
			default:
				t.validFailed = append(t.validFailed, fmt.Sprintf("POST %s (%s): %s", p.id, rec.Client, class))
			}
		})
		if ok {
			var a model.Shown
			rec.Outcome, a = classifyPost(code, hdr.Get("X-Idempotent-Replay") == "true", body)
			rec.Answer, rec.State, rec.Txid = a.Payload, a.State, a.Txid
			if code == http.StatusUnprocessableEntity {
				// The field the refusal names, which the model holds to
				// its own reading of what was sent (model.BlameOf).
				rec.Field = model.ReadRefusalField(body)
			}
		} else {
			rec.Outcome = model.Failed
		}
		if why := wrongFunds(p, rec.Outcome); why != "" {
			h.count(func(t *tally) {
				t.wrongFunds = append(t.wrongFunds, fmt.Sprintf("POST %s (%s): %s", p.id, rec.Client, why))
			})
		}
		if rec.Outcome == model.Failed {
			rec.Return = 0 // no answer, or a 5xx: the insert may or may not have committed
		}
		h.mu.Lock()
		h.intake = append(h.intake, rec)
		h.mu.Unlock()
		h.count(func(t *tally) {
			t.outcomes[rec.Outcome]++
			switch {
			case p.sent.Customer != string(late):
			case rec.Outcome == model.Created:
				t.lateCreated++
			case rec.Outcome == model.Unfunded:
				t.lateUnfunded++
			}
		})
		if rec.Outcome != model.Failed {
			answered = true
			return
		}
	}
}

// get reads an operation and records its answer (a read without one, a
// transport error, tells nothing and is not recorded). The live check cannot
// count the log at the call and the return, so the history shown is judged
// as some prefix of the final log.
func (h *history) get(ctx context.Context, client, id string) {
	rec := model.ReadRecord{Client: client, ID: id}
	called := time.Now()
	code, _, body, ok := h.do(ctx, http.MethodGet, "/v1/withdrawals/"+id, nil, &rec.Call, &rec.Return)
	class := answerClass(code, ok)
	outage := h.outages.overlaps(called, time.Now())
	h.count(func(t *tally) {
		t.answers[class]++
		if outage {
			t.duringOutage[class]++
		}
		switch {
		case outage && (class == "5xx" || class == "503"):
			t.excused++ // a read is not retried; the model sees a failed read the store's failure excuses
		case class != "5xx" && class != "transport":
		default:
			t.validFailed = append(t.validFailed, fmt.Sprintf("GET %s (%s): %s", id, client, class))
		}
	})
	if !ok {
		return
	}
	rec.Status = code
	// A 5xx while PostgreSQL restarted is the store's failure, not
	// intake's: the model excuses such a read, and only such a read.
	// (intake answers a store failure 503 + Retry-After; an older build
	// answered 500.)
	rec.StoreFailed = outage && (class == "5xx" || class == "503")
	if code == http.StatusOK {
		rec.Present = true
		a, _ := model.ReadShown(body)
		rec.Answer, rec.State, rec.History, rec.Txid = a.Payload, a.State, a.History, a.Txid
	}
	h.mu.Lock()
	h.reads = append(h.reads, rec)
	h.mu.Unlock()
	h.count(func(t *tally) { t.reads++ })
}

// do makes one request, taking the call point just before sending and the
// return point just after the whole answer arrived.
func (h *history) do(ctx context.Context, method, path string, body []byte, call, ret *int64) (int, http.Header, []byte, bool) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, rd)
	if err != nil {
		panic(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	*call = h.tick()
	resp, err := h.hc.Do(req)
	if err != nil {
		h.count(func(t *tally) { t.transportErrs++ })
		return 0, nil, nil, false
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	*ret = h.tick()
	if err != nil {
		h.count(func(t *tally) { t.transportErrs++ })
		return 0, nil, nil, false
	}
	return resp.StatusCode, resp.Header, b, true
}

// wrongFunds says why outcome cannot be the answer to p as far as funds go,
// or "": broke's withdrawal was created or replayed (broke has nothing),
// or a funded customer's was refused for want of funds (funding covers
// every withdrawal the run makes). Late's answers depend on when its
// deposits arrived: the model's funds judges them.
func wrongFunds(p post, outcome model.Outcome) string {
	switch {
	case p.sent.Customer == string(late):
	case p.unfunded && (outcome == model.Created || outcome == model.Replayed):
		return fmt.Sprintf("a withdrawal for %s, whom nobody funded, was %s", broke, outcome)
	case !p.unfunded && outcome == model.Unfunded:
		return fmt.Sprintf("customer %s, funded for every withdrawal of the run, was refused for want of funds", p.sent.Customer)
	}
	return ""
}

// classifyPost reads an answer as a client would: the status, the replay
// header and the payload in the body. A 402 is intake's refusal for want of
// funds (nothing stored).
func classifyPost(code int, replay bool, body []byte) (model.Outcome, model.Shown) {
	switch {
	case code == http.StatusCreated:
		a, _ := model.ReadShown(body)
		return model.Created, a
	case code == http.StatusOK && replay:
		a, _ := model.ReadShown(body)
		return model.Replayed, a
	case code == http.StatusConflict:
		return model.Conflict, model.Shown{}
	case code == http.StatusPaymentRequired:
		return model.Unfunded, model.Shown{}
	case code == http.StatusUnprocessableEntity || code == http.StatusBadRequest:
		return model.Invalid, model.Shown{}
	}
	return model.Failed, model.Shown{}
}
