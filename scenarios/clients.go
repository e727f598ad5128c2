package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"sluicesim/model"
	"sluicesim/scenarios/hostile"
	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
)

// payee is where a withdrawal pays, and how much (Config.SameRecipientEvery).
type payee struct {
	to     tron.Address
	amount money.Amount
}

// spawnClients creates the withdrawals and their clients: duplicates posted
// concurrently, conflicting payloads under used ids, invalid requests.
func (w *world) spawnClients() {
	cfg := w.cfg
	var thin []money.Amount // the thin customer's amounts so far
	for i := range cfg.Withdrawals {
		id := clientOperationID(w.data.Uint32(), i+1)
		w.names[sluice.OperationID(id)] = "op" + strconv.Itoa(i+1)
		w.ids = append(w.ids, id)
		amount := money.Amount(1 + w.data.Int64N(int64(amountMax)))
		to := tron.AddressFromBytes20([20]byte{0xc0, byte(i), byte(i >> 8), byte(w.data.Uint32())})
		// Whose balance pays: drawn from the data stream like the rest of
		// the payload, never from the scheduling tape, so that a schedule
		// explored or shrunk sends the same requests.
		customer := w.customers[w.data.IntN(len(w.customers))]
		if k := cfg.SameRecipientEvery; k > 0 {
			// A customer paying the same address again (an exchange's
			// deposit address): every Nth withdrawal goes where the one N
			// before it went, every 2Nth for the same amount too. Drawn
			// above all the same, so the other requests keep their data.
			if (i+1)%k == 0 && i >= k {
				to = w.recipients[i-k].to
				if (i+1)%(2*k) == 0 {
					amount = w.recipients[i-k].amount
				}
			}
			w.recipients = append(w.recipients, payee{to, amount})
		}
		if cfg.ThinCustomer && customer == thinCustomer {
			// Its third withdrawal asks exactly what its first two leave
			// of its funding, when that is an amount a client may ask:
			// taken after both, it leaves the balance at exactly zero,
			// which the balance covers. Drawn above all the same.
			if len(thin) == 2 {
				if rest := thinFunding - thin[0] - thin[1]; rest >= 1 && rest <= amountMax {
					amount = rest
				}
			}
			thin = append(thin, amount)
		}
		sub := intake.Submission{OperationID: id, Customer: string(customer), ToAddress: to.String(), Amount: amount.String(), Asset: sluice.Asset}
		n := i + 1
		// A shrunk world keeps only some withdrawals; the others still
		// draw their data, so the kept ones look exactly as before.
		w.keep = len(cfg.Only) == 0 || slices.Contains(cfg.Only, n)
		switch {
		case cfg.InvalidEvery > 0 && n%cfg.InvalidEvery == 0:
			// Refused at the door, each in its own way.
			w.spawnClient(n, "", invalidInputs[w.data.IntN(len(invalidInputs))](sub), 0)
			w.count("client-invalid")
			continue
		case cfg.RejectEvery > 0 && n%cfg.RejectEvery == 0:
			// Well formed, so intake holds its amount; only the pipeline
			// refuses to pay the hot wallet itself, and releases the hold.
			sub.ToAddress = w.hot.String()
			w.spawnClient(n, "", sub, 0)
			w.count("client-to-hot-wallet")
			continue
		case cfg.DuplicateEvery > 0 && n%cfg.DuplicateEvery == 0:
			// Posted twice at the same instant; the twin writes the amount
			// differently but means the same instruction.
			twin := sub
			twin.Amount = amount.String() + pad(amount)
			w.spawnClient(n, "", sub, 0)
			w.spawnClient(n, "'", twin, 0)
			w.count("client-duplicate")
			continue
		case cfg.ConflictEvery > 0 && n%cfg.ConflictEvery == 0:
			other := w.conflicting(sub, amount)
			w.spawnClient(n, "", sub, 0)
			w.spawnClient(n, "*", other, 1)
			w.count("client-conflict")
			continue
		case cfg.HostileEvery > 0 && n%cfg.HostileEvery == 0:
			h := hostile.Draw(w.data, cfg.Hostile, hostile.Fields{ID: id, Customer: sub.Customer, Others: w.otherCustomers(customer),
				To: sub.ToAddress, Amount: sub.Amount, Asset: sub.Asset})
			w.spawnPost(n, "", hostilePost(h), 0)
			// Half the time the client then posts the tidy request under
			// the same id: it must replay what a valid hostile request
			// created (or be refused if that meant another instruction),
			// and create what an invalid one did not.
			if w.data.IntN(2) == 0 {
				w.spawnClient(n, "~", sub, 1)
			}
			w.count("client-hostile")
			continue
		}
		w.spawnClient(n, "", sub, 0)
	}
}

