package scenarios

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// gateway is the shared HTTP cache every world puts between its clients and
// intake, as a standards-following gateway or CDN in front of the API would
// behave (RFC 9111, the rules for a shared cache). Intake answers
// Cache-Control: no-store, so the gateway stores nothing and every request
// reaches the handler exactly as without it: it asks the tape nothing,
// writes no trace line and allocates nothing until it stores an answer.
// It is here for the day intake's answers become cacheable (independent
// bug 53): a client is then served a stored answer without the handler,
// and the world records the read as the client saw it, at the instant it
// was served, so that linearizable-intake judges the stale state or the
// stale 404 against the log at that instant.
//
// What it does, and what it leaves out, with the RFC's word for each:
//
//   - It stores only answers to GET (the clients send no HEAD) whose status
//     is final and one it understands (not 206 or 304: it makes no range or
//     conditional requests), that carry explicit freshness (s-maxage,
//     max-age or Expires; §4.2.1), and that nothing forbids storing:
//     no-store in the request or the answer (unless must-understand with a
//     status it understands, §5.2.2.3), private (a shared cache, §5.2.2.7),
//     an Authorization-bearing request without public, s-maxage or
//     must-revalidate (§3.5), Vary: * (never matches, §4.1).
//   - No heuristic freshness (§4.2.2): intake's answers carry no
//     Last-Modified, and a cache MAY but need not assign one. With no
//     explicit lifetime an answer is never fresh, so public alone stores
//     nothing. (net/http's own answers that intake passes through, a 404
//     for an unknown path or a redirect, carry no Cache-Control at all; a
//     gateway with a default TTL would cache those.)
//   - It never revalidates: an answer with no-cache (§5.2.2.4), or a
//     request with no-cache (§5.2.1.4), is not served from the cache, and a
//     stale entry is never served (no stale-while-revalidate, no
//     stale-if-error).
//   - Its key is the method and the target URI as the client sent it (one
//     origin: the path and query), with no normalization of equivalent
//     spellings; it keeps one answer per key, the newest, and serves it only
//     to a request whose header fields named by the answer's Vary match the
//     ones the stored answer was requested with (§4.1).
//   - Age and freshness are in the simulation's virtual time (§4.2.3): the
//     request and response times are the virtual instants the gateway sent
//     the request on and received the answer, the Date an answer lacks is
//     the time it was received (RFC 9110 §6.6.1), and a hit is fresh while
//     its current age is below its freshness lifetime.
//   - A non-error answer (below 400) to an unsafe request (anything but GET,
//     HEAD, OPTIONS, TRACE) invalidates the stored answer of its target URI
//     (§4.4, the MUST). It does not invalidate the URIs in Location or
//     Content-Location, which §4.4 only allows: a POST that creates a
//     withdrawal does not evict a stored 404 of its GET URI.
//
// It is deterministic: its map is only looked up, stored into and deleted
// from, never ranged over; it reads no real clock, starts nothing and
// draws nothing. It names no footprint key of its own (Sim.Touch): every
// lookup (fromGateway) runs in the step that ticks the read's call, and
// every store or invalidation (toGateway) in the step that ticks the
// answer's return, and w.tick writes "lclock", so exhaustive search
// already holds any two steps that touch the cache to their order. A key
// of its own would add nothing, and could have changed the footprints,
// and so the search's counts, of honest runs.
type gateway struct {
	entries map[string]*cachedAnswer // by cacheKey; nil until the first store
}

// cachedAnswer is one stored answer and what serving it again needs.
type cachedAnswer struct {
	code   int
	replay bool   // X-Idempotent-Replay: true
	body   []byte // a copy: the call's buffer serves the next request
	// storeFailed: the world failed a store call of the request that
	// produced this answer; a 5xx served again is still that failure's.
	storeFailed bool
	// vary is the answer's Vary field names (canonical) and the values the
	// request that produced it had for them.
	vary []varied
	// requestTime and responseTime are the virtual instants the gateway
	// sent the request on and received the answer (§4.2.3).
	requestTime, responseTime time.Time
	initialAge                time.Duration // corrected_initial_age
	lifetime                  time.Duration // freshness_lifetime
}

type varied struct{ name, value string }

// cacheKey is the primary cache key: the method and the target URI.
func cacheKey(method, target string) string { return method + " " + target }

// lookup returns the stored answer that may answer a request now without
// reaching the handler, or nil. header is the request's header fields.
func (g *gateway) lookup(method, target string, header http.Header, now time.Time) *cachedAnswer {
	if len(g.entries) == 0 || method != http.MethodGet {
		return nil
	}
	e := g.entries[cacheKey(method, target)]
	if e == nil {
		return nil
	}
	req := parseCacheControl(header["Cache-Control"])
	if req.noCache || (len(header["Cache-Control"]) == 0 && pragmaNoCache(header)) {
		return nil // the client asks for a validated answer; the gateway does not validate
	}
	for _, v := range e.vary {
		if strings.Join(header[v.name], ", ") != v.value {
			return nil
		}
	}
	if e.age(now) >= e.lifetime {
		return nil // stale: never served
	}
	return e
}

