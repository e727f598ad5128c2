package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/money"
)

// late is the customer nobody funds at the start: the depositor credits it
// through the operator API while the clients post, so that its withdrawals
// are refused for want of funds (402) until enough has arrived, and held
// after. Its id has capitals: customer ids are case-sensitive, and a
// handler that folded them would credit another account.
const late sluice.CustomerID = "Live-Late"

// lateEvery: every lateEvery-th withdrawal is late's.
const lateEvery = 5

// lateDeposits is how many deposits the depositor makes, spread over the
// posting: the first at a sixth of it, so that late's early posts find
// nothing.
const lateDeposits = 5

// depositor credits late while the clients post, through POST /v1/credits
// on the operator API, and keeps the live check's own record of each
// deposit (model.LateDeposit), placed conservatively, since a real run
// cannot see the instant a commit lands:
//
//   - AfterSeq is the store's newest event before the deposit's first
//     attempt. funds adds the deposit to its replay of the log right after
//     it, so every hold with a later seq may use the money, which it may or
//     may not have had (an overdraft is then excused, never invented). A
//     hold cannot be placed before a deposit it used: the store locks the
//     customer's account before it numbers a hold's event, and a credit
//     updates that row, so a hold that saw the deposit was numbered after
//     the deposit committed, and so after AfterSeq.
//   - Tick is the history's logical clock after the answer that settled
//     the deposit. A refusal for want of funds is judged only against
//     deposits whose Tick precedes its call: money certainly there.
//
// An attempt answered 503 or not at all is sent again with its ref until
// one is answered: the deposit is one, however many attempts carried it.
type depositor struct {
	url, token string
	hc         *http.Client
	h          *history
	// newest reads the store's newest event seq (newestEvent).
	newest func(context.Context) (int64, error)
	// latePlans is how many withdrawals are late's.
	latePlans int

	mu sync.Mutex
	// made are the deposits answered, in order; wrong lists answers no
	// deposit may get (a fresh ref answered as a repeat, another customer's
	// account, a repeat credited again, a deposit never answered).
	made      []model.LateDeposit
	wrong     []string
	attempts  int
	repeated  int
	conflicts int // refs sent again with other numbers, refused
	// invalid counts credits sent with a malformed operator name and
	// answered 422 for it: nothing credited, and the metrics must count
	// each as outcome "invalid" (not refused, not failed).
	invalid int
}

// lateAmounts counts late's withdrawals and gives the deposit that makes
// half of what they ask in all (each plan's first post) arrive over
// lateDeposits deposits: late's later posts are refused again once the
// money is spent.
func lateAmounts(plans []plan) (n int, each money.Amount) {
	var total money.Amount
	for _, p := range plans {
		if p.orig.sent.Customer == string(late) {
			n++
			if a, err := money.Parse(p.orig.sent.Amount); err == nil {
				total += a
			}
		}
	}
	return n, max(total/(2*lateDeposits), money.Amount(10_000))
}

// run makes the deposits over span, starting now; it returns when the last
// one is answered, or ctx ends.
func (d *depositor) run(ctx context.Context, span time.Duration, each money.Amount) {
	start := time.Now()
	for k := range lateDeposits {
		at := start.Add(span * time.Duration(k+1) / (lateDeposits + 1))
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(at)):
		}
		c := sluice.Credit{Ref: fmt.Sprintf("Late-Überweisung №%d", k+1), Customer: late, Amount: each}
		d.deposit(ctx, c)
		switch k {
		case 0:
			// A deposit pipeline misconfigured: its operator name has a
			// space and a '!', which no action may carry. Refused for
			// it, with nothing credited (funds holds the accounts to the
			// deposits made).
			bad := c
			bad.Ref = "Late-Bad-Operator"
			d.badOperator(ctx, bad)
		case 1:
			// An answered deposit sent again: the same ref and numbers,
			// nothing new (200, credited false).
			d.repeat(ctx, c)
		case 2:
			// A deposit pipeline's bug: an answered ref sent again with
			// the same amount for another customer, and with another
			// amount. Each names another deposit: 409, nothing credited
			// (funds holds the accounts to the deposits made).
			other, more := c, c
			other.Customer, more.Amount = customers[0], c.Amount+1
			d.conflict(ctx, other)
			d.conflict(ctx, more)
		}
	}
}

// creditAnswer is POST /v1/credits's answer as the depositor reads it.
type creditAnswer struct {
	Ref      string `json:"ref"`
	Credited bool   `json:"credited"`
	Account  struct {
		Customer string `json:"customer"`
	} `json:"account"`
}

