package sluice

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"unicode"
	"unicode/utf8"

	"sluicesim/sluice/money"
)

// CustomerID names the account a withdrawal is paid from: 1 to 64 bytes of
// letters, digits and ". _ : -". It is part of the request (and its hash),
// so an operation id reused for another customer is a payload mismatch.
type CustomerID string

// CustomerMax bounds a customer id's length.
const CustomerMax = 64

// Valid reports why c is not a customer id, or "" when it is one.
func (c CustomerID) Valid() string {
	switch {
	case c == "":
		return "empty"
	case len(c) > CustomerMax:
		return fmt.Sprintf("longer than %d bytes", CustomerMax)
	}
	for i := 0; i < len(c); i++ {
		switch b := c[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case b == '.' || b == '_' || b == ':' || b == '-':
		default:
			return fmt.Sprintf("byte %d (%s) is not a letter, digit or one of . _ : -", i, CharAt(string(c), i))
		}
	}
	return ""
}

// CharAt shows the character that starts at s[i] for a refusal's reason:
// the whole character, not its first byte (%q of a byte 0xf0 would show an
// 'ð' the client never sent), or the byte in hex where s[i:] is not UTF-8.
func CharAt(s string, i int) string {
	r, size := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf("0x%02x, not UTF-8", s[i])
	}
	return strconv.QuoteRune(r)
}

// Account is a customer's ledger. Every store keeps
//
//	Balance + Held + Paid == Deposited
//
// in every atomic step: intake moves an amount from Balance to Held (the
// hold), a confirmation moves it from Held to Paid (settle), a failure,
// rejection or cancel moves it back to Balance (release), and only a credit
// (a deposit) changes Deposited.
type Account struct {
	Customer  CustomerID
	Balance   money.Amount // free to withdraw
	Held      money.Amount // under holds of open operations (and reviews)
	Paid      money.Amount // settled: confirmed withdrawals
	Deposited money.Amount // every credit ever
}

// Balanced reports whether the account's four numbers agree, in whole
// numbers: a balance or hold that went below zero wraps round to near 2^64
// and would still add up modulo 2^64, so a sum that carries is not
// balanced.
func (a Account) Balanced() bool {
	sum, c1 := bits.Add64(uint64(a.Balance), uint64(a.Held), 0)
	sum, c2 := bits.Add64(sum, uint64(a.Paid), 0)
	return c1 == 0 && c2 == 0 && sum == uint64(a.Deposited)
}

// Credit is a deposit to a customer's balance. Ref makes it idempotent: a
// second credit with the same Ref changes nothing, and one with the same
// Ref but other numbers is refused (ErrPayloadMismatch).
type Credit struct {
	Ref      string
	Customer CustomerID
	Amount   money.Amount
}

// CreditRefMax bounds a credit's ref, in bytes.
const CreditRefMax = 128

// ValidCreditRef reports why ref is not a credit's ref, or "" when it is
// one: 1 to CreditRefMax bytes of UTF-8 text without control characters.
// A deposit's id (a txid and log index, a bank reference) is printable
// text; a NUL or bytes that are not UTF-8 cannot even be stored by
// PostgreSQL's text, which would fail such a credit as an unknown store
// error ("it may have landed") where the in-memory store credits it.
func ValidCreditRef(ref string) string {
	switch {
	case ref == "":
		return "empty"
	case len(ref) > CreditRefMax:
		return fmt.Sprintf("longer than %d bytes", CreditRefMax)
	case !utf8.ValidString(ref):
		return "not UTF-8 text"
	}
	for i, r := range ref {
		if unicode.IsControl(r) {
			return fmt.Sprintf("byte %d is a control character (%s)", i, CharAt(ref, i))
		}
	}
	return ""
}

