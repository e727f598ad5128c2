package scenarios

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"sluicesim/model"
	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/tron"
)

// In a wire world (Config.Wire) the operator on call reaches sluice as
// people on call do in production:
// through the operator API's HTTP handler (operator.NewHandler, with a
// bearer token and a metrics.Metrics, as cmd/sluice serve builds it), never
// through operator.Service's methods. Its requests are JSON with the token;
// its answers are read as a careful script reads them: the queue page by
// page with the handler's cursor, a 409 as a refusal, a 503 as "nothing
// known, ask again" (a fact, never a success), and anything else (a status
// the API does not give for the request, a body that does not decode, an
// answer about another operation) as a broken rule: the run panics, which
// explore reports under the panic invariant, as it always did for an
// answer the old direct calls had no rule for. The handler runs in the
// operator's own process, as its direct calls did: its store and node calls
// yield there.

// operatorToken is the bearer token the world's handler is built with and
// its operator sends: exactly operator.TokenMin bytes, the shortest the
// README documents, so that a handler refusing its own documented minimum
// (an off-by-one in CheckToken) cannot start in any world
// (TestOperatorTokenIsTheMinimum).
const operatorToken = "sluicesim-oncall"

// operatorPage is how many queue items the operator asks for per page. It
// pages until the handler gives no cursor, so a round still sees the whole
// queue; a page this small turns pages in most rounds that find work (a
// chaos queue holds a handful of rows, now and then a dozen), which is
// where a cursor or a page's cut shows (a page size the queue never fills
// would leave the cursor untested).
const operatorPage = 3

// operatorScript is the on-call person's script: the handler, the request
// and answer it reuses, and what it read of the queue this round.
type operatorScript struct {
	w *world
	a *actor
	h http.Handler
	// looks opens an operation's page before each action (operator_look.go).
	looks *looker
	in    inbound
	rec   recorder
	auth  [1]string // the Authorization header's one value
	// listed: the ids the queue's pages listed this round, in order.
	listed []string
	// colleague acts on each item after a cancel or a resolve of it
	// lands (operator_colleague.go).
	colleague *colleague
}

// newOperatorScript builds the handler over svc as production does: the
// metrics observing every action and served at /metrics, every request
// behind the token. The node is already counted by the same metrics (a wire
// world's node stack: overWire), as one process's instruments count all it
// does.
func (w *world) newOperatorScript(a *actor, svc *operator.Service) *operatorScript {
	if w.meter == nil {
		panic("scenarios: the operator's HTTP script runs in a wire world, after its node stack is built")
	}
	svc.Observer = w.meter
	h, err := operator.NewHandler(svc, operatorToken, w.meter)
	if err != nil {
		panic("scenarios: operator handler: " + err.Error())
	}
	if w.operatorWrap != nil {
		h = w.operatorWrap(h)
	}
	o := &operatorScript{w: w, a: a, h: h, looks: w.newLooker(a, svc)}
	o.auth[0] = "Bearer " + operatorToken
	return o
}

// do sends one request through the handler, in the operator's process, and
// returns the answer's status and body (valid until the next request).
func (o *operatorScript) do(method, path string, body any) (int, []byte) {
	var b []byte
	ctype := ""
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			panic("scenarios: operator request: " + err.Error()) // plain strings
		}
		ctype = "application/json"
	}
	return o.doRaw(method, path, b, ctype)
}

// doRaw is do with the body's bytes and Content-Type as given; a POST's
// answer is counted as an action's (world.answered).
func (o *operatorScript) doRaw(method, path string, b []byte, ctype string) (int, []byte) {
	code, body := o.serve(method, path, b, ctype)
	if method == http.MethodPost {
		o.w.answered(path, code)
	}
	return code, body
}

// serve sends one request through the handler, counting nothing.
func (o *operatorScript) serve(method, path string, b []byte, ctype string) (int, []byte) {
	req := o.in.build(o.w.ctx, method, path, b, ctype)
	req.Header["Authorization"] = o.auth[:1:1]
	o.rec.reset()
	// What the world fails under this request alone excuses its 503.
	o.a.storeFailed, o.a.nodeFailed, o.a.resolveAnswered = false, false, false
	o.h.ServeHTTP(&o.rec, req)
	return o.rec.code, o.rec.body
}

