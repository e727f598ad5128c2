package scenarios

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/tron"
)

// The person on call opens an operation's page (GET /v1/operations/{id})
// before acting on it, as the README's runbook says: the queue is a list,
// the page is what one judges a single withdrawal by. The wire world's
// script looks before every action it posts, and holds the page to the
// world's own read of the row and its log at that instant. The other
// worlds' person on call acts through the service's methods, and looks at
// the page first too: those worlds reach what wire does not (a proof read
// from a node lagging the solid block, say, which the nodes world makes
// often and wire never).
//
// The look costs the schedule nothing, like the slips: it is served by a
// handler of its own over the store read directly and a clock read without
// a yield point (the page rendered at one instant, between two of the
// operator's steps), it draws no choice, and the operator's metrics do not
// see it (a read is not an action). So every seed runs as it did without
// it (TestLooksKeepTheSchedule), and the kill rows measured before it
// stand. What it reaches is production's path from the URL to the page:
// the route's wildcard, the service's Item, and every field of the view.

// stillClock is the operator's clock read without a yield point.
type stillClock struct{ a *actor }

func (c stillClock) Now() time.Time { return c.a.w.s.Now().Add(c.a.skew) }

// looker is the person on call's look at a page: a handler of its own,
// built from the operator's service over the store itself and the still
// clock, without the observer, behind the same token; and the request and
// answer it reuses.
type looker struct {
	w    *world
	a    *actor
	svc  operator.Service // the look's service, handed to the handler on the first look
	h    http.Handler     // nil until the first look
	in   inbound
	rec  recorder
	buf  pageBuf
	auth [1]string
}

func (w *world) newLooker(a *actor, svc *operator.Service) *looker {
	l := &looker{w: w, a: a, svc: *svc}
	l.svc.Store, l.svc.Clock, l.svc.Observer = w.store, stillClock{a}, nil
	l.auth[0] = "Bearer " + operatorToken
	return l
}

// handler is the look's handler, taken from the pool (or built) on the
// first look and given back with the run's other pooled parts
// (releaseHandler): building one registers the API's routes in a new
// ServeMux, most of a seed's allocations for the look, and between runs it
// holds nothing but its Service, which each run sets to its own.
func (l *looker) handler() http.Handler {
	if l.h != nil {
		return l.h
	}
	lh, _ := lookHandlers.Get().(*lookHandler)
	if lh == nil {
		lh = &lookHandler{svc: l.svc}
		h, err := operator.NewHandler(&lh.svc, operatorToken, nil)
		if err != nil {
			panic("scenarios: the operator's look handler: " + err.Error())
		}
		lh.h = h
	}
	lh.svc = l.svc
	l.w.looks = append(l.w.looks, lh)
	l.h = lh.h
	if l.w.lookWrap != nil {
		l.h = l.w.lookWrap(l.h)
	}
	return l.h
}

// lookHandlers holds the look's handlers between runs (looker.handler).
var lookHandlers sync.Pool

type lookHandler struct {
	svc operator.Service
	h   http.Handler // served by &svc
}

// lookAtTheFinished is support's look, once every withdrawal has
// finished, at the pages of those whose story was more than one send:
// rebuilt, parked on the way, or not paid (cancelled, failed). A customer
// asks whether it was paid, and by which transaction, and support answers
// from the page: it must show the txid that paid (not one of those rebuilt
// away), the counts and times of the row, and offer no action. The person
// on call's looks come before actions, so they never open a finished row.
// Made by the conductor at the instant it ends the run, through the first
// person on call's look (its handler and clock): no choice, no yield point,
// so the schedule is the one without it (TestLooksKeepTheSchedule). One
// row of each kind a seed, the first by id (a page wrong for a kind is
// wrong for every row of it, and the seeds vary the rows): about forty
// allocations a look, and ten such rows a chaos seed would take it past
// issue 17's goal. A plain first-time payment is the look's common case
// already.
func (w *world) lookAtTheFinished() {
	l := w.support
	if l == nil || w.noLooks || w.noSupport {
		return
	}
	rows, err := w.store.List(w.ctx, sluice.ListFilter{States: finishedStates, Limit: sluice.ListMax})
	if err != nil {
		panic("scenarios: support's own list of the finished rows: " + err.Error())
	}
	var seen [3]bool // a row not paid, one paid after a rebuild, one paid after a park
	for i := range rows {
		r := &rows[i]
		kind := 0
		switch {
		case r.State != sluice.Confirmed:
		case r.Builds > 1:
			kind = 1
		case r.Parks > 0:
			kind = 2
		default:
			continue
		}
		if !seen[kind] {
			seen[kind] = true
			l.look(string(r.ID), "support-look")
		}
	}
}

// finishedStates are the terminal states, by the script's own list (opTerminal).
var finishedStates = func() []sluice.State {
	var ss []sluice.State
	for s := range sluice.State(sluice.StateCount) {
		if opTerminal[s.String()] {
			ss = append(ss, s)
		}
	}
	return ss
}()

