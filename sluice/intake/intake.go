package intake

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"

	"sluicesim/sluice"
	"sluicesim/sluice/money"
	"sluicesim/sluice/tron"
)

// Submission is a withdrawal request exactly as the client sent it: raw
// strings, not yet trusted.
type Submission struct {
	OperationID string
	Customer    string
	ToAddress   string
	Amount      string
	Asset       string
}

// ErrInvalid is matched (errors.Is) by every *ValidationError.
var ErrInvalid = errors.New("invalid request")

// ValidationError refuses a submission at the door, naming the field (as it
// is spelled in the JSON API) and the reason. Nothing has been stored when
// it is returned.
type ValidationError struct {
	Field  string
	Reason string
}

func (e *ValidationError) Error() string { return "invalid " + e.Field + ": " + e.Reason }

// Is makes errors.Is(err, ErrInvalid) true for every *ValidationError.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// The field names of the API, used in every ValidationError.
const (
	FieldOperationID = "operation_id"
	FieldCustomer    = "customer"
	FieldToAddress   = "to_address"
	FieldAmount      = "amount"
	FieldAsset       = "asset"
	// FieldBody is named when the request as a whole is unreadable
	// (malformed JSON, trailing data, oversized).
	FieldBody = "body"
)

// blackHole is the all-zero TRON address (0x41 followed by 20 zero bytes).
// It is a valid base58check string, so only this check stops it: a transfer
// there either reverts or burns the money, and in either case a client that
// sends it almost certainly serialized an unset field.
var blackHole = tron.AddressFromBytes20([20]byte{})

// Normalize validates a submission and turns it into the operation intake
// inserts, request hash included. Fields are checked in API order
// (operation_id, customer, to_address, amount, asset) and the first refusal
// is returned as a *ValidationError.
func Normalize(s Submission) (sluice.NewOperation, error) {
	id, err := ParseOperationID(s.OperationID)
	if err != nil {
		return sluice.NewOperation{}, err
	}
	if s.Customer == "" {
		return sluice.NewOperation{}, &ValidationError{FieldCustomer, "missing"}
	}
	// The store's rule, checked here too so that a bad customer is a 422
	// naming the field rather than a store refusal; it is not normalized
	// (no trimming, no case folding): "Cust-1" and "cust-1" are two
	// accounts, and a loose reading would pay from the wrong one.
	customer := sluice.CustomerID(s.Customer)
	if why := customer.Valid(); why != "" {
		return sluice.NewOperation{}, &ValidationError{FieldCustomer, why}
	}
	if s.ToAddress == "" {
		return sluice.NewOperation{}, &ValidationError{FieldToAddress, "missing"}
	}
	to, err := tron.ParseAddress(s.ToAddress)
	if err != nil {
		return sluice.NewOperation{}, &ValidationError{FieldToAddress, err.Error()}
	}
	switch to {
	case tron.USDTContract:
		// The contract would hold the tokens with no way to get them out.
		return sluice.NewOperation{}, &ValidationError{FieldToAddress,
			"is the USDT contract itself; tokens sent there are lost"}
	case blackHole:
		return sluice.NewOperation{}, &ValidationError{FieldToAddress,
			"is the all-zero address; tokens sent there are lost"}
	}
	if s.Amount == "" {
		return sluice.NewOperation{}, &ValidationError{FieldAmount, "missing"}
	}
	amount, err := money.Parse(s.Amount)
	if err != nil {
		var pe *money.ParseError
		reason := err.Error()
		if errors.As(err, &pe) {
			reason = pe.Reason
		}
		return sluice.NewOperation{}, &ValidationError{FieldAmount, reason}
	}
	if s.Asset == "" {
		return sluice.NewOperation{}, &ValidationError{FieldAsset, "missing"}
	}
	if s.Asset != sluice.Asset {
		return sluice.NewOperation{}, &ValidationError{FieldAsset,
			"unsupported asset " + strconv.Quote(truncate(s.Asset)) + "; the only asset is " + sluice.Asset}
	}
	req := sluice.Request{Customer: customer, To: to, Amount: amount, Asset: sluice.Asset}
	// s.ToAddress is the base58 form of to exactly as to.String() would
	// write it, so it is hashed as it is, sparing an encoding per request.
	// ParseAddress accepts only that spelling: an address it accepts begins
	// with the byte 0x41, so its spelling has no leading '1' (base58's zero
	// digit, which only a leading zero byte may produce), and a base58
	// numeral without leading zeros is the only one of its value.
	// TestParsedAddressIsCanonical holds package tron to it.
	return sluice.NewOperation{ID: id, Request: req, RequestHash: requestHash(id, req, s.ToAddress)}, nil
}

