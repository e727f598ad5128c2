package hostile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// BodyMax is the API's written limit on a request body, in bytes; the
// body-size cases sit on either side of it. (A test pins it to intake's.)
const BodyMax = 16 << 10

// Fields are the five fields of a valid submission, the starting point of
// every case, and the customers the caller has funded besides Customer.
type Fields struct {
	ID, Customer, To, Amount, Asset string
	// Others are valid customer ids other than Customer that the caller's
	// store has funded: the other-customer case sends one of them, so that
	// its request is a withdrawal intake creates (or, under an id already
	// taken, a conflict) rather than one refused for want of funds. With
	// none, that case sends Customer itself.
	Others []string
}

// Post is one hostile request, ready to send.
type Post struct {
	Category, Case string
	// ContentType is the header to send; "" sends none.
	ContentType string
	Body        []byte
	// ID is the operation id the body carries, as spelled in it: the
	// record's id for matching answers to rows.
	ID string
}

// Rand is the randomness a case draws from (math/rand/v2's *Rand has it):
// the world's data stream, or a fixed seed for the corpus.
type Rand interface {
	IntN(n int) int
	Uint32() uint32
}

// Category is one family of edge inputs.
type Category struct {
	Name string
	// Doc says what the category sends, in one line (the README's table).
	Doc   string
	Cases []Case
}

// Case is one way of spoiling or re-spelling a submission.
type Case struct {
	Name string
	make func(b Fields, r Rand) Post
}

// Make builds the case's request from b.
func (c Case) Make(b Fields, r Rand) Post { return c.make(b, r) }

const jsonType = "application/json"

