package intake

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// BodyMax is the largest request body the API reads, in bytes. A withdrawal
// is five short strings; anything near this size is not one, and the limit
// keeps a hostile client from making the server buffer without bound.
const BodyMax = 16 << 10

// NewHandler serves the intake API over svc:
//
//	POST /v1/withdrawals       submit: 201 created, 200 replay (X-Idempotent-Replay: true),
//	                           402 insufficient funds, 409 id reused with another payload,
//	                           422 invalid, 415, 405
//	GET  /v1/withdrawals/{id}  current state and history: 200, 404, 422
//
// Every answer, errors included, is JSON, for unknown and unclean paths too
// (see JSONAnswers); an error is {"error": "...", "field": "..."} with field
// present where one is to blame, and "code" where the status alone does not
// say what to do (see writeServiceError).
// A store failure is a 503 with Retry-After and a fixed message: the
// request may or may not have been recorded (a commit whose answer was
// lost), and the one safe move, a retry with the same operation id, is what
// a client does with a 503. The internals of a failing store are no business
// of the client's. A store that refuses, by its own checks, an operation
// intake accepted is a 500 with code "store_refused": nothing was stored,
// and a retry would be refused again.
//
// The handler is the only place intake meets real concurrency: net/http
// calls it from its own goroutines. It starts none itself and reads no
// clock; all timestamps come from the store.
func NewHandler(svc *Service) http.Handler {
	if svc == nil || svc.Store == nil {
		panic("intake.NewHandler: nil service or store")
	}
	h := &handler{svc: svc}
	mux := http.NewServeMux()
	// Methods are checked by hand rather than with "POST /..." patterns so
	// that a 405 is JSON like every other error (the mux's own is text).
	mux.HandleFunc("/v1/withdrawals", h.withdrawals)
	mux.HandleFunc("/v1/withdrawals/{id}", h.withdrawal)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+truncate(r.URL.Path)+"; "+endpoints, "")
	})
	// The mux still answers on its own, before any handler, a path that is
	// not clean ("/v1//withdrawals", "/v1/./withdrawals"): a redirect with
	// an HTML body, or none. JSONAnswers makes that answer JSON too.
	return JSONAnswers(mux)
}

// endpoints is what a 404 tells a client that guessed a path.
const endpoints = "the API is POST /v1/withdrawals and GET /v1/withdrawals/{operation_id}"

// JSONAnswers makes every answer of h JSON. net/http writes some answers
// itself: ServeMux's "404 page not found" and "405 method not allowed" in
// text, its redirects of unclean paths in HTML or with no body at all. An
// answer whose Content-Type is not application/json keeps its status and
// headers (Location, Allow), and its body is replaced by {"error": "..."}
// saying what happened, so that a client can parse every answer it gets,
// and it is marked no-store as the handlers' own answers are.
// Answers without a body (1xx, 204, 304) pass as they are.
//
// It starts nothing and reads no clock: it is safe under the simulator.
func JSONAnswers(h http.Handler) http.Handler {
	if h == nil {
		panic("intake.JSONAnswers: nil handler")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j := jsonWriters.Get().(*jsonWriter)
		*j = jsonWriter{ResponseWriter: w, r: r}
		h.ServeHTTP(j, r)
		// A ResponseWriter may not be used after ServeHTTP returns, so j
		// is free again; emptied, so that the pool holds no request.
		*j = jsonWriter{}
		jsonWriters.Put(j)
	})
}

// jsonWriters keeps jsonWriters between requests: every answer goes through
// one, and one each was an allocation per request.
var jsonWriters = sync.Pool{New: func() any { return new(jsonWriter) }}

// jsonWriter replaces a non-JSON answer at the moment its header is written,
// the last moment the status and Content-Type are known and the body is not.
type jsonWriter struct {
	http.ResponseWriter
	r        *http.Request
	wrote    bool // the status line is out
	replaced bool // the body is ours; what the handler writes is dropped
}