// lookPage is an operation's page as the API documents it: the fields a
// person on call reads before acting.
type lookPage struct {
	opItem
	Builds      int    `json:"builds"`
	Parks       int    `json:"parks"`
	ParkReason  string `json:"park_reason"`
	ParkedSince string `json:"parked_since"`
	FirstSentAt string `json:"first_sent_at"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
}

// look opens id's page and holds it to the row and the log as the world
// reads them itself at the same instant: the same id, state, txid, counts
// and times, the actions the README gives that state, the newest decision
// and evidence of the log (evidenceShown: the proof judged by the world's
// own reading), and the wait since the first write-ahead; and counts the
// look under tally (the person on call's, or support's).
func (l *looker) look(id, tally string) {
	w := l.w
	if w.noLooks {
		return
	}
	path := "/v1/operations/" + id
	req := l.in.build(w.ctx, http.MethodGet, path, nil, "")
	req.Header["Authorization"] = l.auth[:1:1]
	l.rec.reset()
	l.handler().ServeHTTP(&l.rec, req)
	code, body := l.rec.code, l.rec.body
	broke := func(format string, args ...any) {
		panic(fmt.Sprintf("operator: GET %s answered %d %.300q: %s", path, code, body, fmt.Sprintf(format, args...)))
	}
	if code != http.StatusOK {
		broke("the page of an operation in the store answers 200 (the store is read without faults)")
	}
	if w.pages != nil {
		w.pages(body)
	}
	var page lookPage
	if err := readPage(body, &page, &l.buf); err != nil {
		broke("not the JSON the API documents: %v", err)
	}
	row, err := w.store.Get(w.ctx, sluice.OperationID(id))
	if err != nil {
		panic("scenarios: the world's own read of " + id + ": " + err.Error())
	}
	now := w.s.Now().Add(l.a.skew)
	// One read of the log for both of its checks.
	log := func(evs []sluice.Event) string {
		if why := w.latestOfTheLog(page.opItem, evs); why != "" {
			return why
		}
		return cmp.Or(w.waitedOfTheLog(page.opItem, evs, now, now), txidsOfTheLog(page.opItem, evs))
	}
	for _, why := range []string{pageOfTheRow(page, row), w.ofTheLog(page.opItem, log)} {
		if why != "" {
			broke("%s", why)
		}
	}
	w.tally[tally]++
}

// pageOfTheRow says how a page differs from the row it shows, or "".
func pageOfTheRow(p lookPage, row sluice.Operation) string {
	// Every field is compared as text without making any: a look runs
	// before each of the operator's actions in every world, and a page that
	// matches (every page, but for a bug) should cost the seed nothing
	// beyond the page itself. The texts are made only to say what differs.
	var buf [2 * len(tron.Txid{})]byte
	differs := func(field string, got, want any) string {
		return fmt.Sprintf("the page shows %s %v, the row holds %v", field, got, want)
	}
	if p.OperationID != string(row.ID) {
		return differs("operation_id", p.OperationID, string(row.ID))
	}
	if p.State != row.State.String() {
		return differs("state", p.State, row.State.String())
	}
	if why := model.RequestShown(model.Payload{ID: p.OperationID, Customer: p.Customer, To: p.ToAddress, Amount: p.Amount, Asset: p.Asset}, row.Request); why != "" {
		return "the page " + why
	}
	if !sameTxid(p.Txid, row, buf[:0]) {
		return differs("txid", p.Txid, txidOrEmpty(row))
	}
	if p.Parked != row.Parked() {
		return differs("parked", p.Parked, row.Parked())
	}
	if p.Builds != row.Builds {
		return differs("builds", p.Builds, row.Builds)
	}
	if p.Parks != row.Parks {
		return differs("parks", p.Parks, row.Parks)
	}
	if p.ParkReason != row.ParkReason {
		return differs("park_reason", p.ParkReason, row.ParkReason)
	}
	for _, c := range [...]struct {
		field string
		got   string
		want  time.Time
	}{
		{"parked_since", p.ParkedSince, row.ParkedSince},
		{"first_sent_at", p.FirstSentAt, row.FirstSentAt},
		{"created_at", p.CreatedAt, row.CreatedAt},
		{"updated_at", p.UpdatedAt, row.UpdatedAt},
	} {
		if !sameAPITime(c.got, c.want) {
			return differs(c.field, c.got, apiTime(c.want))
		}
	}
	if want := rowActions(row); !slices.Equal(p.Actions, want) {
		return fmt.Sprintf("the page offers %v for a %s row (parked %v, txid %q): the README gives %v", p.Actions, row.State, row.Parked(), txidOrEmpty(row), want)
	}
	return ""
}

// sameTxid says whether got is row's txid as the API writes it (lowercase
// hex, "" for none), txidOrEmpty's text without making it.
func sameTxid(got string, row sluice.Operation, buf []byte) bool {
	if row.Envelope.Txid.IsZero() {
		return got == ""
	}
	return string(hex.AppendEncode(buf, row.Envelope.Txid[:])) == got
}

// sameAPITime says whether got is t as apiTime writes it, without making
// the text.
func sameAPITime(got string, t time.Time) bool {
	if t.IsZero() {
		return got == ""
	}
	var buf [len(time.RFC3339Nano) + 8]byte
	return string(t.UTC().AppendFormat(buf[:0], time.RFC3339Nano)) == got
}

// rowActions are the actions the README's operator API gives a row: a
// review may be cancelled, and resolved as paid when it has a txid; a row
// the automation still works on may be retried, and cancelled too when
// nothing was ever built or it is parked (a live txid is the stuck
// policy's, not a person's); a finished row offers nothing. The script's
// own list.
func rowActions(row sluice.Operation) []string {
	switch {
	case row.State == sluice.Review:
		return reviewActions(opItem{Txid: txidOrEmpty(row)})
	case opTerminal[row.State.String()]:
		return []string{}
	case row.Envelope.Txid.IsZero() || row.Parked():
		return parkedActions
	default:
		return []string{"retry"}
	}
}

func txidOrEmpty(row sluice.Operation) string {
	if row.Envelope.Txid.IsZero() {
		return ""
	}
	return row.Envelope.Txid.String()
}