// broke reports an answer no rule of the API allows: the run stops with it
// (the panic invariant), the request and the answer in the message.
func (o *operatorScript) broke(what string, code int, body []byte, format string, args ...any) {
	panic(fmt.Sprintf("operator script: %s answered %d %.300q: %s", what, code, body, fmt.Sprintf(format, args...)))
}

// The answers' JSON as the script reads it: only the fields it acts on.
type (
	opItem struct {
		OperationID string      `json:"operation_id"`
		State       string      `json:"state"`
		Txid        string      `json:"txid"`
		Txids       []string    `json:"txids"`
		Parked      bool        `json:"parked"`
		Waited      string      `json:"waited"`
		Actions     []string    `json:"actions"`
		Decision    *opDecision `json:"decision"`
		Evidence    *opEvidence `json:"evidence"`
		// The request as the page shows it, which the person reads to
		// know what they act on (model.RequestShown).
		Customer  string `json:"customer"`
		ToAddress string `json:"to_address"`
		Amount    string `json:"amount"`
		Asset     string `json:"asset"`
	}
	// opDecision is an item's newest decision as the API shows it.
	opDecision struct {
		Action, Reason string
		Waited         string `json:"waited"` // a Go duration, to the millisecond
		Rebuilds       int
	}
	// opEvidence is an item's evidence as the API shows it. The person
	// on call checks a proof of death by its numbers before cancelling: an
	// expiration (for a lookup that found nothing), the margin, the solid
	// block's number and time, the answering node's solid block, and
	// whether it proves death.
	opEvidence struct {
		Txid, Lookup string
		Expiration   string `json:"expiration"`
		Margin       string `json:"margin"`
		SolidNumber  int64  `json:"solid_number"`
		SolidTime    string `json:"solid_time"`
		LookupSolid  int64  `json:"lookup_solid"`
		Receipt      string `json:"receipt"`
		BlockNumber  int64  `json:"block_number"`
		// SeenSolid: for an inclusion, whether the node that showed it
		// called the block solid; absent otherwise.
		SeenSolid optBool `json:"seen_solid"`
		Proves    bool    `json:"proves"`
	}
	opPage struct {
		Items []opItem `json:"items"`
		Next  string   `json:"next"`
	}
	opError struct {
		Error string `json:"error"`
		Field string `json:"field"`
		Code  string `json:"code"`
	}
)

// opTerminal: the states the queue never lists unless in review, and an
// action's answer names for a cancel or a resolution. The script's own
// list, as a person knows the states from the API's documentation.
var opTerminal = map[string]bool{"confirmed": true, "failed": true, "rejected": true, "review": true}

// decode reads an answer's body into v; a body that is not the JSON the API
// documents is a broken rule.
func (o *operatorScript) decode(what string, code int, body []byte, v any) {
	if err := json.Unmarshal(body, v); err != nil {
		o.broke(what, code, body, "the body is not the API's JSON: %v", err)
	}
}

// refusal reads a 409's, 422's or 503's body: an error that says what.
func (o *operatorScript) refusal(what string, code int, body []byte) string {
	var e opError
	o.decode(what, code, body, &e)
	switch {
	case e.Error == "":
		o.broke(what, code, body, "an error answer without its error")
	case e.Code == operator.CodeStoreRefused:
		// The service checks every condition the store does before it
		// writes (the row's state, its txid, the hold), and turns a row
		// that moved meanwhile into its own refusal. The store refusing
		// what the service let through means the two disagree: an honest
		// answer, but about code that is wrong.
		o.broke(what, code, body, "the store refused a write the service let through")
	}
	return e.Error
}

// round is one look at the queue and the acts chosen for its items, then
// perhaps a customer's cancel. A queue the store failed to read is looked
// at again next round.
func (o *operatorScript) round() {
	w := o.w
	items, ok := o.queue()
	if !ok {
		return
	}
	for _, it := range items {
		if kind := w.operatorAct(); kind != "" {
			o.act(kind, it, items)
		}
	}
	if w.faulty() && w.cfg.CustomerCancelP > 0 && w.s.Chance("customer-cancel", w.cfg.CustomerCancelP) {
		o.customerCancel()
	}
}