func (j *jsonWriter) WriteHeader(code int) {
	if j.wrote || code < 200 || code == http.StatusNoContent || code == http.StatusNotModified {
		// A second call is net/http's to report; 1xx are interim; 204 and
		// 304 carry no body, so there is nothing to be JSON.
		j.wrote = j.wrote || code >= 200
		j.ResponseWriter.WriteHeader(code)
		return
	}
	j.wrote = true
	h := j.Header()
	if isJSON(h.Get("Content-Type")) {
		j.ResponseWriter.WriteHeader(code)
		return
	}
	j.replaced = true
	b := append(errorBody{Error: j.explain(code)}.json(), '\n')
	h.Set("Content-Type", "application/json")
	// RFC 9110 makes 301, 404 and 405 cacheable by default: a shared cache
	// in front of the service could keep net/http's answer for a path that
	// later means something. Ours are all no-store; so are these.
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	j.ResponseWriter.WriteHeader(code)
	if j.r.Method != http.MethodHead {
		j.ResponseWriter.Write(b)
	}
}

// explain says in words what a status that net/http chose means here.
func (j *jsonWriter) explain(code int) string {
	h, path := j.Header(), j.r.Method+" "+truncate(j.r.URL.Path)
	switch {
	case code == http.StatusNotFound:
		return "no such endpoint: " + path
	case code == http.StatusMethodNotAllowed:
		return "method not allowed: " + path + "; use " + h.Get("Allow")
	case code >= 300 && code < 400 && h.Get("Location") != "":
		return "not the canonical path: " + path + "; use " + truncate(h.Get("Location"))
	}
	if t := http.StatusText(code); t != "" {
		return strings.ToLower(t)
	}
	return "status " + strconv.Itoa(code)
}

func (j *jsonWriter) Write(p []byte) (int, error) {
	if !j.wrote {
		j.WriteHeader(http.StatusOK) // as net/http does; the Content-Type decides
	}
	if j.replaced {
		return len(p), nil
	}
	return j.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (j *jsonWriter) Unwrap() http.ResponseWriter { return j.ResponseWriter }

type handler struct {
	svc *Service
}

// jsonFields are the fields of a submission in the order they are checked,
// which is the API's order: who (the id, then the customer whose balance
// pays), to whom, how much, of what.
var jsonFields = [...]string{FieldOperationID, FieldCustomer, FieldToAddress, FieldAmount, FieldAsset}

// unknownFieldReason is the reason given for a key outside jsonFields.
var unknownFieldReason = "unknown field; the fields are " + strings.Join(jsonFields[:], ", ")

// unknownField refuses key, which is not one of jsonFields.
func unknownField(key string) *ValidationError {
	return &ValidationError{truncate(key), unknownFieldReason}
}

func (h *handler) withdrawals(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; use POST", "")
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if reason := checkContentType(ct); reason != "" {
			writeError(w, http.StatusUnsupportedMediaType, reason, "")
			return
		}
	}
	buf := bodyBuffers.Get().(*[]byte)
	body, err := readBody((*buf)[:0], r.Body, r.ContentLength)
	var sub Submission
	var verr *ValidationError
	if err == nil {
		sub, verr = decodeSubmission(body)
	}
	// Nothing decoded points into the body (the submission's strings and
	// every refusal's are copies), so its buffer is free again.
	*buf = body[:0]
	bodyBuffers.Put(buf)
	if err == errBodyTooLarge {
		// 422 rather than 413: the API answers every refusal of the
		// request's content with one code, naming what is wrong.
		writeError(w, http.StatusUnprocessableEntity, "body: exceeds "+strconv.Itoa(BodyMax)+" bytes", FieldBody)
		return
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "could not read the request body", FieldBody)
		return
	}
	if verr != nil {
		writeValidationError(w, verr)
		return
	}
	res, to, err := h.svc.submit(r.Context(), sub)
	if err != nil {
		writeServiceError(w, err)
		return
	}
	a := new(postAnswer)
	answer := appendOperation(a.body[:0], res.Operation, to)
	if res.Created {
		writeJSONHeader(w, &a.header, http.StatusCreated, answer, "Location", "/v1/withdrawals/"+string(res.Operation.ID))
		return
	}
	writeJSONHeader(w, &a.header, http.StatusOK, answer, "X-Idempotent-Replay", "true")
}

