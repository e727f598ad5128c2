package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/operator"
)

// onCallName is the on-call person's operator name: every event it makes
// carries "operator:" + it, which is how its actions are found in the log.
// It is exactly operator.OperatorMax bytes, the longest the API takes (blind
// bug 280 refused a name of exactly the bound); depositorName likewise.
const (
	onCallName    = "livecheck-oncall.person_01:withdrawals@operations.sluice.example"
	depositorName = "livecheck-depositor.bank_1:deposits@operations.sluice.example.io"
)

// onCallRound is how often the person on call acts over a posting of
// span: a second apart (sixty rounds in the default posting of a minute),
// and in a short posting twenty rounds (the small live check's 8 s), so
// that some action lands (a run in which none does fails) without
// cancelling so many that too few withdrawals are left to be killed
// between their write-ahead and their send (which the run demands too).
func onCallRound(span time.Duration) time.Duration {
	return min(max(span/20, 250*time.Millisecond), time.Second)
}

// onCall is the person on call during the live check, acting through the
// operator API's HTTP handler on the database's clock, as people do in
// production. The simulator's operator does the same in its worlds, but on
// the simulator's clock; an action that works only with an injected clock
// (independent bug 149: every Resolve failed on the database's) passed
// every world and every live check until the live check acted too.
//
// Each round (every round of the posting):
//
//   - a customer asks to stop a withdrawal not yet built: the person reads
//     the requested and validated rows (from the database, as the
//     simulator's person lists the store) and cancels one. A worker may
//     build it meanwhile: then it is refused (409), never cancelled;
//   - every other round, a withdrawal in flight (signing to broadcast)
//     that looks slow is retried: the store bumps its token under the
//     worker driving it, on a real database with real workers racing;
//   - the person reads the queue (GET /v1/queue) and retries a parked
//     operation, or cancels one in review (with the node's proof of
//     death, which the service asks for itself; a refusal is an answer).
//
// Every action is sent until it is answered (a 503, or no answer, is sent
// again, as the depositor does: an outage may last seconds); a 503 or no
// answer outside PostgreSQL's outages fails the run, as the clients' do,
// and so does an answer that never comes: what an action the store always
// fails (149) meets. Answers are judged as they come (a cancel's 200 must
// show it failed) and against the event log at the end
// (judge): an action answered as done is in the log under the person's
// name, a cancelled one ended failed, nothing refused landed, and the
// request a 200 showed is the row's.
type onCall struct {
	url, token string
	hc         *http.Client
	rng        *mrand.Rand
	// outages are PostgreSQL's restarts and crashes (the clients'): a 503
	// or no answer is excused only overlapping one.
	outages *outages
	// rows lists ids of up to 20 rows in the given states, newest first
	// (the pool's, or a test's store).
	rows func(context.Context, ...sluice.State) ([]sluice.OperationID, error)
	// backoff is the wait before an action's second attempt; the k-th
	// waits k times as long, ten times at most (the depositor's pause).
	backoff time.Duration

	mu sync.Mutex
	// answered is each action's answer by operation: "landed" (200),
	// "refused" (409), "node" (503 node_unavailable: nothing changed),
	// "unanswered", or "maybe" (an attempt answered 503 or not at all
	// before the answer: it may have landed).
	answered map[sluice.OperationID]map[operator.Kind]string
	counts   map[string]int // "cancel/landed", "retry/refused", ...
	// shown is the request each 200 showed (the operation's page after
	// the action), held to the row at the end (judge).
	shown map[sluice.OperationID]model.Payload
	// queued counts the actions on rows the queue showed, "retry/landed"
	// and so on (fromQueue): a part of counts.
	queued   map[string]int
	attempts int
	unsure   int // attempts answered 503 or not at all, then sent again
	lost     int // attempts not answered at all (the server may have counted them)
	gaveUp   bool
	wrong    []string
}