// queue reads the whole queue, page by page with the handler's cursor, and
// holds it to what the world knows: ids ascending, each after the cursor,
// and every operation in review when the reading began listed (only this
// process moves a row out of review, and it acts only after reading). ok is
// false when the store failed a page (503): the round is skipped.
func (o *operatorScript) queue() (items []opItem, ok bool) {
	w := o.w
	reviews, parked := w.reviewIDs(), w.parkedIDs()
	writes := len(w.writes) // the row writes landed before the reading
	o.listed = o.listed[:0]
	after := ""
	for pages := 0; ; pages++ {
		path := fmt.Sprintf("/v1/queue?limit=%d", operatorPage)
		if after != "" {
			path += "&after=" + after
		}
		// The service's clock is the operator's, read somewhere in the
		// call: the window its "waited" must come from.
		from := w.s.Now().Add(o.a.skew)
		code, body := o.do(http.MethodGet, path, nil)
		to := w.s.Now().Add(o.a.skew)
		switch code {
		case http.StatusOK:
		case http.StatusServiceUnavailable:
			o.unavailable("queue", code, body)
			return nil, false
		default:
			o.broke("GET "+path, code, body, "a queue read answers 200, or 503 when the store fails")
		}
		var page opPage
		o.decode("GET "+path, code, body, &page)
		if len(page.Items) > operatorPage {
			o.broke("GET "+path, code, body, "%d items on a page of %d", len(page.Items), operatorPage)
		}
		for _, it := range page.Items {
			last := after
			if n := len(o.listed); n > 0 {
				last = o.listed[n-1]
			}
			switch {
			case it.OperationID <= last:
				o.broke("GET "+path, code, body, "%s listed after %s: the queue is in id order, each page after its cursor", it.OperationID, last)
			case it.State != "review" && (opTerminal[it.State] || !it.Parked):
				o.broke("GET "+path, code, body, "%s is %s (parked %v): the queue lists reviews and parked operations", it.OperationID, it.State, it.Parked)
			case it.State == "review" && !slices.Equal(it.Actions, reviewActions(it)):
				o.broke("GET "+path, code, body, "%s is in review with actions %v: a review offers %v (README, the operator API)", it.OperationID, it.Actions, reviewActions(it))
			case it.State != "review" && !slices.Equal(it.Actions, parkedActions):
				o.broke("GET "+path, code, body, "%s is parked with actions %v: a parked operation offers %v", it.OperationID, it.Actions, parkedActions)
			case it.State == "review":
				if why := w.ofTheLog(it, func(evs []sluice.Event) string { return w.latestOfTheLog(it, evs) }); why != "" {
					o.broke("GET "+path, code, body, "%s: %s", it.OperationID, why)
				}
			}
			// A review's log is still, and a parked row's too while no
			// write of it landed since the reading began.
			id := sluice.OperationID(it.OperationID)
			if it.State == "review" || !slices.ContainsFunc(w.writes[writes:], func(r model.WriteRecord) bool { return r.Op == id }) {
				if why := w.ofTheLog(it, func(evs []sluice.Event) string {
					return cmp.Or(w.waitedOfTheLog(it, evs, from, to), txidsOfTheLog(it, evs))
				}); why != "" {
					o.broke("GET "+path, code, body, "%s: %s", it.OperationID, why)
				}
			}
			o.listed = append(o.listed, it.OperationID)
		}
		items = append(items, page.Items...)
		if page.Next == "" {
			break
		}
		if pages > len(w.ids)+1 {
			o.broke("GET "+path, code, body, "a cursor after %d pages of a queue of at most %d operations", pages, len(w.ids))
		}
		after = page.Next
	}
	for _, id := range reviews {
		if !containsString(o.listed, string(id)) && w.inReview(id) {
			panic(fmt.Sprintf("operator script: the queue's pages (GET /v1/queue?limit=%d, then after each cursor) listed %v, but %s (%s) was in review throughout the reading and is on no page",
				operatorPage, o.listed, id, w.name(id)))
		}
	}
	// A parked row stays parked until a write moves it (a claim does not
	// end its park): parked before and after the reading, with no write
	// of it landed in between, it was parked throughout.
	for _, id := range parked {
		if !containsString(o.listed, string(id)) && w.isParked(id) && !slices.ContainsFunc(w.writes[writes:], func(r model.WriteRecord) bool { return r.Op == id }) {
			panic(fmt.Sprintf("operator script: the queue's pages (GET /v1/queue?limit=%d, then after each cursor) listed %v, but %s (%s) was parked throughout the reading and is on no page",
				operatorPage, o.listed, id, w.name(id)))
		}
	}
	return items, true
}

