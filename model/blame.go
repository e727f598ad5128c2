package model

// Which field a refusal may name. The intake contract answers an invalid
// request 422 with {"error": ..., "field": ...}, the field naming what is
// wrong. A client told "operation_id: missing" about a body whose amount is
// an object looks for a fault that is not there (independent bug 162: a
// reader that counted brackets inside strings read past a nested value and
// named another field, or none). Like post.go and reference.go this is
// written from the contract, not from intake's decoder: every fault the
// model finds in what the client sent, so that a request wrong in two
// places may be refused for either.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"

	"sluicesim/sluice"
)

// BodyField is the field a refusal names for a fault of the body as a
// whole (not JSON, not an object, data after it, too long).
const BodyField = "body"

// Blame is every fault the model finds in a request, by where it is.
type Blame struct {
	// Fields are the API's five fields (postFields' order) at fault:
	// missing, twice, not a JSON string, or a string that ReadIntent
	// refuses.
	Fields [len(postFields)]bool
	// Body: a fault no field owns: the media type, the size, the syntax,
	// a top-level value that is not an object, data after it, an empty or
	// unknown key (which a refusal may name by the key itself).
	Body bool
}

// Allows reports whether a refusal naming field may be right about the
// request: field is one of the API's fields at fault, or any other name
// ("body", an unknown key) when the body has a fault no field owns.
func (b Blame) Allows(field string) bool {
	for i, f := range postFields {
		if field == f {
			return b.Fields[i]
		}
	}
	return b.Body
}

// BlameOf finds every fault of a request: the raw request when raw is not
// nil (a hostile client's), else the payload sent in a tidy body.
func BlameOf(raw *RawPost, sent Payload) Blame {
	var b Blame
	if raw == nil {
		b.content(sent)
		return b
	}
	if refContentType(raw.ContentType) != "" || len(raw.Body) > PostBodyMax {
		b.Body = true // the media type or the size: refused before any field is read
	}
	vals, strs := b.object(raw.Body)
	p := Payload{ID: vals[0], Customer: vals[1], To: vals[2], Amount: vals[3], Asset: vals[4]}
	var c Blame
	c.content(p)
	for i := range c.Fields {
		// Only a string is read for its content: a field missing or not
		// a string is at fault already.
		b.Fields[i] = b.Fields[i] || (strs[i] && c.Fields[i])
	}
	return b
}

// namesAFault reports whether an Invalid answer's field (r.Field, ""
// when none was read) names a fault of what r's client sent, whose first
// fault by the model's reading is reason. The first fault's own field
// needs no second look, and neither does a name that is not the API's
// (the body, an unknown key) for a body whose first fault is its own;
// otherwise the refusal may name another fault of a request wrong in two
// places, which BlameOf lists.
func namesAFault(r *IntakeRecord, reason string) bool {
	if r.Field == "" {
		return true
	}
	switch first := reasonField(reason); {
	case r.Field == first:
		return true
	case first == BodyField && !slices.Contains(postFields[:], r.Field):
		return true
	}
	return BlameOf(r.Raw, r.Sent).Allows(r.Field)
}

// reasonField is the field a reason of ReadPost or ReadIntent (as the
// index files it) is about:
// one of the API's, or BodyField. A refusal naming it is right without a
// second look (BlameOf).
func reasonField(reason string) string {
	// The index files a raw post's refused form under "request " (its
	// content's reasons come bare, as ReadIntent gives them).
	reason = strings.TrimPrefix(reason, "request ")
	switch {
	case strings.HasPrefix(reason, "operation id "):
		return postFields[0]
	case strings.HasPrefix(reason, "customer "):
		return postFields[1]
	case strings.HasPrefix(reason, "recipient "):
		return postFields[2]
	case strings.HasPrefix(reason, "amount "):
		return postFields[3]
	case strings.HasPrefix(reason, "asset "):
		return postFields[4]
	case strings.HasPrefix(reason, "body "):
		for i, r := range postFieldReasons {
			if rest := reason[len("body "):]; rest == r.twice || rest == r.notString || rest == r.missing {
				return postFields[i]
			}
		}
	}
	return BodyField
}