// postAnswer is a POST's answer: its header values and room for its body,
// in one allocation. The header map keeps the values after the handler
// returns (the server writes them then), and with them the body's bytes,
// which are few.
type postAnswer struct {
	header headerValues
	body   [answerSize]byte
}

// bodyBuffers keeps request body buffers between requests; a body is read
// whole, decoded, and then not needed.
var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, bodyBufferSize); return &b }}

// bodyBufferSize is a body buffer's first size: room for any honest
// withdrawal.
const bodyBufferSize = 1 << 10

// errBodyTooLarge is readBody's refusal of a body over BodyMax bytes.
var errBodyTooLarge = errors.New("intake: request body exceeds BodyMax")

// readBody appends the whole of body to buf, reading no more than BodyMax+1
// bytes: errBodyTooLarge if it holds more than BodyMax, a read error as it
// comes. It does what io.ReadAll over http.MaxBytesReader did, without the
// reader to allocate: a body's declared length (-1 if unknown) only sizes
// the buffer, it limits nothing (a handler in front may have replaced the
// body). The net/http server's own too-large handling (closing the
// connection) was never reached through jsonWriter, which hides the
// server's writer from MaxBytesReader, and is not here either.
func readBody(buf []byte, body io.Reader, length int64) ([]byte, error) {
	if 0 <= length && length <= BodyMax && cap(buf) < int(length)+1 {
		buf = slices.Grow(buf, int(length)+1) // +1: room to see the end
	}
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 1)
		}
		n, err := body.Read(buf[len(buf):min(cap(buf), BodyMax+1)])
		buf = buf[:len(buf)+n]
		switch {
		case len(buf) > BodyMax:
			return buf, errBodyTooLarge
		case err == io.EOF:
			return buf, nil
		case err != nil:
			return buf, err
		}
	}
}

// answerSize is room for a withdrawal answer with a txid and a customer id
// of up to 50 bytes, so that writing one allocates once.
const answerSize = 320

func (h *handler) withdrawal(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; use GET", "")
		return
	}
	op, events, _, err := h.svc.lookup(r.Context(), r.PathValue("id"))
	if err != nil {
		writeServiceError(w, err)
		return
	}
	if len(events) > getAnswerEvents {
		writeJSON(w, http.StatusOK, appendDetail(make([]byte, 0, answerSize+eventSize*len(events)), op, events), "", "")
		return
	}
	a := new(getAnswer)
	writeJSONHeader(w, &a.header, http.StatusOK, appendDetail(a.body[:0], op, events), "", "")
}

// eventSize is room for one event of a GET answer's history.
const eventSize = 200

// getAnswer is a GET's answer with a short history: its header values and
// room for its body in one allocation (see postAnswer). Most reads come
// early in an operation's life (a client reads back what it posted).
type getAnswer struct {
	header headerValues
	body   [answerSize + getAnswerEvents*eventSize]byte
}

// getAnswerEvents is how many events a getAnswer has room for.
const getAnswerEvents = 3

// checkContentType returns why ct is refused, or "" if it is JSON. JSON is
// UTF-8 by definition (RFC 8259), so a charset claiming otherwise is refused
// rather than silently misread.
func checkContentType(ct string) string {
	if ct == "application/json" {
		return "" // what clients send; spares parsing it
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "unreadable Content-Type " + strconv.Quote(truncate(ct))
	}
	if mt != "application/json" {
		return "Content-Type " + strconv.Quote(truncate(mt)) + " not supported; use application/json"
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return "charset " + strconv.Quote(truncate(cs)) + " not supported; JSON is utf-8"
	}
	return ""
}

