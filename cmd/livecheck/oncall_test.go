package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
)

// Goal: the person on call holds every answer of the operator API to
// what it asked, and the answers to the store's log: a customer's cancel
// answered 200 left the operation failed with an event under the person's
// name, a retry answered 200 unparked it, an action refused never landed,
// and an action the store always fails (independent bug 149's effect: a
// 503 at every attempt) fails the run as never answered. The counter of
// actions /metrics serves must count each answer once. Method: the
// person's real code against the operator API's real handler over the
// memory store (three rows requested, one parked), behind a front that
// may lie.
func TestOnCallJudged(t *testing.T) {
	for _, c := range []struct {
		name  string
		front func(w http.ResponseWriter, r *http.Request, _ []byte, real http.Handler) bool
		wrong string // "" for none
	}{
		{"honest", nil, ""},
		{"an answer lost after the cancel landed, in an outage", func() func(http.ResponseWriter, *http.Request, []byte, http.Handler) bool {
			var mu sync.Mutex
			lost := false
			return func(w http.ResponseWriter, r *http.Request, _ []byte, real http.Handler) bool {
				mu.Lock()
				defer mu.Unlock()
				if lost || !strings.HasSuffix(r.URL.Path, "/cancel") {
					return false
				}
				lost = true
				real.ServeHTTP(httptest.NewRecorder(), r) // cancelled; the answer is lost
				conn, _, err := w.(http.Hijacker).Hijack()
				if err != nil {
					panic(err)
				}
				conn.Close()
				return true
			}
		}(), ""},
		{"every action failed by the store (149), in an outage", func(w http.ResponseWriter, r *http.Request, _ []byte, real http.Handler) bool {
			if r.Method != http.MethodPost {
				return false
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":"store unavailable: the action may or may not have landed"}` + "\n"))
			return true
		}, "never answered in 40 attempts"},
		// 149 as the live check met it: a worker builds the row while
		// the store fails the cancel, and a later attempt is refused.
		{"an action failed by the store while PostgreSQL is up (149)", func() func(http.ResponseWriter, *http.Request, []byte, http.Handler) bool {
			var mu sync.Mutex
			failed := map[string]bool{}
			return func(w http.ResponseWriter, r *http.Request, _ []byte, real http.Handler) bool {
				mu.Lock()
				defer mu.Unlock()
				if r.Method != http.MethodPost || failed[r.URL.Path] {
					return false
				}
				failed[r.URL.Path] = true
				w.WriteHeader(http.StatusServiceUnavailable)
				w.Write([]byte(`{"error":"store unavailable: the action may or may not have landed"}` + "\n"))
				return true
			}
		}(), "outside any PostgreSQL outage"},
		{"a cancel answered 200 and never done", func(w http.ResponseWriter, r *http.Request, _ []byte, real http.Handler) bool {
			if !strings.HasSuffix(r.URL.Path, "/cancel") {
				return false
			}
			w.WriteHeader(http.StatusOK)
			w.Write([]byte(`{"state":"failed","parked":false}` + "\n"))
			return true
		}, "but no event by " + onCallName + " records it"},
		{"a cancel done and answered refused", func(w http.ResponseWriter, r *http.Request, _ []byte, real http.Handler) bool {
			if !strings.HasSuffix(r.URL.Path, "/cancel") {
				return false
			}
			real.ServeHTTP(httptest.NewRecorder(), r)
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"error":"cancel refused"}` + "\n"))
			return true
		}, "though refused"},
		{"a retry answered 200 and never done", func(w http.ResponseWriter, r *http.Request, _ []byte, real http.Handler) bool {
			if !strings.HasSuffix(r.URL.Path, "/retry") {
				return false
			}
			w.WriteHeader(http.StatusOK)
			w.Write([]byte(`{"state":"validated","parked":false}` + "\n"))
			return true
		}, "retry 55555555-5555-4555-8555-000000000004 answered 200, but no event"},
		{"a cancel answered 200 showing another state", func(w http.ResponseWriter, r *http.Request, _ []byte, real http.Handler) bool {
			if !strings.HasSuffix(r.URL.Path, "/cancel") {
				return false
			}
			rec := httptest.NewRecorder()
			real.ServeHTTP(rec, r)
			w.WriteHeader(rec.Code)
			w.Write(bytes.Replace(rec.Body.Bytes(), []byte(`"state":"failed"`), []byte(`"state":"requested"`), 1))
			return true
		}, "a cancel ends failed"},
		// Independent bug 155's effect: the page shows the amount in
		// base units.
		{"an amount shown in base units", func(w http.ResponseWriter, r *http.Request, _ []byte, real http.Handler) bool {
			if r.Method != http.MethodPost {
				return false
			}
			rec := httptest.NewRecorder()
			real.ServeHTTP(rec, r)
			w.WriteHeader(rec.Code)
			w.Write(bytes.Replace(rec.Body.Bytes(), []byte(`"amount":"1"`), []byte(`"amount":"1000000"`), 1))
			return true
		}, "amount \"1000000\" (1000000000000 base units"},
		{"an action answered 500", func(w http.ResponseWriter, r *http.Request, _ []byte, real http.Handler) bool {
			if r.Method != http.MethodPost {
				return false
			}
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error":"boom"}` + "\n"))
			return true
		}, "want 200, 409 or 503"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			mem := store.NewMemory(&storetest.Clock{}, time.Minute)
			ids := onCallRows(t, mem)
			real, err := operator.NewHandler(&operator.Service{Store: mem, Node: noNode{}}, testToken, nil)
			if err != nil {
				t.Fatal(err)
			}
			front := lyingFront(real, c.front)
			defer front.Close()
			var outs *outages
			if strings.Contains(c.name, "in an outage") {
				outs = &outages{}
				outs.begin() // open for the whole test
			}
			o := &onCall{outages: outs, url: front.URL, token: testToken, hc: front.Client(), rng: rand.New(rand.NewPCG(1, 2)), backoff: time.Millisecond,
				rows: func(ctx context.Context, states ...sluice.State) ([]sluice.OperationID, error) {
					if slices.Contains(states, sluice.Requested) {
						states = states[:1] // the test's parked row is validated: retried, not cancelled
					}
					rows, err := mem.List(ctx, sluice.ListFilter{States: states, Limit: 20})
					var out []sluice.OperationID
					for _, r := range rows {
						out = append(out, r.ID)
					}
					return out, err
				}}
			// Rounds of a millisecond: a cancel each while requested rows
			// wait, and the parked row retried (each round at even odds).
			o.run(ctx, 40*time.Millisecond, time.Millisecond)
			snap := mem.Snapshot()
			wrong := strings.Join(append(o.judge(snap.Operations, snap.Events), o.metricProblems(o.metricsOf(t, snap.Events))...), "; ")
			t.Logf("answers %v counts %v lost %d unsure %d", o.answered, o.counts, o.lost, o.unsure)
			switch {
			case c.wrong == "" && wrong != "":
				t.Errorf("honest answers judged wrong: %s", wrong)
			case c.wrong != "" && !strings.Contains(wrong, c.wrong):
				t.Errorf("wrong answers %q, want one saying %q", wrong, c.wrong)
			}
			if c.wrong != "" {
				return
			}
			// A counter that missed one landed cancel (or counted one
			// twice) is named.
			m := o.metricsOf(t, snap.Events)
			m["cancel/landed"]--
			if p := o.metricProblems(m); o.lost == 0 && (len(p) != 1 || !strings.Contains(p[0], `action="cancel",outcome="landed"`)) {
				t.Errorf("a counter one landed cancel short: problems %q, want one naming it", p)
			}
			if o.counts["cancel/landed"] == 0 || o.counts["retry/landed"] == 0 {
				t.Errorf("actions by answer %v: want a cancel and a retry landed", o.counts)
			}
			for _, id := range ids[:3] {
				if o.answered[id][operator.Cancel] == "landed" {
					if op, _ := mem.Get(ctx, id); op.State != sluice.Failed {
						t.Errorf("%s cancelled but %s", id, op.State)
					}
				}
			}
		})
	}
}

