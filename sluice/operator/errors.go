package operator

import (
	"errors"
	"fmt"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// Operating conditions, matched with errors.Is.
var (
	// ErrRefused: the row or the chain does not allow the action now; a
	// *Refusal says why. Nothing changed.
	ErrRefused = errors.New("refused")
	// ErrInvalid: the action's arguments are malformed; an *InputError
	// names the field. Nothing was read or changed.
	ErrInvalid = errors.New("invalid input")
	// ErrNodeUnavailable: the node did not answer a question the action
	// depends on. Nothing changed; ask again.
	ErrNodeUnavailable = errors.New("node unavailable")
)

// Refusal is an action the row or the chain does not allow, with the
// reason in the operator's terms (what the chain showed, what to do).
type Refusal struct {
	Kind   Kind
	ID     sluice.OperationID
	Reason string
}

func (r *Refusal) Error() string { return fmt.Sprintf("%s %s refused: %s", r.Kind, r.ID, r.Reason) }

// Is makes errors.Is(err, ErrRefused) true for every *Refusal.
func (r *Refusal) Is(target error) bool { return target == ErrRefused }

func refuse(k Kind, id sluice.OperationID, reason string) error {
	return &Refusal{Kind: k, ID: id, Reason: reason}
}

// InputError names the field of an action that is malformed, as the HTTP
// API spells it.
type InputError struct {
	Field  string
	Reason string
}

func (e *InputError) Error() string { return e.Field + ": " + e.Reason }

// Is makes errors.Is(err, ErrInvalid) true for every *InputError.
func (e *InputError) Is(target error) bool { return target == ErrInvalid }

// The field names of the API, used in every InputError.
const (
	FieldOperator    = "operator"
	FieldWhy         = "why"
	FieldTxid        = "txid"
	FieldOperationID = "operation_id"
	FieldCustomer    = "customer"
	FieldRef         = "ref"
	FieldAmount      = "amount"
	FieldAfter       = "after"
	FieldLimit       = "limit"
	FieldBody        = "body"
)

// Kind is an operator action.
type Kind uint8

const (
	Retry Kind = iota + 1
	Cancel
	ResolvePaid
	Credit
)

var kindNames = [...]string{Retry: "retry", Cancel: "cancel", ResolvePaid: "resolve", Credit: "credit"}

func (k Kind) String() string {
	if k >= Retry && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Kinds lists every action, in a fixed order (metrics label them all).
var Kinds = []Kind{Retry, Cancel, ResolvePaid, Credit}

// Observer hears every action the service was asked to take, after it
// landed or was refused: logs and metrics.
type Observer interface {
	ObserveAction(Action)
}

// Action is one operator action as the service saw it.
type Action struct {
	Kind     Kind
	Operator string
	Why      string
	ID       sluice.OperationID // "" for a credit
	// Before is the row the action was judged on (zero if it was never
	// read); After the row it left (zero unless it landed).
	Before, After sluice.Operation
	Txid          tron.Txid        // resolve: the txid named as paying
	Evidence      *sluice.Evidence // cancel: what the chain said of the current txid, proof or not
	// Credit: the deposit asked, whether this call credited it (false for
	// a replay), and the account after.
	Credit   sluice.Credit
	Credited bool
	Account  sluice.Account
	// Err is why it did not land: a *Refusal, an *InputError, or a store
	// or node failure. nil: it landed.
	Err error
}
