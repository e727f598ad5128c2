package scenarios

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/operator"
)

// response is what a server process handed back.
type response struct {
	code   int
	replay bool
	// body is the answer's body, in its call's buffer: the client reads it
	// and then hands the call back (world.release), after which the next
	// request's answer may overwrite it.
	body   []byte
	call   *serverCall
	ret    int64
	retLog int // the events of the operation asked for at ret (logOf)
	// retSeq, for a POST, is the Seq of the store's newest event at ret:
	// whatever the request did to the store, it did by then.
	retSeq int64
	// storeFailed: the world failed a store call of this request.
	storeFailed bool
}

// request runs one HTTP request through the real handler in a server
// process of its own, named srvName, so that the client can give up on it
// while it goes on. ok is false if no answer came within ClientTimeout.
// With logOf set, the answer also counts that operation's events at the
// moment of return. An answer's body lives in its call: the client must
// release the answer when it has read it.
func (w *world) request(client *sim.Proc, srvName, method, path string, body []byte, contentType, logOf string) (resp response, ok bool) {
	if resp, ok := w.fromGateway(method, path, contentType, logOf); ok {
		return resp, true
	}
	c := w.newCall()
	c.client, c.method, c.path, c.body, c.contentType, c.logOf = client, method, path, body, contentType, logOf
	c.sent = w.s.Now()
	w.s.Spawn(srvName, c.serve)
	client.Wait(w.cfg.ClientTimeout.D())
	c.waiting = false
	if !c.done {
		return response{}, false // the server process frees c when it is done
	}
	resp = c.resp
	resp.call = c
	return resp, true
}

// release hands back an answer's call, body and all, once its client has
// read it.
func (w *world) release(resp response) {
	if resp.call != nil {
		w.freeCall(resp.call)
	}
}

// serverCall is one request in flight: what the client asked, the server
// process's actor, the request it receives, the recorder it answers into,
// and the answer handed back. A world keeps its finished calls for its
// later requests (newCall, freeCall): a run makes a hundred requests, a few
// at a time, and each would otherwise allocate all of this afresh. Nothing
// of one request survives into the next: run rebuilds every part, and the
// answer's body buffer is written from its start.
type serverCall struct {
	w      *world
	client *sim.Proc
	serve  func(*sim.Proc) // c.run, bound once (a method value is an allocation)

	method, path, contentType, logOf string
	body                             []byte
	sent                             time.Time // when the gateway sent it on

	act  actor
	in   inbound
	rec  recorder
	resp response
	// waiting: the client still waits for the answer; done: the server
	// process has answered. Whichever of the two comes last frees the call.
	waiting, done bool
}

// newCall is a call ready for a request: a freed one, or a new one.
func (w *world) newCall() *serverCall {
	var c *serverCall
	if n := len(w.calls); n > 0 {
		c, w.calls = w.calls[n-1], w.calls[:n-1]
	} else {
		c = &serverCall{w: w}
		c.serve = c.run
	}
	c.waiting, c.done = true, false
	return c
}

// freeCall keeps c for a later request, dropping what it points to but
// the answer's body buffer.
func (w *world) freeCall(c *serverCall) {
	c.client, c.body, c.resp = nil, nil, response{}
	w.calls = append(w.calls, c)
}

// run is the server process: the request through the real handler.
func (c *serverCall) run(p *sim.Proc) {
	w := c.w
	c.act = actor{w: w, p: p, server: true}
	p.Local = &c.act
	req := c.in.build(w.ctx, c.method, c.path, c.body, c.contentType)
	if w.rawBody {
		req = req.WithContext(context.WithValue(w.ctx, rawBodyKey{}, bodyDigest(c.body)))
	}
	c.rec.reset()
	w.handler.ServeHTTP(&c.rec, req)
	c.resp = response{code: c.rec.code, replay: c.rec.header.Get("X-Idempotent-Replay") == "true", body: c.rec.body, ret: w.tick(),
		storeFailed: c.act.storeFailed}
	if c.logOf != "" {
		c.resp.retLog = w.logLen(c.logOf)
	}
	if c.method == http.MethodPost {
		c.resp.retSeq = w.store.LastSeq()
	}
	w.toGateway(c)
	c.done = true
	if c.waiting {
		c.client.Wake()
	} else {
		w.freeCall(c) // the client gave up on the answer
	}
}

