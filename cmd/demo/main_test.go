package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDemoEndsInOnePayment runs the story twice: it must end in exactly one
// on-chain transfer, and tell the same story byte for byte both times.
func TestDemoEndsInOnePayment(t *testing.T) {
	var first, second bytes.Buffer
	if err := run(&first); err != nil {
		t.Fatalf("run: %v\n%s", err, first.String())
	}
	if err := run(&second); err != nil {
		t.Fatalf("second run: %v", err)
	}
	out := first.String()
	for _, want := range []string{
		"-> 201", "X-Idempotent-Replay=true", "signed -> broadcasting",
		"answer: timeout (ground truth: accepted=true)", "broadcast -> confirmed",
		"1 on-chain transfer", "Exactly one payment",
		"cust-demo's account: balance 87.5, held 12.5, paid 0 USDT (deposited 100)",
		"cust-demo's account: balance 87.5, held 0, paid 12.5 USDT (deposited 100)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if first.String() != second.String() {
		t.Errorf("two runs told different stories:\n%s\n---\n%s", first.String(), second.String())
	}
}
