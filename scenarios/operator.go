package scenarios

import (
	"errors"
	"fmt"
	"strings"

	"sluicesim/model"
	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/tron"
)

// operatorName is the operator process, and its node client.
const operatorName = "operator"

// operatorLoop is a person on call: every OperatorEvery it reads the queue
// (review and parked operations) through the real operator service and, for
// each item, does one thing chosen on the tape: nothing, retry it, cancel
// it, or resolve a review as paid by its txid. The service refuses what the
// row or the chain does not allow (a cancel without proof of death, a
// resolution the chain does not bear out); what it lets through is checked
// like every other write.
func (w *world) operatorLoop(p *sim.Proc) {
	a := &actor{w: w, p: p}
	n := w.node.Client(operatorName)
	if w.cfg.Nodes > 1 {
		n = w.net.Balancer(operatorName, w.router(operatorName))
	}
	if w.cfg.Wire {
		n = w.overWire(a, operatorName, n)
	}
	var on tron.Node = node{a: a, inner: n}
	if m, ok := mutant(w.cfg.Mutant); ok && m.operatorNode != nil {
		on = m.operatorNode(on)
	}
	svc := &operator.Service{
		Store: storeView{a}, Node: on, HotWallet: w.hot,
		Clock: clock{a}, Config: w.cfg.Sluice,
	}
	looks := w.newLooker(a, svc)
	if w.support == nil {
		w.support = looks
	}
	var script *operatorScript
	if w.cfg.Wire {
		// Through the operator API's HTTP handler, as people on call
		// act in production (operator_http.go).
		script = w.newOperatorScript(a, svc)
	}
	// The second person on call (operator_colleague.go).
	second := w.newColleague(w.cfg.Wire)
	if script != nil {
		script.colleague = second
	}
	for {
		p.Sleep(w.cfg.OperatorEvery.D())
		if w.meter != nil && w.faulty() {
			// The person on call looks at the dashboard first (while the
			// faults last: after the heal the counts only grow, and the
			// run's last scrape reads them; a scrape costs about a tenth
			// of a wire seed).
			w.checkMetrics("by the operator at "+w.s.Now().Sub(epoch).String(), w.store.Snapshot().Operations)
		}
		if script != nil {
			script.round()
			continue
		}
		page, err := svc.Queue(w.ctx, "", operatorBatch)
		if err != nil {
			continue // the store failed the read: look again next round
		}
		for _, it := range page.Items {
			op := it.Operation
			act := operator.Act{Operator: onCallName, Why: "on call"}
			var err error
			kind := w.operatorAct()
			if kind == "" {
				continue
			}
			// The person opens the operation's page first
			// (operator_look.go).
			looks.look(string(op.ID), "operator-look")
			a.newAction()
			switch kind {
			case "retry":
				_, err = svc.Retry(w.ctx, op.ID, act)
			case "cancel":
				a.stepSolidOK, a.stepLookupOK = false, false
				_, err = svc.Cancel(w.ctx, op.ID, act)
				if errors.Is(err, operator.ErrRefused) && op.State == sluice.Review && a.reviewRefusedUnasked(op.ID) {
					panic(fmt.Sprintf("operator cancel %s: a review refused without the node asked for a proof of death: %v", w.name(op.ID), err))
				}
			case "resolve":
				_, err = svc.ResolvePaid(w.ctx, op.ID, op.Envelope.Txid, act)
			}
			if other := refusedAsAnother(err, kind); other != "" {
				panic(fmt.Sprintf("operator %s %s: %s", kind, w.name(op.ID), other))
			}
			if why := a.refusedAfterWrite(errors.Is(err, operator.ErrRefused)); why != "" {
				panic(fmt.Sprintf("operator %s %s: %v: %s", kind, w.name(op.ID), err, why))
			}
			if kind == "retry" && errors.Is(err, operator.ErrRefused) {
				if why := a.retryRefusedWrongly(op.ID); why != "" {
					panic(fmt.Sprintf("operator retry %s: %v: %s", w.name(op.ID), err, why))
				}
			}
			switch {
			case err == nil:
				w.tally["operator-"+kind]++
				if kind == "cancel" || kind == "resolve" {
					txid := ""
					if !op.Envelope.Txid.IsZero() {
						txid = op.Envelope.Txid.String()
					}
					if why := second.after(kind, op.ID, txid); why != "" {
						panic(fmt.Sprintf("operator %s %s: %s", kind, w.name(op.ID), why))
					}
				}
			case errors.Is(err, operator.ErrRefused) || errors.Is(err, operator.ErrInvalid) ||
				errors.Is(err, operator.ErrNodeUnavailable) || errors.Is(err, errStoreDown) || errors.Is(err, sluice.ErrFenced):
				w.tally["operator-"+kind+"-refused"]++
			default:
				panic(fmt.Sprintf("operator %s %s: %v", kind, w.name(op.ID), err))
			}
			if w.s.Tracing() {
				answer := "done"
				if err != nil {
					answer = err.Error()
				}
				w.fact(model.Fact{Kind: model.FactOperator, Op: w.name(op.ID), Answer: kind + ": " + answer})
			}
		}
		if w.faulty() && w.cfg.CustomerCancelP > 0 && w.s.Chance("customer-cancel", w.cfg.CustomerCancelP) {
			w.customerCancel(a, svc)
		}
	}
}