// uuidLen is the length of the 8-4-4-4-12 text form of a UUID.
const uuidLen = 36

// ParseOperationID reads a client-minted operation id: a UUID in its
// 8-4-4-4-12 hex form, either case, returned in canonical lowercase so that
// "ABC..." and "abc..." are one operation, not two. Braces, "urn:uuid:",
// missing hyphens and the nil UUID are refused: the id is a primary key, and
// a loose reading would let one withdrawal hide behind two spellings. The nil
// UUID is what an unset field serializes to; accepting it would make every
// client with that bug share one operation.
func ParseOperationID(s string) (sluice.OperationID, error) {
	if s == "" {
		return "", &ValidationError{FieldOperationID, "missing"}
	}
	if len(s) != uuidLen {
		return "", badOperationID(s)
	}
	upper := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", badOperationID(s)
			}
			continue
		}
		switch {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			upper = true
		default:
			return "", badOperationID(s)
		}
	}
	id := s // already canonical: no copy, as most clients send it
	if upper {
		var b [uuidLen]byte
		for i := range b {
			c := s[i]
			if 'A' <= c && c <= 'F' {
				c += 'a' - 'A'
			}
			b[i] = c
		}
		id = string(b[:])
	}
	if id == "00000000-0000-0000-0000-000000000000" {
		return "", &ValidationError{FieldOperationID, "the nil UUID is not an operation id"}
	}
	return sluice.OperationID(id), nil
}

// badOperationID refuses s, which is not in the 8-4-4-4-12 form. It is built
// only on refusal: quoting s costs more than reading it.
func badOperationID(s string) *ValidationError {
	return &ValidationError{FieldOperationID, "must be a UUID (8-4-4-4-12 hex digits), got " + strconv.Quote(truncate(s))}
}

// requestHashVersion opens the hashed encoding. Changing what is hashed, or
// how, means a new version string: stored hashes stay comparable only with
// hashes of the same version.
//
// v2 added the customer after the id. A v1 hash (id, address, amount,
// asset) is not comparable with a v2 one: the same request hashes apart
// under the two, so a row stored with a v1 hash would answer every retry
// 409. v1 rows were made before withdrawals had customers and cannot be
// retried under this API anyway (a retry now must name a customer, which
// the v1 row does not hold); a store holding any must be drained or
// rehashed before this version serves it.
const requestHashVersion = "sluice.request.v2"

// RequestHash is the hex sha256 of the normalized request: the operation id,
// the customer, the base58 address, the amount in base units and the asset,
// each length-prefixed after a version tag so that no two payloads share an
// encoding. The customer is in it because it says whose money pays: the
// same id sent for another customer is another withdrawal, a 409, not a
// replay that would tell the second customer its withdrawal was accepted.
//
// The hash is semantic, not over the bytes the client sent: "1.5" and
// "1.50", an upper-case id and its lowercase form, reordered JSON keys or
// different whitespace are all the same instruction, and a client library
// that re-serializes its JSON on retry must get a replay (200), not a
// spurious conflict (409). The price: two byte streams that normalize the
// same are treated as one withdrawal, which for money is the right reading.
func RequestHash(id sluice.OperationID, r sluice.Request) string {
	return requestHash(id, r, r.To.String())
}

// requestHash is RequestHash with the base58 form of r.To given: Normalize
// has it already, as the submission spelled it. The encoding is built in one buffer on
// the stack and hashed at once, which is the same hash as writing it field
// by field; only the hex string is allocated.
func requestHash(id sluice.OperationID, r sluice.Request, to string) string {
	var scratch [256]byte // every field of a valid request fits
	buf := scratch[:0]
	field := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	field(requestHashVersion)
	field(string(id))
	field(string(r.Customer))
	field(to)
	var units [20]byte // the decimal digits of a uint64
	field(string(strconv.AppendUint(units[:0], uint64(r.Amount), 10)))
	field(r.Asset)
	sum := sha256.Sum256(buf)
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], sum[:])
	return string(text[:])
}

// shownMax bounds how much of a refused value an error repeats back, so an
// oversized field cannot make an oversized response or log line.
const shownMax = 64

func truncate(s string) string {
	if len(s) <= shownMax {
		return s
	}
	return strings.ToValidUTF8(s[:shownMax], "") + "..."
}
