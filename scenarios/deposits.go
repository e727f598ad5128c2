package scenarios

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"sluicesim/model"
	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/operator"
)

// Deposits while the processes run (Config.DepositEvery). Every other
// customer is funded before any process starts, so that the worlds explore
// money in flight; lateCustomer starts with nothing, and a depositor
// process credits it while the clients arrive, as a deposit pipeline does in
// production: through the operator service, or in a wire world through the
// operator API's POST /v1/credits. Its posts are refused for want of funds
// until a deposit lands, then held against what was deposited: the ledger's
// arithmetic with money arriving, not only leaving.
//
// The world keeps its own record of each deposit (model.LateDeposit): the
// credit as the depositor meant it (never as a handler or the store read
// it), placed where the world's store call first carried it out, by the
// store's newest event and the logical clock. A deposit whose answer was
// lost is sent again with its ref until answered, and now and then one
// already answered is sent again: either way, one deposit.

// lateCustomer is the customer funded only by late deposits. Its id has
// capitals: customer ids are case-sensitive (sluice.CustomerID), and every
// other customer's is lower-case. It also has every end of the alphabet's
// ranges (a z A Z 0 9) and every punctuation allowed: a rule that refuses
// one of them (independent bug 114 refused 'z') refuses its deposits and
// withdrawals, which the depositor and the clients send as valid. The
// name changes no schedule: it sorts where "Late-Cust" did.
const lateCustomer sluice.CustomerID = "Late-Cust.az_AZ:09"

// depositorName is the depositor process.
const depositorName = "depositor"

// depositReplayP is the chance, per round with no deposit unanswered, that
// the depositor sends an answered deposit again instead of a new one (a
// pipeline that re-reads its source after a restart).
const depositReplayP = 0.2

// depositAmount is the k-th late deposit's amount: about half the largest
// withdrawal, each a little different, so that the late customer's posts
// are now refused and now held.
func depositAmount(k int) money.Amount {
	return amountMax/2 + money.Amount(k)*1_234_567
}

// depositRef is the k-th late deposit's ref. Refs are case-sensitive (a
// deposit's id may be a base58 txid): the odd ones have capitals, and each
// even one is the one before it in lower case, another deposit, so that a
// ref folded anywhere makes two deposits one. Every other pair, the first
// among them, is a bank's reference in another script: characters of two
// and three bytes in UTF-8 whose later bytes fall in 0x80-0x9F (Ü is C3 9C,
// № is E2 84 96), which a check of control characters byte by byte takes
// for C1 controls (independent bug 164 refused them), with a space before
// its number as bank references have (independent bug 214 refused a space
// as if it were a control character).
func depositRef(k int) string {
	if k%2 == 0 {
		return strings.ToLower(depositRef(k - 1))
	}
	n := (k + 1) / 2
	if n%2 == 1 {
		return "Überweisung №" + strconv.Itoa(n)
	}
	return "Dep-" + strconv.Itoa(n) + "-Tx"
}