// ofTheLog is check's verdict on item it's event log as the world reads
// it itself, or why that read failed.
func (w *world) ofTheLog(it opItem, check func([]sluice.Event) string) string {
	evs, err := w.store.Events(w.ctx, sluice.OperationID(it.OperationID))
	if err != nil {
		return "the world's own read of its log: " + err.Error()
	}
	return check(evs)
}

// txidsOfTheLog says how an item's "txids" differs from every txid its log
// ever held, oldest first, each once (the README's operator API), or "":
// the person on call pastes them into a block explorer to see whether any
// was paid.
func txidsOfTheLog(it opItem, evs []sluice.Event) string {
	var want []string
	add := func(t tron.Txid) {
		if s := t.String(); !t.IsZero() && !slices.Contains(want, s) {
			want = append(want, s)
		}
	}
	for i := range evs {
		add(evs[i].RetiredTxid)
		add(evs[i].Txid)
	}
	if !slices.Equal(it.Txids, want) {
		return fmt.Sprintf("txids %q, but its log held %q", it.Txids, want)
	}
	return ""
}

// sameWait says whether shown, a wait as the API writes it (a Go duration
// to the millisecond), is want: the decision's own wait, which the reason's
// text was written from, not the item's wait so far.
func sameWait(shown string, want time.Duration) bool {
	got, err := time.ParseDuration(shown)
	return err == nil && (got-want).Abs() <= time.Millisecond/2
}

// latestOfTheLog says how a review's item differs from the newest
// decision and evidence its event log holds, or "" when it shows them: the
// person on call judges a review by them, and one about a retired txid or
// an earlier decision misleads. A review's log is still (no worker writes
// it, and the operator is this script), so the world's own read of the log
// after the page is the log the handler read.
func (w *world) latestOfTheLog(it opItem, evs []sluice.Event) string {
	var d *sluice.Decision
	var ev *sluice.Evidence
	for _, e := range evs {
		if e.Decision != nil {
			d = e.Decision
		}
		if e.Evidence != nil {
			ev = e.Evidence
		}
	}
	switch {
	case (d == nil) != (it.Decision == nil):
		return fmt.Sprintf("the item's decision is %+v, the log's newest %+v", it.Decision, d)
	case d != nil && (it.Decision.Action != d.Action.String() || it.Decision.Reason != d.Reason || it.Decision.Rebuilds != d.Rebuilds ||
		!sameWait(it.Decision.Waited, d.Waited)):
		return fmt.Sprintf("the item's decision is %+v, the log's newest is %s (%s, waited %s, %d rebuilds)", *it.Decision, d.Action, d.Reason, d.Waited, d.Rebuilds)
	case (ev == nil) != (it.Evidence == nil):
		return fmt.Sprintf("the item's evidence is %+v, the log's newest %+v", it.Evidence, ev)
	case ev != nil:
		if want := evidenceShown(*ev); *it.Evidence != want {
			return fmt.Sprintf("the item's evidence is %+v, the log's newest shows as %+v", *it.Evidence, want)
		}
	}
	return ""
}

// evidenceShown is how an item must show evidence e, by the README's
// operator API: every number the log holds, the expiration only for a
// lookup that did not find the txid (an inclusion's proof is its receipt),
// and whether it proves death by the world's own reading (a failed receipt
// in a solid block; or nothing found by a node at or past the cited solid
// block, whose time is at or past the expiration plus the margin), never
// by Evidence.Proves.
func evidenceShown(e sluice.Evidence) opEvidence {
	text := apiTime
	v := opEvidence{Txid: e.Txid.String(), Lookup: e.Lookup.String(), Margin: e.Margin.String(),
		SolidNumber: e.SolidNumber, SolidTime: text(e.SolidTime), LookupSolid: e.LookupSolid,
		Receipt: e.Receipt, BlockNumber: e.BlockNumber}
	if e.Lookup == tron.Included {
		v.SeenSolid = optFalse
		if e.SeenSolid {
			v.SeenSolid = optTrue
		}
		v.Proves = e.Receipt != tron.ReceiptSuccess && e.Receipt != "" && e.SeenSolid && e.BlockNumber > 0 && e.BlockNumber <= e.SolidNumber
	} else {
		v.Expiration = text(e.Expiration)
		v.Proves = e.Lookup == tron.Unknown && e.LookupSolid >= e.SolidNumber && !e.SolidTime.Before(e.Expiration.Add(e.Margin))
	}
	return v
}