// decodeSubmission reads the body as exactly one JSON object of string
// fields. scanSubmission reads the shape honest clients send without
// encoding/json's token machinery, walkValidSubmission any other valid
// JSON; decodeSubmissionTokens reads everything else, and its answers are
// the definition that both match.
func decodeSubmission(body []byte) (Submission, *ValidationError) {
	if sub, verr, ok := scanSubmission(body); ok {
		return sub, verr
	}
	if json.Valid(body) {
		return walkValidSubmission(body)
	}
	return decodeSubmissionTokens(body)
}

// decodeSubmissionTokens reads the body as exactly one JSON object of
// string fields. It walks the tokens itself instead of unmarshalling into a
// struct: encoding/json would accept a number for the amount into a
// RawMessage and a string alike, match keys case-insensitively ("AMOUNT"),
// keep the last of two duplicate keys, and stop reading after the first
// value. Each of those lets a payload mean something other than what an
// auditor reading it sees.
func decodeSubmissionTokens(body []byte) (Submission, *ValidationError) {
	malformed := func(err error) *ValidationError {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return &ValidationError{FieldBody, "malformed JSON: unexpected end of input"}
		}
		return &ValidationError{FieldBody, "malformed JSON: " + err.Error()}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	// A top-level number is only ever refused; as a float64 one out of
	// range would be refused with encoding/json's words, which repeat the
	// whole number back however long it is.
	dec.UseNumber()
	tok, err := dec.Token()
	if err == io.EOF {
		return Submission{}, &ValidationError{FieldBody, "empty body; want a JSON object"}
	}
	if err != nil {
		return Submission{}, malformed(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return Submission{}, &ValidationError{FieldBody, "want a JSON object"}
	}
	fields := make(map[string]json.RawMessage, len(jsonFields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Submission{}, malformed(err)
		}
		key, ok := tok.(string)
		if !ok { // the decoder only yields strings in key position; belt and braces
			return Submission{}, &ValidationError{FieldBody, "malformed JSON: object key is not a string"}
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Submission{}, malformed(err)
		}
		if key == "" {
			// There is no name to blame; the body is.
			return Submission{}, &ValidationError{FieldBody, `unknown field ""`}
		}
		if !known(key) {
			return Submission{}, unknownField(key)
		}
		if _, dup := fields[key]; dup {
			return Submission{}, &ValidationError{key, "duplicate field"}
		}
		fields[key] = raw
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return Submission{}, malformed(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Submission{}, &ValidationError{FieldBody, "trailing data after the JSON object"}
	}
	var vals [5]string
	for i, name := range jsonFields {
		raw, ok := fields[name]
		if !ok {
			return Submission{}, &ValidationError{name, "missing"}
		}
		if len(raw) == 0 || raw[0] != '"' {
			reason := "must be a JSON string"
			if name == FieldAmount {
				// A JSON number may have passed through a binary float in
				// the client already; there is no exact amount left to read.
				reason = `must be a JSON string such as "12.50", not a number or other value`
			}
			return Submission{}, &ValidationError{name, reason}
		}
		if why := textFault(raw); why != "" {
			return Submission{}, &ValidationError{name, why}
		}
		if err := json.Unmarshal(raw, &vals[i]); err != nil {
			return Submission{}, &ValidationError{name, "malformed JSON string"}
		}
	}
	return Submission{OperationID: vals[0], Customer: vals[1], ToAddress: vals[2], Amount: vals[3], Asset: vals[4]}, nil
}

// textFault reports why a field's JSON string literal (quotes included,
// valid JSON) holds no text, or "" when it does. encoding/json decodes an
// invalid UTF-8 byte or a lone surrogate escape (a \ud800 with no low half)
// to U+FFFD; refused later as a field's bytes, that would name a character
// the client never sent.
func textFault(lit []byte) string {
	if !utf8.Valid(lit) {
		return "not valid UTF-8"
	}
	for i := 1; i < len(lit)-1; i++ {
		if lit[i] != '\\' {
			continue
		}
		if lit[i+1] != 'u' {
			i++ // a one-letter escape, which may be \\
			continue
		}
		r := hex4(lit[i+2 : i+6])
		if r < 0xd800 || r > 0xdfff {
			i += 5
			continue
		}
		// A high half, then at once a \u escape of a low half: the pair
		// ends at i+11, before the closing quote.
		paired := r <= 0xdbff && i+12 <= len(lit)-1 && lit[i+6] == '\\' && lit[i+7] == 'u'
		if paired {
			low := hex4(lit[i+8 : i+12])
			paired = 0xdc00 <= low && low <= 0xdfff
		}
		if !paired {
			return "has a lone surrogate escape (\\u" + string(lit[i+2:i+6]) + ")"
		}
		i += 11
	}
	return ""
}

// hex4 is the value of four hex digits (a valid \u escape's).
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

func known(key string) bool {
	for _, f := range jsonFields {
		if key == f {
			return true
		}
	}
	return false
}

// errStoreUnavailable is the answer to any error intake does not know: every
// such error comes from the store, and may have happened after its effect.
const errStoreUnavailable = "store unavailable: the request may or may not have been recorded; retry with the same operation_id"

// CodeStoreRefused is the "code" of a 500 answer: the store's own checks
// refused an operation intake had accepted. Nothing was stored, and sending
// the same request again gets the same answer.
const CodeStoreRefused = "store_refused"

// errStoreRefused is that 500's message. It is fixed, as the 503's: the
// store's error is no business of the client.
const errStoreRefused = "the store refused an operation intake accepted: nothing was stored, and the same request will be refused again; this is the service's fault, not the request's"

// CodeInsufficientFunds is the "code" of a 402 answer: the customer's
// balance does not cover the amount. It is stable: clients may branch on it.
const CodeInsufficientFunds = "insufficient_funds"

// errInsufficientFunds is the 402's message. It is fixed: the store's error
// names the balance, which is no business of whoever holds an operation id.
const errInsufficientFunds = "insufficient funds: the customer's balance does not cover the amount; nothing was stored, and the same request may be sent again once it does"

// writeServiceError maps Submit and Lookup errors to answers. Anything it
// does not recognize is a store failure: 503, retry later.
//
// Insufficient funds is a 402 Payment Required, code "insufficient_funds",
// and not one of the codes already in use, because each of those tells a
// client something false about it: a 422 says the request is malformed
// (fix it, never send it again as it is), a 409 that the operation id
// belongs to another withdrawal (never use it again). Neither holds: the
// request is well-formed, no row was created, and the very same request,
// same operation id included, succeeds once the customer's balance covers
// it. A client that knows only the older codes reads 402 as an unknown
// failure, which is the safe reading (nothing promised either way).
func writeServiceError(w http.ResponseWriter, err error) {
	if ve, ok := errors.AsType[*ValidationError](err); ok {
		writeValidationError(w, ve)
		return
	}
	switch {
	case errors.Is(err, sluice.ErrInsufficientFunds):
		writeErrorBody(w, http.StatusPaymentRequired, errorBody{Error: errInsufficientFunds, Code: CodeInsufficientFunds})
	case errors.Is(err, sluice.ErrPayloadMismatch):
		writeError(w, http.StatusConflict, sluice.ErrPayloadMismatch.Error(), FieldOperationID)
	case errors.Is(err, sluice.ErrNotFound):
		writeError(w, http.StatusNotFound, sluice.ErrNotFound.Error(), FieldOperationID)
	case errors.Is(err, ErrBusy):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, ErrBusy.Error(), "")
	case errors.Is(err, sluice.ErrInvalidOperation):
		// The store's own check refused an operation Normalize accepted:
		// nothing was stored, and the same request is refused again. A 503
		// would have the client retry for ever; a 422 would blame a field
		// intake found well-formed. Intake and the store disagree, which is
		// ours to mend: a 500 that says so.
		writeErrorBody(w, http.StatusInternalServerError, errorBody{Error: errStoreRefused, Code: CodeStoreRefused})
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, errStoreUnavailable, "")
	}
}