// Categories is the generator's catalog, in a fixed order.
var Categories = []Category{
	{
		Name: "id-spelling",
		Doc:  "operation ids in other letter cases (one operation), and wrapped in whitespace, braces, `urn:uuid:`, without hyphens, with look-alike hyphens or control bytes one case bit from a digit (refused)",
		Cases: []Case{
			idCase("upper", strings.ToUpper),
			{"mixed", func(b Fields, r Rand) Post {
				id := []byte(b.ID)
				for i, c := range id {
					if 'a' <= c && c <= 'f' && r.IntN(2) == 0 {
						id[i] = c - 'a' + 'A'
					}
				}
				b.ID = string(id)
				return plain(b)
			}},
			idCase("space-before", func(s string) string { return " " + s }),
			idCase("newline-after", func(s string) string { return s + "\n" }),
			idCase("tabs", func(s string) string { return "\t" + s + "\t" }),
			idCase("nbsp-after", func(s string) string { return s + "\u00a0" }),
			idCase("braces", func(s string) string { return "{" + s + "}" }),
			idCase("urn", func(s string) string { return "urn:uuid:" + s }),
			idCase("no-hyphens", func(s string) string { return strings.ReplaceAll(s, "-", "") }),
			idCase("unicode-hyphen", func(s string) string { return strings.Replace(s, "-", "\u2010", 1) }),
			{"case-bit-on-digit", func(b Fields, r Rand) Post {
				// A digit with its letter-case bit cleared is a control
				// byte (0x10-0x19): a parser that folds case with a bit
				// trick (c|0x20) reads it as the digit.
				id := []byte(b.ID)
				var digits []int
				for i, c := range id {
					if '0' <= c && c <= '9' {
						digits = append(digits, i)
					}
				}
				if len(digits) == 0 {
					digits = []int{0} // an id without digits: spoil its first byte
				}
				for k := 0; k <= r.IntN(len(digits)); k++ {
					i := digits[r.IntN(len(digits))]
					id[i] &^= 0x20
				}
				b.ID = string(id)
				return plain(b)
			}},
		},
	},
	{
		Name: "address",
		Doc:  "recipients with every prefix byte and payload length under a valid checksum, a valid address under a byte more, flipped checksum or payload bits, hex forms, look-alike characters, whitespace; other valid accounts",
		Cases: []Case{
			addrCase("prefix-byte", func(a []byte, r Rand) string {
				p := byte(r.IntN(255))
				if p >= 0x41 {
					p++ // every byte but 0x41
				}
				a[0] = p
				return base58Check(a)
			}),
			addrCase("checksum-bit", func(a []byte, r Rand) string {
				raw := withChecksum(a)
				i := 21 + r.IntN(4)
				raw[i] ^= 1 << r.IntN(8)
				return base58(raw)
			}),
			addrCase("payload-bit", func(a []byte, r Rand) string {
				raw := withChecksum(a)
				raw[1+r.IntN(20)] ^= 1 << r.IntN(8)
				return base58(raw)
			}),
			addrCase("short", func(a []byte, r Rand) string { return base58Check(a[:20]) }),
			addrCase("long", func(a []byte, r Rand) string {
				v := r.Uint32()
				if v&0x100 == 0 {
					return base58Check(append(a, byte(v))) // a byte more under the checksum
				}
				// A valid address's 25 bytes under a high byte: a number
				// past 200 bits whose low 25 bytes are the address. A
				// decoder that drops what overflows its 25 bytes reads it
				// as that address (independent bug 161).
				return base58(append([]byte{byte(v) | 1}, withChecksum(a)...))
			}),
			addrCase("length", func(a []byte, r Rand) string {
				n := r.IntN(40)
				if n >= 21 {
					n++ // every length but 21
				}
				p := make([]byte, n)
				for i := range p {
					p[i] = byte(r.Uint32())
				}
				if n > 0 {
					p[0] = 0x41
				}
				return base58Check(p)
			}),
			addrCase("hex", func(a []byte, r Rand) string { return hex.EncodeToString(a) }),
			addrCase("0x-hex", func(a []byte, r Rand) string { return "0x" + hex.EncodeToString(a[1:]) }),
			addrCase("look-alike", func(a []byte, r Rand) string {
				s := []byte(base58Check(a))
				s[1+r.IntN(len(s)-1)] = "0OIl"[r.IntN(4)]
				return string(s)
			}),
			addrCase("whitespace", func(a []byte, r Rand) string { return base58Check(a) + " " }),
			addrCase("other-account", func(a []byte, r Rand) string {
				for i := 1; i < 21; i++ {
					a[i] = byte(r.Uint32())
				}
				a[1] |= 0x80 // never the all-zero account
				return base58Check(a)
			}),
			addrCase("near-zero-account", func(a []byte, r Rand) string {
				clear(a[1:])
				a[20] = byte(1 + r.IntN(255))
				return base58Check(a)
			}),
		},
	},
	{
		Name: "amount",
		Doc:  "amounts with leading zeros, signs, exponents, seven decimals, trailing zeros past six, huge values, misplaced or doubled points, commas, spaces, other digits (refused); one random edit of a valid amount (either, as the oracle reads it); exactly six decimals, the smallest unit (accepted)",
		Cases: []Case{
			amountCase("leading-zeros", func(a string, r Rand) string { return strings.Repeat("0", 1+r.IntN(3)) + a }),
			amountCase("plus", func(a string, r Rand) string { return "+" + a }),
			amountCase("minus", func(a string, r Rand) string { return "-" + a }),
			amountCase("exponent", func(a string, r Rand) string {
				return pick(r, a+"e0", a+"E0", "1e6", "15e-1", "1.5E+2")
			}),
			amountCase("seven-decimals", func(a string, r Rand) string { return sixDecimals(a) + string(rune('1'+r.IntN(9))) }),
			amountCase("trailing-zeros", func(a string, r Rand) string { return sixDecimals(a) + strings.Repeat("0", 1+r.IntN(3)) }),
			amountCase("six-decimals", func(a string, r Rand) string { return sixDecimals(a) }),
			amountCase("smallest-unit", func(a string, r Rand) string { return "0.000001" }),
			amountCase("huge", func(a string, r Rand) string {
				return pick(r, "1000000000.000001", "1000000001", "99999999999999999999", "18446744073709.551616",
					"18446744073709551616", "1"+strings.Repeat("0", 70))
			}),
			amountCase("point-edge", func(a string, r Rand) string {
				whole, _, _ := strings.Cut(a, ".")
				// A second point after a leading one too: a parser that
				// remembers the first point's position as "none yet" when
				// it is 0 takes ".5.0" for an amount (bug 124).
				return pick(r, "."+whole, whole+".", whole+"..5", whole+".5.0", "."+whole+".5")
			}),
			// One random edit of a valid amount, a point as likely as any
			// three digits: the cases above are the edges someone thought
			// of, this reaches the ones nobody did (blind bug 124 took
			// ".5.3" for an amount, and no case sent a point at byte 0 with
			// another after it). The oracle's own reading decides whether
			// intake must accept what comes out, and at what value.
			amountCase("damaged", func(a string, r Rand) string { return damage(a, r) }),
			amountCase("spaces", func(a string, r Rand) string { return pick(r, " "+a, a+" ", a+"\n") }),
			amountCase("comma", func(a string, r Rand) string {
				return pick(r, strings.Replace(sixDecimals(a), ".", ",", 1), "1,000")
			}),
			amountCase("other-digits", func(a string, r Rand) string { return pick(r, "\uff11", "\u0661.5", "0x10", "NaN", "Infinity") }),
			amountCase("zero-decimals", func(a string, r Rand) string { return pick(r, "0.000000", "0.0000001", "00") }),
		},
	},
	{
		Name: "customer",
		Doc:  "customer ids missing, empty, one byte over 64, wrapped in whitespace, with control bytes, non-ASCII look-alikes or punctuation outside `. _ : -`, a number, null or an object instead of a string (refused); escaped, or another funded customer under the same id (accepted: another withdrawal, so a tidy post of the original under that id is a conflict)",
		Cases: []Case{
			customerCase("missing", func(b Fields, r Rand) Post {
				return shaped(b, slices.Delete(pairs(b), keyCustomer, keyCustomer+1))
			}),
			customerValue("empty", func(c string, r Rand) string { return "" }),
			customerValue("too-long", func(c string, r Rand) string {
				// One byte over the limit, in allowed bytes only: the
				// length alone is wrong.
				return c + strings.Repeat(pick(r, "x", "0", "-", "."), CustomerMax+1-len(c))
			}),
			customerValue("whitespace", func(c string, r Rand) string {
				return pick(r, " "+c, c+" ", c+"\n", "\t"+c+"\t", c+"\u00a0", "\u3000"+c)
			}),
			customerValue("control-byte", func(c string, r Rand) string {
				i := r.IntN(len(c) + 1)
				return c[:i] + pick(r, "\x00", "\x01", "\x11", "\x1f", "\x7f") + c[i:]
			}),
			customerValue("look-alike", func(c string, r Rand) string {
				// A letter or digit swapped for one that looks the same:
				// Cyrillic, fullwidth, a ligature, a dotless i.
				i := r.IntN(len(c))
				return c[:i] + pick(r, "\u0441", "\u0430", "\uff11", "\ufb01", "\u0131", "\u00fc") + c[i+1:]
			}),
			customerValue("punctuation", func(c string, r Rand) string {
				i := r.IntN(len(c) + 1)
				return c[:i] + pick(r, "/", "@", "+", ",", ";", "#", "%", "*", "'", `"`, `\`, "|", "=") + c[i:]
			}),
			customerCase("not-a-string", func(b Fields, r Rand) Post {
				kv := pairs(b)
				kv[keyCustomer][1] = pick(r, "42", "-1", "1.5e3", "0", "true", "null", "[]", "{}", "["+quote(b.Customer)+"]", `{"id":`+quote(b.Customer)+"}")
				return shaped(b, kv)
			}),
			customerCase("escaped", func(b Fields, r Rand) Post {
				// The same customer, its first byte written as a \u
				// escape: JSON's spelling, not another id.
				kv := pairs(b)
				kv[keyCustomer][1] = `"\u` + fmt.Sprintf("%04x", b.Customer[0]) + quote(b.Customer)[2:]
				return shaped(b, kv)
			}),
			customerCase("other-customer", func(b Fields, r Rand) Post {
				if len(b.Others) > 0 {
					b.Customer = b.Others[r.IntN(len(b.Others))]
				}
				return plain(b)
			}),
		},
	},
	{
		Name: "body-size",
		Doc:  "bodies of exactly the limit and one byte under (accepted), one byte over, over the limit with a valid request in the first part, and a valid request after the limit (refused)",
		Cases: []Case{
			sizeCase("at-limit", func(obj []byte, r Rand) []byte { return padTo(obj, BodyMax) }),
			sizeCase("under-limit", func(obj []byte, r Rand) []byte { return padTo(obj, BodyMax-1) }),
			sizeCase("inside-padding-at-limit", func(obj []byte, r Rand) []byte {
				// The padding sits between the tokens, not after them.
				pad := strings.Repeat(" ", BodyMax-len(obj))
				return append([]byte("{"+pad), obj[1:]...)
			}),
			sizeCase("over-by-one", func(obj []byte, r Rand) []byte { return padTo(obj, BodyMax+1) }),
			sizeCase("valid-prefix", func(obj []byte, r Rand) []byte {
				// The first BodyMax bytes are a whole valid request.
				b := padTo(obj, BodyMax)
				return append(b, pick(r, "x", "garbage after the limit", string(obj))...)
			}),
			sizeCase("json-after-limit", func(obj []byte, r Rand) []byte {
				return append(bytes.Repeat([]byte(" "), BodyMax+r.IntN(64)), obj...)
			}),
		},
	},
	{
		Name: "json-shape",
		Doc:  "unknown keys, keys in another case, duplicate keys (same or other value), numbers, nulls, arrays and objects (one with free text holding an unclosed bracket), missing keys, trailing data (another value, a stray `}` or `]`, garbage), a byte-order mark (refused); reordered keys, escaped keys and values, whitespace between tokens (accepted)",
		Cases: []Case{
			shapeCase("reordered", func(b Fields, r Rand) string {
				kv := pairs(b)
				for i := len(kv) - 1; i > 0; i-- {
					j := r.IntN(i + 1)
					kv[i], kv[j] = kv[j], kv[i]
				}
				return object(kv)
			}),
			shapeCase("escaped-key", func(b Fields, r Rand) string {
				kv := pairs(b)
				i := r.IntN(len(kv))
				kv[i][0] = `"` + strings.Replace(kv[i][0][1:len(kv[i][0])-1], "_", `\u005f`, 1) + `"`
				if !strings.Contains(kv[i][0], `\u`) { // "customer", "asset" and "amount" have no underscore
					kv[i][0] = `"\u` + fmt.Sprintf("%04x", kv[i][0][1]) + kv[i][0][2:]
				}
				return object(kv)
			}),
			shapeCase("escaped-value", func(b Fields, r Rand) string {
				kv := pairs(b)
				i := r.IntN(len(kv))
				v := kv[i][1]
				kv[i][1] = `"\u` + fmt.Sprintf("%04x", v[1]) + v[2:]
				return object(kv)
			}),
			shapeCase("whitespace-between", func(b Fields, r Rand) string {
				ws := func() string { return pick(r, "\n", "\t", "\r\n  ", " ") }
				var sb strings.Builder
				sb.WriteString(ws() + "{")
				for i, kv := range pairs(b) {
					if i > 0 {
						sb.WriteString(ws() + ",")
					}
					sb.WriteString(ws() + kv[0] + ws() + ":" + ws() + kv[1])
				}
				sb.WriteString(ws() + "}" + ws())
				return sb.String()
			}),
			shapeCase("unknown-key", func(b Fields, r Rand) string {
				kv := pairs(b)
				extra := [2]string{pick(r, `"memo"`, `"network"`, `"id"`, `""`, `"customer_id"`), `"x"`}
				return object(slices.Insert(kv, r.IntN(len(kv)+1), extra))
			}),
			shapeCase("key-case", func(b Fields, r Rand) string {
				kv := pairs(b)
				i := r.IntN(len(kv))
				kv[i][0] = pick(r, strings.ToUpper(kv[i][0]), `"`+strings.ToUpper(kv[i][0][1:2])+kv[i][0][2:])
				return object(kv)
			}),
			shapeCase("duplicate-same", func(b Fields, r Rand) string {
				kv := pairs(b)
				i := r.IntN(len(kv))
				return object(append(kv, kv[i]))
			}),
			shapeCase("duplicate-other", func(b Fields, r Rand) string {
				// The first value is the client's; a second one, later in
				// the body, says something else.
				kv := pairs(b)
				other := b
				other.Amount = "1" + strings.TrimPrefix(b.Amount, "0")
				if other.Amount == b.Amount {
					other.Amount = "2"
				}
				other.To = otherAccount(b.To, r)
				i := keyTo + r.IntN(2) // the recipient or the amount
				dup := pairs(other)[i]
				if i == keyAmount {
					// The second key escaped, as a smuggler would: the
					// body is then not in the plain form intake reads
					// fast, and its general reader must refuse the
					// duplicate too (blind bug 263 dropped that refusal).
					dup[0] = `"\u0061mount"`
				}
				return object(append(kv, dup))
			}),
			shapeCase("number-value", func(b Fields, r Rand) string {
				kv := pairs(b)
				kv[keyAmount][1] = b.Amount // a JSON number
				return object(kv)
			}),
			shapeCase("null-value", func(b Fields, r Rand) string {
				kv := pairs(b)
				kv[r.IntN(len(kv))][1] = "null"
				return object(kv)
			}),
			shapeCase("nested-value", func(b Fields, r Rand) string {
				kv := pairs(b)
				i := r.IntN(len(kv))
				// The object carries free text with an unclosed bracket,
				// as a note typed by a person would: a reader that skips
				// a nested value by counting brackets must skip strings
				// (independent bug 162 did not, and read past the value).
				kv[i][1] = pick(r, "["+kv[i][1]+"]", `{"value":`+kv[i][1]+`,"note":"see [1"}`)
				return object(kv)
			}),
			shapeCase("missing-key", func(b Fields, r Rand) string {
				kv := pairs(b)
				i := r.IntN(len(kv))
				return object(slices.Delete(kv, i, i+1))
			}),
			shapeCase("trailing-data", func(b Fields, r Rand) string {
				o := object(pairs(b))
				return o + pick(r, o, "x", "{}", ",", "null", "}", "]", " }", "\n]", ":")
			}),
			shapeCase("not-an-object", func(b Fields, r Rand) string {
				o := object(pairs(b))
				return pick(r, "["+o+"]", `"`+strings.ReplaceAll(o, `"`, `\"`)+`"`, "", " ", "null", o[:len(o)-1], strings.TrimSuffix(o, "}")+",}")
			}),
			shapeCase("byte-order-mark", func(b Fields, r Rand) string { return "\ufeff" + object(pairs(b)) }),
		},
	},
	{
		Name: "content-type",
		Doc:  "no Content-Type, `charset=UTF-8`, upper-case type, no space (accepted); text/plain, forms, multipart, other charsets, look-alike and malformed types (refused)",
		Cases: []Case{
			typeCase("absent", ""),
			typeCase("charset-upper", "application/json; charset=UTF-8"),
			typeCase("type-upper", "Application/JSON"),
			typeCase("no-space", "application/json;charset=utf-8"),
			typeCase("text-plain", "text/plain"),
			typeCase("form", "application/x-www-form-urlencoded"),
			typeCase("multipart", "multipart/form-data; boundary=x"),
			typeCase("latin1", "application/json; charset=iso-8859-1"),
			typeCase("utf16", "application/json; charset=utf-16"),
			typeCase("look-alike", "application/jsonl"),
			typeCase("problem-json", "application/problem+json"),
			typeCase("text-json", "text/json"),
			typeCase("malformed", "application/json; charset"),
		},
	},
}

// Names lists the categories' names in order.
func Names() []string {
	out := make([]string, len(Categories))
	for i, c := range Categories {
		out[i] = c.Name
	}
	return out
}

// Lookup returns the named category.
func Lookup(name string) (Category, bool) {
	for _, c := range Categories {
		if c.Name == name {
			return c, true
		}
	}
	return Category{}, false
}

// Draw spoils b one way: a category from cats (every category when cats is
// empty; unknown names are the caller's to refuse, see Lookup), then one of
// its cases, each uniformly.
func Draw(r Rand, cats []string, b Fields) Post {
	cat := Categories[r.IntN(len(Categories))]
	if len(cats) > 0 {
		cat, _ = Lookup(cats[r.IntN(len(cats))])
	}
	c := cat.Cases[r.IntN(len(cat.Cases))]
	p := c.make(b, r)
	p.Category, p.Case = cat.Name, c.Name
	return p
}

// Corpus is every case of every category once, made from b with r: the fuzz
// target's seed corpus and the generator's own tests.
func Corpus(b Fields, r Rand) []Post {
	var out []Post
	for _, cat := range Categories {
		for _, c := range cat.Cases {
			p := c.make(b, r)
			p.Category, p.Case = cat.Name, c.Name
			out = append(out, p)
		}
	}
	return out
}

// plain is b as a tidy JSON request.
func plain(b Fields) Post {
	return Post{ContentType: jsonType, Body: plainBody(b), ID: b.ID}
}

// plainBody is objectBytes(pairs(b)), written in one buffer without the
// pairs' strings.
func plainBody(b Fields) []byte {
	members := [...]struct{ key, value string }{
		keyID:       {`"operation_id":`, b.ID},
		keyCustomer: {`"customer":`, b.Customer},
		keyTo:       {`"to_address":`, b.To},
		keyAmount:   {`"amount":`, b.Amount},
		keyAsset:    {`"asset":`, b.Asset},
	}
	n := 1 + len(members) // the braces and the commas
	for _, m := range members {
		n += len(m.key) + len(m.value) + 2
	}
	out := append(make([]byte, 0, n), '{') // n is enough unless a value needs escaping
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendQuoted(append(out, m.key...), m.value)
	}
	return append(out, '}')
}

// CustomerMax is the API's written limit on a customer id, in bytes.
// (A test pins it to sluice's.)
const CustomerMax = 64

// customerCase is a case of the customer category.
func customerCase(name string, f func(b Fields, r Rand) Post) Case { return Case{name, f} }

// customerValue is a case that replaces the customer's value with f's.
func customerValue(name string, f func(c string, r Rand) string) Case {
	return Case{name, func(b Fields, r Rand) Post { b.Customer = f(b.Customer, r); return plain(b) }}
}

// shaped is b's request with the body kv.
func shaped(b Fields, kv [][2]string) Post {
	return Post{ContentType: jsonType, Body: objectBytes(kv), ID: b.ID}
}

func idCase(name string, f func(string) string) Case {
	return Case{name, func(b Fields, r Rand) Post { b.ID = f(b.ID); return plain(b) }}
}

func addrCase(name string, f func(a []byte, r Rand) string) Case {
	return Case{name, func(b Fields, r Rand) Post {
		a := addressBytes(b.To)
		b.To = f(a[:], r)
		return plain(b)
	}}
}

// damage makes one random edit to a: a digit or a point inserted
// anywhere, or one character dropped, replaced or doubled (an empty a has
// nothing to drop, replace or double: it gets a character).
func damage(a string, r Rand) string {
	char := func() string {
		if r.IntN(4) == 0 {
			return "."
		}
		return string(rune('0' + r.IntN(10)))
	}
	i := r.IntN(len(a) + 1)
	op := r.IntN(4)
	if op == 0 || a == "" {
		return a[:i] + char() + a[i:]
	}
	i = min(i, len(a)-1)
	switch op {
	case 1:
		return a[:i] + a[i+1:]
	case 2:
		return a[:i] + char() + a[i+1:]
	default:
		return a[:i+1] + a[i:]
	}
}

func amountCase(name string, f func(a string, r Rand) string) Case {
	return Case{name, func(b Fields, r Rand) Post { b.Amount = f(b.Amount, r); return plain(b) }}
}

func sizeCase(name string, f func(obj []byte, r Rand) []byte) Case {
	return Case{name, func(b Fields, r Rand) Post {
		p := plain(b)
		p.Body = f(p.Body, r)
		return p
	}}
}

func shapeCase(name string, f func(b Fields, r Rand) string) Case {
	return Case{name, func(b Fields, r Rand) Post {
		p := plain(b)
		p.Body = []byte(f(b, r))
		return p
	}}
}

func typeCase(name, ct string) Case {
	return Case{name, func(b Fields, r Rand) Post {
		p := plain(b)
		p.ContentType = ct
		return p
	}}
}

// The index of each key in pairs.
const (
	keyID = iota
	keyCustomer
	keyTo
	keyAmount
	keyAsset
)

// pairs are b's keys and values as JSON text, in the API's order.
func pairs(b Fields) [][2]string {
	return [][2]string{
		keyID:       {`"operation_id"`, quote(b.ID)},
		keyCustomer: {`"customer"`, quote(b.Customer)},
		keyTo:       {`"to_address"`, quote(b.To)},
		keyAmount:   {`"amount"`, quote(b.Amount)},
		keyAsset:    {`"asset"`, quote(b.Asset)},
	}
}

// object is the JSON object of the members kv, each a key and a value
// already in JSON.
func object(kv [][2]string) string {
	var sb strings.Builder
	sb.Grow(objectLen(kv))
	sb.WriteByte('{')
	for i, p := range kv {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(p[0])
		sb.WriteByte(':')
		sb.WriteString(p[1])
	}
	sb.WriteByte('}')
	return sb.String()
}

// objectBytes is object(kv) as bytes, written once.
func objectBytes(kv [][2]string) []byte {
	b := make([]byte, 0, objectLen(kv))
	b = append(b, '{')
	for i, p := range kv {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, p[0]...), ':'), p[1]...)
	}
	return append(b, '}')
}