// age is the answer's current_age at now (§4.2.3).
func (e *cachedAnswer) age(now time.Time) time.Duration {
	return e.initialAge + now.Sub(e.responseTime)
}

// receive is the gateway handed an answer from the handler: it stores it if
// RFC 9111 lets a shared cache, and an unsafe request's non-error answer
// invalidates what is stored for its target URI. requestTime is when the
// gateway sent the request on, now when the answer came back.
func (g *gateway) receive(method, target string, reqHeader http.Header, code int, respHeader http.Header, body []byte, storeFailed bool, requestTime, now time.Time) {
	if !safeMethod(method) {
		if code < 400 && len(g.entries) > 0 {
			delete(g.entries, cacheKey(http.MethodGet, target))
		}
		return
	}
	if method != http.MethodGet {
		return // HEAD, OPTIONS, TRACE: the clients send none, and they are not stored
	}
	e, ok := storable(reqHeader, code, respHeader, requestTime, now)
	if !ok {
		return
	}
	e.code, e.replay, e.body, e.storeFailed = code, respHeader.Get("X-Idempotent-Replay") == "true", append([]byte(nil), body...), storeFailed
	if g.entries == nil {
		g.entries = map[string]*cachedAnswer{}
	}
	g.entries[cacheKey(method, target)] = e
}

// safeMethod reports whether a method is safe (RFC 9110 §9.2.1); any other,
// one unknown included, invalidates (§4.4).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions || m == http.MethodTrace
}

// storable decides whether a shared cache may store a GET's answer (§3) and
// how long it stays fresh, as an entry without its answer filled in.
func storable(reqHeader http.Header, code int, h http.Header, requestTime, now time.Time) (*cachedAnswer, bool) {
	if !understoodStatus(code) {
		return nil, false
	}
	cc := parseCacheControl(h["Cache-Control"])
	req := parseCacheControl(reqHeader["Cache-Control"])
	if req.noStore {
		return nil, false
	}
	// must-understand: a cache that understands the status ignores
	// no-store (§5.2.2.3); every status stored here is understood.
	if cc.noStore && !cc.mustUnderstand {
		return nil, false
	}
	if cc.private || cc.noCache {
		// private: a shared cache must not store it (§5.2.2.7; a field-named
		// private is taken whole). no-cache: it must be validated before
		// every reuse, which this gateway never does, so storing it
		// serves no one (§5.2.2.4).
		return nil, false
	}
	if len(reqHeader["Authorization"]) > 0 && !cc.public && !cc.sMaxAge.set && !cc.mustRevalidate {
		return nil, false // §3.5
	}
	var vary []varied
	for _, v := range h["Vary"] {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			if name == "*" {
				return nil, false // never matches (§4.1)
			}
			name = http.CanonicalHeaderKey(name)
			vary = append(vary, varied{name, strings.Join(reqHeader[name], ", ")})
		}
	}
	// Date, if the answer has none, is when the gateway received it.
	date := now
	if d, err := http.ParseTime(h.Get("Date")); err == nil && len(h["Date"]) == 1 {
		date = d
	}
	var lifetime time.Duration
	switch {
	case cc.sMaxAge.set: // a shared cache's own (§5.2.2.10)
		if cc.sMaxAge.bad {
			return nil, false
		}
		lifetime = cc.sMaxAge.d
	case cc.maxAge.set:
		if cc.maxAge.bad {
			return nil, false
		}
		lifetime = cc.maxAge.d
	case len(h["Expires"]) > 0:
		// An invalid Expires, "0" among them, is in the past (§5.3); so is
		// more than one.
		exp, err := http.ParseTime(h.Get("Expires"))
		if err != nil || len(h["Expires"]) != 1 {
			return nil, false
		}
		lifetime = exp.Sub(date)
	default:
		return nil, false // no explicit freshness, and no heuristic one (above)
	}
	// The answer's age on arrival (§4.2.3): the handler is in process, so
	// the delay is the virtual time the request took there.
	apparent := max(0, now.Sub(date))
	ageValue := time.Duration(0)
	if a := h["Age"]; len(a) > 0 {
		if d, ok := deltaSeconds(a[0]); ok {
			ageValue = d
		}
	}
	initial := max(apparent, ageValue+now.Sub(requestTime))
	if initial >= lifetime {
		return nil, false // stale on arrival: it could never be served
	}
	return &cachedAnswer{vary: vary, requestTime: requestTime, responseTime: now, initialAge: initial, lifetime: lifetime}, true
}

// understoodStatus: a final status the gateway knows the semantics of and
// can serve whole. 206 (a range) and 304 (a validation) are not stored: the
// gateway makes neither kind of request.
func understoodStatus(code int) bool {
	return code >= 200 && code != http.StatusPartialContent && code != http.StatusNotModified && http.StatusText(code) != ""
}

// pragmaNoCache reports a request's Pragma: no-cache, which counts as
// Cache-Control: no-cache only when the request has no Cache-Control
// (RFC 9111 §5.4).
func pragmaNoCache(h http.Header) bool {
	for _, v := range h["Pragma"] {
		for d := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(d), "no-cache") {
				return true
			}
		}
	}
	return false
}

