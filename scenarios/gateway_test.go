package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
	"sluicesim/sluice/tron"
)

// gwAnswer is an answer handed to the gateway in a rules test.
type gwAnswer struct {
	method, target string
	req            http.Header
	code           int
	resp           http.Header
	sent, recv     time.Duration // after epoch, virtual
}

func (a gwAnswer) give(g *gateway) {
	g.receive(a.method, a.target, a.req, a.code, a.resp, []byte("body of "+a.target), false, epoch.Add(a.sent), epoch.Add(a.recv))
}

func cc(v ...string) http.Header { return http.Header{"Cache-Control": v} }

// Goal: the gateway keeps RFC 9111's rules for a shared cache, each on its
// own: what may be stored, for how long in virtual time, to which requests
// it may be served, and what a POST takes away.
func TestGatewayRules(t *testing.T) {
	const path = "/v1/withdrawals/x"
	get := func(resp http.Header) gwAnswer {
		return gwAnswer{method: http.MethodGet, target: path, code: http.StatusOK, resp: resp}
	}
	with := func(a gwAnswer, f func(*gwAnswer)) gwAnswer { f(&a); return a }
	// Each case: an answer received at 0 s (sent at a.sent), then whether
	// a GET of path with header req is served from the cache at each time.
	type probe struct {
		at    time.Duration
		req   http.Header
		fresh bool
	}
	s := time.Second
	cases := []struct {
		name   string
		answer gwAnswer
		probes []probe
	}{
		{"intake's no-store", get(cc("no-store")), []probe{{0, nil, false}}},
		{"no-store among others", get(cc("public, max-age=60, no-store")), []probe{{0, nil, false}}},
		{"no-store in the request", with(get(cc("max-age=60")), func(a *gwAnswer) { a.req = cc("no-store") }), []probe{{0, nil, false}}},
		{"must-understand lets a known status past no-store", get(cc("no-store, must-understand, max-age=5")), []probe{{4 * s, nil, true}}},
		{"private", get(cc("private, max-age=60")), []probe{{0, nil, false}}},
		{"private naming a field", get(cc(`private="Set-Cookie", max-age=60`)), []probe{{0, nil, false}}},
		{"public alone (no heuristic freshness)", get(cc("public")), []probe{{0, nil, false}}},
		{"no Cache-Control at all", get(http.Header{}), []probe{{0, nil, false}}},
		{"no-cache: never served unvalidated", get(cc("max-age=60, no-cache")), []probe{{0, nil, false}}},
		{"max-age, expiring in virtual time", get(cc("public, max-age=2")), []probe{
			{0, nil, true}, {1999 * time.Millisecond, nil, true}, {2 * s, nil, false}, {time.Hour, nil, false}}},
		{"max-age quoted, case-insensitive", get(cc(`Max-Age="3"`)), []probe{{2 * s, nil, true}, {3 * s, nil, false}}},
		{"max-age over two field lines", get(cc("public", "max-age=3")), []probe{{2 * s, nil, true}}},
		{"max-age twice, differing: stale", get(cc("max-age=3, max-age=60")), []probe{{0, nil, false}}},
		{"max-age not a number: stale", get(cc("max-age=2s")), []probe{{0, nil, false}}},
		{"s-maxage over max-age (shorter)", get(cc("max-age=60, s-maxage=1")), []probe{{0, nil, true}, {s, nil, false}}},
		{"s-maxage over max-age (longer)", get(cc("max-age=0, s-maxage=5")), []probe{{4 * s, nil, true}, {5 * s, nil, false}}},
		{"Expires against Date", get(http.Header{"Date": {"Thu, 01 Jan 2026 00:00:00 GMT"}, "Expires": {"Thu, 01 Jan 2026 00:00:10 GMT"}}),
			[]probe{{9 * s, nil, true}, {10 * s, nil, false}}},
		{"max-age over Expires", get(http.Header{"Cache-Control": {"max-age=1"}, "Date": {"Thu, 01 Jan 2026 00:00:00 GMT"}, "Expires": {"Thu, 01 Jan 2026 00:00:10 GMT"}}),
			[]probe{{s, nil, false}}},
		{"Expires 0: already expired", get(http.Header{"Expires": {"0"}}), []probe{{0, nil, false}}},
		{"the answer's delay counts in its age", with(get(cc("max-age=2")), func(a *gwAnswer) { a.sent = -1500 * time.Millisecond }),
			[]probe{{400 * time.Millisecond, nil, true}, {500 * time.Millisecond, nil, false}}},
		{"an Age header counts too", get(http.Header{"Cache-Control": {"max-age=10"}, "Age": {"8"}}), []probe{{s, nil, true}, {2 * s, nil, false}}},
		{"stale on arrival", with(get(cc("max-age=2")), func(a *gwAnswer) { a.sent = -3 * s }), []probe{{0, nil, false}}},
		{"a 404 with max-age", with(get(cc("max-age=2")), func(a *gwAnswer) { a.code = http.StatusNotFound }), []probe{{s, nil, true}}},
		{"a 206 is not stored", with(get(cc("max-age=2")), func(a *gwAnswer) { a.code = http.StatusPartialContent }), []probe{{0, nil, false}}},
		{"a 304 is not stored", with(get(cc("max-age=2")), func(a *gwAnswer) { a.code = http.StatusNotModified }), []probe{{0, nil, false}}},
		{"a POST's answer is not stored", with(get(cc("max-age=60")), func(a *gwAnswer) { a.method = http.MethodPost }), []probe{{0, nil, false}}},
		{"Authorization without public", with(get(cc("max-age=60")), func(a *gwAnswer) { a.req = http.Header{"Authorization": {"Bearer t"}} }),
			[]probe{{0, nil, false}}},
		{"Authorization with public", with(get(cc("public, max-age=60")), func(a *gwAnswer) { a.req = http.Header{"Authorization": {"Bearer t"}} }),
			[]probe{{0, nil, true}}},
		{"Authorization with s-maxage", with(get(cc("s-maxage=60")), func(a *gwAnswer) { a.req = http.Header{"Authorization": {"Bearer t"}} }),
			[]probe{{0, nil, true}}},
		{"Vary: the same value, another, none", with(get(http.Header{"Cache-Control": {"max-age=60"}, "Vary": {"accept-language"}}),
			func(a *gwAnswer) { a.req = http.Header{"Accept-Language": {"de"}} }), []probe{
			{0, http.Header{"Accept-Language": {"de"}}, true}, {0, http.Header{"Accept-Language": {"fr"}}, false}, {0, nil, false}}},
		{"Vary on a field neither request has", get(http.Header{"Cache-Control": {"max-age=60"}, "Vary": {"Accept-Language"}}),
			[]probe{{0, nil, true}, {0, http.Header{"Accept-Language": {"de"}}, false}}},
		{"Vary: * never matches", get(http.Header{"Cache-Control": {"max-age=60"}, "Vary": {"Accept, *"}}), []probe{{0, nil, false}}},
		{"a request's no-cache", get(cc("max-age=60")), []probe{{0, cc("no-cache"), false}, {0, http.Header{"Pragma": {"no-cache"}}, false}, {0, nil, true}}},
	}
	for _, c := range cases {
		var g gateway
		c.answer.give(&g)
		for _, p := range c.probes {
			e := g.lookup(http.MethodGet, path, p.req, epoch.Add(p.at))
			if (e != nil) != p.fresh {
				t.Errorf("%s: a GET at %v with %v served from the cache: %v, want %v", c.name, p.at, p.req, e != nil, p.fresh)
			}
		}
	}
}

