package operator

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
)

// Bounds of the HTTP API.
const (
	// TokenMin is the shortest bearer token accepted at startup: 16 bytes
	// of a random token are 96 bits or more, beyond guessing through a
	// listener; a shorter one is a placeholder someone forgot to replace.
	TokenMin = 16
	// TokenMax keeps the token well inside the server's header limit.
	TokenMax = 1024
	// BodyMax bounds a request body, in bytes: an action is a few short
	// strings.
	BodyMax = 4 << 10
)

// CheckToken refuses a bearer token the service must not start with: too
// short to resist guessing, too long for a header, or holding a byte a
// client cannot send after "Bearer " (space, control, non-ASCII).
func CheckToken(token string) error {
	switch {
	case len(token) < TokenMin:
		return fmt.Errorf("operator token is %d bytes, want at least %d (e.g. 32 random bytes, hex: openssl rand -hex 32)", len(token), TokenMin)
	case len(token) > TokenMax:
		return fmt.Errorf("operator token is %d bytes, want at most %d", len(token), TokenMax)
	}
	for i := 0; i < len(token); i++ {
		if b := token[i]; b <= ' ' || b >= 0x7f {
			return fmt.Errorf("operator token: byte %d is a space, control or non-ASCII byte", i)
		}
	}
	return nil
}

// NewHandler serves the operator API over svc, every request behind
// Authorization: Bearer <token> (401 without it or malformed, 403 wrong;
// compared in constant time):
//
//	GET  /v1/queue?after=ID&limit=N            review and parked operations, by id
//	GET  /v1/operations/{id}                   one operation as the queue shows it
//	POST /v1/operations/{id}/retry             {"operator", "why"}
//	POST /v1/operations/{id}/cancel            {"operator", "why"}: needs proof of death
//	POST /v1/operations/{id}/resolve           {"operator", "why", "txid"}: resolve a review as paid
//	POST /v1/credits                           {"operator", "why", "ref", "customer", "amount"}
//	GET  /v1/accounts/{customer}               the customer's ledger
//	GET  /metrics                              metrics (Prometheus text), if given
//
// The operator's name is the body's "operator" field: every action carries
// it with its "why", and both land in the event. Every answer but /metrics
// is JSON (intake.JSONAnswers), an error being {"error", "field"}: 409 an
// action the row or the chain does not allow (the reason says what the
// chain showed; code "store_refused" when the store's own checks refused a
// write the service let through: nothing changed either way), 422 malformed input naming the field, 404 no such
// operation or account, 503 the store or node failed (the action may or may
// not have landed for a store failure: read the operation again).
func NewHandler(svc *Service, token string, metrics http.Handler) (http.Handler, error) {
	if svc == nil || svc.Store == nil || svc.Node == nil {
		return nil, errors.New("operator.NewHandler: nil service, store or node")
	}
	if err := CheckToken(token); err != nil {
		return nil, err
	}
	h := &handler{svc: svc}
	mux := http.NewServeMux()
	// Methods are checked by hand so that a 405 is JSON (see intake).
	mux.HandleFunc("/v1/queue", h.queue)
	mux.HandleFunc("/v1/operations/{id}", h.operation)
	mux.HandleFunc("/v1/operations/{id}/{action}", h.action)
	mux.HandleFunc("/v1/credits", h.credit)
	mux.HandleFunc("/v1/accounts/{customer}", h.account)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.Method+" "+truncate(r.URL.Path)+"; "+endpoints, "")
	})
	api := intake.JSONAnswers(mux)
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(w, r, want) {
			return
		}
		if r.URL.Path == "/metrics" && metrics != nil {
			// Prometheus's text format, not JSON: it is what a scraper
			// reads. Everything else goes through JSONAnswers.
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				w.Header().Set("Allow", "GET, HEAD")
				writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; use GET", "")
				return
			}
			metrics.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	}), nil
}

const endpoints = "the API is GET /v1/queue, GET /v1/operations/{id}, POST /v1/operations/{id}/retry|cancel|resolve, POST /v1/credits, GET /v1/accounts/{customer}, GET /metrics"

// authorized answers 401 or 403 and returns false unless r carries the
// token. Both sides are hashed before the constant-time comparison, so
// that neither the token's bytes nor its length show in the time taken.
func authorized(w http.ResponseWriter, r *http.Request, want [sha256.Size]byte) bool {
	values := r.Header.Values("Authorization")
	if len(values) == 0 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice-operator"`)
		writeError(w, http.StatusUnauthorized, "missing Authorization: Bearer <token> (the operator token, SLUICE_OPERATOR_TOKEN)", "")
		return false
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	if len(values) > 1 || !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsAny(token, " \t") {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice-operator", error="invalid_request"`)
		writeError(w, http.StatusUnauthorized, "malformed Authorization: want exactly one header, Bearer <token>", "")
		return false
	}
	got := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice-operator", error="invalid_token"`)
		writeError(w, http.StatusForbidden, "wrong operator token", "")
		return false
	}
	return true
}

