package model

import "bytes"

// Fast paths for the two JSON readings the model makes many times per run,
// a POST's body (refObject) and an answer's (ReadAnswer). Each reads only
// the plain form of its document, the form the worlds' clients and intake
// write: printable ASCII strings with at most the one-letter escapes,
// plain keys, whitespace between tokens. For a document of that form,
// encoding/json's reading is plain too, so the fast path finds exactly
// what it would; any other document (a \u escape, a byte outside printable
// ASCII, a value of an unexpected kind, anything malformed) makes the fast
// path give up, and the caller reads it with encoding/json as before,
// whose answers (and errors) then stand. fast_test.go compares both ways
// on edge cases and random mutations of them, and fuzzes them.

// plainJSON reads one document of the plain form, token by token.
type plainJSON struct {
	b []byte
	i int
	// s is b as a string, made on the first string value read when b is
	// small (an answer; not a POST padded to its limit): the values without
	// escapes are slices of it, one allocation for all of them.
	s string
}

// plainShareMax is the longest document whose values share one string.
const plainShareMax = 2 << 10

// space skips JSON whitespace.
func (p *plainJSON) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// next skips whitespace and consumes c if it comes next.
func (p *plainJSON) next(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// peek skips whitespace and says what comes next (0 at the end).
func (p *plainJSON) peek() byte {
	p.space()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// end reports whether only whitespace is left.
func (p *plainJSON) end() bool {
	p.space()
	return p.i == len(p.b)
}

// str reads a plain string token: its bytes between the quotes, raw, and
// whether it has escapes. ok is false (and nothing is consumed) if the
// next token is not a plain string.
func (p *plainJSON) str() (raw []byte, escaped, ok bool) {
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false, false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return p.b[start:j], escaped, true
		case c == '\\':
			if j+1 >= len(p.b) {
				return nil, false, false
			}
			switch p.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			default:
				return nil, false, false // \u, or not an escape
			}
			escaped = true
			j++
		case c < 0x20 || c > 0x7e:
			return nil, false, false
		}
	}
	return nil, false, false
}

// key reads a plain string with no escapes followed by a colon.
func (p *plainJSON) key() ([]byte, bool) {
	k, escaped, ok := p.str()
	if !ok || escaped || !p.next(':') {
		return nil, false
	}
	return k, true
}

// text reads a plain string token as the string encoding/json decodes.
func (p *plainJSON) text() (string, bool) {
	raw, escaped, ok := p.str()
	switch {
	case !ok:
		return "", false
	case escaped:
		return unescapePlain(raw), true
	}
	if len(p.b) > plainShareMax {
		return string(raw), true
	}
	if p.s == "" {
		p.s = string(p.b)
	}
	end := p.i - 1 // the closing quote
	return p.s[end-len(raw) : end], true
}