// objectLen is the length of object(kv).
func objectLen(kv [][2]string) int {
	n := 2 + max(len(kv)-1, 0)
	for _, p := range kv {
		n += len(p[0]) + 1 + len(p[1])
	}
	return n
}

// quote is s as a JSON string, as json.Marshal writes it.
func quote(s string) string {
	if plainString(s) {
		return `"` + s + `"`
	}
	return string(appendQuoted(nil, s))
}

// appendQuoted appends quote(s) to b. A string of printable ASCII that
// json.Marshal leaves alone (see plainString) is only put in quotes; every
// other goes through json.Marshal.
func appendQuoted(b []byte, s string) []byte {
	if plainString(s) {
		return append(append(append(b, '"'), s...), '"')
	}
	q, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return append(b, q...)
}

// plainString reports whether s is printable ASCII without a quote, a
// backslash, or <, > and &, which json.Marshal escapes for HTML's sake.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func pick(r Rand, options ...string) string { return options[r.IntN(len(options))] }

// padTo appends spaces to obj up to n bytes (JSON allows whitespace after
// the value).
func padTo(obj []byte, n int) []byte {
	out := make([]byte, n)
	copy(out, obj)
	for i := len(obj); i < n; i++ {
		out[i] = ' '
	}
	return out
}

// sixDecimals writes a with exactly six decimals ("1.5" -> "1.500000").
func sixDecimals(a string) string {
	whole, frac, _ := strings.Cut(a, ".")
	if len(frac) > 6 {
		return a
	}
	return whole + "." + frac + strings.Repeat("0", 6-len(frac))
}

