package intake

import (
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// The answers are written by hand rather than with json.Marshal: every
// request ends in one, and reflection, boxing the value and building the
// GET answer's history as strings showed in the simulator's profiles.
// Each writes exactly the bytes json.Marshal writes for its struct (member
// order, omitempty, HTML-safe escaping): withdrawal and errorBody, and for
// the GET answer the structs fast_answer_test.go declares;
// TestAnswersMatchMarshal and FuzzAnswersMatchMarshal hold them to it.

// appendJSON appends w as json.Marshal writes it.
func (w withdrawal) appendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	dst = w.appendFields(dst)
	return append(dst, '}')
}

// appendFields appends w's members without the braces, for the GET answer,
// which opens with them.
func (w withdrawal) appendFields(dst []byte) []byte {
	dst = appendMember(dst, `"operation_id":`, w.OperationID)
	dst = appendMember(dst, `,"customer":`, w.Customer)
	dst = appendMember(dst, `,"state":`, w.State)
	dst = appendMember(dst, `,"to_address":`, w.ToAddress)
	dst = appendMember(dst, `,"amount":`, w.Amount)
	dst = appendMember(dst, `,"asset":`, w.Asset)
	if w.Txid != "" {
		dst = appendMember(dst, `,"txid":`, w.Txid)
	}
	return dst
}

// appendOperation appends op's answer: summarize(op, to).appendJSON, with
// the address, amount and txid formatted in place instead of as strings
// first (every POST and GET answers with one).
func appendOperation(dst []byte, op sluice.Operation, to string) []byte {
	dst = append(dst, '{')
	dst = appendOperationFields(dst, op, to)
	return append(dst, '}')
}

// appendOperationFields is summarize(op, to).appendFields. Base58, decimal
// digits and hex need no JSON escaping.
func appendOperationFields(dst []byte, op sluice.Operation, to string) []byte {
	dst = appendMember(dst, `"operation_id":`, string(op.ID))
	dst = appendMember(dst, `,"customer":`, string(op.Request.Customer))
	dst = appendMember(dst, `,"state":`, op.State.String())
	if to != "" {
		dst = appendMember(dst, `,"to_address":`, to)
	} else {
		dst = append(op.Request.To.Append(append(dst, `,"to_address":"`...)), '"')
	}
	dst = append(op.Request.Amount.Append(append(dst, `,"amount":"`...)), '"')
	dst = appendMember(dst, `,"asset":`, op.Request.Asset)
	return appendTxidMember(dst, `,"txid":`, op.Envelope.Txid)
}

// json is e as json.Marshal writes it, with room for the newline that ends
// an answer.
func (e errorBody) json() []byte {
	const punctuation = len(`{"error":"","field":"","code":""}`) + 1
	return e.appendJSON(make([]byte, 0, len(e.Error)+len(e.Field)+len(e.Code)+punctuation))
}

// appendJSON appends e as json.Marshal writes it.
func (e errorBody) appendJSON(dst []byte) []byte {
	dst = appendMember(append(dst, '{'), `"error":`, e.Error)
	if e.Field != "" {
		dst = appendMember(dst, `,"field":`, e.Field)
	}
	if e.Code != "" {
		dst = appendMember(dst, `,"code":`, e.Code)
	}
	return append(dst, '}')
}

// appendDetail appends the GET answer: the withdrawal's members, then its
// build count and reason, and a summary of its event log, oldest first:
//
//	{...withdrawal, "builds": 0, "reason": "...", "history": [
//	  {"from": "none", "to": "requested", "at": "...", "note": "...",
//	   "txid": "...", "retired_txid": "..."}, ...]}
//
// "reason", "note", "txid" and "retired_txid" are left out when empty;
// "from" is "none" for the creation event; "at" is the store clock's time
// in RFC 3339 with nanoseconds, UTC; "retired_txid" is, on a rebuild, the
// txid given up. It is written straight from the operation, times and
// txids formatted in place, as json.Marshal writes the structs that
// fast_answer_test.go declares for it.
func appendDetail(dst []byte, op sluice.Operation, events []sluice.Event) []byte {
	dst = append(dst, '{')
	dst = appendOperationFields(dst, op, "")
	dst = strconv.AppendInt(append(dst, `,"builds":`...), int64(op.Builds), 10)
	if op.Reason != "" {
		dst = appendMember(dst, `,"reason":`, op.Reason)
	}
	dst = append(dst, `,"history":[`...)
	for i, e := range events {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendMember(dst, `{"from":`, e.From.String())
		dst = appendMember(dst, `,"to":`, e.To.String())
		var at [64]byte
		dst = appendJSONString(append(dst, `,"at":`...), e.At.UTC().AppendFormat(at[:0], time.RFC3339Nano))
		if e.Note != "" {
			dst = appendMember(dst, `,"note":`, e.Note)
		}
		dst = appendTxidMember(dst, `,"txid":`, e.Txid)
		dst = appendTxidMember(dst, `,"retired_txid":`, e.RetiredTxid)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// appendMember appends a member whose key and separators are in key.
func appendMember(dst []byte, key, value string) []byte {
	return appendJSONString(append(dst, key...), value)
}

// appendTxidMember appends a txid member unless t is zero (omitempty on
// txidString's "").
func appendTxidMember(dst []byte, key string, t tron.Txid) []byte {
	if t.IsZero() {
		return dst
	}
	dst = append(append(dst, key...), '"')
	return append(hex.AppendEncode(dst, t[:]), '"')
}

// appendJSONString appends s as a JSON string, escaped as json.Marshal
// escapes it. ASCII is escaped here; a string with any other byte is left
// to encoding/json (invalid UTF-8, U+2028 and U+2029 have rules of their
// own there), which none of the usual answers holds.
func appendJSONString[T string | []byte](dst []byte, s T) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			b, err := json.Marshal(string(s))
			if err != nil {
				panic("intake: marshal string: " + err.Error()) // a string always marshals
			}
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default: // other control characters, and <, > and & for HTML's sake
			const digits = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', digits[c>>4], digits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