// clientOperationID is the id a client mints for its nth withdrawal, r
// drawn from the data stream: fmt.Sprintf("%08x-0000-4000-8000-%012x", r, n),
// written in place when n has at most 12 hex digits (every world's).
func clientOperationID(r uint32, n int) string {
	if n < 0 || uint64(n) >= 1<<48 {
		return fmt.Sprintf("%08x-0000-4000-8000-%012x", r, n)
	}
	const digits = "0123456789abcdef"
	var b [36]byte
	for k := 7; k >= 0; k-- {
		b[k], r = digits[r&0xf], r>>4
	}
	copy(b[8:24], "-0000-4000-8000-")
	v := uint64(n)
	for k := 35; k >= 24; k-- {
		b[k], v = digits[v&0xf], v>>4
	}
	return string(b[:])
}

// invalidInputs spoil a valid submission in one field, near the edge of
// what intake accepts: what a client with a serializer bug, a wrong scale
// or another network's address sends. Intake must refuse each (the oracle
// reads them with its own code), and must not store a thing.
var invalidInputs = []func(intake.Submission) intake.Submission{
	func(s intake.Submission) intake.Submission { s.Amount = "1e6"; return s },                   // a JSON number's habit
	func(s intake.Submission) intake.Submission { s.Amount = "18446744078709.551616"; return s }, // wraps a uint64 to 5000 USDT
	func(s intake.Submission) intake.Submission { s.Amount = "1000000000.000001"; return s },     // one unit over the maximum
	func(s intake.Submission) intake.Submission { s.Amount = "1.0000001"; return s },             // a seventh decimal
	func(s intake.Submission) intake.Submission { s.Amount = "0"; return s },
	func(s intake.Submission) intake.Submission { s.Amount = "01.5"; return s },
	func(s intake.Submission) intake.Submission { s.Amount = "-5"; return s },
	func(s intake.Submission) intake.Submission {
		// Another network's prefix with a valid checksum.
		a, _ := tron.ParseAddress(s.ToAddress)
		a[0] = 0xa0
		s.ToAddress = a.String()
		return s
	},
	func(s intake.Submission) intake.Submission { s.ToAddress = tron.USDTContract.String(); return s },
	func(s intake.Submission) intake.Submission {
		s.ToAddress = tron.AddressFromBytes20([20]byte{}).String()
		return s
	},
	func(s intake.Submission) intake.Submission {
		s.OperationID = "00000000-0000-0000-0000-000000000000"
		return s
	},
	func(s intake.Submission) intake.Submission { s.OperationID = "{" + s.OperationID + "}"; return s },
	func(s intake.Submission) intake.Submission { s.Asset = "TRX"; return s },
	// No customer wrapped in whitespace here: that edge is the hostile
	// clients' customer category's alone, which is what lets a mutant
	// that trims customers show the category earns its place.
	func(s intake.Submission) intake.Submission { s.Customer = ""; return s }, // an unset field
	func(s intake.Submission) intake.Submission {
		s.Customer = strings.Repeat("c", sluice.CustomerMax+1)
		return s
	}, // one byte over the limit
}