type handler struct {
	svc *Service
}

func (h *handler) queue(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	q := r.URL.Query()
	for k := range q {
		if k != FieldAfter && k != FieldLimit {
			writeError(w, http.StatusUnprocessableEntity, truncate(k)+": unknown query parameter; the parameters are after and limit", truncate(k))
			return
		}
	}
	after, limit := sluice.OperationID(""), QueueDefault
	if vs := q[FieldAfter]; len(vs) > 0 {
		id, err := intake.ParseOperationID(vs[0])
		if err != nil || len(vs) > 1 {
			writeError(w, http.StatusUnprocessableEntity, "after: want one operation id (a UUID), the last of the previous page", FieldAfter)
			return
		}
		after = id
	}
	if vs := q[FieldLimit]; len(vs) > 0 {
		n, err := strconv.Atoi(vs[0])
		if err != nil || len(vs) > 1 || n < 1 || n > QueueMax {
			writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("limit: want one whole number in [1, %d]", QueueMax), FieldLimit)
			return
		}
		limit = n
	}
	page, err := h.svc.Queue(r.Context(), after, limit)
	if err != nil {
		writeServiceError(w, err, noOperation)
		return
	}
	v := queueView{Items: make([]itemView, 0, len(page.Items)), Next: string(page.Next)}
	for _, it := range page.Items {
		v.Items = append(v.Items, viewItem(it))
	}
	writeJSON(w, http.StatusOK, v)
}

func (h *handler) operation(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	it, err := h.svc.Item(r.Context(), id)
	if err != nil {
		writeServiceError(w, err, noOperation)
		return
	}
	writeJSON(w, http.StatusOK, viewItem(it))
}

func (h *handler) action(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("action")
	var kind Kind
	for _, k := range []Kind{Retry, Cancel, ResolvePaid} {
		if name == k.String() {
			kind = k
		}
	}
	if kind == 0 {
		writeError(w, http.StatusNotFound, "no such action "+strconv.Quote(truncate(name))+"; the actions are retry, cancel and resolve", "")
		return
	}
	if !allow(w, r, http.MethodPost) {
		return
	}
	act := Action{Kind: kind}
	id, err := intake.ParseOperationID(r.PathValue("id"))
	if err != nil {
		h.invalid(w, act, http.StatusUnprocessableEntity, FieldOperationID, "must be a UUID (8-4-4-4-12 hex digits)")
		return
	}
	act.ID = id
	fields := []string{FieldOperator, FieldWhy}
	if kind == ResolvePaid {
		fields = append(fields, FieldTxid)
	}
	vals, ok := h.readBody(w, r, act, fields)
	if !ok {
		return
	}
	a := Act{Operator: vals[FieldOperator], Why: vals[FieldWhy]}
	var op sluice.Operation
	switch kind {
	case Retry:
		op, err = h.svc.Retry(r.Context(), id, a)
	case Cancel:
		op, err = h.svc.Cancel(r.Context(), id, a)
	case ResolvePaid:
		txid, perr := tron.ParseTxid(vals[FieldTxid])
		if perr != nil {
			act.Operator, act.Why = a.Operator, a.Why
			h.invalid(w, act, http.StatusUnprocessableEntity, FieldTxid, "want 64 hex digits, the txid that paid")
			return
		}
		op, err = h.svc.ResolvePaid(r.Context(), id, txid, a)
	}
	if err != nil {
		writeServiceError(w, err, noOperation)
		return
	}
	it, err := h.svc.Item(r.Context(), op.ID)
	if err != nil {
		// The action landed; only the read after it failed.
		it = Item{Operation: op}
	}
	writeJSON(w, http.StatusOK, viewItem(it))
}

