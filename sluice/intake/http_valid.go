package intake

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// walkValidSubmission is decodeSubmission's second path: it reads a body
// that is valid JSON (json.Valid) but not the plain shape scanSubmission
// follows: a value that is a number, null, an array or an object, a string
// with an escape, a top-level value that is not an object. Such bodies are
// the hostile clients' daily bread, and encoding/json's Decoder, which
// decodeSubmissionTokens walks, allocates tens of times for each (a copy of
// every token, a discarded SyntaxError at the end of every value).
//
// On valid JSON the token reader can meet no syntax error, so its answer is
// decided by the rules alone, which this walk applies in the token reader's
// order: a top-level value that is not an object is refused; the members
// are read in order, and the first whose key is empty, unknown or repeated
// is refused; nothing but white space can follow the object; then the
// fields are checked in API order, missing, not a string, or not text
// (textFault). Keys and values are decoded as encoding/json decodes them: a
// string with no escape and valid UTF-8 is its bytes, any other goes
// through json.Unmarshal.
// TestScanSubmissionMatchesTokens and FuzzScanSubmission hold
// decodeSubmission, and so this walk, to the token reader's answers.
func walkValidSubmission(body []byte) (Submission, *ValidationError) {
	i := skipSpace(body, 0)
	if body[i] != '{' {
		return Submission{}, &ValidationError{FieldBody, "want a JSON object"}
	}
	var (
		start, end [len(jsonFields)]int // each field's raw value, body[start:end]
		seen       [len(jsonFields)]bool
	)
	i = skipSpace(body, i+1)
	for body[i] != '}' {
		ks := i
		i = skipValue(body, i)
		key := validString(body[ks:i])
		i = skipSpace(body, i)     // to the ':'
		vs := skipSpace(body, i+1) // to the value
		i = skipValue(body, vs)
		f := fieldIndex([]byte(key))
		switch {
		case key == "":
			return Submission{}, &ValidationError{FieldBody, `unknown field ""`}
		case f < 0:
			return Submission{}, unknownField(key)
		case seen[f]:
			return Submission{}, &ValidationError{jsonFields[f], "duplicate field"}
		}
		seen[f], start[f], end[f] = true, vs, i
		i = skipSpace(body, i)
		if body[i] == ',' {
			i = skipSpace(body, i+1)
		}
	}
	var vals [len(jsonFields)]string
	for f, name := range jsonFields {
		if !seen[f] {
			return Submission{}, &ValidationError{name, "missing"}
		}
		raw := body[start[f]:end[f]]
		if raw[0] != '"' {
			reason := "must be a JSON string"
			if name == FieldAmount {
				reason = `must be a JSON string such as "12.50", not a number or other value`
			}
			return Submission{}, &ValidationError{name, reason}
		}
		if why := textFault(raw); why != "" {
			return Submission{}, &ValidationError{name, why}
		}
		vals[f] = validString(raw)
	}
	return Submission{OperationID: vals[0], Customer: vals[1], ToAddress: vals[2], Amount: vals[3], Asset: vals[4]}, nil
}

// validString is the string a valid JSON string literal (quotes included)
// decodes to.
func validString(lit []byte) string {
	content := lit[1 : len(lit)-1]
	if !strings.Contains(string(content), `\`) && utf8.Valid(content) {
		return string(content)
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		panic("intake: a valid JSON string does not decode: " + err.Error())
	}
	return s
}

// skipValue returns the index just past the JSON value that starts at
// body[i], in a body that is valid JSON.
func skipValue(body []byte, i int) int {
	switch body[i] {
	case '"':
		for i++; body[i] != '"'; i++ {
			if body[i] == '\\' {
				i++ // the escaped byte; \u's hex digits are plain bytes
			}
		}
		return i + 1
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch body[i] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			case '"':
				i = skipValue(body, i) - 1
			}
		}
	}
	// A number, true, false or null: up to the next delimiter.
	for i < len(body) {
		switch body[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}
