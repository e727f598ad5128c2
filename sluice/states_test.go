package sluice

import "testing"

// TestEveryStateReachesTerminal walks the transition table: from every state
// some path must end in a terminal state, or an operation could be stranded
// by the table itself.
func TestEveryStateReachesTerminal(t *testing.T) {
	for _, s := range States {
		if !reachesTerminal(s, map[State]bool{}) {
			t.Errorf("state %s cannot reach a terminal state", s)
		}
	}
}

func reachesTerminal(s State, seen map[State]bool) bool {
	if s.Terminal() {
		return true
	}
	seen[s] = true
	for _, tr := range Transitions() {
		if tr.From == s && !seen[tr.To] && reachesTerminal(tr.To, seen) {
			return true
		}
	}
	return false
}

func TestTerminalStatesHaveNoExits(t *testing.T) {
	for _, from := range States {
		for _, to := range append([]State{None}, States...) {
			if from.Terminal() && CanTransition(from, to) {
				t.Errorf("CanTransition(%s, %s) = true, want false: terminal rows are bricks", from, to)
			}
		}
	}
}

func TestTransitionTable(t *testing.T) {
	tests := []struct {
		from, to State
		want     bool
	}{
		{Requested, Validated, true},
		{Requested, Rejected, true},
		{Validated, Signing, true},
		{Signing, Signed, true},
		{Signed, Broadcasting, true},
		{Signed, Signing, true}, // stale before first send
		{Broadcasting, Broadcast, true},
		{Broadcasting, Signing, true}, // rebuild with proof
		{Broadcast, Signing, true},    // rebuild with proof
		{Broadcast, Confirmed, true},
		{Broadcast, Failed, true},
		{Requested, Signing, false}, // no envelope skipping validation
		{Validated, Broadcasting, false},
		{Signing, Broadcasting, false}, // never send unsigned
		{Broadcasting, Confirmed, false},
		{Broadcasting, Signed, false},
		{Signed, Broadcast, false}, // no send without the write-ahead
		{Confirmed, Failed, false},
		{None, Requested, false}, // creation is Insert's, not a transition
	}
	for _, tt := range tests {
		if got := CanTransition(tt.from, tt.to); got != tt.want {
			t.Errorf("CanTransition(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestStateNamesRoundTrip(t *testing.T) {
	for _, s := range States {
		got, err := ParseState(s.String())
		if err != nil || got != s {
			t.Errorf("ParseState(%q) = %v, %v; want %v", s.String(), got, err, s)
		}
	}
	if _, err := ParseState("nonsense"); err == nil {
		t.Error(`ParseState("nonsense") succeeded, want an error`)
	}
}

// Goal: the operator's edges are exactly the documented ones: a cancel from
// any state the automation could fail from, or from before any envelope
// existed; settling or cancelling a review; and nothing out of confirmed,
// failed or rejected, which stay bricks for operators too.
func TestOperatorTransitions(t *testing.T) {
	for _, tt := range []struct {
		from, to State
		want     bool
	}{
		{Requested, Failed, true},
		{Validated, Failed, true},
		{Signing, Failed, true},      // an automation edge into failed
		{Broadcasting, Failed, true}, // likewise
		{Broadcast, Failed, true},
		{Review, Failed, true},
		{Review, Confirmed, true},
		{Broadcast, Confirmed, false}, // confirming is the chain's word, via review only
		{Review, Rejected, false},
		{Review, Signing, false}, // no retry out of review by a transition
		{Review, Review, false},  // a retry is not a transition
		{Confirmed, Failed, false},
		{Failed, Confirmed, false},
		{Rejected, Failed, false},
		{Failed, Failed, false},
	} {
		if got := OperatorCanTransition(tt.from, tt.to); got != tt.want {
			t.Errorf("OperatorCanTransition(%s, %s) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
	for _, tr := range OperatorTransitions() {
		if CanTransition(tr.From, tr.To) {
			t.Errorf("%s -> %s is listed as operator-only but the automation may take it too", tr.From, tr.To)
		}
		if tr.Why == "" {
			t.Errorf("%s -> %s: no why", tr.From, tr.To)
		}
	}
}

// Goal: every state in which a worker may park an operation can send it to
// review when parking runs past its bounds; otherwise Pipeline.Park would
// have to keep parking it forever.
func TestParkableStatesReachReview(t *testing.T) {
	for _, s := range []State{Validated, Signing, Signed, Broadcasting, Broadcast} {
		if !CanTransition(s, Review) {
			t.Errorf("CanTransition(%s, review) = false: an operation parked in %s past its bounds has nowhere to go", s, s)
		}
	}
	// Nothing has been built or sent from requested: validation never
	// parks, and review there would hide an input error.
	if CanTransition(Requested, Review) {
		t.Error("CanTransition(requested, review) = true")
	}
}
