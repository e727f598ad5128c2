package scenarios

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"sluicesim/sluice"
	"sluicesim/sluice/metrics"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/nodehttp"
)

// wireTimeout is the node client's call timeout in a wire world. The client
// arms it on the real clock (context.WithTimeout); a call here never leaves
// the process and never waits in virtual time inside the transport (the
// world's slow calls sleep at the yield points around it), so the bound is
// set far past anything a run could take, and the real clock never decides
// an answer.
const wireTimeout = 24 * time.Hour

// wireBase is the node's URL as a wire world's clients name it; the
// transport never resolves it.
const wireBase = "http://node.sim"

// overWire returns the node as production's workers and operator reach it:
// the metrics wrapper (cmd/sluice wraps every node in it) around the HTTP
// client of package nodehttp, whose requests go through an in-process
// transport to nodehttp's real server in front of n, and the world counts
// every call the wrapper was handed (wire_metrics.go). Every answer is then
// encoded by the server and decoded by the client as it would be on a
// socket, so a defect in either half (how logs, receipts, blocks or errors
// cross the wire) reaches the pipeline as it would in production. The
// server serves caller only: a request that does not name it (the client's
// X-Node-Caller) is answered 502.
//
// The step record a's wait and review checks read (the step's lookup,
// solid block and head block) is taken here, on the server's side, as the
// node answered: the client's reading of it is what the checks judge.
func (w *world) overWire(a *actor, caller string, n tron.Node) tron.Node {
	served := servedNode{a: a, inner: n}
	srv := &nodehttp.Server{Node: func(named string) tron.Node {
		if named != caller {
			return unknownCaller{named}
		}
		return served
	}}
	var h http.Handler = &wireContract{w: w, next: srv.Handler()}
	if w.cfg.MiddleboxP > 0 || w.cfg.ThinAnswerP > 0 || w.cfg.LostRouteP > 0 || w.cfg.NoUpstreamP > 0 {
		h = &middlebox{w: w, next: h}
	}
	if w.wireHandler != nil {
		h = w.wireHandler(h)
	}
	hc := &http.Client{
		Transport:     &handlerTransport{h: h},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	c, err := nodehttp.NewClient(wireBase, nodehttp.Options{Caller: caller, Timeout: wireTimeout, HTTPClient: hc})
	if err != nil {
		panic(fmt.Sprintf("wire: %v", err)) // a constant URL
	}
	w.meterOnce()
	return tallied{w: w, inner: w.meter.Node(c)}
}

// served is what the node behind a wire's server did with the call under
// way: whether the server reached it, and its error. A call crosses the
// wire in one step (no yield point between the caller and the node), so
// one record serves the world.
type served struct {
	reached bool
	err     error
	// boxed: the middlebox rewrote the node's answer on its way back.
	boxed bool
	// boxFailed is the status the middlebox answered in the node's place
	// with a failure of its own (a lost route's 404, a 503 for want of a
	// backend); 0 when it did not.
	boxFailed int
	// res, info, block: the node's answer, which the wire's contract
	// check holds the server's body to (wire_contract.go).
	res   tron.BroadcastResult
	info  tron.TxInfo
	block tron.Block
}

// failureClass is how the README's metrics name a failed node call: a
// timeout, a cancelled call, or any other error ("" for none).
func failureClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, tron.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	default:
		return "error"
	}
}

// crossed checks that a node call's failure crossed the wire as what it
// was: when the node behind the server failed the call and nothing
// rewrote the answer on its way, the caller must be handed a failure of
// the same class, the server's status carrying it (a node's timeout is the
// server's 504, the client's tron.ErrTimeout). A timeout that arrives as a
// plain error, or an error as a timeout, is counted under the wrong label
// by the metrics wrapper: the dashboard shows a slow node as a broken one.
// The classes are the world's reading of what the node did (servedNode),
// not of what the client decoded.
func (w *world) crossed(call string, err error) {
	sv := w.served
	w.served = served{}
	if sv.boxFailed != 0 {
		// The node was never asked: a proxy's own failure is neither the
		// node's timeout nor a cancelled call (independent bug 219 read
		// every status from 502 up as a timeout).
		if got := failureClass(err); got != "error" {
			w.metricsBreak("on a "+call+" call", fmt.Sprintf("the proxy in front of the node answered %d itself, and the metrics wrapper was handed %q (%v), not an error", sv.boxFailed, got, err))
		}
		return
	}
	if !sv.reached || sv.boxed || sv.err == nil {
		return
	}
	if node, got := failureClass(sv.err), failureClass(err); node != got {
		w.metricsBreak("on a "+call+" call", fmt.Sprintf("the node behind the server failed it with a %s (%v), and the metrics wrapper was handed %q (%v): the failure changed its class crossing the wire", node, sv.err, got, err))
	}
}