// CheckCredit refuses a credit's arguments before any store work.
func CheckCredit(c Credit) error {
	switch {
	case ValidCreditRef(c.Ref) != "":
		return fmt.Errorf("%w: credit ref %s is %s", ErrInvalidOperation, shown(c.Ref), ValidCreditRef(c.Ref))
	case c.Customer.Valid() != "":
		return fmt.Errorf("%w: credit %s: customer %s is %s", ErrInvalidOperation, shown(c.Ref), shown(string(c.Customer)), c.Customer.Valid())
	case c.Amount == 0:
		return fmt.Errorf("%w: credit %s: amount is zero", ErrInvalidOperation, shown(c.Ref))
	case c.Amount > money.MaxAmount:
		return fmt.Errorf("%w: credit %s: amount %d is above the maximum", ErrInvalidOperation, shown(c.Ref), c.Amount)
	}
	return nil
}

// HoldState is where a hold stands. A hold is created held and closed
// exactly once, settled or released; a closed hold never changes again.
type HoldState uint8

const (
	HoldHeld HoldState = iota + 1
	HoldSettled
	HoldReleased
)

var holdStateNames = [...]string{HoldHeld: "held", HoldSettled: "settled", HoldReleased: "released"}

func (h HoldState) String() string {
	if h >= HoldHeld && int(h) < len(holdStateNames) {
		return holdStateNames[h]
	}
	return fmt.Sprintf("hold-state(%d)", uint8(h))
}

// ParseHoldState is the inverse of String.
func ParseHoldState(s string) (HoldState, error) {
	for h := HoldHeld; int(h) < len(holdStateNames); h++ {
		if holdStateNames[h] == s {
			return h, nil
		}
	}
	return 0, fmt.Errorf("unknown hold state %q", s)
}

// Hold is the amount intake took from a customer's balance for one
// operation. Its numbers are the request's, fixed at creation.
type Hold struct {
	Operation OperationID
	Customer  CustomerID
	Amount    money.Amount
	State     HoldState
	// ClosedSeq is the event that settled or released it (0 while held).
	ClosedSeq int64
}

// HoldAction is what a transition does to the operation's hold, in the same
// atomic step: nothing, settle it (paid) or release it (back to balance).
type HoldAction uint8

const (
	HoldKeep HoldAction = iota
	HoldSettle
	HoldRelease
)

var holdActionNames = [...]string{HoldKeep: "", HoldSettle: "settle", HoldRelease: "release"}

func (a HoldAction) String() string {
	if int(a) < len(holdActionNames) {
		return holdActionNames[a]
	}
	return fmt.Sprintf("hold-action(%d)", uint8(a))
}

// ParseHoldAction is the inverse of String ("" is HoldKeep).
func ParseHoldAction(s string) (HoldAction, error) {
	for a := range holdActionNames {
		if holdActionNames[a] == s {
			return HoldAction(a), nil
		}
	}
	return 0, fmt.Errorf("unknown hold action %q", s)
}

// HoldFor is the hold action the pipeline gives a transition into to: a
// confirmation settles, a failure or rejection releases, anything else
// (review included: money may have moved, an operator decides) keeps the
// hold. Stores enforce the structure (a close exactly when entering
// confirmed, failed or rejected, and at most once), not which close: that
// is the pipeline's judgement, and the model checks it against the chain.
func HoldFor(to State) HoldAction {
	switch to {
	case Confirmed:
		return HoldSettle
	case Failed, Rejected:
		return HoldRelease
	}
	return HoldKeep
}

// Ledger conditions, matched with errors.Is.
var (
	// ErrInsufficientFunds: the customer's balance does not cover the
	// withdrawal; nothing was created.
	ErrInsufficientFunds = errors.New("insufficient funds")
	// ErrHoldClosed: the hold was already settled or released; a second
	// close is refused and changes nothing.
	ErrHoldClosed = errors.New("hold already closed")
	// ErrHoldAction: the change's hold action does not fit its target state:
	// entering confirmed, failed or rejected must close the hold, entering
	// anything else must keep it.
	ErrHoldAction = errors.New("hold action does not fit the transition")
)
