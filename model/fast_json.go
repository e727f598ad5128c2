package model

import (
	"bytes"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Fast paths for the two JSON readings the model makes many times per run,
// a POST's body (refObject) and an answer's (ReadAnswer). Each reads its
// document token by token the way encoding/json does, as far as it can be
// sure to: whitespace between tokens, strings as encoding/json's scanner
// accepts them (its escapes, \u ones included, and any byte from 0x20 up),
// decoded as encoding/json decodes them (unescapePlain is its unquoting),
// numbers by JSON's grammar, true, false and null; an answer's keys must
// be plain (printable ASCII, no escapes: encoding/json matches them to
// fields ignoring case, which the fast path does only for ASCII). Where
// encoding/json's reading depends on more than that (a syntax error, a
// value of an unexpected kind for an answer), the fast path gives up, and
// the caller reads the document with encoding/json as before, whose
// answers (and errors) then stand. fast_test.go compares both ways on edge
// cases and random mutations of them, and fuzzes them.

// plainJSON reads one document of the plain form, token by token.
type plainJSON struct {
	b []byte
	i int
	// s is b as a string, made on the first string value read when b is
	// small (an answer; not a POST padded to its limit): the values without
	// escapes are slices of it, one allocation for all of them.
	s string
	// texts, if set, is where the values are made instead.
	texts *textArena
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

// str reads a string token as encoding/json's scanner accepts it: its
// bytes between the quotes, raw, and whether they need unescapePlain
// (an escape, or a byte outside ASCII). ok is false (and nothing is
// consumed) if the next token is not a whole string.
func (p *plainJSON) str() (raw []byte, special, ok bool) {
	p.space()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false, false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return p.b[start:j], special, true
		case c == '\\':
			if j+1 >= len(p.b) {
				return nil, false, false
			}
			switch p.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if getu4(p.b[j:]) < 0 {
					return nil, false, false
				}
				j += 4
			default:
				return nil, false, false // not an escape
			}
			special = true
			j++
		case c < 0x20:
			return nil, false, false
		case c >= utf8.RuneSelf:
			special = true
		}
	}
	return nil, false, false
}

// getu4 is encoding/json's: the value of the \uXXXX escape s starts with,
// -1 if it does not start with one.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c = c - '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// key reads a plain string (printable ASCII, no escapes) followed by a
// colon.
func (p *plainJSON) key() ([]byte, bool) {
	k, special, ok := p.str()
	if !ok || special || !p.next(':') {
		return nil, false
	}
	for _, c := range k {
		if c > 0x7e {
			return nil, false
		}
	}
	return k, true
}

// text reads a string token as the string encoding/json decodes.
func (p *plainJSON) text() (string, bool) {
	raw, special, ok := p.str()
	switch {
	case !ok:
		return "", false
	case special:
		return unescapePlain(raw, p.texts), true
	case p.texts != nil:
		return p.texts.str(raw), true
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

// unescapePlain is encoding/json's unquoting of a string str accepted:
// escapes undone (a \u escape of half a surrogate pair that has no other
// half reads as U+FFFD), and each byte that is not part of a UTF-8
// sequence replaced by U+FFFD.
// The string is made in texts (nil: its own).
func unescapePlain(raw []byte, texts *textArena) string {
	if !bytes.ContainsRune(raw, '\\') && utf8.Valid(raw) {
		return texts.str(raw)
	}
	var buf [128]byte
	out := buf[:0]
	for r := 0; r < len(raw); {
		c := raw[r]
		switch {
		case c == '\\':
			r++
			switch c = raw[r]; c {
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
			case 'u':
				rr := getu4(raw[r-1:])
				r += 5
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(raw[r:])); dec != unicode.ReplacementChar {
						r += 6 // a valid pair
						out = utf8.AppendRune(out, dec)
						continue
					}
					rr = unicode.ReplacementChar
				}
				out = utf8.AppendRune(out, rr)
				continue
			} // '"', '\\', '/': itself
			out = append(out, c)
			r++
		case c < utf8.RuneSelf:
			out = append(out, c)
			r++
		default:
			rr, size := utf8.DecodeRune(raw[r:])
			out = utf8.AppendRune(out, rr)
			r += size
		}
	}
	return texts.str(out)
}