// meterOnce builds the world's metrics, which the processes of a wire world
// share as one service's instruments do, the first time one needs them.
func (w *world) meterOnce() {
	if w.meter == nil {
		w.meter = metrics.New(censusStore{Store: w.store, w: w})
	}
}

// censusStore is the store as the metrics wrapper sees it: before the heal
// point a scrape's census now and then fails, as a read fails under load
// (Config.CensusFaultP); the world notes it for the scrape's check
// (checkMetrics). The metrics read nothing else from the store.
type censusStore struct {
	sluice.Store
	w *world
}

func (c censusStore) Census(ctx context.Context) (sluice.Census, error) {
	w := c.w
	if w.faulty() && w.s.Chance("census-fault", w.cfg.CensusFaultP) {
		w.tally["census-fault"]++
		w.censusFailed = true
		return sluice.Census{}, errStoreDown
	}
	return c.Store.Census(ctx)
}

// handlerTransport is an http.RoundTripper that serves each request with h,
// in the caller's process and step: no goroutine, no socket, no clock. The
// request is handed over as a server receives it (RequestURI and Host set),
// and the answer comes back as a client reads one.
type handlerTransport struct {
	h   http.Handler
	rec recorder // one call at a time: a process makes its calls in turn
}

func (t *handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		// As a real transport: a cancelled request is not sent.
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	in := *req // RoundTrip must not modify req
	in.RequestURI, in.Host, in.RemoteAddr = req.URL.RequestURI(), req.URL.Host, "sim"
	if in.Body == nil {
		in.Body = http.NoBody
	}
	t.rec.reset()
	t.h.ServeHTTP(&t.rec, &in)
	if req.Body != nil {
		req.Body.Close() // as a transport must, whatever the handler read
	}
	// The client reads the body whole before its next call; a copy keeps
	// the answer apart from the recorder all the same.
	body := bytes.Clone(t.rec.body)
	return &http.Response{
		Status:     fmt.Sprintf("%d %s", t.rec.code, http.StatusText(t.rec.code)),
		StatusCode: t.rec.code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: t.rec.header.Clone(), Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: req,
	}, nil
}

// unknownCaller is what the wire's server serves to a request that names
// another caller than its client's: every call fails.
type unknownCaller struct{ name string }

var errUnknownCaller = errors.New("wire: request names another caller")

func (u unknownCaller) Broadcast(context.Context, tron.Transaction) (tron.BroadcastResult, error) {
	return tron.BroadcastResult{}, fmt.Errorf("%w: %q", errUnknownCaller, u.name)
}

func (u unknownCaller) Lookup(context.Context, tron.Txid) (tron.TxInfo, error) {
	return tron.TxInfo{}, fmt.Errorf("%w: %q", errUnknownCaller, u.name)
}

func (u unknownCaller) HeadBlock(context.Context) (tron.Block, error) {
	return tron.Block{}, fmt.Errorf("%w: %q", errUnknownCaller, u.name)
}

func (u unknownCaller) SolidBlock(context.Context) (tron.Block, error) {
	return tron.Block{}, fmt.Errorf("%w: %q", errUnknownCaller, u.name)
}

// servedNode records, for the wire's caller a, what the node answered its
// step (wrap.go's node does so in a world without a wire).
type servedNode struct {
	a     *actor
	inner tron.Node
}

func (s servedNode) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	res, err := s.inner.Broadcast(ctx, tx)
	s.a.w.served = served{reached: true, err: err, res: res}
	return res, err
}

func (s servedNode) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	info, err := s.inner.Lookup(ctx, id)
	s.a.w.served = served{reached: true, err: err, info: info}
	if err == nil {
		s.a.stepLookup, s.a.stepLookupOK = info, true
		s.a.lookupsServed++
	}
	return info, err
}

func (s servedNode) HeadBlock(ctx context.Context) (tron.Block, error) {
	b, err := s.inner.HeadBlock(ctx)
	s.a.w.served = served{reached: true, err: err, block: b}
	if err == nil {
		s.a.stepHead, s.a.stepHeadOK = b, true
	}
	return b, err
}

func (s servedNode) SolidBlock(ctx context.Context) (tron.Block, error) {
	b, err := s.inner.SolidBlock(ctx)
	s.a.w.served = served{reached: true, err: err, block: b}
	if err == nil {
		s.a.stepSolid, s.a.stepSolidOK = b, true
	}
	return b, err
}