// depositLoop is the depositor: every DepositEvery until the last client
// has arrived, and then until its last deposit is answered, it sends one
// credit.
func (w *world) depositLoop(p *sim.Proc) {
	a := &actor{w: w, p: p}
	svc := &operator.Service{Store: storeView{a}, Node: node{a: a, inner: w.node.Client(depositorName)}, HotWallet: w.hot,
		Clock: clock{a}, Config: w.cfg.Sluice}
	var script *operatorScript
	if w.cfg.Wire {
		w.meterOnce()
		script = w.newOperatorScript(a, svc)
	}
	arrived := epoch.Add(w.cfg.ArrivalSpread.D())
	var made []sluice.Credit // answered, for replays
	var pending *sluice.Credit
	for {
		p.Sleep(w.cfg.DepositEvery.D())
		if pending == nil && !w.s.Now().Before(arrived) {
			return
		}
		var c sluice.Credit
		switch {
		case pending != nil:
			c = *pending
		case len(made) > 0 && w.s.Chance("deposit-repeat", depositReplayP):
			pick := w.s.Choose("deposit-repeat-pick", len(made))
			c = made[pick]
			if w.s.Choose("deposit-repeat-kind", 3) == 0 {
				// A deposit pipeline's bug: the same ref with another
				// amount, or (every other pick, by the data, so that
				// recorded tapes keep their choices) for another
				// customer. It must be refused, crediting nothing.
				if pick%2 == 1 {
					c.Customer = w.customers[0]
				} else {
					c.Amount++
				}
				w.conflictingDeposit(script, svc, c)
				continue
			}
		default:
			k := len(w.lateRefs) + 1
			c = sluice.Credit{Ref: depositRef(k), Customer: lateCustomer, Amount: depositAmount(k)}
			w.lateRefs = append(w.lateRefs, c.Ref)
		}
		w.depositing, w.depositTook = &c, false
		var answered, credited bool
		if script != nil {
			answered, credited = script.credit(c)
		} else {
			answered, credited = w.creditDirect(svc, c)
		}
		took := w.depositTook
		w.depositing = nil
		switch {
		case !answered:
			pending = &c
			continue
		case credited != took:
			// The world knows whether this very call carried the deposit
			// out (its store call did, for a ref not carried out before).
			panic(fmt.Sprintf("depositor: the credit of %s (%d units to %s) was answered credited=%v, but the world's store call %s",
				c.Ref, c.Amount, c.Customer, credited, map[bool]string{true: "carried it out first in this call", false: "did not carry it out in this call"}[took]))
		}
		pending = nil
		if !slices.ContainsFunc(made, func(m sluice.Credit) bool { return m.Ref == c.Ref }) {
			made = append(made, c)
		}
		if credited {
			w.tally["deposit"]++
		} else {
			w.tally["deposit-repeat"]++
		}
	}
}

// conflictingDeposit sends a credit whose ref was credited with other
// numbers: the API must refuse it (409 on the ref; the service's
// sluice.ErrPayloadMismatch), and the store must not carry it out (the
// world's record of the ref's first deposit stands, so an account it
// reached would hold money the world did not deposit). An unanswered one
// (503) is not sent again: it is no deposit.
func (w *world) conflictingDeposit(script *operatorScript, svc *operator.Service, c sluice.Credit) {
	w.depositing, w.depositTook = &c, false
	refused := false
	if script != nil {
		refused = script.creditConflict(c)
	} else {
		_, _, err := svc.Credit(w.ctx, c, operator.Act{Operator: onCallName, Why: "deposit"})
		switch {
		case errors.Is(err, errStoreDown):
			w.tally["deposit-unavailable"]++
		case !errors.Is(err, sluice.ErrPayloadMismatch):
			panic(fmt.Sprintf("depositor: the credit of %s with other numbers (%d units to %s) answered %v, want sluice.ErrPayloadMismatch", c.Ref, c.Amount, c.Customer, err))
		default:
			refused = true
		}
	}
	w.depositing = nil
	if refused {
		w.tally["deposit-conflict-refused"]++
	}
	if w.s.Tracing() {
		w.fact(model.Fact{Kind: model.FactOperator, Answer: fmt.Sprintf("deposit %s again with %s to %s: refused %v", c.Ref, c.Amount, c.Customer, refused)})
	}
}

// creditDirect credits through the operator service's method: answered is
// false when the store failed under it (nothing known of its effect).
func (w *world) creditDirect(svc *operator.Service, c sluice.Credit) (answered, credited bool) {
	acct, credited, err := svc.Credit(w.ctx, c, operator.Act{Operator: onCallName, Why: "deposit"})
	switch {
	case errors.Is(err, errStoreDown):
		w.tally["deposit-unavailable"]++
		w.depositFact(c, false, true)
		return false, false
	case err != nil:
		panic(fmt.Sprintf("depositor: credit %s: %v", c.Ref, err))
	case acct.Customer != c.Customer:
		panic(fmt.Sprintf("depositor: the credit of %s to %s answered the account of %s", c.Ref, c.Customer, acct.Customer))
	case acct != w.creditAcct:
		panic(fmt.Sprintf("depositor: the credit of %s answered the account %+v, the store gave %+v", c.Ref, acct, w.creditAcct))
	}
	w.depositFact(c, credited, false)
	return true, credited
}