// withdrawal is the JSON form of an operation.
type withdrawal struct {
	OperationID string `json:"operation_id"`
	Customer    string `json:"customer"` // whose balance pays
	State       string `json:"state"`
	ToAddress   string `json:"to_address"`
	Amount      string `json:"amount"` // canonical decimal string, never a number
	Asset       string `json:"asset"`
	Txid        string `json:"txid,omitempty"` // until an envelope is built there is none
}

// summarize is op's answer. to is the base58 form of op.Request.To if the
// caller has it, or "".
func summarize(op sluice.Operation, to string) withdrawal {
	if to == "" {
		to = op.Request.To.String()
	}
	return withdrawal{
		OperationID: string(op.ID),
		Customer:    string(op.Request.Customer),
		State:       op.State.String(),
		ToAddress:   to,
		Amount:      op.Request.Amount.String(),
		Asset:       op.Request.Asset,
		Txid:        txidString(op.Envelope.Txid),
	}
}

func txidString(t tron.Txid) string {
	if t.IsZero() {
		return ""
	}
	return t.String()
}

// writeValidationError answers 422 with "field: reason", the field named
// again on its own for clients that branch on it.
func writeValidationError(w http.ResponseWriter, ve *ValidationError) {
	writeError(w, http.StatusUnprocessableEntity, ve.Field+": "+ve.Reason, ve.Field)
}

