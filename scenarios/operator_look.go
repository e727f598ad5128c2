package scenarios

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/operator"
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
	h    http.Handler
	in   inbound
	rec  recorder
	auth [1]string
}

func (w *world) newLooker(a *actor, svc *operator.Service) *looker {
	look := *svc
	look.Store, look.Clock, look.Observer = w.store, stillClock{a}, nil
	h, err := operator.NewHandler(&look, operatorToken, nil)
	if err != nil {
		panic("scenarios: the operator's look handler: " + err.Error())
	}
	l := &looker{w: w, a: a, h: h}
	l.auth[0] = "Bearer " + operatorToken
	return l
}

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
// own reading), and the wait since the first write-ahead.
func (l *looker) look(id string) {
	w := l.w
	if w.noLooks {
		return
	}
	path := "/v1/operations/" + id
	req := l.in.build(w.ctx, http.MethodGet, path, nil, "")
	req.Header["Authorization"] = l.auth[:1:1]
	l.rec.reset()
	l.h.ServeHTTP(&l.rec, req)
	code, body := l.rec.code, l.rec.body
	broke := func(format string, args ...any) {
		panic(fmt.Sprintf("operator: GET %s answered %d %.300q: %s", path, code, body, fmt.Sprintf(format, args...)))
	}
	if code != http.StatusOK {
		broke("the page of an operation the queue listed answers 200 (the store is read without faults)")
	}
	var page lookPage
	if err := json.Unmarshal(body, &page); err != nil {
		broke("not the JSON the API documents: %v", err)
	}
	row, err := w.store.Get(w.ctx, sluice.OperationID(id))
	if err != nil {
		panic("scenarios: the world's own read of " + id + ": " + err.Error())
	}
	now := w.s.Now().Add(l.a.skew)
	for _, why := range []string{pageOfTheRow(page, row), w.latestOfTheLog(page.opItem), w.waitedOfTheLog(page.opItem, now, now)} {
		if why != "" {
			broke("%s", why)
		}
	}
	w.tally["operator-look"]++
}

// pageOfTheRow says how a page differs from the row it shows, or "".
func pageOfTheRow(p lookPage, row sluice.Operation) string {
	text := apiTime
	txid := txidOrEmpty(row)
	for _, c := range []struct {
		field     string
		got, want any
	}{
		{"operation_id", p.OperationID, string(row.ID)},
		{"state", p.State, row.State.String()},
		{"txid", p.Txid, txid},
		{"parked", p.Parked, row.Parked()},
		{"builds", p.Builds, row.Builds},
		{"parks", p.Parks, row.Parks},
		{"park_reason", p.ParkReason, row.ParkReason},
		{"parked_since", p.ParkedSince, text(row.ParkedSince)},
		{"first_sent_at", p.FirstSentAt, text(row.FirstSentAt)},
		{"created_at", p.CreatedAt, text(row.CreatedAt)},
		{"updated_at", p.UpdatedAt, text(row.UpdatedAt)},
	} {
		if c.got != c.want {
			return fmt.Sprintf("the page shows %s %v, the row holds %v", c.field, c.got, c.want)
		}
	}
	if want := rowActions(row); !slices.Equal(p.Actions, want) {
		return fmt.Sprintf("the page offers %v for a %s row (parked %v, txid %q): the README gives %v", p.Actions, row.State, row.Parked(), txid, want)
	}
	return ""
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
