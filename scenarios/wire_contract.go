package scenarios

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"sluicesim/model"
	"sluicesim/sluice/tron"
)

// wireContract reads every node call's bodies on a wire world's socket as
// the README's table of the node API writes them ("The mock node's API":
// each field's name, unit and encoding), with its own field names and
// decoders, never nodehttp's types, and holds them to what was meant: the
// request to what the caller handed the client (wireAsked), the answer to
// what the node behind the server answered (served). nodehttp's client and
// server are one package: an encoding both halves get wrong the same way
// (two fields' names swapped, the memo sent as text, not hex) crosses
// every round trip intact and reaches the pipeline as meant, so only the
// bytes show it. Such a build is a protocol break all the same: a node
// server or a worker of the release before it, during a rolling deploy,
// reads another expiration, another block number, or refuses every
// broadcast. Blind bugs 289, 290 and 291 were such edits, and passed every
// world. It sits right in front of the server, inside the middlebox,
// whose rewritten answers are not the node's.
type wireContract struct {
	w    *world
	next http.Handler
	rec  recorder // the server's answer; one call at a time
	buf  []byte   // the contract's rendering of the call's bodies
}

// wireAsked is what the caller handed the node client for the call under
// way (tallied records it, the pipeline's side of the metrics wrapper and
// the client): the transaction to broadcast, or the txid to look up.
type wireAsked struct {
	call string // "broadcast", "lookup", "head_block", "solid_block"; "" for none
	tx   tron.Transaction
	txid tron.Txid
}

// The contract's field names, as the README writes them. An optional field
// is left out when it holds its zero value.
var (
	contractTxFields     = []string{"txid", "ref_block_bytes", "ref_block_hash", "expiration", "timestamp", "fee_limit", "memo", "owner_address", "contract_address", "data", "signature"}
	contractInfoFields   = []string{"txid", "status"}
	contractInfoOptional = []string{"block_number", "block_time", "solid", "receipt", "logs", "node_solid"}
	contractBlockFields  = []string{"number", "block_id", "timestamp"}
	contractLogFields    = []string{"address", "topics", "data"}
)

func (c *wireContract) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w := c.w
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	asked := w.asked
	c.rec.reset()
	c.next.ServeHTTP(&c.rec, r)
	if asked.call != "" {
		// The usual bodies are checked by their bytes: a body equal to the
		// contract's own rendering of what was meant keeps the contract
		// (canonical). Any other is read field by field, and may keep it
		// too (another key order, another form of the same instant).
		if c.buf = canonicalRequest(c.buf[:0], asked); !bytes.Equal(bytes.TrimRight(body, jsonSpace), c.buf) || r.URL.Path != contractPaths[asked.call] {
			if msg := contractRequest(r.URL.Path, asked, body); msg != "" {
				panic(fmt.Sprintf("wire contract: %s %s: %s; body %.400s", asked.call, r.URL.Path, msg, body))
			}
		}
		sv := w.served
		ok := c.rec.code == http.StatusOK && sv.reached && sv.err == nil
		if c.buf = canonicalAnswer(c.buf[:0], asked.call, sv); !ok || !bytes.Equal(bytes.TrimRight(c.rec.body, jsonSpace), c.buf) {
			if msg := contractAnswer(asked.call, sv, c.rec.code, c.rec.body); msg != "" {
				panic(fmt.Sprintf("wire contract: %s %s answered %d: %s; body %.400s", asked.call, r.URL.Path, c.rec.code, msg, c.rec.body))
			}
		}
	}
	for k, v := range c.rec.header {
		rw.Header()[k] = v
	}
	rw.WriteHeader(c.rec.code)
	rw.Write(c.rec.body)
}

// contractStatus names a lookup's status as the contract writes it (its
// own table, not tron.Status.String, which the server encodes with).
var contractStatus = map[tron.Status]string{tron.Unknown: "unknown", tron.Pending: "pending", tron.Included: "included"}

// contractPaths are the paths of the node API's calls, by the README.
var contractPaths = map[string]string{
	"broadcast": "/wallet/broadcasttransaction", "lookup": "/wallet/gettransactioninfobyid",
	"head_block": "/wallet/getnowblock", "solid_block": "/walletsolidity/getnowblock",
}