// conflicting is a later post under sub's id that changes one thing, drawn
// from the data stream: the recipient, the amount, the asset, the customer
// (another funded one: the same payment from another balance), or the
// id's letter case, alone (the same instruction, to be replayed) or
// together with the recipient. An intake that compares payloads with a
// field left out, or ids by their spelling, answers one of these wrongly.
func (w *world) conflicting(sub intake.Submission, amount money.Amount) intake.Submission {
	other := sub
	elsewhere := tron.AddressFromBytes20([20]byte{0xd0, byte(w.data.Uint32()), byte(w.data.Uint32()), 0x42})
	switch w.data.IntN(6) {
	case 0:
		other.ToAddress = elsewhere.String()
	case 1:
		other.Amount = (amount%amountMax + 1).String()
	case 2:
		other.Asset = strings.ToLower(sub.Asset) // not the asset: refused at the door
	case 3:
		other.OperationID = strings.ToUpper(sub.OperationID) // the same instruction
	case 4:
		other.OperationID = strings.ToUpper(sub.OperationID)
		other.ToAddress = elsewhere.String()
	case 5:
		if others := w.otherCustomers(sluice.CustomerID(sub.Customer)); len(others) > 0 {
			other.Customer = others[w.data.IntN(len(others))]
		} else { // a world of one customer: another recipient instead
			other.ToAddress = elsewhere.String()
		}
	}
	return other
}

// otherCustomers lists the world's funded customers other than c, in the
// world's order.
func (w *world) otherCustomers(c sluice.CustomerID) []string {
	var out []string
	for _, o := range w.customers {
		if o != c {
			out = append(out, string(o))
		}
	}
	return out
}

// count tallies a client fault of a kept withdrawal.
func (w *world) count(kind string) {
	if w.keep {
		w.tally[kind]++
	}
}

// pad returns trailing zeros that keep amount's meaning ("1.5" -> "1.50").
func pad(a money.Amount) string {
	s := a.String()
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			if len(s)-i-1 < money.Decimals {
				return "0"
			}
			return ""
		}
	}
	return ".0"
}

// clientPost is one request a client sends, and what the oracle is told it
// meant: a tidy client's own strings (sent), or a hostile client's whole
// request (raw), which the model reads itself.
type clientPost struct {
	id          string // the operation id as spelled in the request
	body        []byte
	contentType string // "" sends no Content-Type
	sent        model.Payload
	raw         *model.RawPost
	label       string // for traces: the hostile category and case
}

// tidyPost is sub as a well-behaved client sends it.
func tidyPost(sub intake.Submission) clientPost {
	return clientPost{
		id: sub.OperationID, body: tidyBody(sub), contentType: "application/json",
		sent: model.Payload{ID: sub.OperationID, Customer: sub.Customer, To: sub.ToAddress, Amount: sub.Amount, Asset: sub.Asset},
	}
}

// tidyBody is sub's JSON body: the fields in sorted order, as a map would
// marshal them (the body bytes are part of every trace), without building
// and sorting a map. Fields of printable ASCII that json.Marshal leaves as
// they are, which is every field a tidy client sends, are written in one
// allocation; any other field sends the whole body through json.Marshal.
func tidyBody(sub intake.Submission) []byte {
	fields := [...]string{sub.Amount, sub.Asset, sub.Customer, sub.OperationID, sub.ToAddress}
	n := len(`{"amount":"","asset":"","customer":"","operation_id":"","to_address":""}`)
	for _, f := range fields {
		if !plainJSONString(f) {
			return tidyBodyMarshal(sub)
		}
		n += len(f)
	}
	b := make([]byte, 0, n)
	b = append(append(append(b, `{"amount":"`...), sub.Amount...), `","asset":"`...)
	b = append(append(b, sub.Asset...), `","customer":"`...)
	b = append(append(b, sub.Customer...), `","operation_id":"`...)
	b = append(append(b, sub.OperationID...), `","to_address":"`...)
	return append(append(b, sub.ToAddress...), `"}`...)
}

// tidyBodyMarshal is tidyBody by json.Marshal: its definition.
func tidyBodyMarshal(sub intake.Submission) []byte {
	body, _ := json.Marshal(struct {
		Amount      string `json:"amount"`
		Asset       string `json:"asset"`
		Customer    string `json:"customer"`
		OperationID string `json:"operation_id"`
		ToAddress   string `json:"to_address"`
	}{sub.Amount, sub.Asset, sub.Customer, sub.OperationID, sub.ToAddress})
	return body
}

// plainJSONString reports whether json.Marshal writes s as s in quotes:
// printable ASCII without a quote, a backslash, or <, > and &, which it
// escapes for HTML's sake.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// hostilePost is a request from the hostile-client generator. Which of them
// are valid is for the model to say (model.ReadPost, model.ReadIntent).
func hostilePost(h hostile.Post) clientPost {
	return clientPost{
		id: h.ID, body: h.Body, contentType: h.ContentType,
		raw:   &model.RawPost{ContentType: h.ContentType, Body: h.Body},
		label: h.Category + "/" + h.Case,
	}
}