func (h *handler) credit(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodPost) {
		return
	}
	act := Action{Kind: Credit}
	vals, ok := h.readBody(w, r, act, []string{FieldOperator, FieldWhy, FieldRef, FieldCustomer, FieldAmount})
	if !ok {
		return
	}
	c := sluice.Credit{Ref: vals[FieldRef], Customer: sluice.CustomerID(vals[FieldCustomer])}
	act.Operator, act.Why, act.Credit = vals[FieldOperator], vals[FieldWhy], c
	switch {
	case sluice.ValidCreditRef(c.Ref) != "":
		h.invalid(w, act, http.StatusUnprocessableEntity, FieldRef, sluice.ValidCreditRef(c.Ref)+"; want 1 to 128 bytes of printable text: the deposit's own id, which makes a retry safe")
		return
	case c.Customer.Valid() != "":
		h.invalid(w, act, http.StatusUnprocessableEntity, FieldCustomer, c.Customer.Valid())
		return
	}
	amount, err := money.Parse(vals[FieldAmount])
	if err != nil {
		reason := err.Error()
		if pe, ok := errors.AsType[*money.ParseError](err); ok {
			reason = pe.Reason
		}
		h.invalid(w, act, http.StatusUnprocessableEntity, FieldAmount, reason)
		return
	}
	c.Amount = amount
	acct, credited, err := h.svc.Credit(r.Context(), c, Act{Operator: vals[FieldOperator], Why: vals[FieldWhy]})
	if err != nil {
		writeServiceError(w, err, noAccount)
		return
	}
	status := http.StatusOK
	if credited {
		status = http.StatusCreated
	}
	writeJSON(w, status, creditView{Ref: c.Ref, Credited: credited, Account: viewAccount(acct)})
}

// invalid answers an action whose request the handler refused for its
// input before the service saw it (status 415 or 422, field naming what),
// and tells the service's observer, as the service does for the input it
// refuses itself: whichever layer reads a field, a malformed action is
// logged and counted invalid, so the count of invalid actions is the count
// of actions answered 415, 422 or 404, and says nothing of the code's
// layers.
func (h *handler) invalid(w http.ResponseWriter, act Action, status int, field, reason string) {
	e := &InputError{Field: field, Reason: reason}
	msg := e.Error()
	if field == "" {
		msg = reason
	}
	writeError(w, status, msg, field)
	act.Err = e
	if h.svc.Observer != nil {
		h.svc.Observer.ObserveAction(act)
	}
}

func (h *handler) account(w http.ResponseWriter, r *http.Request) {
	if !allow(w, r, http.MethodGet) {
		return
	}
	acct, err := h.svc.Account(r.Context(), sluice.CustomerID(r.PathValue("customer")))
	if err != nil {
		writeServiceError(w, err, noAccount)
		return
	}
	writeJSON(w, http.StatusOK, viewAccount(acct))
}

// allow answers 405 unless r's method is method (or HEAD for GET).
func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method || method == http.MethodGet && r.Method == http.MethodHead {
		return true
	}
	allowed := method
	if method == http.MethodGet {
		allowed = "GET, HEAD"
	}
	w.Header().Set("Allow", allowed)
	writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed; use "+method, "")
	return false
}

func pathID(w http.ResponseWriter, r *http.Request) (sluice.OperationID, bool) {
	id, err := intake.ParseOperationID(r.PathValue("id"))
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, "operation_id: must be a UUID (8-4-4-4-12 hex digits)", FieldOperationID)
		return "", false
	}
	return id, true
}

// readBody reads an action's body as one JSON object whose keys are
// exactly fields (each once) and whose values are strings, answering 415
// or 422 (counted as act, invalid) and returning false otherwise.
// encoding/json alone would match keys without regard to case, keep the
// last of two duplicates and ignore trailing data: each lets a request
// mean something other than what its reader sees.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request, act Action, fields []string) (map[string]string, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" || params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8") {
			h.invalid(w, act, http.StatusUnsupportedMediaType, "", "Content-Type "+strconv.Quote(truncate(ct))+" not supported; use application/json")
			return nil, false
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, BodyMax))
	if err != nil {
		h.invalid(w, act, http.StatusUnprocessableEntity, FieldBody, "unreadable or over "+strconv.Itoa(BodyMax)+" bytes")
		return nil, false
	}
	vals, ierr := decodeObject(body, fields)
	if ierr != nil {
		h.invalid(w, act, http.StatusUnprocessableEntity, ierr.Field, ierr.Reason)
		return nil, false
	}
	return vals, true
}