// rowsIn reads up to 20 ids of rows in the given states, newest first.
func rowsIn(pool *pgxpool.Pool) func(context.Context, ...sluice.State) ([]sluice.OperationID, error) {
	return func(ctx context.Context, states ...sluice.State) ([]sluice.OperationID, error) {
		names := make([]string, len(states))
		for i, st := range states {
			names[i] = st.String()
		}
		rows, err := pool.Query(ctx, `SELECT id::text FROM operations WHERE state::text = ANY($1) ORDER BY created_at_ns DESC LIMIT 20`, names)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var ids []sluice.OperationID
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return nil, err
			}
			ids = append(ids, sluice.OperationID(id))
		}
		return ids, rows.Err()
	}
}

// run acts every round until span has passed or ctx ends.
func (o *onCall) run(ctx context.Context, span, round time.Duration) {
	end := time.Now().Add(span)
	for time.Now().Before(end) && !o.stuck() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(round):
		}
		if ids, err := o.rows(ctx, sluice.Requested, sluice.Validated); err == nil && len(ids) > 0 {
			o.act(ctx, ids[o.rng.IntN(len(ids))], operator.Cancel, "the customer asked to stop it")
		}
		// Every other round, a withdrawal in flight that looks slow to
		// someone is retried: the store bumps its token under the worker
		// driving it, whose next write is fenced, on a real database with
		// real workers racing the resolution (what independent bug 134,
		// a resolution that reads the row without locking it, needs).
		if o.rng.IntN(2) == 0 {
			if ids, err := o.rows(ctx, inFlight...); err == nil && len(ids) > 0 {
				o.act(ctx, ids[o.rng.IntN(len(ids))], operator.Retry, "it looks slow, try it now")
			}
		}
		for _, it := range o.queue(ctx) {
			if o.stuck() {
				return
			}
			id := sluice.OperationID(it.OperationID)
			switch {
			case it.State == sluice.Review.String():
				o.fromQueue(operator.Cancel, o.act(ctx, id, operator.Cancel, "reviewed: cancel if the node proves it dead"))
			case it.Parked && o.rng.IntN(2) == 0:
				o.fromQueue(operator.Retry, o.act(ctx, id, operator.Retry, "the node is back, try it now"))
			}
		}
	}
}

// fromQueue counts an action on a row the queue showed (a parked row's
// retry, a review's cancel) by its answer: the run with rows made to park
// (-short-every) demands that some retry of a parked row landed.
func (o *onCall) fromQueue(k operator.Kind, answer string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.queued == nil {
		o.queued = map[string]int{}
	}
	o.queued[k.String()+"/"+answer]++
}

// parkedRetried counts the retries of parked rows answered 200.
func (o *onCall) parkedRetried() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.queued["retry/landed"]
}

func (o *onCall) stuck() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.gaveUp
}

// inFlight are the states a worker drives a withdrawal through after
// validation: an operator's retry there fences whoever holds it.
var inFlight = []sluice.State{sluice.Signing, sluice.Signed, sluice.Broadcasting, sluice.Broadcast}

// queueItem is the part of the queue's items the person reads.
type queueItem struct {
	OperationID string `json:"operation_id"`
	State       string `json:"state"`
	Parked      bool   `json:"parked"`
}

// queue reads the first page of the queue; nothing when it is not
// answered (an outage: the next round reads it again). It asks for the
// largest page the API documents (operator.QueueMax), the boundary a wrong
// limit check gets wrong; the person still acts on at most queueActs rows a
// round, as before.
func (o *onCall) queue(ctx context.Context) []queueItem {
	code, b := o.do(ctx, http.MethodGet, "/v1/queue?limit="+strconv.Itoa(operator.QueueMax), nil)
	if code != http.StatusOK {
		if code != 0 && code != http.StatusServiceUnavailable {
			o.fail("GET /v1/queue: %d %.200q, want 200 or 503", code, b)
		}
		return nil
	}
	var page struct {
		Items []queueItem `json:"items"`
	}
	if err := json.Unmarshal(b, &page); err != nil {
		o.fail("GET /v1/queue: 200 with a body that is not the API's JSON: %.200q", b)
	}
	return page.Items[:min(len(page.Items), queueActs)]
}

// queueActs is how many rows of the queue the person acts on in a round.
const queueActs = 20

