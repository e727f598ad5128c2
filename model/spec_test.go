package model

import (
	"testing"

	"sluicesim/sluice"
)

// TestSpecIsTheCoresTable: the model's state machine and the core's agree
// on every pair of states, for the automation and for an operator, and on
// which states are terminal. The model keeps its own copy so that a core
// that loses or gains an edge is judged by the design, not by itself; this
// test is where such a drift shows first (the simulator shows it too: a
// lost edge is never reached, a gained one is an illegal transition).
func TestSpecIsTheCoresTable(t *testing.T) {
	for from := range sluice.StateCount {
		for to := range sluice.StateCount {
			f, g := sluice.State(from), sluice.State(to)
			if m, c := Legal(f, g), sluice.CanTransition(f, g); m != c {
				t.Errorf("%s -> %s: the model says legal %v, the core %v", f, g, m, c)
			}
			if m, c := OperatorLegal(f, g), sluice.OperatorCanTransition(f, g); m != c {
				t.Errorf("%s -> %s by an operator: the model says legal %v, the core %v", f, g, m, c)
			}
		}
		if s := sluice.State(from); Terminal(s) != s.Terminal() {
			t.Errorf("%s: the model says terminal %v, the core %v", s, Terminal(s), s.Terminal())
		}
	}
	// The same edges in the same order: the coverage catalog lists them so.
	core := append(sluice.Transitions(), sluice.OperatorTransitions()...)
	spec := Edges()
	if len(core) != len(spec) {
		t.Fatalf("the core has %d edges, the model %d", len(core), len(spec))
	}
	for i, e := range spec {
		if core[i].From != e.From || core[i].To != e.To {
			t.Errorf("edge %d: the model has %s -> %s, the core %s -> %s", i, e.From, e.To, core[i].From, core[i].To)
		}
		if operator := i >= len(sluice.Transitions()); e.Operator != operator {
			t.Errorf("edge %s -> %s: the model says operator-only %v, the core %v", e.From, e.To, e.Operator, operator)
		}
	}
}