// otherAccount is a valid address other than to.
func otherAccount(to string, r Rand) string {
	a := addressBytes(to)
	a[1+r.IntN(20)] ^= byte(1 + r.IntN(255))
	if a == [21]byte{0x41} {
		a[20] = 1
	}
	return base58Check(a[:])
}

// addressBytes decodes a base58check address into its 21-byte payload. The
// base fields are the world's own valid addresses; anything else is a bug
// in the caller.
func addressBytes(s string) [21]byte {
	raw := Unbase58(s)
	if len(raw) != 25 {
		panic("hostile: base address " + s + " is not 25 bytes of base58")
	}
	return [21]byte(raw[:21])
}

const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

// base58Check encodes payload followed by its 4-byte double-sha256
// checksum.
func base58Check(payload []byte) string { return base58(withChecksum(payload)) }

func withChecksum(payload []byte) []byte {
	h := sha256.Sum256(payload)
	h = sha256.Sum256(h[:])
	return append(slices.Clone(payload), h[:4]...)
}

// base58 and unbase58 are the plain big-number codec: the generator only
// needs them to be right, not fast.
func base58(b []byte) string {
	n := new(big.Int).SetBytes(b)
	var out []byte
	mod := new(big.Int)
	for n.Sign() > 0 {
		n.DivMod(n, big.NewInt(58), mod)
		out = append(out, alphabet[mod.Int64()])
	}
	for _, c := range b {
		if c != 0 {
			break
		}
		out = append(out, '1')
	}
	slices.Reverse(out)
	return string(out)
}

// Unbase58 decodes a base58 string to its bytes (nil if a character is
// outside the alphabet), checksum and all: no check of any kind.
func Unbase58(s string) []byte {
	n := new(big.Int)
	zeros := 0
	for zeros < len(s) && s[zeros] == '1' {
		zeros++
	}
	for i := 0; i < len(s); i++ {
		d := strings.IndexByte(alphabet, s[i])
		if d < 0 {
			return nil
		}
		n.Mul(n, big.NewInt(58))
		n.Add(n, big.NewInt(int64(d)))
	}
	return append(make([]byte, zeros), n.Bytes()...)
}
