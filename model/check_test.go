package model

import (
	"slices"
	"strings"
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
	want := []string{"liveness", "progress", "txid-ownership", "at-most-once", "conservation",
		"intake-uniqueness", "audit-log", "one-writer", "linearizable-intake"}
	if got := InvariantNames(); !slices.Equal(got, want) {
		t.Errorf("InvariantNames() = %q, want %q", got, want)
	}
	for i, inv := range Invariants {
		if inv.Doc == "" || strings.Contains(inv.Doc, "\n") {
			t.Errorf("Invariants[%d] (%s) has doc %q, want one non-empty line", i, inv.Name, inv.Doc)
		}
		if inv.check == nil {
			t.Errorf("Invariants[%d] (%s) has no checker", i, inv.Name)
		}
	}
}

// Goal: the README's table is derived from the one table: a row per
// invariant, in table order, each with its doc.
func TestMarkdownTableListsEveryInvariant(t *testing.T) {
	table := MarkdownTable()
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if len(lines) != 2+len(Invariants) {
		t.Fatalf("MarkdownTable has %d lines, want a header, a rule and %d rows:\n%s", len(lines), len(Invariants), table)
	}
	for i, inv := range Invariants {
		want := "| `" + inv.Name + "` | " + inv.Doc + " |"
		if got := lines[2+i]; got != want {
			t.Errorf("MarkdownTable row %d = %q, want %q", i+1, got, want)
		}
	}
}

// Goal: the same snapshot gives the same violations, byte for byte, sorted
// by (Operation, Message) within each invariant, in the order of Invariants.
func TestCheckIsDeterministicAndSorted(t *testing.T) {
	b := clean(t)
	// Break several things at once so there is something to order.
	b.s.BudgetExhausted = true
	b.row(opID(opReverted)).State = sluice.Rejected
	b.inclusion(b.row(opID(opHappy)).Envelope.Txid).Moved[0].Amount++
	b.s.Accepted = append(b.s.Accepted, mocknode.Acceptance{Txid: txidFor("stray")})
	b.record("c7", pay(string(opID(opHappy)), alice, 1_500_000), Created, sluice.Requested)
	b.write(b.event(opID(opHappy), sluice.Signing, sluice.Signed)).Proc = "w9"

	first := Check(&b.s)
	for range 20 {
		if again := Check(&b.s); !slices.Equal(again, first) {
			t.Fatalf("Check differs between runs:\n%s\nthen\n%s", describe(first), describe(again))
		}
	}
	names := InvariantNames()
	rank := func(inv string) int { return slices.Index(names, inv) }
	for i := 1; i < len(first); i++ {
		a, c := first[i-1], first[i]
		if rank(a.Invariant) > rank(c.Invariant) ||
			(a.Invariant == c.Invariant && (a.Operation > c.Operation || (a.Operation == c.Operation && a.Message > c.Message))) {
			t.Errorf("violations out of order at %d:\n%s", i, describe(first))
		}
	}
	var seen []string
	for _, v := range first {
		if !slices.Contains(seen, v.Invariant) {
			seen = append(seen, v.Invariant)
		}
	}
	// Every invariant but at-most-once: liveness (budget), progress (a
	// rejection to alice), txid-ownership (stray), conservation (amount),
	// intake-uniqueness and linearizable-intake (created twice), audit-log
	// (row state), one-writer (w9).
	want := []string{Liveness, Progress, TxidOwnership, Conservation, IntakeUniqueness, AuditLog, OneWriter, LinearizableIntake}
	if !slices.Equal(seen, want) {
		t.Errorf("violated invariants, in order, = %q, want %q:\n%s", seen, want, describe(first))
	}
}