// optBool is a JSON boolean that may be absent (optAbsent), kept
// comparable so that a whole evidence compares with ==.
type optBool uint8

const (
	optAbsent optBool = iota
	optFalse
	optTrue
)

func (b optBool) String() string { return [...]string{"absent", "false", "true"}[b] }

func (b *optBool) UnmarshalJSON(data []byte) error {
	var v *bool
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	switch {
	case v == nil:
		*b = optAbsent
	case *v:
		*b = optTrue
	default:
		*b = optFalse
	}
	return nil
}

// apiTime is a time as the operator API writes it (RFC 3339 in UTC, to the
// nanosecond), "" for none: the script's own reading of the README.
func apiTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// waitedOfTheLog says how an item's "waited" differs from the time since
// the operation's first write-ahead in its log, by a clock read between
// from and to, or "" when it fits: the person on call triages by it. An
// operation never written ahead has waited for nothing (no "waited"): its
// customer's wait is not a send's.
func (w *world) waitedOfTheLog(it opItem, evs []sluice.Event, from, to time.Time) string {
	i := slices.IndexFunc(evs, func(e sluice.Event) bool { return e.To == sluice.Broadcasting })
	var got time.Duration
	if it.Waited != "" {
		var err error
		if got, err = time.ParseDuration(it.Waited); err != nil {
			return fmt.Sprintf("waited %q is not a duration: %v", it.Waited, err)
		}
	}
	if i < 0 {
		if it.Waited != "" {
			return fmt.Sprintf("waited %s, but its log has no write-ahead: nothing was ever sent", it.Waited)
		}
		return ""
	}
	first := evs[i].At
	// The view rounds to the millisecond and leaves out a zero wait.
	lo, hi := max(from.Sub(first), 0)-time.Millisecond, to.Sub(first)+time.Millisecond
	if got < lo || got > hi {
		return fmt.Sprintf("waited %q, but its first write-ahead (event #%d) was at %s: %s to %s before the read",
			it.Waited, evs[i].Seq, first.Format(time.RFC3339Nano), max(from.Sub(first), 0), to.Sub(first))
	}
	return ""
}

// The actions the queue must offer (README, the operator API): a review
// may be cancelled, and resolved as paid when it has a txid; a parked
// operation may be retried or cancelled. The script's own list.
var parkedActions = []string{"retry", "cancel"}

func reviewActions(it opItem) []string {
	if it.Txid == "" {
		return []string{"cancel"}
	}
	return []string{"cancel", "resolve"}
}

// parkedIDs is the world's own look at which operations are parked.
func (w *world) parkedIDs() []sluice.OperationID {
	return w.idsOf(sluice.ListFilter{Parked: true, Limit: 1000}, "parked rows")
}

// isParked is the world's own look at whether id is parked.
func (w *world) isParked(id sluice.OperationID) bool {
	row, err := w.store.Get(w.ctx, id)
	return err == nil && row.Parked()
}

// reviewIDs is the world's own look at which operations are in review (the
// store read directly: no yield point, nothing on the tape).
func (w *world) reviewIDs() []sluice.OperationID {
	return w.idsOf(sluice.ListFilter{States: []sluice.State{sluice.Review}, Limit: 1000}, "reviews")
}