// serverRequest is the request a server receives, built directly as
// net/http's server would hand it over (httptest.NewRequest parses a whole
// HTTP request from text, a tenth of the run in profiles; NewRequest adds a
// separate closer and a GetBody closure no handler here uses). The URL
// is parsed as the server parses a request line, so escaped ids keep their
// RawPath.
func serverRequest(ctx context.Context, method, path string, body []byte, contentType string) *http.Request {
	return new(inbound).build(ctx, method, path, body, contentType)
}

// inbound is a request and what it points to (its URL, body reader and
// header), held together so that building one allocates once, or not at
// all when it is built again in the same place.
type inbound struct {
	req    http.Request
	url    url.URL
	body   bodyReader
	header http.Header
	ctype  [1]string // the Content-Type header's one value
}

// build makes in the request a server receives (see serverRequest),
// replacing whatever an earlier request, or a handler that rewrote it
// (the intake mutants do), left there.
func (in *inbound) build(ctx context.Context, method, path string, body []byte, contentType string) *http.Request {
	in.url = requestURL(method, path)
	if in.header == nil {
		in.header = make(http.Header, 1)
	} else {
		clear(in.header)
	}
	in.req = http.Request{Method: method, URL: &in.url, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: in.header, Body: http.NoBody, RequestURI: path}
	if len(body) > 0 {
		in.body.Reset(body)
		in.req.Body, in.req.ContentLength = &in.body, int64(len(body))
	}
	if contentType != "" {
		in.ctype[0] = contentType
		in.header["Content-Type"] = in.ctype[:1:1]
	}
	if ctx != context.Background() {
		return in.req.WithContext(ctx)
	}
	return &in.req
}

// requestURL is path parsed as a server parses its request line
// (url.ParseRequestURI). A path of unreserved characters and slashes only,
// which is every path the world sends but a hostile client's escaped id,
// parses to itself with nothing else set; TestRequestURLMatchesParse holds
// that shortcut to the parser.
func requestURL(method, path string) url.URL {
	if plainPath(path) {
		return url.URL{Path: path}
	}
	u, err := url.ParseRequestURI(path)
	if err != nil {
		panic(fmt.Sprintf("building %s %s: %v", method, path, err))
	}
	return *u
}

// plainPath reports whether path is a slash followed by nothing but
// unreserved characters (RFC 3986: letters, digits, "-._~") and slashes:
// nothing that a URL parser unescapes, splits off or refuses.
func plainPath(path string) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	for i := 1; i < len(path); i++ {
		switch c := path[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~', c == '/':
		default:
			return false
		}
	}
	return true
}

// bodyReader is a request body: the bytes and a Close that does nothing, in
// one allocation.
type bodyReader struct{ bytes.Reader }

func (*bodyReader) Close() error { return nil }

// recorder is the http.ResponseWriter a server process answers into: the
// status, the headers as the handler left them, and the body, which is all
// the world reads. httptest.ResponseRecorder keeps a
// second copy of the headers and a result to build, which the world never
// asks for.
type recorder struct {
	header http.Header
	code   int // 200 until WriteHeader says otherwise
	wrote  bool
	body   []byte
}

// reset readies r for another answer, keeping its header map and body
// buffer, emptied: the last answer's client is done with them.
func (r *recorder) reset() {
	clear(r.header)
	r.code, r.wrote, r.body = http.StatusOK, false, r.body[:0]
}

func (r *recorder) Header() http.Header {
	if r.header == nil {
		r.header = http.Header{}
	}
	return r.header
}

// WriteHeader keeps the first status, as net/http does.
func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
}

// Write sends the body; without a WriteHeader first, the status is 200
// (the recorder's starting code), as net/http has it.
func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	r.body = append(r.body, b...)
	return len(b), nil
}