// content marks the fields of p that ReadIntent refuses, each read alone.
func (b *Blame) content(p Payload) {
	if _, code := refOperationIDCode(p.ID, nil); code != 0 {
		b.Fields[0] = true
	}
	b.Fields[1] = refCustomer(p.Customer) != ""
	to, why := refAddress(p.To)
	b.Fields[2] = why != "" || to == refUSDTContract || to == refZeroAddress
	_, why = refUnits(p.Amount)
	b.Fields[3] = why != ""
	b.Fields[4] = p.Asset != sluice.Asset
}

// object reads body token by token to its end or its first syntax error,
// marking every member's fault (not stopping at the first, as refObject
// does): the values of the fields that are strings, and which are.
func (b *Blame) object(body []byte) (vals [len(postFields)]string, strs [len(postFields)]bool) {
	var seen [len(postFields)]bool
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	// next is the next token; false (and the body at fault) at a syntax
	// error or the end of the input.
	next := func() (json.Token, bool) {
		t, err := d.Token()
		if err != nil {
			b.Body = true
			return nil, false
		}
		return t, true
	}
	t, ok := next()
	if !ok {
		return vals, strs
	}
	if t != json.Delim('{') {
		b.Body = true
		return vals, strs
	}
	for {
		t, ok = next()
		if !ok {
			return vals, strs
		}
		if t == json.Delim('}') {
			break
		}
		key, _ := t.(string) // the decoder yields only strings as keys
		i := slices.Index(postFields[:], key)
		switch {
		case i < 0:
			b.Body = true
		case seen[i]:
			b.Fields[i] = true
		}
		v, ok := next()
		if !ok {
			return vals, strs
		}
		s, isString := v.(string)
		if d, nested := v.(json.Delim); nested && (d == '{' || d == '[') {
			// Skip the nested value whole, counting its delimiters (the
			// decoder reads strings inside it as tokens, brackets and
			// all, so a bracket in a string is no delimiter).
			for depth := 1; depth > 0; {
				t, ok := next()
				if !ok {
					return vals, strs
				}
				switch t {
				case json.Delim('{'), json.Delim('['):
					depth++
				case json.Delim('}'), json.Delim(']'):
					depth--
				}
			}
		}
		if i < 0 {
			continue
		}
		if !isString {
			b.Fields[i] = true
		} else if !seen[i] {
			vals[i], strs[i] = s, true // the first of two is the client's
		}
		seen[i] = true
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		b.Body = true // data after the object
	}
	for i, ok := range seen {
		if !ok {
			b.Fields[i] = true
		}
	}
	return vals, strs
}

// ReadRefusalField reads the "field" of a refusal's body ({"error": ...,
// "field": ..., "code": ...}): "" when it names none or the body is not a
// JSON object. The API's field names and "body" come back without an
// allocation (the world reads every refusal's).
func ReadRefusalField(body []byte) string {
	p := plainJSON{b: body}
	if p.next('{') {
		field, ok := "", true
		for n := 0; ok && !p.next('}'); n++ {
			if n > 0 && !p.next(',') {
				ok = false
				break
			}
			key, kok := p.key()
			switch {
			case !kok:
				ok = false
			case string(key) == "field":
				raw, special, sok := p.str()
				switch {
				case !sok || special:
					ok = false // escapes: encoding/json's to decode
				case string(raw) == BodyField:
					field = BodyField
				default:
					field = ""
					for _, f := range postFields {
						if string(raw) == f {
							field = f
						}
					}
					if field == "" {
						field = string(raw) // an unknown key
					}
				}
			default:
				ok = p.scalar()
			}
		}
		if ok && p.end() {
			return field
		}
	}
	var e struct {
		Field string `json:"field"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Field
}