// cacheControl is the directives of Cache-Control field lines that matter
// here. Directive names are case-insensitive (§5.2).
type cacheControl struct {
	noStore, noCache, private, public, mustRevalidate, mustUnderstand bool
	maxAge, sMaxAge                                                   delta
}

// delta is a delta-seconds directive: set when present; bad when its value
// is missing or not delta-seconds, or when it appears twice with different
// values, either of which makes the answer stale (§1.2.2, §4.2.1).
type delta struct {
	set, bad bool
	d        time.Duration
}

func (x *delta) take(value string, hasValue bool) {
	d, ok := deltaSeconds(value)
	switch {
	case !hasValue || !ok:
		x.bad = true
	case x.set && x.d != d:
		x.bad = true
	}
	x.set, x.d = true, d
}

// parseCacheControl reads field lines of Cache-Control: a comma-separated
// list of directives, each a token with an optional "=" and a token or
// quoted-string value. It allocates nothing.
func parseCacheControl(lines []string) cacheControl {
	var cc cacheControl
	for _, line := range lines {
		for s := line; s != ""; {
			var name, value string
			var hasValue bool
			name, value, hasValue, s = nextDirective(s)
			switch {
			case strings.EqualFold(name, "no-store"):
				cc.noStore = true
			case strings.EqualFold(name, "no-cache"):
				cc.noCache = true
			case strings.EqualFold(name, "private"):
				cc.private = true
			case strings.EqualFold(name, "public"):
				cc.public = true
			case strings.EqualFold(name, "must-revalidate"):
				cc.mustRevalidate = true
			case strings.EqualFold(name, "must-understand"):
				cc.mustUnderstand = true
			case strings.EqualFold(name, "max-age"):
				cc.maxAge.take(value, hasValue)
			case strings.EqualFold(name, "s-maxage"):
				cc.sMaxAge.take(value, hasValue)
			}
		}
	}
	return cc
}

// nextDirective cuts the first directive off s: its name, its value
// (unquoted, escapes kept: no directive read here has one), whether it had
// one, and the rest after the comma.
func nextDirective(s string) (name, value string, hasValue bool, rest string) {
	s = strings.TrimLeft(s, " \t,")
	i := 0
	for i < len(s) && s[i] != '=' && s[i] != ',' {
		i++
	}
	name = strings.TrimSpace(s[:i])
	if i == len(s) || s[i] == ',' {
		return name, "", false, s[i:]
	}
	s = strings.TrimLeft(s[i+1:], " \t")
	if s != "" && s[0] == '"' {
		j := 1
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		value = s[1:min(j, len(s))]
		s = s[min(j+1, len(s)):]
		k := strings.IndexByte(s, ',')
		if k < 0 {
			return name, value, true, ""
		}
		return name, value, true, s[k:]
	}
	k := strings.IndexByte(s, ',')
	if k < 0 {
		return name, strings.TrimSpace(s), true, ""
	}
	return name, strings.TrimSpace(s[:k]), true, s[k:]
}

// deltaSeconds reads delta-seconds (§1.2.2): digits only; a value past
// 2^31 seconds is taken as 2^31.
func deltaSeconds(s string) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > 1<<31 {
		n = 1 << 31
	}
	return time.Duration(n) * time.Second, true
}

// fromGateway answers a client's request from the gateway's cache when it
// holds a fresh answer for it: the handler is not reached, no server
// process runs, and the answer is the client's at once. Its return point
// and the log's length (for logOf) are taken now, when the client receives
// it: a stored answer is judged against the instant it was served, not the
// one it was made at.
func (w *world) fromGateway(method, path, contentType, logOf string) (response, bool) {
	if method != http.MethodGet || len(w.gw.entries) == 0 {
		return response{}, false
	}
	now := w.s.Now()
	e := w.gw.lookup(method, path, requestHeader(contentType), now)
	if e == nil {
		return response{}, false
	}
	resp := response{code: e.code, replay: e.replay, body: e.body, ret: w.tick(), storeFailed: e.storeFailed}
	if logOf != "" {
		resp.retLog = w.logLen(logOf)
	}
	if w.s.Tracing() {
		w.s.Event("gateway: " + method + " " + path + " answered " + strconv.Itoa(e.code) + " from its cache, age " +
			e.age(now).String() + " of " + e.lifetime.String())
	}
	return resp, true
}

// toGateway hands the gateway the answer a server process made for c.
func (w *world) toGateway(c *serverCall) {
	var h http.Header
	if c.method == http.MethodGet {
		h = requestHeader(c.contentType) // only a GET's is read
	}
	w.gw.receive(c.method, c.path, h, c.rec.code, c.rec.header, c.rec.body, c.act.storeFailed, c.sent, w.s.Now())
}

// requestHeader is the header fields a client's request carries: the
// world's clients send a Content-Type with a body and nothing else.
func requestHeader(contentType string) http.Header {
	if contentType == "" {
		return nil
	}
	return http.Header{"Content-Type": {contentType}}
}