// act sends one action until it is answered, and judges the answer; it
// returns the answer as answered records it ("landed", "refused", ...).
func (o *onCall) act(ctx context.Context, id sluice.OperationID, k operator.Kind, why string) string {
	body, _ := json.Marshal(map[string]string{"operator": onCallName, "why": why})
	what := fmt.Sprintf("POST /v1/operations/%s/%s", id, k)
	final, unsure := "", false
	for attempt := 0; attempt < 40 && ctx.Err() == nil; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(min(attempt, 10)) * o.backoff):
			}
		}
		called := time.Now()
		code, b := o.do(ctx, http.MethodPost, "/v1/operations/"+string(id)+"/"+k.String(), body)
		o.mu.Lock()
		o.attempts++
		o.mu.Unlock()
		var e struct {
			State     string `json:"state"`
			Code      string `json:"code"`
			Customer  string `json:"customer"`
			ToAddress string `json:"to_address"`
			Amount    string `json:"amount"`
			Asset     string `json:"asset"`
		}
		if code != 0 && json.Unmarshal(b, &e) != nil {
			o.fail("%s: %d with a body that is not the API's JSON: %.200q", what, code, b)
			return "wrong"
		}
		switch {
		case code == http.StatusOK:
			// A cancel's state is final; a retry's is not judged here: a
			// worker may claim the row and park it, or move it on, between
			// the action and the page the answer shows (its event is
			// judged at the end).
			if k == operator.Cancel && e.State != sluice.Failed.String() {
				o.fail("%s: 200 showing state %s: a cancel ends failed", what, e.State)
			}
			final = "landed"
			o.mu.Lock()
			if o.shown == nil {
				o.shown = map[sluice.OperationID]model.Payload{}
			}
			o.shown[id] = model.Payload{ID: string(id), Customer: e.Customer, To: e.ToAddress, Amount: e.Amount, Asset: e.Asset}
			o.mu.Unlock()
		case code == http.StatusConflict:
			final = "refused"
		case code == http.StatusServiceUnavailable && e.Code == operator.CodeNodeUnavailable:
			final = "node" // nothing changed, certain: the node did not answer
		case code == 0 || code == http.StatusServiceUnavailable:
			if !unsure && !o.outages.overlaps(called, time.Now()) {
				// The store failed the action, or nothing answered, while
				// PostgreSQL was up: what an action the store always
				// fails meets (149), once a worker moves the row on and
				// a later attempt is refused for it.
				o.fail("%s: %d %.200q outside any PostgreSQL outage, want 200 or 409", what, code, b)
			}
			o.mu.Lock()
			o.unsure++
			if code == 0 {
				o.lost++
			}
			o.mu.Unlock()
			unsure = true
			continue
		default:
			o.fail("%s: %d %.200q, want 200, 409 or 503", what, code, b)
			return "wrong"
		}
		break
	}
	if final == "" {
		o.fail("%s: never answered in 40 attempts", what)
		final = "unanswered"
		o.mu.Lock()
		o.gaveUp = true // the next action would wait as long, for nothing
		o.mu.Unlock()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.answered == nil {
		o.answered, o.counts = map[sluice.OperationID]map[operator.Kind]string{}, map[string]int{}
	}
	if o.answered[id] == nil {
		o.answered[id] = map[operator.Kind]string{}
	}
	// An earlier landed answer stays: a later refusal of the same action
	// (it is failed now) changes nothing of it.
	// An attempt answered 503 or not at all may have landed, and the one
	// that answered after it then finds the action done (a cancel refused:
	// "it is already failed"): such an action is "maybe", which the log
	// may or may not hold.
	o.counts[k.String()+"/"+final]++
	if unsure && final != "landed" {
		final = "maybe"
	}
	// The same action may be sent again in a later round: what one answer
	// allowed into the log, a later refusal does not take back.
	if prev := o.answered[id][k]; prev != "landed" && (prev != "maybe" || final == "landed") {
		o.answered[id][k] = final
	}
	return final
}

// do sends one request as the person: the status (0: no answer) and body.
func (o *onCall) do(ctx context.Context, method, path string, body []byte) (int, []byte) {
	return operatorAPI(ctx, o.hc, o.token, method, o.url+path, body)
}

