package model

// The model's own reading of a whole POST: the media type and the body, up
// to the five strings of a Payload. Like reference.go it is written from the
// API's written contract, not from intake's decoder: a decoder that is wrong
// in a self-consistent way (it keeps the last of two duplicate keys, reads
// only the first BodyMax bytes, ignores the Content-Type) would otherwise
// agree with itself.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"strconv"
	"strings"
)

// RawPost is a request exactly as a client sent it: its Content-Type
// header ("" when it sent none) and its body bytes.
type RawPost struct {
	ContentType string
	Body        []byte
}

// PostBodyMax is the contract's limit on a request body, in bytes. A body
// of exactly this many bytes is read; one byte more is refused whole, even
// when its first PostBodyMax bytes are a valid request.
const PostBodyMax = 16 << 10

// postFields are the five names of a submission, spelled exactly (keys are
// case-sensitive: "Amount" is not "amount"), in the API's order.
var postFields = [5]string{"operation_id", "customer", "to_address", "amount", "asset"}

// postFieldReasons are refObject's reasons about each of postFields, made
// once.
var postFieldReasons = func() (r [len(postFields)]struct{ twice, notString, missing string }) {
	for i, key := range postFields {
		r[i].twice = "has the key " + key + " twice"
		r[i].notString = "has a " + key + " that is not a JSON string"
		r[i].missing = "has no " + key
	}
	return r
}()

// ReadPost reads a raw POST as intake must: the media type is absent or
// application/json (type and subtype in any letter case, a charset only if
// it is UTF-8), the body at most PostBodyMax bytes and exactly one JSON
// object, whose keys are exactly the five field names, each once, each
// value a JSON string; only whitespace may follow it. reason is "" when the
// request's form is acceptable, and then p holds the five strings (which
// ReadIntent still has to judge); otherwise reason says why the request is
// refused before any field is read.
func ReadPost(r RawPost) (p Payload, reason string) { return readPost(r, nil) }

// readPost is ReadPost with the payload's strings made in texts (nil:
// strings of their own).
func readPost(r RawPost, texts *textArena) (p Payload, reason string) {
	if why := refContentType(r.ContentType); why != "" {
		return Payload{}, why
	}
	if len(r.Body) > PostBodyMax {
		return Payload{}, "body is longer than " + strconv.Itoa(PostBodyMax) + " bytes"
	}
	vals, why := refObject(r.Body, texts)
	if why != "" {
		return Payload{}, texts.cat("body ", why)
	}
	return Payload{ID: vals[0], Customer: vals[1], To: vals[2], Amount: vals[3], Asset: vals[4]}, ""
}

// refContentType says why a request's Content-Type header ("" for none)
// is refused, or "" when it is absent or application/json.
func refContentType(ct string) string {
	// "application/json" itself, the usual header, reads as itself with no
	// parameters: ParseMediaType is for every other spelling.
	if ct == "" || ct == "application/json" {
		return ""
	}
	// RFC 2045's grammar, read by the standard library: the rule is about
	// what the header says, and any HTTP client writes it so.
	mt, params, err := mime.ParseMediaType(ct)
	switch {
	case err != nil:
		return "content type is unreadable"
	case mt != "application/json": // ParseMediaType lowercases it
		return "content type is not application/json"
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return "content type names a charset other than UTF-8"
	}
	return ""
}

// refObject reads body as one JSON object of the five string fields, token
// by token: every value must itself be a single string token.
func refObject(body []byte, texts *textArena) ([len(postFields)]string, string) {
	if vals, why, ok := refObjectPlain(body, texts); ok {
		return vals, why
	}
	return refObjectDecoded(body)
}

// refObjectDecoded is refObject by encoding/json's tokens, for any body.
func refObjectDecoded(body []byte) ([len(postFields)]string, string) {
	var vals [len(postFields)]string
	var seen [len(postFields)]bool
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	next := func() (json.Token, string) {
		t, err := d.Token()
		if err == nil {
			return t, ""
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, "ends early"
		}
		return nil, "is not JSON"
	}
	t, why := next()
	if why != "" {
		return vals, why
	}
	if t != json.Delim('{') {
		return vals, "is not a JSON object"
	}
	for {
		t, why = next()
		if why != "" {
			return vals, why
		}
		if t == json.Delim('}') {
			break
		}
		key := t.(string) // the decoder only yields strings in key position
		i := -1
		for j, f := range postFields {
			if key == f {
				i = j
			}
		}
		if i < 0 {
			return vals, "has an unknown key " + strconv.Quote(key)
		}
		if seen[i] {
			return vals, postFieldReasons[i].twice
		}
		seen[i] = true
		v, why := next()
		if why != "" {
			return vals, why
		}
		s, ok := v.(string)
		if !ok {
			return vals, postFieldReasons[i].notString
		}
		vals[i] = s
	}
	// Anything but whitespace after the object is a second value (or
	// garbage): the body is not one object.
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return vals, "has data after the object"
	}
	for i, ok := range seen {
		if !ok {
			return vals, postFieldReasons[i].missing
		}
	}
	return vals, ""
}