func decodeObject(body []byte, fields []string) (map[string]string, *InputError) {
	bad := func(reason string) (map[string]string, *InputError) {
		return nil, &InputError{Field: FieldBody, Reason: reason}
	}
	want := `want a JSON object of strings: ` + strings.Join(fields, ", ")
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return bad("malformed JSON; " + want)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return bad(want)
	}
	vals := make(map[string]string, len(fields))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad("malformed JSON; " + want)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return bad("malformed JSON; " + want)
		}
		known := false
		for _, f := range fields {
			known = known || f == key
		}
		switch {
		case key == "":
			return bad(`unknown field ""; ` + want)
		case !known:
			return nil, &InputError{Field: truncate(key), Reason: "unknown field; " + want}
		case hasKey(vals, key):
			return nil, &InputError{Field: key, Reason: "duplicate field"}
		case len(raw) == 0 || raw[0] != '"':
			return nil, &InputError{Field: key, Reason: "must be a JSON string"}
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, &InputError{Field: key, Reason: "malformed JSON string"}
		}
		vals[key] = s
	}
	if _, err := dec.Token(); err != nil {
		return bad("malformed JSON; " + want)
	}
	if _, err := dec.Token(); err != io.EOF {
		return bad("trailing data after the JSON object")
	}
	for _, f := range fields {
		if !hasKey(vals, f) {
			return nil, &InputError{Field: f, Reason: "missing"}
		}
	}
	return vals, nil
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// Answers to sluice.ErrNotFound.
const (
	noOperation = "no such operation"
	noAccount   = "no such account: the customer has never been credited"
)

// writeServiceError maps the service's errors to answers; notFound is what
// a sluice.ErrNotFound means here.
func writeServiceError(w http.ResponseWriter, err error, notFound string) {
	in, isInput := errors.AsType[*InputError](err)
	rf, isRefusal := errors.AsType[*Refusal](err)
	switch {
	case isInput:
		writeError(w, http.StatusUnprocessableEntity, in.Error(), in.Field)
	case isRefusal:
		writeError(w, http.StatusConflict, rf.Kind.String()+" refused: "+rf.Reason, "")
	case errors.Is(err, sluice.ErrPayloadMismatch):
		writeError(w, http.StatusConflict, "ref: this ref was credited with other numbers; a deposit's ref names one deposit", FieldRef)
	case errors.Is(err, sluice.ErrNotFound):
		writeError(w, http.StatusNotFound, notFound, "")
	case errors.Is(err, sluice.ErrInvalidOperation):
		writeError(w, http.StatusUnprocessableEntity, err.Error(), "")
	case StoreRefused(err):
		// The store's own checks refused the write: nothing landed, and
		// asking again changes nothing. A 503 ("may or may not have
		// landed") would send the person on call to read the operation
		// and act again, on a question that has an answer. The service
		// checks every condition the store does before it writes, so this
		// answer means the two disagree: the code says so, apart from the
		// service's refusals.
		writeJSON(w, http.StatusConflict, errorBody{Error: "the store refused the action, nothing changed: " + err.Error(), Code: CodeStoreRefused})
	case errors.Is(err, ErrNodeUnavailable):
		// Unlike a store failure, certain: the service asks the node
		// before it writes, so nothing landed. The code lets a client (the
		// person's tooling) ask again at once instead of reading the
		// operation first.
		w.Header().Set("Retry-After", "3")
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: "the node did not answer, nothing changed; ask again: " + err.Error(), Code: CodeNodeUnavailable})
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "store unavailable: the action may or may not have landed; read the operation before acting again", "")
	}
}

// CodeStoreRefused is the "code" of a 409 the store's own checks gave (a
// transition its table forbids, a hold already closed, a txid that is not
// the operation's): nothing changed. A refusal by the service itself has
// no code. Stable: clients may branch on it.
const CodeStoreRefused = "store_refused"

// CodeNodeUnavailable is the "code" of a 503 for a node that did not
// answer a question the action asks before it writes: nothing changed, and
// the same action may be asked again as it is. A 503 without it is the
// store's, which may or may not have landed. Stable: clients may branch on
// it.
const CodeNodeUnavailable = "node_unavailable"

// StoreRefused reports whether err is one of the store's refusals: a write
// it checked and did not make, as opposed to a failure to reach it. The
// API answers it 409 (CodeStoreRefused), and the metrics count it refused:
// nothing changed, so it is no outage.
func StoreRefused(err error) bool {
	for _, r := range [...]error{sluice.ErrIllegalTransition, sluice.ErrHoldClosed, sluice.ErrHoldAction, sluice.ErrTxidTaken, sluice.ErrInvalidChange} {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}

type errorBody struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
	Code  string `json:"code,omitempty"`
}

func writeError(w http.ResponseWriter, status int, msg, field string) {
	writeJSON(w, status, errorBody{Error: msg, Field: field})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	// Answers are read by people at a terminal ("Bearer <token>"), and
	// served as application/json with nosniff: no HTML escapes needed.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Plain structs of strings and numbers; failing to marshal one is
		// a broken invariant.
		panic("operator: marshal response: " + err.Error())
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// truncate cuts what a client sent to a length an answer may repeat.
func truncate(s string) string {
	const shownMax = 64
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	if len(s) > shownMax {
		return strings.ToValidUTF8(s[:shownMax], "") + "..."
	}
	return s
}