// customerCancel is a customer asking to stop a withdrawal not yet built:
// the operator lists the requested and validated rows and cancels one. A
// worker may build it meanwhile; the service then refuses, or the store
// fences the resolution.
func (w *world) customerCancel(a *actor, svc *operator.Service) {
	rows, err := storeView{a}.List(w.ctx, sluice.ListFilter{States: []sluice.State{sluice.Requested, sluice.Validated}, Limit: operatorBatch})
	if err != nil || len(rows) == 0 {
		return // the store failed the read, or nothing is waiting
	}
	op := rows[w.s.Choose("customer-cancel-pick", len(rows))]
	a.newAction()
	_, err = svc.Cancel(w.ctx, op.ID, operator.Act{Operator: onCallName, Why: "the customer asked to stop it"})
	if other := refusedAsAnother(err, "cancel"); other != "" {
		panic(fmt.Sprintf("customer cancel %s: %s", w.name(op.ID), other))
	}
	if why := a.refusedAfterWrite(errors.Is(err, operator.ErrRefused)); why != "" {
		panic(fmt.Sprintf("customer cancel %s: %v: %s", w.name(op.ID), err, why))
	}
	switch {
	case err == nil:
		w.tally["customer-cancel"]++
	case errors.Is(err, operator.ErrRefused) || errors.Is(err, operator.ErrNodeUnavailable) || errors.Is(err, errStoreDown) || errors.Is(err, sluice.ErrFenced):
		w.tally["customer-cancel-refused"]++
	default:
		panic(fmt.Sprintf("customer cancel %s: %v", w.name(op.ID), err))
	}
	if w.s.Tracing() {
		answer := "done"
		if err != nil {
			answer = err.Error()
		}
		w.fact(model.Fact{Kind: model.FactOperator, Op: w.name(op.ID), Answer: "customer cancel: " + answer})
	}
}

// onCallName is the name the person on call (and the depositor) acts
// under: exactly operator.OperatorMax bytes, the longest the API takes,
// with each kind of punctuation it allows. A name short of the bound let
// blind bug 280 (a name of exactly the bound refused as too long) pass
// every world: the only names sent were "sim" and the slips.
const onCallName = "sim.person-on-call_01:withdrawals-desk@operations.sluice.example"

// newAction forgets what the previous action's write did: refusedAfterWrite
// judges each action by its own write alone.
func (a *actor) newAction() {
	a.resolveLanded, a.resolveFailed, a.resolveFenced = false, false, false
}

// retryRefusedWrongly says why a refused retry of id is the wrong answer,
// "" when it may be right. Retry hands any live operation back to the
// workers (the package's rule: only review and the final states are
// refused), whoever holds it: its park may have ended and a worker
// claimed it, or a worker may hold it hung. A row the world's own read
// shows live after the refusal was live when the service read it (no
// state leads back out of review or a final one), so the one right
// refusal is the store fencing the write because the row moved in
// between. Blind bug 328 refused every row not parked: one a worker had
// claimed after its park could not be handed back.
func (a *actor) retryRefusedWrongly(id sluice.OperationID) string {
	if a.resolveFenced {
		return ""
	}
	row, err := a.w.store.Get(a.w.ctx, id)
	if err != nil || row.State.Terminal() {
		return "" // the world's read failed, or the row is final or in review
	}
	return fmt.Sprintf("a retry of an operation still %s (parked %v), refused without the store fencing its write: a live operation is handed back whoever holds it", row.State, row.Parked())
}

// refusedAfterWrite says why a refusal (refused: the service's ErrRefused,
// the API's 409) is the wrong answer to the action just taken, "" when it
// is no refusal or may be right. A refusal tells the person nothing
// changed and why the action cannot be taken: once the action's write has
// reached the store (landed, the answer lost) or the store failed it, what
// happened is a store failure, and the answer must say so (the API's 503:
// it may or may not have landed; read the operation), never that the row
// moved on. Blind bug 284 answered every failed cancel write as a refusal:
// a cancel whose commit landed (the customer refunded) was reported as
// refused, and the person could refund again by hand.
func (a *actor) refusedAfterWrite(refused bool) string {
	switch {
	case !refused:
		return ""
	case a.resolveLanded:
		return "refused, though its write landed in the store (the answer to it was lost): the answer must say the store failed and the write may have landed"
	case a.resolveFailed:
		return "refused, though what failed was the store's write (the world failed it): the answer must say the store failed, not that the action was refused"
	}
	return ""
}

// operatorBatch is how many queue items the operator looks at per round.
const operatorBatch = 20

// operatorActs are what the person on call may do with a queue item, as
// the tape chooses: nothing (""), retry, cancel, or resolve as paid.
var operatorActs = [...]string{"", "retry", "cancel", "resolve"}

// operatorAct chooses on the tape what the operator does with one item.
func (w *world) operatorAct() string {
	return operatorActs[w.s.Choose("operator-act", len(operatorActs))]
}

// refusedAsAnother says how a refusal of an action of kind (retry, cancel,
// resolve) names another action, "" when it names this one or err is no
// refusal. The person on call reads the refusal to learn what was refused:
// "retry refused: it is no longer review" after a cancel tells them of an
// action they did not take (blind bug 237 chose the refusal's kind from the
// state the row left, not the one the action wanted, so every fenced cancel
// and resolution read as a retry).
func refusedAsAnother(err error, kind string) string {
	rf, ok := errors.AsType[*operator.Refusal](err)
	if !ok || rf.Kind.String() == kind {
		return ""
	}
	return fmt.Sprintf("a %s refused as a %s: %v", kind, rf.Kind, err)
}

// refusalNamesAnother is refusedAsAnother for the operator API's answer: a
// 409's error says "KIND refused: why" (the handler's words for every
// service refusal), and KIND must be the action asked.
func refusalNamesAnother(msg, kind string) bool {
	return !strings.HasPrefix(msg, kind+" refused: ")
}
