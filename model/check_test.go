package model

import (
	"slices"
	"strings"
	"testing"

	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

// Goal: the clean hand-built run, which walks every path the checkers
// inspect, keeps every invariant.
func TestCheckCleanSnapshot(t *testing.T) {
	wantClean(t, Check)
}

// Goal: the clean run walks the paths the new rules judge, so that
// TestCheckCleanSnapshot means they pass: the stuck policy's cancel, a
// rebuild on a failed receipt's proof, parks, and an operator's retry,
// cancel with proof and review resolved as paid, each on its own
// operation, with every hold closed by its terminal event.
func TestCleanRunWalksTheNewPaths(t *testing.T) {
	b := clean(t)
	has := func(what string, id sluice.OperationID, ok func(e sluice.Event) bool) {
		t.Helper()
		if !slices.ContainsFunc(b.s.Events, func(e sluice.Event) bool { return e.OperationID == id && ok(e) }) {
			t.Errorf("the clean run has no %s (op %s)", what, id)
		}
	}
	operator := func(e sluice.Event) bool { return strings.HasPrefix(string(e.Worker), sluice.OperatorPrefix) }
	has("policy's cancel", opID(opPolicyCancel), func(e sluice.Event) bool {
		return e.To == sluice.Failed && e.Decision != nil && e.Decision.Action == sluice.Cancel && e.Hold == sluice.HoldRelease
	})
	has("rebuild on a failed receipt", opID(opReverted), func(e sluice.Event) bool {
		return e.To == sluice.Signing && e.Evidence != nil && e.Evidence.Lookup == tron.Included && e.Evidence.Receipt == tron.ReceiptRevert
	})
	has("operator's retry", opID(opReverted), func(e sluice.Event) bool { return operator(e) && e.From == e.To })
	has("operator's cancel with proof", opID(opOpCancel), func(e sluice.Event) bool {
		return operator(e) && e.To == sluice.Failed && e.Evidence != nil && e.Evidence.Proves() && e.Hold == sluice.HoldRelease
	})
	has("review resolved as paid", opID(opReviewPaid), func(e sluice.Event) bool {
		return operator(e) && e.From == sluice.Review && e.To == sluice.Confirmed && e.Hold == sluice.HoldSettle
	})
	var parked []sluice.OperationID
	for _, p := range b.s.Parks {
		parked = append(parked, p.Op)
	}
	if want := []sluice.OperationID{opID(opReverted), opID(opOpCancel)}; !slices.Equal(parked, want) {
		t.Errorf("the clean run parks %v, want %v", parked, want)
	}
	for _, a := range b.s.Accounts {
		if !a.Balanced() {
			t.Errorf("the clean run's account %+v does not add up", a)
		}
	}
}

// Goal: the names are the stable ones reports and exit codes rely on, in
// the order Check runs them.
func TestInvariantNames(t *testing.T) {
	want := []string{"liveness", "progress", "txid-ownership", "at-most-once", "conservation",
		"funds", "no-operational-failure", "fee-limits", "paced-polling", "intake-uniqueness", "audit-log", "one-writer", "linearizable-intake"}
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
	b.row(opID(opPolicyCancel)).State = sluice.Rejected
	b.inclusion(b.row(opID(opHappy)).Envelope.Txid).Moved[0].Amount++
	b.s.Accepted = append(b.s.Accepted, mocknode.Acceptance{Txid: txidFor("stray")})
	b.record("c7", pay(string(opID(opHappy)), alice, 1_500_000), Created, sluice.Requested)
	b.write(b.event(opID(opHappy), sluice.Signing, sluice.Signed)).Proc = "w9"
	b.s.LedgerBreaks = append(b.s.LedgerBreaks, "after event #3: customer cust-a balance 1 + held 0 + paid 0 != deposited 2")
	b.event(opID(opOpCancel), sluice.Broadcasting, sluice.Failed).Worker = "w1"

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
	// funds (a ledger break), no-operational-failure (a cancel after a
	// refusal, no longer an operator's), intake-uniqueness and
	// linearizable-intake (created twice), audit-log (row state), one-writer
	// (w9, and w1 writing what no claim of its granted).
	want := []string{Liveness, Progress, TxidOwnership, Conservation, Funds, NoOperationalFailure, IntakeUniqueness, AuditLog, OneWriter, LinearizableIntake}
	if !slices.Equal(seen, want) {
		t.Errorf("violated invariants, in order, = %q, want %q:\n%s", seen, want, describe(first))
	}
}