// credit posts a deposit to the operator API: 201 credited, 200 a replay
// of the ref, 503 nothing known (sent again next round); anything else
// breaks the API's rules.
func (o *operatorScript) credit(c sluice.Credit) (answered, credited bool) {
	body := map[string]string{
		operator.FieldOperator: onCallName, operator.FieldWhy: "deposit",
		operator.FieldRef: c.Ref, operator.FieldCustomer: string(c.Customer), operator.FieldAmount: c.Amount.String(),
	}
	o.slip("/v1/credits", body)
	code, resp := o.do(http.MethodPost, "/v1/credits", body)
	what := "POST /v1/credits " + c.Ref
	switch code {
	case http.StatusCreated, http.StatusOK:
	case http.StatusServiceUnavailable:
		o.unavailable(what, code, resp)
		o.w.tally["deposit-unavailable"]++
		return false, false
	default:
		o.broke(what, code, resp, "a credit answers 201, 200 for its ref again, or 503 when the store fails")
	}
	var got struct {
		Ref      string `json:"ref"`
		Credited bool   `json:"credited"`
		Account  struct {
			Customer                       string
			Balance, Held, Paid, Deposited string
		} `json:"account"`
	}
	o.decode(what, code, resp, &got)
	// The account as the store handed it to the service for this credit
	// (no other store call lies between): the answer must show exactly it.
	a := o.w.creditAcct
	switch {
	case got.Ref != c.Ref:
		o.broke(what, code, resp, "the answer names ref %q", got.Ref)
	case got.Account.Customer != string(c.Customer):
		o.broke(what, code, resp, "the answer is the account of %q, not of %q", got.Account.Customer, c.Customer)
	case got.Account.Balance != a.Balance.String() || got.Account.Held != a.Held.String() || got.Account.Paid != a.Paid.String() || got.Account.Deposited != a.Deposited.String():
		o.broke(what, code, resp, "the answer's account is not the store's (balance %s, held %s, paid %s, deposited %s)", a.Balance, a.Held, a.Paid, a.Deposited)
	case got.Credited != (code == http.StatusCreated):
		o.broke(what, code, resp, "credited %v with status %d", got.Credited, code)
	}
	o.w.depositFact(c, got.Credited, false)
	return true, got.Credited
}

// creditConflict posts a credit reusing a ref with other numbers: 409 on
// the ref, or 503 when the store fails (false: nothing known).
func (o *operatorScript) creditConflict(c sluice.Credit) (refused bool) {
	body := map[string]string{
		operator.FieldOperator: onCallName, operator.FieldWhy: "deposit",
		operator.FieldRef: c.Ref, operator.FieldCustomer: string(c.Customer), operator.FieldAmount: c.Amount.String(),
	}
	o.slip("/v1/credits", body)
	code, resp := o.do(http.MethodPost, "/v1/credits", body)
	what := "POST /v1/credits " + c.Ref + " with other numbers"
	switch code {
	case http.StatusConflict:
		var e opError
		o.decode(what, code, resp, &e)
		if e.Field != operator.FieldRef {
			o.broke(what, code, resp, "a ref credited with other numbers is refused for the ref, not %q", e.Field)
		}
		return true
	case http.StatusServiceUnavailable:
		o.unavailable(what, code, resp)
		o.w.tally["deposit-unavailable"]++
		return false
	}
	o.broke(what, code, resp, "a ref credited with other numbers answers 409, or 503 when the store fails")
	return false
}

// depositFact traces a deposit's answer: credited, already credited, or
// unavailable (nothing known).
func (w *world) depositFact(c sluice.Credit, credited, unavailable bool) {
	if !w.s.Tracing() {
		return
	}
	answer := "already credited"
	switch {
	case unavailable:
		answer = "unavailable"
	case credited:
		answer = "credited"
	}
	w.fact(model.Fact{Kind: model.FactOperator, Answer: fmt.Sprintf("deposit %s of %s to %s: %s", c.Ref, c.Amount, c.Customer, answer)})
}

// credited records, from the store call that carried a credit out, the
// deposit the depositor meant, the first time its ref is carried out.
func (w *world) credited() {
	c := w.depositing
	if c == nil {
		// Only the depositor credits while the processes run: a credit
		// from anywhere else is money the world did not deposit, for
		// funds to find in the accounts.
		return
	}
	if w.lateDone[c.Ref] {
		return
	}
	if w.lateDone == nil {
		w.lateDone = make(map[string]bool)
	}
	w.lateDone[c.Ref] = true
	w.depositTook = true
	w.lateDeposits = append(w.lateDeposits, model.LateDeposit{Credit: *c, AfterSeq: w.store.LastSeq(), Tick: w.tick()})
	w.checkLedger(c.Customer)
}