// operatorAPI sends one request to the operator API with the run's token
// (the person's and the depositor's): the status (0: no answer) and the
// body read.
func operatorAPI(ctx context.Context, hc *http.Client, token, method, url string, body []byte) (int, []byte) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil
	}
	return resp.StatusCode, b
}

func (o *onCall) fail(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.wrong = append(o.wrong, fmt.Sprintf(format, args...))
}

// judge holds the answers to the store's final rows and event log: an
// action answered as done is in the log under the person's name (a cancel
// to failed, a retry in place), a cancelled operation ended failed, and no
// action the API refused (409) or could not carry to the node landed.
func (o *onCall) judge(ops []sluice.Operation, events []sluice.Event) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := slices.Clone(o.wrong)
	final := map[sluice.OperationID]sluice.State{}
	for _, op := range ops {
		final[op.ID] = op.State
		if p, ok := o.shown[op.ID]; ok {
			if why := model.RequestShown(p, op.Request); why != "" {
				out = append(out, fmt.Sprintf("%s: the operator API's answer to an action %s", op.ID, why))
			}
		}
	}
	type key struct {
		id sluice.OperationID
		k  operator.Kind
	}
	logged := map[key]bool{}
	for _, e := range events {
		if e.Worker != sluice.OperatorPrefix+onCallName {
			continue
		}
		k := operator.Retry
		if e.To == sluice.Failed {
			k = operator.Cancel
		}
		logged[key{e.OperationID, k}] = true
		if a := o.answered[e.OperationID][k]; a != "landed" && a != "maybe" {
			out = append(out, fmt.Sprintf("event %d: %s by %s, %s to %s, which the operator API answered %q (landed, in the log, though refused)",
				e.Seq, k, onCallName, e.From, e.To, a))
		}
	}
	ids := make([]sluice.OperationID, 0, len(o.answered))
	for id := range o.answered {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		for _, k := range []operator.Kind{operator.Cancel, operator.Retry} {
			if o.answered[id][k] != "landed" {
				continue
			}
			if !logged[key{id, k}] {
				out = append(out, fmt.Sprintf("%s %s answered 200, but no event by %s records it", k, id, onCallName))
			}
			if k == operator.Cancel && final[id] != sluice.Failed {
				out = append(out, fmt.Sprintf("cancel %s answered 200, but the operation ended %s", id, final[id]))
			}
		}
	}
	return out
}

// summary is the person's line of the report.
func (o *onCall) summary() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	keys := make([]string, 0, len(o.counts))
	for k := range o.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf(" %s %d", k, o.counts[k])
	}
	queued := make([]string, 0, len(o.queued))
	for k, n := range o.queued {
		queued = append(queued, fmt.Sprintf(" %s %d", k, n))
	}
	sort.Strings(queued)
	return fmt.Sprintf("operator on call: %d attempts (%d answered 503 or not at all, sent again); actions by answer:%s; of them on rows the queue showed (parked, review):%s",
		o.attempts, o.unsure, strings.Join(parts, ","), strings.Join(queued, ","))
}

// metricProblems holds the operator API's action counter (the final
// scrape's, "action/outcome") to the person's answers: each action landed
// (200) or refused (409) is counted so, once; an attempt that failed is
// answered 503 and counted failed, which is not judged. An attempt with no
// answer at all may have been counted either way, and then nothing is
// judged.
func (o *onCall) metricProblems(actions map[string]float64) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lost > 0 {
		return nil
	}
	var out []string
	for _, k := range []operator.Kind{operator.Cancel, operator.Retry} {
		for _, outcome := range []string{"landed", "refused"} {
			key := k.String() + "/" + outcome
			if got, want := actions[key], float64(o.counts[key]); got != want {
				out = append(out, fmt.Sprintf("metrics: %s{action=%q,outcome=%q} is %v, but the operator API answered %v such actions %s",
					metricActions, k, outcome, got, want, map[string]string{"landed": "200", "refused": "409"}[outcome]))
			}
		}
	}
	return out
}

// landed counts the actions answered 200.
func (o *onCall) landed() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.counts["cancel/landed"] + o.counts["retry/landed"]
}