// metricsOf is what an honest counter of actions would read: one landed
// per event of the person's, and one refused per 409 the person got (the
// memory store's log has no refusals).
func (o *onCall) metricsOf(t *testing.T, events []sluice.Event) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	for _, e := range events {
		if e.Worker == sluice.OperatorPrefix+onCallName {
			k := "retry"
			if e.To == sluice.Failed {
				k = "cancel"
			}
			m[k+"/landed"]++
		}
	}
	m["cancel/refused"], m["retry/refused"] = float64(o.counts["cancel/refused"]), float64(o.counts["retry/refused"])
	return m
}

// onCallRows stores three requested rows and a fourth, validated and
// parked.
func onCallRows(t *testing.T, mem *store.Memory) []sluice.OperationID {
	t.Helper()
	ctx := t.Context()
	if _, _, err := mem.Credit(ctx, sluice.Credit{Ref: "fund", Customer: "live-0", Amount: money.Amount(100_000_000)}); err != nil {
		t.Fatal(err)
	}
	var ids []sluice.OperationID
	for i := range 4 {
		id := sluice.OperationID(fmt.Sprintf("55555555-5555-4555-8555-%012d", i+1))
		req := sluice.Request{Customer: "live-0", To: tron.AddressFromBytes20([20]byte{0xa1}), Amount: money.Amount(1_000_000), Asset: sluice.Asset}
		if _, _, err := mem.Insert(ctx, sluice.NewOperation{ID: id, Request: req, RequestHash: "h" + string(id)}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	claimed, err := mem.Claim(ctx, "w1", 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range claimed {
		if op.ID != ids[3] {
			if err := mem.Release(ctx, op.ID, op.Token, 0); err != nil {
				t.Fatal(err)
			}
			continue
		}
		op, err := mem.CAS(ctx, sluice.Change{ID: op.ID, Token: op.Token, Worker: "w1", From: sluice.Requested, To: sluice.Validated})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := mem.Park(ctx, sluice.Park{ID: op.ID, Token: op.Token, Worker: "w1", After: time.Hour, Reason: "node busy"}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// Goal: a takeover is a worker process's: the person on call's retry of a
// row in broadcasting between two events of one worker incarnation is
// none (counted, it would meet the run's demand for a kill between a
// write-ahead and its send without a kill), and neither is the operator an
// incarnation; a second incarnation driving the row is one, in the state it
// found.
func TestTakeoversAreWorkers(t *testing.T) {
	ev := func(w string, from, to sluice.State) sluice.Event {
		return sluice.Event{OperationID: "op", Worker: sluice.WorkerID(w), From: from, To: to}
	}
	events := []sluice.Event{
		ev("", sluice.None, sluice.Requested),
		ev("11-100-w1", sluice.Requested, sluice.Validated),
		ev("11-100-w1", sluice.Signed, sluice.Broadcasting),
		ev(sluice.OperatorPrefix+onCallName, sluice.Broadcasting, sluice.Broadcasting),
		ev("11-100-w2", sluice.Broadcasting, sluice.Broadcast),
		ev("12-200-w1", sluice.Broadcast, sluice.Confirmed),
	}
	got := takeoversByState(events)
	if len(got) != 1 || got[sluice.Broadcast] != 1 {
		t.Errorf("takeovers %v, want one, in broadcast (the operator's retry in broadcasting is none)", got)
	}
	if procs, handed := incarnations(events); procs != 2 || handed != 1 {
		t.Errorf("incarnations %d, operations handed over %d; want 2 and 1", procs, handed)
	}
}

// Goal: the person on call and the depositor act under names of exactly
// the longest the operator API takes, which it accepts (blind bug 280
// refused a name of exactly the bound).
func TestNamesAreTheLongest(t *testing.T) {
	for _, name := range []string{onCallName, depositorName} {
		if len(name) != operator.OperatorMax {
			t.Errorf("%q is %d bytes, want operator.OperatorMax (%d)", name, len(name), operator.OperatorMax)
		}
		if err := (operator.Act{Operator: name, Why: "on call"}).Check(); err != nil {
			t.Errorf("%q refused: %v", name, err)
		}
	}
}