type errorBody struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
	Code  string `json:"code,omitempty"`
}

func writeError(w http.ResponseWriter, status int, msg, field string) {
	writeErrorBody(w, status, errorBody{Error: msg, Field: field})
}

// writeErrorBody answers status with e.
func writeErrorBody(w http.ResponseWriter, status int, e errorBody) {
	a := new(errorAnswer)
	writeJSONHeader(w, &a.header, status, e.appendJSON(a.body[:0]), "", "")
}

// errorAnswer is an error answer's header values and room for its body
// (postAnswer's twin): every message intake writes fits, and a longer one,
// which can only quote a client's input at length, grows out of it.
type errorAnswer struct {
	header headerValues
	body   [errorAnswerSize]byte
}

// errorAnswerSize holds the longest of intake's fixed messages (the 402's)
// with its JSON and a newline.
const errorAnswerSize = 256

// writeJSON answers status with the JSON body, and with the header key
// set to value unless key is "".
func writeJSON(w http.ResponseWriter, status int, body []byte, key, value string) {
	writeJSONHeader(w, new(headerValues), status, body, key, value)
}

// headerValues are the values of an answer's headers, which share one
// allocation (see writeJSONHeader).
type headerValues [4]string

// writeJSONHeader is writeJSON with the header values stored in vals, which
// the header map keeps: each of its slices is capped at its one value, so
// that appending to one header cannot overwrite another.
func writeJSONHeader(w http.ResponseWriter, vals *headerValues, status int, body []byte, key, value string) {
	vals[0], vals[1], vals[2], vals[3] = "application/json", "no-store", "nosniff", value
	h := w.Header()
	// As h.Set does, with keys already in canonical form.
	h["Content-Type"] = vals[0:1:1]
	h["Cache-Control"] = vals[1:2:2]
	h["X-Content-Type-Options"] = vals[2:3:3]
	if key != "" {
		h[http.CanonicalHeaderKey(key)] = vals[3:4:4]
	}
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// isJSON reports whether a Content-Type says application/json.
func isJSON(ct string) bool {
	if ct == "application/json" {
		return true // what this package writes; spares parsing it
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}