// send posts c once: the status (0: no answer) and the answer read. A 409
// is an answer only when conflict is set (a ref sent with other numbers).
func (d *depositor) send(ctx context.Context, c sluice.Credit, conflict bool) (int, creditAnswer) {
	code, b := d.post(ctx, c, depositorName)
	if code == 0 {
		return 0, creditAnswer{}
	}
	var a creditAnswer
	if code == http.StatusOK || code == http.StatusCreated {
		if err := json.Unmarshal(b, &a); err != nil {
			d.fail("POST /v1/credits %s: %d with a body that is not the API's JSON: %.200q", c.Ref, code, b)
		}
	} else if code != http.StatusServiceUnavailable && (!conflict || code != http.StatusConflict) {
		d.fail("POST /v1/credits %s: %d %.200q: a deposit is answered 201, 200 for a repeat, or 503", c.Ref, code, b)
	}
	return code, a
}

// post sends c once as operator: the status (0: no answer) and the body.
func (d *depositor) post(ctx context.Context, c sluice.Credit, operator string) (int, []byte) {
	body, _ := json.Marshal(map[string]string{"operator": operator, "why": "deposit arrived",
		"ref": c.Ref, "customer": string(c.Customer), "amount": c.Amount.String()})
	d.mu.Lock()
	d.attempts++
	d.mu.Unlock()
	return operatorAPI(ctx, d.hc, d.token, http.MethodPost, d.url+"/v1/credits", body)
}

// badOperator sends c as an operator whose name no action may carry
// until it is answered: it must be a 422 naming the operator field.
func (d *depositor) badOperator(ctx context.Context, c sluice.Credit) {
	for attempt := 0; attempt < 40 && ctx.Err() == nil; attempt++ {
		if !pause(ctx, attempt) {
			return
		}
		code, b := d.post(ctx, c, "live check!")
		if code == 0 || code == http.StatusServiceUnavailable {
			continue // unanswered: the refusal must come with an answer
		}
		var e struct {
			Field string `json:"field"`
		}
		if code != http.StatusUnprocessableEntity || json.Unmarshal(b, &e) != nil || e.Field != "operator" {
			d.fail("POST /v1/credits %s by operator %q: %d %.200q, want 422 naming the operator field", c.Ref, "live check!", code, b)
			return
		}
		d.mu.Lock()
		d.invalid++
		d.mu.Unlock()
		return
	}
	d.fail("POST /v1/credits %s by a malformed operator: never answered in 40 attempts", c.Ref)
}

func (d *depositor) fail(format string, args ...any) {
	d.mu.Lock()
	d.wrong = append(d.wrong, fmt.Sprintf(format, args...))
	d.mu.Unlock()
}