// contractRequest says how body, sent to path, breaks the contract for
// the call asked, "" when it keeps it.
func contractRequest(path string, asked wireAsked, body []byte) string {
	if want := contractPaths[asked.call]; path != want {
		return "sent to " + path + ", the contract's path for it is " + want
	}
	switch asked.call {
	case "broadcast":
		var req map[string]json.RawMessage
		if err := json.Unmarshal(body, &req); err != nil {
			return "the body is not a JSON object: " + err.Error()
		}
		if msg := exactFields(req, []string{"transaction"}, nil); msg != "" {
			return msg
		}
		return contractTx(req["transaction"], asked.tx)
	case "lookup":
		var req map[string]json.RawMessage
		if err := json.Unmarshal(body, &req); err != nil {
			return "the body is not a JSON object: " + err.Error()
		}
		if msg := exactFields(req, []string{"txid"}, nil); msg != "" {
			return msg
		}
		return contractHex(req, "txid", asked.txid[:])
	}
	return "" // a block's request carries nothing
}

// contractTx holds a transaction's JSON to tx: byte fields in lowercase
// hex, addresses in base58check, times in milliseconds since the epoch,
// the fee limit in sun, and the txid the sender computed.
func contractTx(raw json.RawMessage, tx tron.Transaction) string {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(raw, &f); err != nil {
		return "transaction: not a JSON object: " + err.Error()
	}
	if msg := exactFields(f, contractTxFields, nil); msg != "" {
		return "transaction: " + msg
	}
	r := tx.Raw
	id := tx.Txid()
	for _, c := range []struct {
		field string
		want  []byte
	}{{"txid", id[:]}, {"ref_block_bytes", r.RefBlockBytes[:]}, {"ref_block_hash", r.RefBlockHash[:]},
		{"memo", r.Memo}, {"data", r.Contract.Data}, {"signature", tx.Signature}} {
		if msg := contractHex(f, c.field, c.want); msg != "" {
			return "transaction: " + msg
		}
	}
	for _, c := range []struct {
		field string
		want  int64
	}{{"expiration", r.Expiration}, {"timestamp", r.Timestamp}, {"fee_limit", r.FeeLimit}} {
		if msg := contractInt(f, c.field, c.want); msg != "" {
			return "transaction: " + msg
		}
	}
	for _, c := range []struct {
		field string
		want  tron.Address
	}{{"owner_address", r.Contract.Owner}, {"contract_address", r.Contract.Contract}} {
		if msg := contractAddress(f, c.field, c.want); msg != "" {
			return "transaction: " + msg
		}
	}
	return ""
}

// contractAnswer says how an answer (status code, body) breaks the
// contract for the call, given what the node behind the server did
// (sv), "" when it keeps it. A failure is a JSON object with a non-empty
// "error"; a success the node's own answer, field by field.
func contractAnswer(call string, sv served, code int, body []byte) string {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(body, &f); err != nil {
		return "the body is not a JSON object: " + err.Error()
	}
	if code != http.StatusOK {
		var msg string
		if json.Unmarshal(f["error"], &msg) != nil || msg == "" || len(f) != 1 {
			return `a failure's body must be {"error": "<why>"}`
		}
		return ""
	}
	if !sv.reached || sv.err != nil {
		return "a 200, though the node behind the server did not answer the call"
	}
	switch call {
	case "broadcast":
		if msg := exactFields(f, []string{"code"}, []string{"message"}); msg != "" {
			return msg
		}
		if msg := contractString(f, "code", string(sv.res.Code)); msg != "" {
			return msg
		}
		return contractString(f, "message", sv.res.Message)
	case "lookup":
		return contractInfo(f, sv.info)
	default:
		return contractBlock(f, sv.block)
	}
}

