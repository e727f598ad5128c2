package scenarios

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/intake"
)

// response is what a server process handed back.
type response struct {
	code   int
	replay bool
	body   []byte
	ret    int64
	retLog int // the events of the operation asked for at ret (logOf)
	// storeFailed: the world failed a store call of this request.
	storeFailed bool
}

// request runs one HTTP request through the real handler in a server
// process of its own, so that the client can give up on it while it goes
// on. ok is false if no answer came within ClientTimeout. With logOf set,
// the answer also counts that operation's events at the moment of return.
func (w *world) request(client *sim.Proc, name, method, path string, body []byte, contentType, logOf string) (resp response, ok bool) {
	waiting, done := true, false
	w.s.Spawn("srv-"+name, func(p *sim.Proc) {
		act := &actor{w: w, p: p, server: true}
		p.Local = act
		req := serverRequest(w.ctx, method, path, body, contentType)
		if w.rawBody {
			req = req.WithContext(context.WithValue(w.ctx, rawBodyKey{}, bodyDigest(body)))
		}
		rec := recorder{code: http.StatusOK}
		w.handler.ServeHTTP(&rec, req)
		resp = response{code: rec.code, replay: rec.header.Get("X-Idempotent-Replay") == "true", body: rec.body, ret: w.tick(),
			storeFailed: act.storeFailed}
		if logOf != "" {
			resp.retLog = w.logLen(logOf)
		}
		done = true
		if waiting {
			client.Wake()
		}
	})
	client.Wait(w.cfg.ClientTimeout.D())
	waiting = false
	return resp, done
}

// serverRequest is the request a server receives, built directly as
// net/http's server would hand it over (httptest.NewRequest parses a whole
// HTTP request from text, a tenth of the run in profiles; NewRequest adds a
// separate closer and a GetBody closure no handler here uses). The URL
// is parsed as the server parses a request line, so escaped ids keep their
// RawPath.
func serverRequest(ctx context.Context, method, path string, body []byte, contentType string) *http.Request {
	u, err := url.ParseRequestURI(path)
	if err != nil {
		panic(fmt.Sprintf("building %s %s: %v", method, path, err))
	}
	req := &http.Request{Method: method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: http.NoBody, RequestURI: path}
	if len(body) > 0 {
		req.Body, req.ContentLength = &bodyReader{Reader: *bytes.NewReader(body)}, int64(len(body))
	}
	if contentType != "" {
		req.Header["Content-Type"] = []string{contentType}
	}
	if ctx != context.Background() {
		req = req.WithContext(ctx)
	}
	return req
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
func (w *world) newHandler() http.Handler {
	var st sluice.Store = serverStore{w}
	m, _ := mutant(w.cfg.Mutant)
	if m.intakeStore != nil {
		st = m.intakeStore(w, st)
	}
	h := intake.NewHandler(&intake.Service{Store: st})
	if m.handler != nil {
		h = m.handler(h)
	}
	return h
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
