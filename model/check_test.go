package model

import (
	"slices"
	"testing"

	"sluicesim/sluice"
	"sluicesim/sluice/tron/mocknode"
)

// Goal: the clean hand-built run, which walks every path the checkers
// inspect, keeps every invariant.
func TestCheckCleanSnapshot(t *testing.T) {
	wantClean(t, Check)
}

// Goal: the names are the stable ones reports and exit codes rely on, in
// the order Check runs them.
func TestInvariantNames(t *testing.T) {
	want := []string{"liveness", "txid-ownership", "at-most-once", "conservation", "intake-uniqueness", "audit-log", "linearizable-intake"}
	if !slices.Equal(Invariants, want) {
		t.Errorf("Invariants = %q, want %q", Invariants, want)
	}
}

// Goal: the same snapshot gives the same violations, byte for byte, sorted
// by (Operation, Message) within each invariant, in the order of Invariants.
func TestCheckIsDeterministicAndSorted(t *testing.T) {
	b := clean(t)
	// Break several things at once so there is something to order.
	b.s.BudgetExhausted = true
	b.row(opID(opReverted)).State = sluice.Rejected
	b.inclusion(b.row(opID(opHappy)).Envelope.Txid).Transfer.Amount++
	b.s.Accepted = append(b.s.Accepted, mocknode.Acceptance{Txid: txidFor("stray")})
	b.record("c7", string(opID(opHappy)), hashOf(opID(opHappy), alice, 1_500_000), Created, sluice.Requested)

	first := Check(&b.s)
	for range 20 {
		if again := Check(&b.s); !slices.Equal(again, first) {
			t.Fatalf("Check differs between runs:\n%s\nthen\n%s", describe(first), describe(again))
		}
	}
	rank := func(inv string) int { return slices.Index(Invariants, inv) }
	for i := 1; i < len(first); i++ {
		a, c := first[i-1], first[i]
		if rank(a.Invariant) > rank(c.Invariant) ||
			(a.Invariant == c.Invariant && (a.Operation > c.Operation || (a.Operation == c.Operation && a.Message > c.Message))) {
			t.Errorf("violations out of order at %d:\n%s", i, describe(first))
		}
	}
	seen := map[string]bool{}
	for _, v := range first {
		seen[v.Invariant] = true
	}
	if len(seen) != 5 {
		t.Errorf("want violations of 5 invariants, got %d:\n%s", len(seen), describe(first))
	}
}
