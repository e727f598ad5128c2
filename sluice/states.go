package sluice

import "fmt"

// State is where an operation stands in its lifecycle.
type State uint8

// The states. None is not a state an operation can be in: it is the "from"
// of the creation event.
const (
	None State = iota
	Requested
	Validated
	Signing
	Signed
	Broadcasting
	Broadcast
	Confirmed
	Failed
	Rejected
	// Review: the chain says the transaction succeeded, but its Transfer
	// logs do not show exactly the payment asked (no log, another token,
	// recipient or amount, a fee taken on the way, several logs). Money may
	// have moved, not as asked: neither confirming nor failing is true, so
	// the automation stops and an operator decides.
	Review
)

// StateCount bounds the State values (None included): arrays indexed by
// state are [StateCount]T.
const StateCount = int(Review) + 1

var stateNames = [...]string{
	None:         "none",
	Requested:    "requested",
	Validated:    "validated",
	Signing:      "signing",
	Signed:       "signed",
	Broadcasting: "broadcasting",
	Broadcast:    "broadcast",
	Confirmed:    "confirmed",
	Failed:       "failed",
	Rejected:     "rejected",
	Review:       "review",
}

// States lists every real state (None excluded) in lifecycle order.
var States = []State{Requested, Validated, Signing, Signed, Broadcasting, Broadcast, Confirmed, Failed, Rejected, Review}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// ParseState is the inverse of String for real states.
func ParseState(name string) (State, error) {
	for _, s := range States {
		if stateNames[s] == name {
			return s, nil
		}
	}
	return None, fmt.Errorf("unknown state %q", name)
}

// MarshalText writes the state's name.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name.
func (s *State) UnmarshalText(b []byte) error {
	p, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = p
	return nil
}

// Terminal reports whether s is final for the automation: confirmed, failed,
// rejected or review. A terminal row is a brick: no worker write may change
// it. The one exception is an operator's resolution of a review
// (Store.Resolve, OperatorCanTransition).
func (s State) Terminal() bool { return s == Confirmed || s == Failed || s == Rejected || s == Review }

// Transition is one legal edge of the state machine.
type Transition struct {
	From, To State
	Why      string
}

// transitions is the state machine: the single source of truth. The
// PostgreSQL trigger mirrors it and a drift test compares the two.
var transitions = []Transition{
	{Requested, Validated, "request passed validation"},
	{Requested, Rejected, "request failed validation"},
	{Validated, Signing, "envelope built; txid stored before signing"},
	{Validated, Rejected, "refused before any envelope existed"},
	{Signing, Signed, "signature stored"},
	{Signing, Failed, "signing refused for good"},
	{Signed, Broadcasting, "write-ahead: intent to send committed before the send"},
	{Signed, Signing, "stale before first send: never sent, rebuilt"},
	{Signed, Failed, "first send hard-rejected, or builds exhausted"},
	{Broadcasting, Broadcast, "node accepted, or txid pending or included"},
	{Broadcasting, Signing, "rebuild with proof of death"},
	{Broadcasting, Failed, "first send hard-rejected, or proof of death with builds exhausted"},
	{Broadcast, Confirmed, "solid, SUCCESS receipt, matching Transfer log"},
	{Broadcast, Signing, "rebuild with proof of death"},
	{Broadcast, Failed, "reverted on chain, or proof of death with builds exhausted"},
	{Broadcast, Review, "solid, SUCCESS receipt, but the Transfer logs do not show exactly the payment asked; or parked past its bounds"},
	{Validated, Review, "parked past its bounds (node unavailable before the first build)"},
	{Signing, Review, "parked past its bounds (signer unavailable)"},
	{Signed, Review, "parked past its bounds, or stale again with the rebuild budget spent"},
	{Broadcasting, Review, "parked past its bounds, or proven dead with the budget spent after operational trouble"},
}

// operatorTransitions are the edges only an operator takes (Store.Resolve):
// cancelling an operation (failed, hold released) and settling a review.
// An operator may also take any automation edge into failed.
var operatorTransitions = []Transition{
	{Requested, Failed, "operator cancel: nothing was ever built"},
	{Validated, Failed, "operator cancel: nothing was ever built"},
	{Review, Failed, "operator cancel: every txid proven dead"},
	{Review, Confirmed, "operator: resolved as paid by a txid the chain shows paying exactly the request"},
}

var legal = func() (m [len(stateNames)][len(stateNames)]bool) {
	for _, t := range transitions {
		m[t.From][t.To] = true
	}
	return m
}()

// CanTransition reports whether from -> to is an edge of the state machine.
func CanTransition(from, to State) bool {
	if int(from) >= len(stateNames) || int(to) >= len(stateNames) {
		return false
	}
	return legal[from][to]
}

// Transitions returns a copy of the transition table, in its fixed order.
func Transitions() []Transition { return append([]Transition(nil), transitions...) }

// OperatorTransitions returns a copy of the operator-only edges.
func OperatorTransitions() []Transition {
	return append([]Transition(nil), operatorTransitions...)
}

// OperatorCanTransition reports whether an operator may move a row from ->
// to: an operator-only edge, or an automation edge into failed (a cancel).
// Retrying (to == from) is not a transition; Store.Resolve handles it.
func OperatorCanTransition(from, to State) bool {
	for _, t := range operatorTransitions {
		if t.From == from && t.To == to {
			return true
		}
	}
	return to == Failed && CanTransition(from, to)
}