// idsOf lists the ids of the rows f matches, read from the store directly.
func (w *world) idsOf(f sluice.ListFilter, what string) []sluice.OperationID {
	rows, err := w.store.List(w.ctx, f)
	if err != nil {
		panic("scenarios: the world's own read of the " + what + ": " + err.Error())
	}
	ids := make([]sluice.OperationID, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

// inReview is the world's own look at whether id is still in review.
func (w *world) inReview(id sluice.OperationID) bool {
	row, err := w.store.Get(w.ctx, id)
	return err == nil && row.State == sluice.Review
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// unavailable is a 503: the store or the node failed under the request, and
// nothing is known of its effect. The script counts it and says so in the
// trace; it never reads it as a success. The world knows whether it failed
// one of the request's store or node calls: a 503 with neither under it is
// an answer the API owed and did not give, and stops the run.
func (o *operatorScript) unavailable(what string, code int, body []byte) {
	msg := o.refusal(what, code, body)
	var e opError
	o.decode(what, code, body, &e)
	switch {
	case o.a.resolveAnswered:
		// Only a read after the write can have failed: the action is
		// done, and the person must hear it (200 with the operation as
		// the write left it). A 503 sends them to act again, into a 409
		// about their own landed action (independent bug 329).
		o.broke(what, code, body, "the action's write landed and the store's answer reached the service, yet the API answered 503: a done action must be answered as done")
	case !o.a.storeFailed && !o.a.nodeFailed:
		o.broke(what, code, body, "a 503 with no store or node call of the request failed by the world")
	case o.a.nodeFailed && !o.a.storeFailed && e.Code != operator.CodeNodeUnavailable:
		// The service asks the node before it writes: nothing landed, and
		// the answer must say so, not send the person to read the
		// operation first.
		o.broke(what, code, body, "a node call of the request failed and no store call did, but the 503 is not %q", operator.CodeNodeUnavailable)
	case o.a.storeFailed && !o.a.nodeFailed && e.Code == operator.CodeNodeUnavailable:
		o.broke(what, code, body, "a store call of the request failed and no node call did, but the 503 says %q (nothing changed)", e.Code)
	}
	o.w.tally["operator-unavailable"]++
	if o.w.s.Tracing() {
		o.w.fact(model.Fact{Kind: model.FactOperator, Answer: fmt.Sprintf("%s: %d %s", what, code, msg)})
	}
}

// act posts one action on a queue item: retry, cancel, or resolve as paid
// by a txid (none if the queue showed none: the handler then refuses the
// request as malformed, naming the txid). The person on call may paste the
// wrong txid (operatorTxid): the API must refuse it.
func (o *operatorScript) act(kind string, it opItem, items []opItem) {
	w := o.w
	path := "/v1/operations/" + it.OperationID + "/" + kind
	o.looks.look(it.OperationID, "operator-look")
	req := map[string]string{operator.FieldOperator: onCallName, operator.FieldWhy: "on call"}
	wrong := false
	if kind == "resolve" {
		// None if the queue showed none: the request is then malformed
		// itself (it lacks the txid), and made without a slip before it.
		if t := w.operatorTxid(it, items); t != "" {
			req[operator.FieldTxid] = t
			o.slip(path, req)
		}
		wrong = req[operator.FieldTxid] != it.Txid
	} else {
		o.slip(path, req)
	}
	o.routeSlip(it.OperationID, kind, req)
	if w.cfg.WatchReviews && it.State == "review" {
		// The customer's GET of it, under way as the operator acts: the
		// scheduler may put the operator's write between the GET's read
		// of the row and of its log (independent bug 221 answered a
		// review's whole log, ending in the operator's move).
		w.tally["client-watch"]++
		name := "watch." + strconv.Itoa(w.tally["client-watch"])
		w.s.Spawn(name, func(p *sim.Proc) { w.read(p, "srv-"+name, it.OperationID) })
	}
	// The node's answers to this action alone, as served and as the
	// service's client got them (a cancel is judged by them below).
	o.a.stepSolidOK, o.a.stepLookupOK, o.a.stepSolidGot, o.a.stepLookupGot = false, false, false, false
	o.a.newAction()
	code, body := o.do(http.MethodPost, path, req)
	what := "POST " + path
	answer := "done"
	switch {
	case code == http.StatusOK:
		var got opItem
		o.decode(what, code, body, &got)
		want := map[string]string{"cancel": "failed", "resolve": "confirmed"}[kind]
		switch {
		case got.OperationID != it.OperationID:
			o.broke(what, code, body, "the answer is about %q", got.OperationID)
		case wrong:
			o.broke(what, code, body, "resolved as paid by txid %s, which is not the operation's (the queue shows %s)", req[operator.FieldTxid], it.Txid)
		case want != "" && got.State != want:
			o.broke(what, code, body, "a %s that landed leaves it %s, not %s", kind, got.State, want)
		case kind == "resolve":
			if why := o.a.solidityUnshown(it.Txid); why != "" {
				o.broke(what, code, body, "resolved as paid, though the node's answers to it do not show the payment solid: %s", why)
			}
		}
		// A retry's answer shows no state to hold it to: the handler reads
		// the operation again after the retry lands, and a worker may have
		// moved it on by then (to review past the park bounds, say). A
		// cancel's and a resolution's states are final.
		w.tally["operator-"+kind]++
		if want != "" && o.colleague != nil {
			if why := o.colleague.after(kind, sluice.OperationID(it.OperationID), it.Txid); why != "" {
				panic("operator script: after " + what + " answered 200: " + why)
			}
		}
	case code == http.StatusConflict, code == http.StatusUnprocessableEntity && kind == "resolve" && req[operator.FieldTxid] == "":
		msg := o.refusal(what, code, body)
		answer = fmt.Sprintf("%d %s", code, msg)
		if code == http.StatusConflict && refusalNamesAnother(msg, kind) {
			o.broke(what, code, body, "a %s refused names another action", kind)
		}
		if why := o.a.refusedAfterWrite(code == http.StatusConflict); why != "" {
			o.broke(what, code, body, "a %s %s", kind, why)
		}
		if kind == "retry" && code == http.StatusConflict {
			if why := o.a.retryRefusedWrongly(sluice.OperationID(it.OperationID)); why != "" {
				o.broke(what, code, body, "%s", why)
			}
		}
		if code == http.StatusUnprocessableEntity {
			var e opError
			o.decode(what, code, body, &e)
			if e.Field != operator.FieldTxid {
				o.broke(what, code, body, "a resolve without a txid is refused for the txid, not %q", e.Field)
			}
		}
		if kind == "cancel" && it.State == "review" {
			if why := o.a.deathShown(it.Txid); why != "" {
				o.broke(what, code, body, "a cancel of a review refused, though the node's answers to it prove the txid dead: %s", why)
			}
			if o.a.reviewRefusedUnasked(sluice.OperationID(it.OperationID)) {
				o.broke(what, code, body, "a cancel of a review refused without the node asked for a proof of death")
			}
		}
		w.tally["operator-"+kind+"-refused"]++
		if wrong {
			w.tally["operator-wrong-txid-refused"]++
		}
	case code == http.StatusServiceUnavailable:
		o.unavailable(what, code, body)
		return
	default:
		o.broke(what, code, body, "an action on an operation the queue listed answers 200, 409 or 503")
	}
	if w.s.Tracing() {
		if wrong {
			kind += " by the wrong txid " + req[operator.FieldTxid]
		}
		w.fact(model.Fact{Kind: model.FactOperator, Op: w.name(sluice.OperationID(it.OperationID)), Answer: kind + ": " + answer})
	}
}

// deathShown says how the node's answers to the actor's request (the last
// solid block and lookup served, each received by its client) prove txid
// dead by a failed receipt, or "" when they do not: the lookup found txid
// included with a receipt other than SUCCESS, in a block its node calls
// solid and at or below the solid block (README, proof of death). A service that refuses to cancel a
// review on such answers leaves its money held for good: independent bug
// 169 dropped the block number from its proof and refused every one.
func (a *actor) deathShown(txid string) string {
	l, s, ok := a.answersAbout(txid)
	if !ok {
		return ""
	}
	if l.Status != tron.Included || !l.Solid || l.Receipt == "" || l.Receipt == tron.ReceiptSuccess || l.BlockNumber <= 0 || l.BlockNumber > s.Number {
		return ""
	}
	return fmt.Sprintf("receipt %s in block #%d, the solid block #%d", l.Receipt, l.BlockNumber, s.Number)
}

// answersAbout is the node's answers to the actor's request (the last
// lookup and solid block served), ok only when both reached the service's
// client and the lookup is about txid.
func (a *actor) answersAbout(txid string) (tron.TxInfo, tron.Block, bool) {
	l, s := a.stepLookup, a.stepSolid
	ok := a.stepLookupOK && a.stepLookupGot && a.stepSolidOK && a.stepSolidGot && txid != "" && l.Txid.String() == txid
	return l, s, ok
}

// solidityUnshown says why the node's answers to the actor's request do
// not show txid's inclusion solid, or "" when they do or when the actor
// lacks either answer: the lookup found it in a block its node does not
// call solid, or above the solid block fetched before it (README, the
// operator API: a resolution as paid is judged as a proof of death is).
// Behind a balancer the lookup may reach a node ahead of the one that gave
// the solid block; a service that trusts the lookup's own word settles a
// payment no solid block holds yet (independent bug 215), which a reorg
// may still orphan.
func (a *actor) solidityUnshown(txid string) string {
	l, s, ok := a.answersAbout(txid)
	if !ok || l.Status != tron.Included {
		return ""
	}
	switch {
	case !l.Solid:
		return fmt.Sprintf("its block #%d is not solid by the node's word", l.BlockNumber)
	case l.BlockNumber > s.Number:
		return fmt.Sprintf("its block #%d is above the solid block #%d fetched first", l.BlockNumber, s.Number)
	}
	return ""
}

// reviewRefusedUnasked says whether a cancel of id just refused came
// while the row is still in review by the world's record and without the
// node answering the actor a solid block or a lookup. A review is
// cancelled at once when nothing was ever built, and on proof of death
// otherwise: a refusal must come after the node was asked for that proof
// (independent bug 228 refused every review with a txid without asking,
// and the money stayed held for good).
func (a *actor) reviewRefusedUnasked(id sluice.OperationID) bool {
	return a.w.views[id].state == sluice.Review && !a.stepSolidOK && !a.stepLookupOK
}

// operatorTxids are the txids a person on call may paste into a
// resolution, as the tape chooses: the one the queue shows (twice as
// likely), another operation's (one paying the same address if there is
// one), or one this operation retired.
var operatorTxids = [...]string{"shown", "shown", "another's", "retired"}

// operatorTxid is the txid the operator resolves item it by. A wrong pick
// that has nothing to offer (no other item with a txid, nothing retired)
// falls back to the one shown.
func (w *world) operatorTxid(it opItem, items []opItem) string {
	switch operatorTxids[w.s.Choose("operator-txid", len(operatorTxids))] {
	case "another's":
		// Another withdrawal to the same address first (the easy slip:
		// the explorer shows both transfers to it), else any listed.
		if row, err := w.store.Get(w.ctx, sluice.OperationID(it.OperationID)); err == nil {
			rows, _ := w.store.List(w.ctx, sluice.ListFilter{Limit: 1000})
			for _, r := range rows {
				if r.ID != row.ID && r.Request.To == row.Request.To && !r.Envelope.Txid.IsZero() {
					return r.Envelope.Txid.String()
				}
			}
		}
		for _, other := range items {
			if other.OperationID != it.OperationID && other.Txid != "" {
				return other.Txid
			}
		}
	case "retired":
		// The world's own read of the log (no yield point).
		evs, _ := w.store.Events(w.ctx, sluice.OperationID(it.OperationID))
		for _, e := range evs {
			if !e.RetiredTxid.IsZero() && e.RetiredTxid.String() != it.Txid {
				return e.RetiredTxid.String()
			}
		}
	}
	return it.Txid
}

// customerCancel is a customer asking to stop a withdrawal not yet built:
// the operator finds the requested and validated rows (the customer names
// theirs; the world's pick stands for that) and cancels one through the
// API. A worker may build it meanwhile; the service then refuses, or the
// store fences the resolution (a refusal too).
func (o *operatorScript) customerCancel() {
	w := o.w
	rows, err := storeView{o.a}.List(w.ctx, sluice.ListFilter{States: []sluice.State{sluice.Requested, sluice.Validated}, Limit: operatorBatch})
	if err != nil || len(rows) == 0 {
		return // the store failed the read, or nothing is waiting
	}
	op := rows[w.s.Choose("customer-cancel-pick", len(rows))]
	path := "/v1/operations/" + string(op.ID) + "/cancel"
	what := "POST " + path
	req := map[string]string{operator.FieldOperator: onCallName, operator.FieldWhy: "the customer asked to stop it"}
	o.slip(path, req)
	o.a.newAction()
	code, body := o.do(http.MethodPost, path, req)
	answer := "done"
	switch code {
	case http.StatusOK:
		var got opItem
		o.decode(what, code, body, &got)
		if got.OperationID != string(op.ID) || got.State != "failed" {
			o.broke(what, code, body, "a cancel that landed must leave %s failed", op.ID)
		}
		w.tally["customer-cancel"]++
	case http.StatusConflict:
		msg := o.refusal(what, code, body)
		answer = fmt.Sprintf("%d %s", code, msg)
		if refusalNamesAnother(msg, "cancel") {
			o.broke(what, code, body, "a cancel refused names another action")
		}
		if why := o.a.refusedAfterWrite(true); why != "" {
			o.broke(what, code, body, "a cancel %s", why)
		}
		w.tally["customer-cancel-refused"]++
	case http.StatusServiceUnavailable:
		o.unavailable(what, code, body)
		return
	default:
		o.broke(what, code, body, "a cancel answers 200, 409 or 503")
	}
	if w.s.Tracing() {
		w.fact(model.Fact{Kind: model.FactOperator, Op: w.name(op.ID), Answer: "customer cancel: " + strings.TrimSpace(answer)})
	}
}