// newestEvent reads the seq of the newest event pool's store holds.
func newestEvent(pool *pgxpool.Pool) func(context.Context) (int64, error) {
	return func(ctx context.Context) (int64, error) {
		var seq int64
		err := pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM events`).Scan(&seq)
		return seq, err
	}
}

// newestSeq is the store's newest event, retried through an outage.
func (d *depositor) newestSeq(ctx context.Context) (int64, bool) {
	for attempt := 0; ctx.Err() == nil; attempt++ {
		seq, err := d.newest(ctx)
		if err == nil {
			return seq, true
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(min(attempt+1, 10)) * 300 * time.Millisecond):
		}
	}
	return 0, false
}

// deposit makes one deposit, retrying until it is answered, and records it.
func (d *depositor) deposit(ctx context.Context, c sluice.Credit) {
	after, ok := d.newestSeq(ctx)
	if !ok {
		return
	}
	for attempt := 0; attempt < 40 && ctx.Err() == nil; attempt++ {
		if !pause(ctx, attempt) {
			return
		}
		code, a := d.send(ctx, c, false)
		if code != http.StatusOK && code != http.StatusCreated {
			continue // unanswered: send it again, the ref makes it one deposit
		}
		tick := d.h.tick()
		switch {
		case a.Ref != c.Ref || a.Account.Customer != string(c.Customer):
			d.fail("POST /v1/credits %s for %s: answered for ref %q, account %q", c.Ref, c.Customer, a.Ref, a.Account.Customer)
		case attempt == 0 && (code != http.StatusCreated || !a.Credited):
			d.fail("POST /v1/credits %s: a fresh deposit's first attempt answered %d credited=%v, want 201 credited", c.Ref, code, a.Credited)
		case (code == http.StatusCreated) != a.Credited:
			d.fail("POST /v1/credits %s: %d with credited=%v", c.Ref, code, a.Credited)
		}
		d.mu.Lock()
		d.made = append(d.made, model.LateDeposit{Credit: c, AfterSeq: after, Tick: tick})
		d.mu.Unlock()
		return
	}
	d.fail("POST /v1/credits %s: never answered in 40 attempts", c.Ref)
}

// pause waits before attempt k (none before the first, then k x 300 ms,
// at most 3 s); false when ctx ended meanwhile.
func pause(ctx context.Context, k int) bool {
	if k == 0 {
		return true
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Duration(min(k, 10)) * 300 * time.Millisecond):
		return true
	}
}

// answered sends c until an answer comes (40 attempts at most): the status
// and the answer, and false when none came.
func (d *depositor) answered(ctx context.Context, c sluice.Credit, conflict bool) (int, creditAnswer, bool) {
	for attempt := 0; attempt < 40 && ctx.Err() == nil; attempt++ {
		if !pause(ctx, attempt) {
			break
		}
		if code, a := d.send(ctx, c, conflict); code != 0 && code != http.StatusServiceUnavailable {
			return code, a, true
		}
	}
	return 0, creditAnswer{}, false
}

// repeat sends an answered deposit again: it must be a repeat.
func (d *depositor) repeat(ctx context.Context, c sluice.Credit) {
	code, a, ok := d.answered(ctx, c, false)
	if !ok {
		return
	}
	if code != http.StatusOK || a.Credited {
		d.fail("POST /v1/credits %s again: %d credited=%v, want 200 credited=false (a repeat)", c.Ref, code, a.Credited)
	}
	d.mu.Lock()
	d.repeated++
	d.mu.Unlock()
}

// conflict sends a ref already credited with other numbers: it must be
// refused (409).
func (d *depositor) conflict(ctx context.Context, c sluice.Credit) {
	code, a, ok := d.answered(ctx, c, true)
	if !ok {
		return
	}
	if code != http.StatusConflict {
		d.fail("POST /v1/credits %s again, %s USDT to %s: %d credited=%v, want 409: the ref names another deposit", c.Ref, c.Amount, c.Customer, code, a.Credited)
	}
	d.mu.Lock()
	d.conflicts++
	d.mu.Unlock()
}

// summary is the depositor's line of the report.
func (d *depositor) summary(t *tally) string {
	var sum money.Amount
	for _, m := range d.made {
		sum += m.Credit.Amount
	}
	return fmt.Sprintf("late deposits for %s: %d made (%s USDT, %d attempts, %d repeated, %d conflicting refused); its posts: created %d, refused for want of funds %d",
		late, len(d.made), sum, d.attempts, d.repeated, d.conflicts, t.lateCreated, t.lateUnfunded)
}

// problems are the depositor's reasons to fail the run.
func (d *depositor) problems(t *tally) []string {
	out := slices.Clone(d.wrong)
	if len(d.made) < lateDeposits {
		out = append(out, fmt.Sprintf("%d of %d late deposits made", len(d.made), lateDeposits))
	}
	if d.conflicts < 2 {
		out = append(out, fmt.Sprintf("%d of 2 refs sent again with other numbers were answered", d.conflicts))
	}
	if d.invalid < 1 {
		out = append(out, "the credit by a malformed operator name was not refused as invalid")
	}
	// Counted outcomes: money arriving during the run must both be waited
	// for and used, or the run did not test it (with a few of late's
	// withdrawals at least: the first deposit comes after a sixth of the
	// posting, so the first fifth of them find nothing).
	if d.latePlans >= lateDeposits && (t.lateCreated == 0 || t.lateUnfunded == 0) {
		out = append(out, fmt.Sprintf("%s's posts: %d created, %d refused for want of funds; a run with late deposits wants both", late, t.lateCreated, t.lateUnfunded))
	}
	return out
}

// lateNeverStored counts late's withdrawals that were refused for want of
// funds and never stored: each was answered, and so decided, though no
// row shows it. A plan with no row and no 402 is not counted: that one is
// missing.
func lateNeverStored(plans []plan, ops []sluice.Operation, intake []model.IntakeRecord) int {
	stored := map[string]bool{}
	for _, op := range ops {
		stored[strings.ToLower(string(op.ID))] = true
	}
	refused := map[string]bool{}
	for _, r := range intake {
		if r.Outcome == model.Unfunded {
			refused[strings.ToLower(r.ID)] = true
		}
	}
	n := 0
	for _, p := range plans {
		if p.orig.sent.Customer == string(late) && !stored[p.id] && refused[p.id] {
			n++
		}
	}
	return n
}