// spawnClient posts sub through the real HTTP handler after an arrival
// delay; later waves (>0) wait for the first so that they post to a used id.
// A client that gets no answer within ClientTimeout gives up on that request
// (the server may still finish it) and retries with the same id. After an
// answer it may read the operation back.
//
// The client is named "c" and its withdrawal's number n, then mark, which
// tells the clients of one withdrawal apart ("c12", "c12'").
func (w *world) spawnClient(n int, mark string, sub intake.Submission, wave int) {
	w.spawnPost(n, mark, tidyPost(sub), wave)
}

// spawnPost is spawnClient for any request.
func (w *world) spawnPost(n int, mark string, post clientPost, wave int) {
	arrive := time.Duration(w.data.Int64N(int64(w.cfg.ArrivalSpread.D()/time.Second)+1)) * time.Second
	arrive += time.Duration(wave) * w.cfg.ArrivalSpread.D()
	if !w.keep {
		return
	}
	w.clients++
	c := &postClient{w: w, post: post, arrive: arrive}
	c.name, c.firstPost, c.get = clientNames(n, mark)
	// The client's state rides in its process's Local, where runPostClient
	// finds it: a closure over it would be one more allocation a client.
	w.s.Spawn(c.name, runPostClient).Local = c
}

// postClient is what a client process posts, and when.
type postClient struct {
	w      *world
	name   string
	post   clientPost
	arrive time.Duration // after the start
	// The server processes' names of its first post and of its read.
	firstPost, get string
}

// clientNames are the names of a client (see spawnClient), of the server
// process of its first post ("srv-c12.0") and of its read
// ("srv-c12.get"), cut from one string.
func clientNames(n int, mark string) (name, firstPost, get string) {
	var buf [64]byte
	b := strconv.AppendInt(append(buf[:0], "srv-c"...), int64(n), 10)
	b = append(b, mark...)
	end := len(b) // of "srv-" and the name
	b = append(b, ".0"...)
	b = append(append(b, b[:end]...), ".get"...)
	all := string(b)
	return all[len("srv-"):end], all[:end+len(".0")], all[end+len(".0"):]
}

// runPostClient is a client process (see spawnClient); its postClient is
// its Local.
func runPostClient(p *sim.Proc) {
	c := p.Local.(*postClient)
	w, name, post := c.w, c.name, &c.post
	defer func() {
		w.s.Touch("clients", true)
		w.clients--
	}()
	p.Sleep(c.arrive)
	if post.label != "" && !w.noLengthLie { // a hostile client: its lie first (length_probe.go)
		c.probeLength()
	}
	answered := false
	for attempt := 0; attempt <= w.cfg.ClientRetries && !answered; attempt++ {
		if attempt > 0 {
			w.tally["client-retry"]++
			p.Sleep(w.cfg.ClientRetryBackoff.D())
		}
		rec := model.IntakeRecord{Client: name, ID: post.id, Sent: post.sent, Raw: post.raw, Call: w.tick(), SeqAtCall: w.store.LastSeq()}
		srvName := c.firstPost
		if attempt > 0 {
			srvName = "srv-" + name + "." + strconv.Itoa(attempt)
		}
		resp, ok := w.request(p, srvName, http.MethodPost, "/v1/withdrawals", post.body, post.contentType, "")
		if ok {
			rec.Return = resp.ret
			rec.Bounded, rec.SeqAtReturn = true, resp.retSeq
			if resp.code == http.StatusInternalServerError && bytes.Contains(resp.body, []byte(`"code":"`+intake.CodeStoreRefused+`"`)) {
				// Intake accepted a request its store's own checks refused:
				// the two disagree, which no honest pair does.
				panic(fmt.Sprintf("client %s: POST %.200q answered 500 %.300q: the store refused an operation intake accepted", name, post.body, resp.body))
			}
			var a model.Shown
			rec.Outcome, a = classifyPost(resp)
			rec.Answer, rec.State, rec.Txid = a.Payload, a.State, a.Txid
			if resp.code == http.StatusUnprocessableEntity {
				rec.Field = model.ReadRefusalField(resp.body)
			}
			w.release(resp)
			answered = rec.Outcome != model.Failed
			if rec.Outcome == model.Failed {
				rec.Return = 0 // a 5xx says nothing about whether the insert committed
				rec.Status, rec.StoreFailed = resp.code, resp.storeFailed
			}
		} else {
			rec.Outcome = model.Failed // timed out: open-ended
			w.tally["client-timeout"]++
		}
		w.intake = append(w.intake, rec)
		if w.s.Tracing() {
			w.fact(model.Fact{Kind: model.FactClientPost, Op: w.name(sluice.OperationID(strings.ToLower(post.id))), Label: post.label, Answer: rec.Outcome.String()})
		}
	}
	if answered && w.s.Chance("client-get", w.cfg.ClientGetP) {
		w.read(p, c.get, post.id)
	}
}

