package scenarios

import (
	"encoding/json"
	"strconv"
)

// The look reads every page it opens (a dozen a chaos seed, half a million
// in CI's gate), and encoding/json makes each of a page's strings on its
// own: that was most of a look's allocations. readPage reads the plain form
// the API writes instead, its values slices of one string (keys no field
// takes are read past), and leaves anything else to encoding/json, whose
// reading (and error) then stands: a key that is a field's name but for
// case (encoding/json matches them ignoring case) or comes twice (it
// merges objects), a string with an escape or a byte outside printable
// ASCII, a number that is not an integer in range, a null, a value of
// another kind. TestReadPageAsEncodingJSON holds both readings equal over
// the pages the worlds serve and mutations of them.

// readPage reads body into *p (zeroed first) as json.Unmarshal would,
// using buf's decision and evidence for the page's.
func readPage(body []byte, p *lookPage, buf *pageBuf) error {
	*p = lookPage{}
	if readPagePlain(body, p, buf) {
		return nil
	}
	*p = lookPage{}
	return json.Unmarshal(body, p)
}

// pageBuf is the storage readPage reuses from look to look.
type pageBuf struct {
	decision opDecision
	evidence opEvidence
	actions  []string
	txids    []string
}

// pageScan reads a page's plain form; ok false gives the page up.
type pageScan struct {
	b []byte
	s string // b as a string, made on the first string value
	i int
}

func (r *pageScan) space() {
	for r.i < len(r.b) && (r.b[r.i] == ' ' || r.b[r.i] == '\t' || r.b[r.i] == '\n' || r.b[r.i] == '\r') {
		r.i++
	}
}