// Goal: an unsafe method's non-error answer invalidates what is stored for
// its target URI, and nothing else; a stored answer is the gateway's own
// copy, and the newest answer for a key is the one kept.
func TestGatewayInvalidationAndCopies(t *testing.T) {
	const a, b = "/v1/withdrawals/a", "/v1/withdrawals/b"
	fresh := cc("max-age=60")
	store := func(g *gateway, target string) {
		gwAnswer{method: http.MethodGet, target: target, code: http.StatusOK, resp: fresh}.give(g)
	}
	held := func(g *gateway, target string) bool {
		return g.lookup(http.MethodGet, target, nil, epoch.Add(time.Second)) != nil
	}

	var g gateway
	store(&g, a)
	store(&g, b)
	gwAnswer{method: http.MethodPost, target: a, code: http.StatusConflict, resp: fresh}.give(&g)
	if !held(&g, a) {
		t.Error("a POST answered 409 invalidated its target: only a non-error answer does")
	}
	gwAnswer{method: http.MethodPost, target: "/v1/withdrawals", code: http.StatusCreated,
		resp: http.Header{"Location": {a}}}.give(&g)
	if !held(&g, a) {
		t.Error("a POST to another URI invalidated a (its Location is a MAY the gateway does not take)")
	}
	gwAnswer{method: http.MethodPost, target: a, code: http.StatusOK, resp: fresh}.give(&g)
	if held(&g, a) {
		t.Error("a POST answered 200 left its target's stored answer")
	}
	if !held(&g, b) {
		t.Error("a POST to a invalidated b")
	}
	gwAnswer{method: "PURGE-ISH", target: b, code: http.StatusNoContent}.give(&g)
	if held(&g, b) {
		t.Error("a method of unknown safety left its target's stored answer")
	}

	var h gateway
	body := []byte("first")
	h.receive(http.MethodGet, a, nil, http.StatusOK, fresh, body, false, epoch, epoch)
	copy(body, "XXXXX")
	if e := h.lookup(http.MethodGet, a, nil, epoch); e == nil || string(e.body) != "first" {
		t.Errorf("the stored body follows the handler's buffer: %v", e)
	}
	h.receive(http.MethodGet, a, nil, http.StatusNotFound, fresh, []byte("second"), false, epoch.Add(time.Second), epoch.Add(time.Second))
	if e := h.lookup(http.MethodGet, a, nil, epoch.Add(time.Second)); e == nil || e.code != http.StatusNotFound || string(e.body) != "second" {
		t.Errorf("the newest answer is not the one kept: %v", e)
	}
}