// scalar skips a string, a number (JSON's grammar) or true, false or null.
func (p *plainJSON) scalar() bool {
	switch c := p.peek(); {
	case c == '"':
		_, _, ok := p.str()
		return ok
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(p.b[p.i:], []byte(lit)) {
			p.i += len(lit)
			return true
		}
	}
	return false
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (p *plainJSON) number() bool {
	digits := func() int {
		n := 0
		for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case digits() == 0:
		return false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// field is the position in names of the one key names (encoding/json's
// match: exact, or else ignoring case; names are distinct lowercase ASCII,
// and key is ASCII), -1 for none.
func field(key []byte, names []string) int {
	for j, name := range names {
		if string(key) == name {
			return j
		}
	}
	for j, name := range names {
		if bytes.EqualFold(key, []byte(name)) {
			return j
		}
	}
	return -1
}

// unescapePlain undoes the one-letter escapes of a string str accepted.
func unescapePlain(raw []byte) string {
	out := make([]byte, 0, len(raw))
	for j := 0; j < len(raw); j++ {
		c := raw[j]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		j++
		switch raw[j] {
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		default: // '"', '\\', '/': itself
			c = raw[j]
		}
		out = append(out, c)
	}
	return string(out)
}

// refObjectPlain is refObject's fast path: one object holding each of the
// five keys exactly once, spelt exactly (refObject's keys are
// case-sensitive), each value a plain string. For such a body
// encoding/json's tokens are '{', key, value, ..., '}' and then the end, so
// refObject would find the same five strings and no reason. ok is false
// for any other body (a key missing, repeated or unknown included): the
// decoder then says why.
func refObjectPlain(body []byte) (vals [len(postFields)]string, ok bool) {
	var seen [len(postFields)]bool
	p := plainJSON{b: body}
	if !p.next('{') {
		return vals, false
	}
	for n := range len(postFields) {
		if n > 0 && !p.next(',') {
			return vals, false
		}
		key, ok := p.key()
		if !ok {
			return vals, false
		}
		f := -1
		for j, name := range postFields {
			if string(key) == name {
				f = j
			}
		}
		if f < 0 || seen[f] {
			return vals, false
		}
		seen[f] = true
		if vals[f], ok = p.text(); !ok {
			return vals, false
		}
	}
	return vals, p.next('}') && p.end()
}

// answerFields are the answer's string fields ReadAnswer keeps, by their
// JSON names, in answerWire's order; "history" is the one other it reads.
var answerFields = []string{"operation_id", "customer", "state", "to_address", "amount", "asset"}

// historyFields are a history entry's fields, by their JSON names, in
// HistoryEntry's order.
var historyFields = []string{"from", "to", "at", "txid", "retired_txid"}

// answerWire is an answer as ReadAnswer reads it.
type answerWire struct {
	id, customer, state, to, amount, asset string
	history                                []HistoryEntry
}

// readAnswerPlain is ReadAnswer's fast path: an object whose members are
// the answer's string fields (plain strings), at most one history (an
// array of objects whose members are all plain strings), and other keys
// with a plain string, a number, true, false or null, which
// encoding/json skips. A field given twice keeps its last value, as
// encoding/json does. ok is false for anything else.
func readAnswerPlain(body []byte) (w answerWire, ok bool) {
	p := plainJSON{b: body}
	if !p.next('{') {
		return w, false
	}
	fields := [...]*string{&w.id, &w.customer, &w.state, &w.to, &w.amount, &w.asset} // answerFields
	sawHistory := false
	for n := 0; !p.next('}'); n++ {
		if n > 0 && !p.next(',') {
			return w, false
		}
		key, ok := p.key()
		if !ok {
			return w, false
		}
		if f := field(key, answerFields); f >= 0 {
			if *fields[f], ok = p.text(); !ok {
				return w, false
			}
			continue
		}
		if field(key, []string{"history"}) < 0 {
			if !p.scalar() {
				return w, false
			}
			continue
		}
		if sawHistory || !p.next('[') {
			return w, false
		}
		sawHistory = true
		for m := 0; !p.next(']'); m++ {
			if m > 0 && !p.next(',') {
				return w, false
			}
			h, ok := readHistoryPlain(&p)
			if !ok {
				return w, false
			}
			w.history = append(w.history, h)
		}
	}
	return w, p.end()
}

// readHistoryPlain reads one history entry: an object of plain strings.
func readHistoryPlain(p *plainJSON) (h HistoryEntry, ok bool) {
	if !p.next('{') {
		return h, false
	}
	fields := [...]*string{&h.From, &h.To, &h.At, &h.Txid, &h.RetiredTxid}
	for n := 0; !p.next('}'); n++ {
		if n > 0 && !p.next(',') {
			return h, false
		}
		key, ok := p.key()
		if !ok {
			return h, false
		}
		v, ok := p.text()
		if !ok {
			return h, false
		}
		if f := field(key, historyFields); f >= 0 {
			*fields[f] = v
		}
	}
	return h, true
}
