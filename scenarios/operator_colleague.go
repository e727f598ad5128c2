package scenarios

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/tron"
)

// colleagueName is the second person on call, and their node client.
const colleagueName = "colleague"

// colleagueActs are what the colleague tries on an operation the first
// person has just made final, in this order.
var colleagueActs = [...]string{"resolve", "cancel", "retry"}

// A colleague is a second person on call who read the same queue page as
// the first: after the first person's cancel or resolution landed, they
// act on the same item too (each of colleagueActs; a resolve names the
// txid the page showed). The operation is final by then (failed or
// confirmed), and the operator package's rule is that an action the row
// does not allow is refused and changes nothing. So each must be refused
// by the service (ErrRefused; the API's 409 naming the action), not let
// through to the store (whose own checks refuse a write to a final row:
// the API's 409 with CodeStoreRefused, which says the service's checks
// missed it). Blind bug 317 answered a second resolve of a confirmed
// row as done, whatever its txid: the colleague would take a payment by
// another withdrawal's txid for settled. No world acted twice on a final
// row before, so only a unit test held it.
//
// The colleague's service reads the world's own store and asks a plain
// client of the node, neither wrapped: their calls are no yield points and
// draw nothing on the tape, so the schedule is the one the world had
// without them (as with the slips), and a service that refuses a final row
// from its first read asks the node nothing. The service has no observer,
// so the metrics the world scrapes count the first person's actions only.
type colleague struct {
	w   *world
	svc *operator.Service
	// h is the API over svc in a wire world (nil otherwise): the colleague
	// acts as the first person does there, through the handler.
	h  http.Handler
	in inbound
	rr recorder
}

func (w *world) newColleague(wire bool) *colleague {
	c := &colleague{w: w, svc: &operator.Service{
		Store: w.store, Node: w.node.Client(colleagueName), HotWallet: w.hot,
		Clock: stillClock{&actor{w: w}}, Config: w.cfg.Sluice,
	}}
	if wire {
		h, err := operator.NewHandler(c.svc, operatorToken, nil)
		if err != nil {
			panic("scenarios: colleague's handler: " + err.Error())
		}
		if w.colleagueWrap != nil {
			h = w.colleagueWrap(h)
		}
		c.h = h
	}
	return c
}

// after acts on id once the first person's done (a cancel or a resolve)
// has landed, txid being the one the page showed. It returns what broke
// the rule, "" when the service refused every action.
func (c *colleague) after(done string, id sluice.OperationID, txid string) string {
	w := c.w
	before, err := w.store.Get(w.ctx, id)
	if err != nil || !before.State.Terminal() || before.State == sluice.Review {
		// The world's own read failed (a PostgreSQL outage), or the
		// operation is not final: nothing to hold the colleague to.
		return ""
	}
	for _, kind := range colleagueActs {
		if kind == "resolve" && txid == "" {
			continue // the page showed no txid: a resolve would be malformed, not refused
		}
		refused, answer := c.act(kind, id, txid)
		if w.s.Tracing() {
			w.fact(model.Fact{Kind: model.FactOperator, Op: w.name(id), Answer: "colleague " + kind + " after the " + done + ": " + answer})
		}
		if !refused {
			return fmt.Sprintf("a colleague's %s of the operation just made %s (after the first person's %s) answered %s: an action the row does not allow must be refused", kind, before.State, done, answer)
		}
		w.tally["operator-colleague-refused"]++
	}
	return ""
}

// act sends one action and says whether it was refused as that action,
// with the answer in words.
func (c *colleague) act(kind string, id sluice.OperationID, txid string) (bool, string) {
	w := c.w
	act := operator.Act{Operator: onCallName, Why: "on call, from the same page"}
	if c.h == nil {
		var err error
		switch kind {
		case "resolve":
			t, perr := tron.ParseTxid(txid)
			if perr != nil {
				return false, "the page's txid " + txid + " does not parse: " + perr.Error()
			}
			_, err = c.svc.ResolvePaid(w.ctx, id, t, act)
		case "cancel":
			_, err = c.svc.Cancel(w.ctx, id, act)
		case "retry":
			_, err = c.svc.Retry(w.ctx, id, act)
		}
		if err == nil {
			return false, "done"
		}
		if other := refusedAsAnother(err, kind); other != "" {
			return false, other
		}
		return errors.Is(err, operator.ErrRefused), err.Error()
	}
	body := fmt.Sprintf(`{%q:%q,%q:%q`, operator.FieldOperator, act.Operator, operator.FieldWhy, act.Why)
	if kind == "resolve" {
		body += fmt.Sprintf(`,%q:%q`, operator.FieldTxid, txid)
	}
	body += "}"
	req := c.in.build(w.ctx, http.MethodPost, "/v1/operations/"+string(id)+"/"+kind, []byte(body), "application/json")
	req.Header["Authorization"] = []string{"Bearer " + operatorToken}
	c.rr.reset()
	c.h.ServeHTTP(&c.rr, req)
	answer := fmt.Sprintf("%d %.300s", c.rr.code, bytes.TrimSpace(c.rr.body))
	if c.rr.code != http.StatusConflict {
		return false, answer
	}
	var e opError
	switch err := json.Unmarshal(c.rr.body, &e); {
	case err != nil || refusalNamesAnother(e.Error, kind):
		return false, answer + " (a 409 must say \"" + kind + " refused: why\")"
	case e.Code == operator.CodeStoreRefused:
		return false, answer + " (the store refused what the service let through)"
	}
	return true, answer
}