// newHandler builds the one HTTP handler of the run. Its store routes each
// call to the view of the server process making it (several requests are in
// flight at once, each in its own process); an intake mutant breaks it here.
//
// With pooled set, the intake handler comes from a pool kept between runs
// and goes back with releaseHandler: building one registers its routes in
// a new ServeMux (pattern parsing was 3% of a one-withdrawal world's run in
// an exhaustive search), and between requests a handler holds nothing but
// its Service, whose Store each run sets to its own.
func (w *world) newHandler(pooled bool) http.Handler {
	var st sluice.Store = serverStore{w}
	m, _ := mutant(w.cfg.Mutant)
	if m.intakeStore != nil {
		st = m.intakeStore(w, st)
	}
	var h http.Handler
	var ph *pooledHandler
	if pooled {
		ph, _ = handlers.Get().(*pooledHandler)
	}
	if ph != nil {
		ph.svc.Store = st
		w.pooled, h = ph, ph.h
	} else {
		svc := &intake.Service{Store: st}
		h = intake.NewHandler(svc)
		if pooled {
			w.pooled = &pooledHandler{svc: svc, h: h}
		}
	}
	if m.handler != nil {
		h = m.handler(h)
	}
	return h
}

// releaseHandler gives the run's pooled handlers back (intake's and the
// looks'), their services cleared, once no request can reach them any more.
func (w *world) releaseHandler() {
	if w.pooled != nil {
		w.pooled.svc.Store = nil
		handlers.Put(w.pooled)
		w.pooled = nil
	}
	for _, lh := range w.looks {
		lh.svc = operator.Service{}
		lookHandlers.Put(lh)
	}
	w.looks = nil
}

// handlers holds intake handlers between runs (newHandler).
var handlers sync.Pool

type pooledHandler struct {
	svc *intake.Service
	h   http.Handler
}

// serverStore is the store seen by intake: each call goes through the
// calling server process's own view, with its yield points.
type serverStore struct{ w *world }

func (s serverStore) view() storeView { return storeView{s.w.s.Current().Local.(*actor)} }

func (s serverStore) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	return s.view().Insert(ctx, op)
}
func (s serverStore) Get(ctx context.Context, id sluice.OperationID) (sluice.Operation, error) {
	return s.view().Get(ctx, id)
}
func (s serverStore) Claim(ctx context.Context, worker sluice.WorkerID, limit int) ([]sluice.Operation, error) {
	return s.view().Claim(ctx, worker, limit)
}
func (s serverStore) CAS(ctx context.Context, c sluice.Change) (sluice.Operation, error) {
	return s.view().CAS(ctx, c)
}
func (s serverStore) Release(ctx context.Context, id sluice.OperationID, token sluice.FencingToken, after time.Duration) error {
	return s.view().Release(ctx, id, token, after)
}
func (s serverStore) Events(ctx context.Context, id sluice.OperationID) ([]sluice.Event, error) {
	return s.view().Events(ctx, id)
}
func (s serverStore) Park(ctx context.Context, p sluice.Park) (sluice.Operation, error) {
	return s.view().Park(ctx, p)
}
func (s serverStore) Resolve(ctx context.Context, r sluice.Resolution) (sluice.Operation, error) {
	return s.view().Resolve(ctx, r)
}
func (s serverStore) List(ctx context.Context, f sluice.ListFilter) ([]sluice.Operation, error) {
	return s.view().List(ctx, f)
}
func (s serverStore) Census(ctx context.Context) (sluice.Census, error) {
	return s.view().Census(ctx)
}
func (s serverStore) Credit(ctx context.Context, c sluice.Credit) (sluice.Account, bool, error) {
	return s.view().Credit(ctx, c)
}
func (s serverStore) Account(ctx context.Context, c sluice.CustomerID) (sluice.Account, error) {
	return s.view().Account(ctx, c)
}
func (s serverStore) Hold(ctx context.Context, id sluice.OperationID) (sluice.Hold, error) {
	return s.view().Hold(ctx, id)
}
