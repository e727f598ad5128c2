package sluice

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrInvalidOperation is matched (errors.Is) by every error CheckNewOperation
// returns, and so by every Insert a store refuses for its argument. It is a
// caller's bug, not an operating condition: retrying the same call cannot
// succeed.
var ErrInvalidOperation = errors.New("invalid operation")

// nilUUID is the UUID with every bit zero.
const nilUUID = "00000000-0000-0000-0000-000000000000"

// CheckNewOperation decides, once for every store, whether op may be
// inserted. Every store calls it first in Insert (after its context check),
// before it looks the id up, so an insert that breaks a rule is refused and
// writes nothing, even when the id already exists. The rules are:
//
//   - ID is a canonical lowercase UUID: 36 bytes, 8-4-4-4-12 lowercase hex
//     digits with hyphens. Upper case, braces, "urn:uuid:" and missing
//     hyphens are refused, not normalized: the id is the primary key, and a
//     row stored under another spelling would not be found under the one
//     intake mints (ParseOperationID in package intake lowercases before it
//     gets here). The version and variant digits are not checked, as intake
//     does not check them.
//   - ID is not the nil UUID (all zeros), which intake also refuses: it is
//     what an unset id serializes to, and would make every client with that
//     bug share one operation.
//   - RequestHash is not empty: intake compares it to tell a replay from a
//     conflicting reuse of an id. Its form is not checked. Intake's
//     RequestHash is 64 lowercase hex digits, but the store neither computes
//     nor parses it, and callers in this repository's tests pass other
//     opaque strings ("hash-1", "h").
//   - Request.Asset is not empty, Request.Amount is not zero and
//     Request.To is not the zero Address: each is what an unset field
//     holds. Whether the request is one sluice can pay (the asset is
//     sluice's, the recipient a TRON address other than the contract or the
//     hot wallet) is the pipeline's validation, which rejects such a row
//     with an auditable reason; no amount ceiling is imposed here either.
//
// The first broken rule, in the order above, is returned; its message names
// the field and repeats the offending value, cut short if long.
func CheckNewOperation(op NewOperation) error {
	switch id := string(op.ID); {
	case id == "":
		return invalid("empty operation id")
	case !op.ID.Canonical():
		return invalid("operation id %s is not a canonical lowercase UUID (8-4-4-4-12 lowercase hex digits)", shown(id))
	case id == nilUUID:
		return invalid("operation id %s is the nil UUID", shown(id))
	}
	if op.RequestHash == "" {
		return invalid("operation %s: empty request hash", op.ID)
	}
	if why := op.Request.Customer.Valid(); why != "" {
		return invalid("operation %s: customer %s is %s", op.ID, shown(string(op.Request.Customer)), why)
	}
	switch r := op.Request; {
	case r.Asset == "":
		return invalid("operation %s: empty asset", op.ID)
	case r.Amount == 0:
		return invalid("operation %s: amount is zero", op.ID)
	case r.To.IsZero():
		return invalid("operation %s: recipient is the zero address (unset)", op.ID)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOperation}, args...)...)
}

// Canonical reports whether id is written as intake mints ids and a uuid
// column reads them back: 8-4-4-4-12 lowercase hex digits (the nil UUID
// included; CheckNewOperation refuses it separately).
func (id OperationID) Canonical() bool {
	s := string(id)
	if len(s) != len(nilUUID) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// shownMax bounds how much of a refused value an error repeats, so that an
// oversized argument cannot make an oversized log line.
const shownMax = 64

// shown quotes s for an error message, cut to shownMax bytes.
func shown(s string) string {
	if len(s) <= shownMax {
		return strconv.Quote(s)
	}
	return strconv.Quote(strings.ToValidUTF8(s[:shownMax], "")) + "..."
}