// classifyPost reads an answer as the client would: the status, the replay
// header, and the payload in the body. A 402 is intake's refusal for want
// of funds, which stores nothing (Unfunded); any status intake does not
// give is a failure, whose effect is unknown.
func classifyPost(r response) (model.Outcome, model.Shown) {
	switch {
	case r.code == http.StatusCreated:
		a, _ := model.ReadShown(r.body)
		return model.Created, a
	case r.code == http.StatusOK && r.replay:
		a, _ := model.ReadShown(r.body)
		return model.Replayed, a
	case r.code == http.StatusConflict:
		return model.Conflict, model.Shown{}
	case r.code == http.StatusPaymentRequired:
		return model.Unfunded, model.Shown{}
	case r.code == http.StatusUnprocessableEntity, r.code == http.StatusUnsupportedMediaType:
		return model.Invalid, model.Shown{}
	}
	return model.Failed, model.Shown{}
}

// logLen counts an operation's events now, read straight from the store
// (no yield point: the world looking, not a process acting).
func (w *world) logLen(id string) int {
	oid := sluice.OperationID(strings.ToLower(id))
	if c, ok := w.store.(eventCounter); ok {
		n, _ := c.EventCount(oid) // 0 for an id the store does not hold, as below
		return n
	}
	evs, err := w.store.Events(w.ctx, oid)
	if err != nil {
		return 0
	}
	return len(evs)
}

// eventCounter is a store that counts an operation's events without copying
// them (store.Memory); logLen runs around every read.
type eventCounter interface {
	EventCount(sluice.OperationID) (int, bool)
}

// read GETs an operation and records what it saw, with the length of the
// operation's log at the call and at the return: the window of instants the
// answer must come from. A read that gets no answer tells nothing and is
// not recorded. srvName is the server process's name, "srv-" and the
// reader's name, built in one piece.
func (w *world) read(p *sim.Proc, srvName, id string) {
	rec := model.ReadRecord{Client: strings.TrimPrefix(srvName, "srv-"), ID: id, Call: w.tick(), Bounded: true, LogAtCall: w.logLen(id)}
	// A hostile client's id may hold spaces or worse: the path carries it
	// escaped, and the server reads it back unescaped.
	resp, ok := w.request(p, srvName, http.MethodGet, "/v1/withdrawals/"+url.PathEscape(id), nil, "", id)
	if !ok {
		return
	}
	rec.Return, rec.LogAtReturn, rec.Status, rec.StoreFailed = resp.ret, resp.retLog, resp.code, resp.storeFailed
	if resp.code == http.StatusOK {
		rec.Present = true
		a, _ := model.ReadShown(resp.body)
		rec.Answer, rec.State, rec.History, rec.Txid = a.Payload, a.State, a.History, a.Txid
	}
	w.release(resp)
	w.reads = append(w.reads, rec)
	w.tally["client-read"]++
}

// readerLoop reads operations at random while clients are posting: some
// before they exist, some while they are being created.
func (w *world) readerLoop(ids []string) func(p *sim.Proc) {
	return func(p *sim.Proc) {
		for i := range w.cfg.Reads {
			p.Sleep(time.Duration(1+w.s.Choose("read-gap", 10)) * time.Second)
			w.read(p, "srv-reader."+strconv.Itoa(i), ids[w.s.Choose("read-id", len(ids))])
		}
	}
}