// refObjectPlain is refObject's fast path. It walks the body as
// refObjectDecoded walks encoding/json's tokens, to the same decision:
// the five strings, or the first reason to refuse the body that the walk
// meets (an unknown or repeated key, a value that is not a string, the end
// of the body between two tokens, data after the object, a key missing).
// Up to that point every token must be one the fast path reads exactly as
// encoding/json does (see the top of this file); ok is false when one is
// not (a syntax error among them), and the decoder then says why.
func refObjectPlain(body []byte, texts *textArena) (vals [len(postFields)]string, why string, ok bool) {
	p := plainJSON{b: body, texts: texts}
	// at reports whether a token follows (only whitespace is left: the
	// decoder's next token is io.EOF).
	at := func() bool { p.space(); return p.i < len(p.b) }
	if !at() {
		return vals, "ends early", true
	}
	switch p.b[p.i] {
	case '{':
		p.i++
	case '[':
		return vals, "is not a JSON object", true
	default:
		if p.scalar() {
			return vals, "is not a JSON object", true
		}
		return vals, "", false
	}
	var seen [len(postFields)]bool
	if !at() {
		return vals, "ends early", true
	}
	if p.b[p.i] == '}' {
		p.i++
	} else {
		for {
			if p.b[p.i] != '"' {
				return vals, "", false
			}
			key, ok := p.text()
			if !ok {
				return vals, "", false
			}
			f := -1
			for j, name := range postFields {
				if key == name {
					f = j
				}
			}
			switch {
			case f < 0:
				return vals, "has an unknown key " + strconv.Quote(key), true
			case seen[f]:
				return vals, postFieldReasons[f].twice, true
			}
			seen[f] = true
			if !at() {
				return vals, "ends early", true
			}
			if p.b[p.i] != ':' {
				return vals, "", false
			}
			p.i++
			if !at() {
				return vals, "ends early", true
			}
			switch p.b[p.i] {
			case '"':
				if vals[f], ok = p.text(); !ok {
					return vals, "", false
				}
			case '{', '[':
				return vals, postFieldReasons[f].notString, true
			default:
				if p.scalar() {
					return vals, postFieldReasons[f].notString, true
				}
				return vals, "", false
			}
			if !at() {
				return vals, "ends early", true
			}
			if p.b[p.i] == '}' {
				p.i++
				break
			}
			if p.b[p.i] != ',' {
				return vals, "", false
			}
			p.i++
			if !at() {
				return vals, "ends early", true
			}
		}
	}
	if at() {
		return vals, "has data after the object", true
	}
	for i, ok := range seen {
		if !ok {
			return vals, postFieldReasons[i].missing, true
		}
	}
	return vals, "", true
}

// answerFields are the answer's string fields ReadAnswer keeps, by their
// JSON names, in answerWire's order; "history" is the one other it reads.
var answerFields = []string{"operation_id", "customer", "state", "to_address", "amount", "asset", "txid"}

// historyFields are a history entry's fields, by their JSON names, in
// HistoryEntry's order.
var historyFields = []string{"from", "to", "at", "txid", "retired_txid"}

// answerWire is an answer as ReadAnswer reads it.
type answerWire struct {
	id, customer, state, to, amount, asset, txid string
	history                                      []HistoryEntry
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
	fields := [...]*string{&w.id, &w.customer, &w.state, &w.to, &w.amount, &w.asset, &w.txid} // answerFields
	sawHistory := false
	// The history is read here first, and copied out whole at the end: one
	// allocation for the usual few entries.
	var histBuf [8]HistoryEntry
	hist := histBuf[:0]
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
			hist = append(hist, h)
		}
	}
	if len(hist) > 0 {
		w.history = append([]HistoryEntry(nil), hist...)
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
