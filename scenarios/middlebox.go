package scenarios

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/nodehttp"
)

// middlebox is a proxy in front of a wire world's node (a load balancer, a
// caching gateway): now and then, before the heal point, it answers a
// lookup itself, with an answer that says nothing true about the txid
// asked. Production reaches its nodes through such boxes. Each answer is a
// 200 a careless client could take:
//   - canned: {"status":"unknown"}, naming no txid (a gateway's default
//     when its upstream failed);
//   - cached: the last answer the box passed on, about another txid;
//   - stripped: that cached answer with its txid field dropped (a cache
//     that keeps answers without their key, and mixes two keys up);
//   - cut: the node's own answer, its body cut in half.
//
// The client must refuse all four (an error: the pipeline waits or parks)
// and never read "unknown" from them: a proof of death built on a canned
// unknown rebuilds a transaction that may be in a block. The model judges
// every rebuild against the chain, so a client that takes one is caught
// by what it does, not by this box.
type middlebox struct {
	w    *world
	next http.Handler
	rec  recorder // the node's answer; one call at a time, as the transport's
}

// middleboxKinds are the box's answers, as the tape chooses.
var middleboxKinds = [...]string{"canned", "cached", "stripped", "cut"}

func (m *middlebox) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w := m.w
	switch r.URL.Path {
	case nodehttp.PathLookup, nodehttp.PathHead, nodehttp.PathSolid:
		if w.faulty() && w.s.Chance("no-upstream", w.cfg.NoUpstreamP) {
			w.tally["wire-no-upstream"]++
			m.fail(rw, http.StatusServiceUnavailable, "no healthy upstream")
			return
		}
	}
	switch r.URL.Path {
	case nodehttp.PathLookup:
	case nodehttp.PathHead, nodehttp.PathSolid:
		if w.faulty() && w.s.Chance("thin-answer", w.cfg.ThinAnswerP) {
			m.thin(rw, r, blockMusts)
			return
		}
		m.next.ServeHTTP(rw, r)
		return
	default:
		m.next.ServeHTTP(rw, r)
		return
	}
	if w.faulty() && w.s.Chance("lost-route", w.cfg.LostRouteP) {
		// A route the box no longer has: its own page, as Go's mux and
		// most proxies answer one. Nothing reached the node.
		w.tally["wire-lost-route"]++
		m.fail(rw, http.StatusNotFound, "404 page not found\n")
		return
	}
	asked, ok := askedTxid(r)
	if !w.faulty() || !w.s.Chance("middlebox", w.cfg.MiddleboxP) {
		if w.faulty() && w.s.Chance("thin-answer", w.cfg.ThinAnswerP) {
			m.thin(rw, r, lookupMusts)
			return
		}
		m.pass(rw, r, asked, ok)
		return
	}
	kind := middleboxKinds[w.s.Choose("middlebox-kind", len(middleboxKinds))]
	if (kind == "cached" || kind == "stripped") && (w.boxCache.body == nil || w.boxCache.txid == asked) {
		kind = "canned" // nothing cached about another txid
	}
	w.tally["wire-middlebox-"+kind]++
	switch kind {
	case "canned":
		answer(rw, http.StatusOK, []byte(`{"status":"unknown"}`))
	case "cached":
		answer(rw, http.StatusOK, w.boxCache.body)
	case "stripped":
		var ans map[string]json.RawMessage
		if json.Unmarshal(w.boxCache.body, &ans) != nil {
			panic("scenarios: the middlebox cached an answer that is not a JSON object: " + string(w.boxCache.body))
		}
		delete(ans, "txid")
		b, _ := json.Marshal(ans) // sorted keys: the same bytes every run
		answer(rw, http.StatusOK, b)
	case "cut":
		m.rec.reset()
		m.next.ServeHTTP(&m.rec, r)
		w.served.boxed = true
		answer(rw, m.rec.code, m.rec.body[:len(m.rec.body)/2])
	}
}

// fail answers the box's own failure, a plain-text page as proxies send
// one, in the node's place: the world notes it for the call's crossing
// (world.crossed), since the node behind was never asked.
func (m *middlebox) fail(rw http.ResponseWriter, code int, page string) {
	m.w.served = served{boxFailed: code}
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.WriteHeader(code)
	rw.Write([]byte(page))
}

// askedTxid reads the txid a lookup asks about (ok false for a malformed
// request, which the node's server refuses), leaving r's body to be read
// again.
func askedTxid(r *http.Request) (id tron.Txid, ok bool) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var asked struct {
		Txid tron.Txid `json:"txid"`
	}
	ok = json.Unmarshal(body, &asked) == nil
	return asked.Txid, ok
}

// pass serves a lookup from the node and keeps its answer for "cached".
func (m *middlebox) pass(rw http.ResponseWriter, r *http.Request, asked tron.Txid, ok bool) {
	m.rec.reset()
	m.next.ServeHTTP(&m.rec, r)
	if m.rec.code == http.StatusOK && ok {
		c := &m.w.boxCache
		c.txid, c.body = asked, append(c.body[:0], m.rec.body...)
	}
	for k, v := range m.rec.header {
		rw.Header()[k] = v
	}
	answer(rw, m.rec.code, m.rec.body)
}

// The fields of the node's answers that nodehttp's client must refuse to
// do without (Config.ThinAnswerP), as the wire names them: a lookup's are
// present only when the txid is included.
var (
	lookupMusts = []string{"block_number", "block_time", "receipt"}
	blockMusts  = []string{"number", "block_id", "timestamp"}
)

// thin serves r from the node and drops one of musts (the tape chooses
// among those the answer has) from the node's answer: a 200 the client
// must refuse. An answer with none of them (a lookup of a txid not
// included, a failure) passes as it was.
func (m *middlebox) thin(rw http.ResponseWriter, r *http.Request, musts []string) {
	m.rec.reset()
	m.next.ServeHTTP(&m.rec, r)
	var ans map[string]json.RawMessage
	var has []string
	if m.rec.code == http.StatusOK && json.Unmarshal(m.rec.body, &ans) == nil {
		for _, f := range musts {
			if _, ok := ans[f]; ok {
				has = append(has, f)
			}
		}
	}
	if len(has) == 0 {
		for k, v := range m.rec.header {
			rw.Header()[k] = v
		}
		answer(rw, m.rec.code, m.rec.body)
		return
	}
	drop := has[m.w.s.Choose("thin-field", len(has))]
	m.w.tally["wire-thin-"+drop]++
	m.w.served.boxed = true
	delete(ans, drop)
	b, _ := json.Marshal(ans) // sorted keys: the same bytes every run
	answer(rw, http.StatusOK, b)
}

// answer writes a JSON answer.
func answer(rw http.ResponseWriter, code int, body []byte) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(code)
	rw.Write(body)
}