func contractInfo(f map[string]json.RawMessage, in tron.TxInfo) string {
	if msg := exactFields(f, contractInfoFields, contractInfoOptional); msg != "" {
		return msg
	}
	if msg := contractHex(f, "txid", in.Txid[:]); msg != "" {
		return msg
	}
	status := contractStatus[in.Status]
	if msg := contractString(f, "status", status); msg != "" {
		return msg
	}
	if msg := contractInt(f, "block_number", in.BlockNumber); msg != "" {
		return msg
	}
	if msg := contractInt(f, "node_solid", in.NodeSolid); msg != "" {
		return msg
	}
	if msg := contractTime(f, "block_time", in.BlockTime); msg != "" {
		return msg
	}
	if msg := contractString(f, "receipt", in.Receipt); msg != "" {
		return msg
	}
	var solid bool
	if raw, ok := f["solid"]; ok && json.Unmarshal(raw, &solid) != nil {
		return "solid: not a boolean: " + string(raw)
	}
	if solid != in.Solid {
		return fmt.Sprintf("solid: %v, the node answered %v", solid, in.Solid)
	}
	var logs []map[string]json.RawMessage
	if raw, ok := f["logs"]; ok && json.Unmarshal(raw, &logs) != nil {
		return "logs: not a list of objects: " + string(raw)
	}
	if len(logs) != len(in.Logs) {
		return fmt.Sprintf("logs: %d, the node answered %d", len(logs), len(in.Logs))
	}
	for i, l := range logs {
		want := in.Logs[i]
		if msg := exactFields(l, contractLogFields, nil); msg != "" {
			return fmt.Sprintf("logs[%d]: %s", i, msg)
		}
		if msg := contractHex(l, "address", want.Address[:]); msg != "" {
			return fmt.Sprintf("logs[%d]: %s", i, msg)
		}
		if msg := contractHex(l, "data", want.Data); msg != "" {
			return fmt.Sprintf("logs[%d]: %s", i, msg)
		}
		var topics []string
		if json.Unmarshal(l["topics"], &topics) != nil || len(topics) != len(want.Topics) {
			return fmt.Sprintf("logs[%d]: topics %s, the node answered %d topics", i, l["topics"], len(want.Topics))
		}
		for k, t := range topics {
			if !hexIs(t, want.Topics[k][:]) {
				return fmt.Sprintf("logs[%d]: topics[%d] %q, the node answered %x", i, k, t, want.Topics[k])
			}
		}
	}
	return ""
}

func contractBlock(f map[string]json.RawMessage, b tron.Block) string {
	if msg := exactFields(f, contractBlockFields, nil); msg != "" {
		return msg
	}
	if msg := contractInt(f, "number", b.Number); msg != "" {
		return msg
	}
	if msg := contractHex(f, "block_id", b.ID[:]); msg != "" {
		return msg
	}
	return contractTime(f, "timestamp", b.Time)
}

