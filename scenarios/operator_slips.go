package scenarios

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"sluicesim/model"
	"sluicesim/sluice/operator"
)

// A slip is a request the person on call gets wrong before sending the
// right one: a name with a space, an empty reason, a field the API does
// not have, a form instead of JSON, a txid one digit short, an amount with
// two points. The API must answer it for its input (415, or 422 naming the
// field), change nothing, and count it as an invalid action of its kind
// (sluice_operator_actions_total{outcome="invalid"}), which the scrapes
// compare with the slips the world made (wire_metrics.go).
//
// The script makes one slip before every action and every credit it posts,
// taking them in turn from the lists below: no tape choice is drawn, and
// a request refused for its input reaches no store or node call, so no
// yield point, and the schedule is the one the world had before it slipped.
// A handler that read the store before refusing would yield, and a seed's
// trace would move: the fingerprints would say so.
type slip struct {
	name  string
	code  int    // the answer the API must give
	field string // the field its error must name ("" for a 415)
	// edit changes the right request's body into the slip's; a nil body
	// after it sends the right body as a form (415).
	edit func(body map[string]string) map[string]string
}

// set returns a copy of the body with field k set to v.
func set(k, v string) func(map[string]string) map[string]string {
	return func(b map[string]string) map[string]string {
		b = maps.Clone(b)
		b[k] = v
		return b
	}
}

var (
	// actionSlips are made before a retry, a cancel or a resolve.
	actionSlips = [...]slip{
		{"operator name with a space", http.StatusUnprocessableEntity, operator.FieldOperator, set(operator.FieldOperator, "on call")},
		{"reason left blank", http.StatusUnprocessableEntity, operator.FieldWhy, set(operator.FieldWhy, "  ")},
		{"a field the API lacks", http.StatusUnprocessableEntity, "note", set("note", "see ticket")},
		{"a form, not JSON", http.StatusUnsupportedMediaType, "", func(map[string]string) map[string]string { return nil }},
		{"a reason with a line break", http.StatusUnprocessableEntity, operator.FieldWhy, set(operator.FieldWhy, "on call\nresolved by: admin")},
		// The person's own name, which is exactly the bound, a byte over.
		{"operator name a byte too long", http.StatusUnprocessableEntity, operator.FieldOperator, set(operator.FieldOperator, onCallName+"s")},
	}
	// resolveSlip is made before a resolve every other time instead of the
	// action's turn: the txid one digit short.
	resolveSlip = slip{"a txid one digit short", http.StatusUnprocessableEntity, operator.FieldTxid, nil}
	// creditSlips are made before a credit.
	creditSlips = [...]slip{
		{"an amount with two points", http.StatusUnprocessableEntity, operator.FieldAmount, set(operator.FieldAmount, "1.2.3")},
		{"a customer id with a space", http.StatusUnprocessableEntity, operator.FieldCustomer, set(operator.FieldCustomer, "acme 7")},
		{"operator name with a space", http.StatusUnprocessableEntity, operator.FieldOperator, set(operator.FieldOperator, "on call")},
		{"a form, not JSON", http.StatusUnsupportedMediaType, "", func(map[string]string) map[string]string { return nil }},
	}
)

// slip sends the turn's slip of the request about to be posted (path and
// its right body) and holds the answer to it: the status and field the
// slip must get, and no write landed. It counts in w.slips, by kind.
func (o *operatorScript) slip(path string, body map[string]string) {
	w := o.w
	if w.noSlips {
		return
	}
	n := w.slipsMade
	w.slipsMade++
	var s slip
	switch {
	case path == "/v1/credits":
		s = creditSlips[n%len(creditSlips)]
	case strings.HasSuffix(path, "/resolve") && n%2 == 1 && len(body[operator.FieldTxid]) == 64:
		s = resolveSlip
		t := body[operator.FieldTxid]
		s.edit = set(operator.FieldTxid, t[:63])
	default:
		s = actionSlips[n%len(actionSlips)]
	}
	sent := s.edit(body)
	var code int
	var resp []byte
	writes := len(w.writes)
	if sent == nil {
		b, err := json.Marshal(body)
		if err != nil {
			panic("scenarios: operator slip: " + err.Error()) // plain strings
		}
		code, resp = o.doRaw(http.MethodPost, path, b, "application/x-www-form-urlencoded")
	} else {
		code, resp = o.do(http.MethodPost, path, sent)
	}
	what := fmt.Sprintf("POST %s with a slip (%s)", path, s.name)
	if code != s.code {
		o.broke(what, code, resp, "a request malformed in its input is answered %d, and changes nothing", s.code)
	}
	var e opError
	o.decode(what, code, resp, &e)
	switch {
	case e.Error == "":
		o.broke(what, code, resp, "an error answer without its error")
	case e.Field != s.field:
		o.broke(what, code, resp, "the error names the field %q, the slip was in %q", e.Field, s.field)
	case len(w.writes) != writes:
		o.broke(what, code, resp, "%d row writes landed under a request refused for its input", len(w.writes)-writes)
	}
	w.tally["operator-slip"]++
	if w.s.Tracing() {
		w.fact(model.Fact{Kind: model.FactOperator, Answer: fmt.Sprintf("slip on %s (%s): %d %s", path, s.name, code, e.Error)})
	}
}

// routeSlips are requests the person on call sends to the wrong route
// before an action on an operation, in turn: an action name the API has
// only elsewhere (credit is a route of its own), and a HEAD on the
// action's route (a tool's probe). Neither is an action: the API must
// answer 404 or 405 before it reads anything, act on nothing and count
// nothing (the handler answers both before the service is asked, so no
// yield point either, and the schedule is the one the world had without
// them). Independent bug 224 took every kind of the package as a route's
// action and answered credit 200 having done nothing; 225 ran a HEAD as
// the POST it probed.
var routeSlips = [...]struct {
	name, method, action string
	code                 int
}{
	{"an action only the credits route has", http.MethodPost, "credit", http.StatusNotFound},
	{"a HEAD on the action's route", http.MethodHead, "", http.StatusMethodNotAllowed},
}

// routeSlip sends the turn's route slip before the action kind on id
// (body the right request's) and holds the answer to it. It is not an
// action, so it is not counted as one (serve, not doRaw, which would).
func (o *operatorScript) routeSlip(id, kind string, body map[string]string) {
	w := o.w
	if w.noSlips {
		return
	}
	s := routeSlips[w.routeSlips%len(routeSlips)]
	w.routeSlips++
	action := kind
	if s.action != "" {
		action = s.action
	}
	path := "/v1/operations/" + id + "/" + action
	var b []byte
	if s.method == http.MethodPost {
		var err error
		if b, err = json.Marshal(body); err != nil {
			panic("scenarios: operator route slip: " + err.Error()) // plain strings
		}
	}
	writes := len(w.writes) // an operator's resolution is a write too
	code, resp := o.serve(s.method, path, b, "application/json")
	what := fmt.Sprintf("%s %s (%s)", s.method, path, s.name)
	switch {
	case code != s.code:
		o.broke(what, code, resp, "a request to no action's route is answered %d, and changes nothing", s.code)
	case len(w.writes) != writes:
		o.broke(what, code, resp, "a write landed under a request to no action's route")
	}
	w.tally["operator-route-slip"]++
}