// Goal: intake's own answers, every kind a GET gets (a withdrawal, an
// unknown id, a malformed id, an unknown path), are never stored: this is
// why the gateway changes no honest run.
func TestGatewayStoresNothingIntakeAnswers(t *testing.T) {
	mem := store.NewMemory(&storetest.Clock{}, time.Minute)
	if _, _, err := mem.Credit(context.Background(), sluice.Credit{Ref: "t", Customer: "cust-1", Amount: money.MaxAmount}); err != nil {
		t.Fatal(err)
	}
	h := intake.NewHandler(&intake.Service{Store: mem})
	const id = "0f3a5b7c-1d2e-4f60-8a9b-0c1d2e3f4a5b"
	to := tron.AddressFromBytes20([20]byte{0xc0, 1, 2, 3}).String()
	post := fmt.Sprintf(`{"operation_id":%q,"customer":"cust-1","to_address":%q,"amount":"1.5","asset":%q}`, id, to, sluice.Asset)
	req := httptest.NewRequest(http.MethodPost, "/v1/withdrawals", strings.NewReader(post))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	if h.ServeHTTP(rec, req); rec.Code != http.StatusCreated {
		t.Fatalf("post: %d %s", rec.Code, rec.Body)
	}
	for _, path := range []string{"/v1/withdrawals/" + id, "/v1/withdrawals/1f3a5b7c-1d2e-4f60-8a9b-0c1d2e3f4a5b", "/v1/withdrawals/nope", "/v1/nothing"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		var g gateway
		g.receive(http.MethodGet, path, nil, rec.Code, rec.Header(), rec.Body.Bytes(), false, epoch, epoch)
		if len(g.entries) != 0 {
			t.Errorf("GET %s answered %d with Cache-Control %q, and the gateway stored it", path, rec.Code, rec.Header().Get("Cache-Control"))
		}
	}
}

// cacheable rewrites intake's Cache-Control: no-store into cc, as
// independent bug 53 does in intake itself.
func cacheable(cc string) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(&cacheableWriter{ResponseWriter: w, cc: cc}, r)
		})
	}
}

type cacheableWriter struct {
	http.ResponseWriter
	cc    string
	wrote bool
}

func (c *cacheableWriter) WriteHeader(code int) {
	if !c.wrote {
		c.wrote = true
		if h := c.Header(); h.Get("Cache-Control") == "no-store" {
			h.Set("Cache-Control", c.cc)
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *cacheableWriter) Write(b []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	return c.ResponseWriter.Write(b)
}

// Goal: with intake's answers made cacheable (bug 53's
// Cache-Control: public, max-age=2), the gateway serves clients stale
// withdrawal states, and linearizable-intake says so: the world records a
// cached answer at the instant the client got it, and the history it shows
// is older than the log at that instant. The same seeds pass with
// intake's own headers, and with answers a shared cache must not store
// (private), so that it is the gateway serving stale answers that fails
// them.
func TestGatewayStaleAnswersAreCaught(t *testing.T) {
	const seeds = 40
	cfg := Chaos()
	caught := uint64(0)
	for seed := uint64(1); seed <= seeds && caught == 0; seed++ {
		res := Run(cfg, seed, Options{wrapHandler: cacheable("public, max-age=2")})
		for _, v := range res.Violations {
			if v.Invariant == model.LinearizableIntake && strings.Contains(v.Message, "no instant within the read shows it") {
				caught = seed
				t.Logf("seed %d: %s", seed, v.Message)
				break
			}
		}
	}
	if caught == 0 {
		t.Fatalf("answers cacheable for 2 s: no stale read caught in %d chaos seeds", seeds)
	}
	// The failing seed, traced: the stale read was the gateway's.
	res := Run(cfg, caught, Options{Tracing: true, wrapHandler: cacheable("public, max-age=2")})
	hits := 0
	for _, e := range res.Trace.Events {
		if strings.HasPrefix(e.Text, "gateway: GET ") {
			hits++
		}
	}
	if hits == 0 || !res.Failed() {
		t.Errorf("seed %d traced: %d answers from the gateway, failed %v; want some, and the same verdict", caught, hits, res.Failed())
	}
	for _, o := range []struct {
		name string
		o    Options
	}{
		{"intake's own headers", Options{}},
		{"private, max-age=2", Options{wrapHandler: cacheable("private, max-age=2")}},
		{"public (no explicit freshness)", Options{wrapHandler: cacheable("public")}},
		{"public, max-age=2, no-cache", Options{wrapHandler: cacheable("public, max-age=2, no-cache")}},
	} {
		if res := Run(cfg, caught, o.o); res.Failed() {
			t.Errorf("%s: seed %d fails (%s: %s); want it to pass", o.name, caught, res.Violations[0].Invariant, res.Violations[0].Message)
		}
	}
}