// exactFields says which of must is missing from f, or which of f's fields
// the contract does not name (must and may), "" when neither.
func exactFields(f map[string]json.RawMessage, must, may []string) string {
	for _, k := range must {
		if _, ok := f[k]; !ok {
			return fmt.Sprintf("no %q field", k)
		}
	}
	var extra []string
	for k := range f {
		if !slices.Contains(must, k) && !slices.Contains(may, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return fmt.Sprintf("fields the contract does not name: %s", strings.Join(extra, ", "))
	}
	return ""
}

// hexIs reports whether s is want in lowercase hex ("" for no bytes).
func hexIs(s string, want []byte) bool {
	if s != strings.ToLower(s) {
		return false
	}
	b, err := hex.DecodeString(s)
	return err == nil && bytes.Equal(b, want)
}

// contractHex checks that field holds want in lowercase hex; an absent
// field holds no bytes.
func contractHex(f map[string]json.RawMessage, field string, want []byte) string {
	var s string
	if raw, ok := f[field]; ok && json.Unmarshal(raw, &s) != nil {
		return field + ": not a string: " + string(raw)
	}
	if !hexIs(s, want) {
		return fmt.Sprintf("%s: %q is not %x in lowercase hex", field, s, want)
	}
	return ""
}

// contractInt checks that field holds want as a JSON number; an absent
// field holds 0.
func contractInt(f map[string]json.RawMessage, field string, want int64) string {
	var n int64
	if raw, ok := f[field]; ok && json.Unmarshal(raw, &n) != nil {
		return field + ": not an integer: " + string(raw)
	}
	if n != want {
		return fmt.Sprintf("%s: %d, meant %d", field, n, want)
	}
	return ""
}

// contractString checks that field holds want; an absent field holds "".
func contractString(f map[string]json.RawMessage, field, want string) string {
	var s string
	if raw, ok := f[field]; ok && json.Unmarshal(raw, &s) != nil {
		return field + ": not a string: " + string(raw)
	}
	if s != want {
		return fmt.Sprintf("%s: %q, meant %q", field, s, want)
	}
	return ""
}

// contractTime checks that field holds the instant want in RFC 3339; an
// absent field holds no time.
func contractTime(f map[string]json.RawMessage, field string, want time.Time) string {
	raw, ok := f[field]
	if !ok {
		if !want.IsZero() {
			return fmt.Sprintf("no %s, meant %s", field, want.Format(time.RFC3339Nano))
		}
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return field + ": not a string: " + string(raw)
	}
	got, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !got.Equal(want) {
		return fmt.Sprintf("%s: %q, meant %s", field, s, want.Format(time.RFC3339Nano))
	}
	return ""
}

// contractAddress checks that field holds want in base58check, by the
// model's own encoder (model.Base58Address), not tron's.
func contractAddress(f map[string]json.RawMessage, field string, want tron.Address) string {
	var s string
	if raw, ok := f[field]; ok && json.Unmarshal(raw, &s) != nil {
		return field + ": not a string: " + string(raw)
	}
	if w := model.Base58Address(want); s != w {
		return fmt.Sprintf("%s: %q, meant %s", field, s, w)
	}
	return ""
}

// jsonSpace is the white space JSON allows around a value (nodehttp's
// server ends each answer with a newline).
const jsonSpace = " \t\r\n"

// canonicalRequest appends the contract's rendering of the request asked,
// keys in the table's order, for the calls whose request is that simple
// (a lookup's; a block's is empty); nothing for a broadcast, which is read
// field by field.
func canonicalRequest(b []byte, asked wireAsked) []byte {
	switch asked.call {
	case "lookup":
		b = append(b, `{"txid":"`...)
		b = hex.AppendEncode(b, asked.txid[:])
		return append(b, `"}`...)
	case "head_block", "solid_block":
		return b
	}
	return append(b, 0) // no JSON body equals it
}

// canonicalAnswer appends the contract's rendering of the node's answer
// sv to the call: keys in the table's order, optional fields left out at
// their zero value, hex lowercase, times in RFC 3339 with the node's UTC.
func canonicalAnswer(b []byte, call string, sv served) []byte {
	switch call {
	case "broadcast":
		b = append(b, `{"code":`...)
		b = strconv.AppendQuote(b, string(sv.res.Code))
		if sv.res.Message != "" {
			b = append(b, `,"message":`...)
			b = strconv.AppendQuote(b, sv.res.Message)
		}
		return append(b, '}')
	case "lookup":
		in := sv.info
		b = append(b, `{"txid":"`...)
		b = hex.AppendEncode(b, in.Txid[:])
		b = append(b, `","status":`...)
		b = strconv.AppendQuote(b, contractStatus[in.Status])
		if in.BlockNumber != 0 {
			b = append(b, `,"block_number":`...)
			b = strconv.AppendInt(b, in.BlockNumber, 10)
		}
		if !in.BlockTime.IsZero() {
			b = append(b, `,"block_time":"`...)
			b = in.BlockTime.UTC().AppendFormat(b, time.RFC3339Nano)
			b = append(b, '"')
		}
		if in.Solid {
			b = append(b, `,"solid":true`...)
		}
		if in.Receipt != "" {
			b = append(b, `,"receipt":`...)
			b = strconv.AppendQuote(b, in.Receipt)
		}
		if len(in.Logs) > 0 {
			b = append(b, `,"logs":[`...)
			for i, l := range in.Logs {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, `{"address":"`...)
				b = hex.AppendEncode(b, l.Address[:])
				b = append(b, `","topics":[`...)
				for k, t := range l.Topics {
					if k > 0 {
						b = append(b, ',')
					}
					b = append(b, '"')
					b = hex.AppendEncode(b, t[:])
					b = append(b, '"')
				}
				b = append(b, `],"data":"`...)
				b = hex.AppendEncode(b, l.Data)
				b = append(b, `"}`...)
			}
			b = append(b, ']')
		}
		if in.NodeSolid != 0 {
			b = append(b, `,"node_solid":`...)
			b = strconv.AppendInt(b, in.NodeSolid, 10)
		}
		return append(b, '}')
	}
	b = append(b, `{"number":`...)
	b = strconv.AppendInt(b, sv.block.Number, 10)
	b = append(b, `,"block_id":"`...)
	b = hex.AppendEncode(b, sv.block.ID[:])
	b = append(b, `","timestamp":"`...)
	b = sv.block.Time.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...)
}
