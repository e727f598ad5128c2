package intake

import (
	"strings"
	"unicode/utf8"
)

// scanSubmission is decodeSubmission's fast path: a reader for the one
// shape an honest client sends, a flat object of plain strings,
//
//	ws '{' ws [ member (ws ',' ws member)* ws ] '}' ws
//	member = string ws ':' ws string
//
// where a string holds no escape, no control character and only valid
// UTF-8. Such a string means exactly its bytes to encoding/json, so the
// scanner needs no unquoting and no token machinery; encoding/json's
// Decoder.Token, which decodeSubmissionTokens walks, allocates a discarded
// SyntaxError per value and a copy of every key and value on top.
//
// ok is false as soon as the body leaves that shape; the caller must then
// read it with decodeSubmissionTokens, which is the definition of every
// answer, so any error text that encoding/json composes (a syntax error, a
// truncation, a number, an escape, invalid UTF-8) comes from encoding/json
// itself. With ok true the answer is the one decodeSubmissionTokens gives,
// because the scanner follows its order: decodeSubmissionTokens reads the
// members in order, refuses at the first member whose key is empty,
// unknown or repeated (after reading that member's value, and before
// reading anything after it), then requires '}' and nothing but white space
// after it, and only then looks for missing fields in API order. The
// scanner returns those same refusals at the same points, and leaves to
// the token reader every body it cannot follow up to that point.
// TestScanSubmissionMatchesTokens and FuzzScanSubmission hold it to that.
func scanSubmission(body []byte) (sub Submission, verr *ValidationError, ok bool) {
	i := skipSpace(body, 0)
	if i == len(body) || body[i] != '{' {
		return Submission{}, nil, false
	}
	var (
		start, end [len(jsonFields)]int // each field's value, body[start:end]
		seen       [len(jsonFields)]bool
	)
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		i++
	} else {
		for {
			ks, ke, j, plain := scanPlainString(body, i)
			if !plain {
				return Submission{}, nil, false
			}
			j = skipSpace(body, j)
			if j == len(body) || body[j] != ':' {
				return Submission{}, nil, false
			}
			vs, ve, j, plain := scanPlainString(body, skipSpace(body, j+1))
			if !plain {
				return Submission{}, nil, false
			}
			key := body[ks:ke]
			f := fieldIndex(key)
			switch {
			case len(key) == 0:
				return Submission{}, &ValidationError{FieldBody, `unknown field ""`}, true
			case f < 0:
				return Submission{}, unknownField(string(key)), true
			case seen[f]:
				return Submission{}, &ValidationError{jsonFields[f], "duplicate field"}, true
			}
			seen[f], start[f], end[f] = true, vs, ve
			j = skipSpace(body, j)
			if j == len(body) {
				return Submission{}, nil, false
			}
			if body[j] == '}' {
				i = j + 1
				break
			}
			if body[j] != ',' {
				return Submission{}, nil, false
			}
			i = skipSpace(body, j+1)
		}
	}
	if skipSpace(body, i) != len(body) {
		return Submission{}, &ValidationError{FieldBody, "trailing data after the JSON object"}, true
	}
	n := 0
	for f := range jsonFields {
		if !seen[f] {
			return Submission{}, &ValidationError{jsonFields[f], "missing"}, true
		}
		n += end[f] - start[f]
	}
	// One string holds all five values: one allocation instead of five,
	// and a row that keeps its id or customer keeps only those bytes
	// alive, not the body with whatever padding it came with.
	var b strings.Builder
	b.Grow(n)
	for f := range jsonFields {
		b.Write(body[start[f]:end[f]])
	}
	all := b.String()
	var vals [len(jsonFields)]string
	at := 0
	for f := range jsonFields {
		vals[f] = all[at : at+end[f]-start[f]]
		at += end[f] - start[f]
	}
	return Submission{OperationID: vals[0], Customer: vals[1], ToAddress: vals[2], Amount: vals[3], Asset: vals[4]}, nil, true
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space (RFC 8259: space, tab, line feed, carriage return).
func skipSpace(body []byte, i int) int {
	for i < len(body) {
		switch body[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanPlainString reads the JSON string that starts at body[i]. Its
// content is body[start:end] and next is the index after its closing quote.
// plain is false if there is no string at i, it does not end, or it holds
// an escape, a control character or invalid UTF-8: strings whose meaning
// is not simply their bytes, left to encoding/json.
func scanPlainString(body []byte, i int) (start, end, next int, plain bool) {
	if i >= len(body) || body[i] != '"' {
		return 0, 0, 0, false
	}
	start = i + 1
	ascii := true
	for j := start; j < len(body); j++ {
		switch c := body[j]; {
		case c == '"':
			if !ascii && !utf8.Valid(body[start:j]) {
				return 0, 0, 0, false
			}
			return start, j, j + 1, true
		case c == '\\' || c < 0x20:
			return 0, 0, 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return 0, 0, 0, false
}

// fieldIndex is the index of key in jsonFields, or -1.
func fieldIndex(key []byte) int {
	for f, name := range jsonFields {
		if string(key) == name {
			return f
		}
	}
	return -1
}