// next skips whitespace and consumes c if it comes next.
func (r *pageScan) next(c byte) bool {
	r.space()
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

// raw reads a plain string's bytes (printable ASCII, no escape).
func (r *pageScan) raw() (from, to int, ok bool) {
	if !r.next('"') {
		return 0, 0, false
	}
	from = r.i
	for ; r.i < len(r.b); r.i++ {
		switch c := r.b[r.i]; {
		case c == '"':
			r.i++
			return from, r.i - 1, true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return 0, 0, false
		}
	}
	return 0, 0, false
}

func (r *pageScan) text() (string, bool) {
	from, to, ok := r.raw()
	if !ok {
		return "", false
	}
	if r.s == "" {
		r.s = string(r.b)
	}
	return r.s[from:to], true
}

func (r *pageScan) integer() (int64, bool) {
	r.space()
	from := r.i
	for r.i < len(r.b) && (r.b[r.i] == '-' || r.b[r.i] >= '0' && r.b[r.i] <= '9') {
		r.i++
	}
	if r.i < len(r.b) && (r.b[r.i] == '.' || r.b[r.i] == 'e' || r.b[r.i] == 'E' || r.b[r.i] == '+') {
		return 0, false
	}
	// JSON's integers: no leading zero, no plus (ParseInt takes "+1", "01").
	n := r.b[from:r.i]
	if len(n) == 0 || n[0] == '+' || len(n) > 1 && n[0] == '0' || len(n) > 2 && n[0] == '-' && n[1] == '0' {
		return 0, false
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	return v, err == nil
}

func (r *pageScan) boolean() (v, ok bool) {
	r.space()
	for _, w := range [...]string{"true", "false"} {
		if len(r.b)-r.i >= len(w) && string(r.b[r.i:r.i+len(w)]) == w {
			r.i += len(w)
			return w == "true", true
		}
	}
	return false, false
}

// skip reads past one value of any kind, nested ones included.
func (r *pageScan) skip() bool {
	r.space()
	if r.i >= len(r.b) {
		return false
	}
	switch c := r.b[r.i]; {
	case c == '"':
		_, _, ok := r.raw()
		return ok
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		r.i++
		if r.next(closer) {
			return true
		}
		for {
			if c == '{' {
				if _, _, ok := r.raw(); !ok || !r.next(':') {
					return false
				}
			}
			if !r.skip() {
				return false
			}
			if r.next(closer) {
				return true
			}
			if !r.next(',') {
				return false
			}
		}
	case c == 't' || c == 'f':
		_, ok := r.boolean()
		return ok
	case c == 'n':
		if len(r.b)-r.i >= 4 && string(r.b[r.i:r.i+4]) == "null" {
			r.i += 4
			return true
		}
		return false
	default:
		_, ok := r.integer()
		return ok
	}
}

// object reads an object's members, handing each key to field, which reads
// the value and says whether it could; seen guards against a key twice.
func (r *pageScan) object(names []string, field func(k int) bool) bool {
	if !r.next('{') {
		return false
	}
	if r.next('}') {
		return true
	}
	var seen uint64
	for {
		from, to, ok := r.raw()
		if !ok || !r.next(':') {
			return false
		}
		k := pageKey(string(r.b[from:to]), names)
		switch {
		case k == -2:
			return false
		case k == -1:
			if !r.skip() {
				return false
			}
		case seen&(1<<k) != 0:
			return false
		default:
			seen |= 1 << k
			if !field(k) {
				return false
			}
		}
		if r.next('}') {
			return true
		}
		if !r.next(',') {
			return false
		}
	}
}

// pageKey is key's index in names, -1 for a key no field takes, -2 for one
// that is a name but for case (encoding/json's to match).
func pageKey(key string, names []string) int {
	for k, n := range names {
		if key == n {
			return k
		}
	}
	for _, n := range names {
		if len(key) == len(n) && equalFoldASCII(key, n) {
			return -2
		}
	}
	return -1
}

func equalFoldASCII(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y || (x < 'a' || x > 'z') && a[i] != b[i] {
			return false
		}
	}
	return true
}

var (
	pageNames     = []string{"operation_id", "state", "txid", "parked", "waited", "actions", "decision", "evidence", "builds", "parks", "park_reason", "parked_since", "first_sent_at", "created_at", "updated_at", "txids", "customer", "to_address", "amount", "asset"}
	decisionNames = []string{"action", "reason", "waited", "rebuilds"}
	evidenceNames = []string{"txid", "lookup", "expiration", "margin", "solid_number", "solid_time", "lookup_solid", "receipt", "block_number", "proves", "seen_solid"}
)

func readPagePlain(body []byte, p *lookPage, buf *pageBuf) bool {
	r := &pageScan{b: body}
	var ok bool
	str := func(to *string) bool { *to, ok = r.text(); return ok }
	num := func(to *int64) bool { *to, ok = r.integer(); return ok }
	small := func(to *int) bool {
		v, ok := r.integer()
		*to = int(v)
		return ok && int64(int(v)) == v
	}
	// strs reads an array of strings into *to, in storage kept in *keep.
	strs := func(to, keep *[]string) bool {
		if !r.next('[') {
			return false
		}
		*to = (*keep)[:0]
		if !r.next(']') {
			for {
				a, ok := r.text()
				if !ok {
					return false
				}
				*to = append(*to, a)
				if r.next(']') {
					break
				}
				if !r.next(',') {
					return false
				}
			}
		}
		if *to == nil {
			*to = []string{} // as encoding/json reads [] (no allocation)
		}
		*keep = *to
		return true
	}
	top := func(k int) bool {
		switch k {
		case 0:
			return str(&p.OperationID)
		case 1:
			return str(&p.State)
		case 2:
			return str(&p.Txid)
		case 3:
			p.Parked, ok = r.boolean()
			return ok
		case 4:
			return str(&p.Waited)
		case 5:
			return strs(&p.Actions, &buf.actions)
		case 6:
			d := &buf.decision
			*d = opDecision{}
			p.Decision = d
			return r.object(decisionNames, func(k int) bool {
				switch k {
				case 0:
					return str(&d.Action)
				case 1:
					return str(&d.Reason)
				case 2:
					return str(&d.Waited)
				default:
					return small(&d.Rebuilds)
				}
			})
		case 7:
			e := &buf.evidence
			*e = opEvidence{}
			p.Evidence = e
			return r.object(evidenceNames, func(k int) bool {
				switch k {
				case 0:
					return str(&e.Txid)
				case 1:
					return str(&e.Lookup)
				case 2:
					return str(&e.Expiration)
				case 3:
					return str(&e.Margin)
				case 4:
					return num(&e.SolidNumber)
				case 5:
					return str(&e.SolidTime)
				case 6:
					return num(&e.LookupSolid)
				case 7:
					return str(&e.Receipt)
				case 8:
					return num(&e.BlockNumber)
				case 9:
					e.Proves, ok = r.boolean()
					return ok
				default:
					var seen bool
					seen, ok = r.boolean()
					e.SeenSolid = optFalse
					if seen {
						e.SeenSolid = optTrue
					}
					return ok
				}
			})
		case 8:
			return small(&p.Builds)
		case 9:
			return small(&p.Parks)
		case 10:
			return str(&p.ParkReason)
		case 11:
			return str(&p.ParkedSince)
		case 12:
			return str(&p.FirstSentAt)
		case 13:
			return str(&p.CreatedAt)
		case 14:
			return str(&p.UpdatedAt)
		case 15:
			return strs(&p.Txids, &buf.txids)
		case 16:
			return str(&p.Customer)
		case 17:
			return str(&p.ToAddress)
		case 18:
			return str(&p.Amount)
		default:
			return str(&p.Asset)
		}
	}
	if !r.object(pageNames, top) {
		return false
	}
	r.space()
	return r.i == len(r.b)
}
