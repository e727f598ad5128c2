package sluice

import (
	"sluicesim/sluice/tron"
	"testing"
	"time"
)

// TestClaimable pins the claim predicate every store shares: the simulator
// also reasons with it, so a change here must be a change of contract.
func TestClaimable(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		op   Operation
		want bool
	}{
		{"new row", Operation{State: Requested}, true},
		{"live lease", Operation{State: Signed, Token: 1, ClaimedBy: "w1", LeaseUntil: now.Add(time.Second)}, false},
		{"lease lapses at now", Operation{State: Signed, Token: 1, ClaimedBy: "w1", LeaseUntil: now}, true},
		{"lapsed lease", Operation{State: Signed, Token: 1, ClaimedBy: "w1", LeaseUntil: now.Add(-time.Second)}, true},
		{"released, not before later", Operation{State: Broadcast, Token: 2, NotBefore: now.Add(time.Second)}, false},
		{"released, not before reached", Operation{State: Broadcast, Token: 2, NotBefore: now}, true},
		{"confirmed", Operation{State: Confirmed}, false},
		{"failed", Operation{State: Failed}, false},
		{"rejected", Operation{State: Rejected}, false},
	}
	for _, c := range cases {
		if got := c.op.Claimable(now); got != c.want {
			t.Errorf("%s: Claimable = %v, want %v", c.name, got, c.want)
		}
	}
}

// Goal: an "unknown" proves death only from a node that had itself seen
// the cited solid block; from a node behind it (a load balancer's lagging
// backend) it proves nothing.
func TestEvidenceNeedsTheLookupNodesHeight(t *testing.T) {
	exp := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	ev := Evidence{Expiration: exp, Margin: 30 * time.Second, SolidNumber: 300,
		SolidTime: exp.Add(31 * time.Second), Lookup: tron.Unknown}
	for _, c := range []struct {
		lookupSolid int64
		proves      bool
	}{{300, true}, {350, true}, {299, false}, {260, false}, {0, false}} {
		ev.LookupSolid = c.lookupSolid
		if got := ev.Proves(); got != c.proves {
			t.Errorf("lookup node solid #%d, cited solid #300: Proves = %v, want %v", c.lookupSolid, got, c.proves)
		}
	}
}

// Goal: a txid found on chain proves its death only by a failure receipt in
// a block at or below the cited solid block that the node showing it calls
// solid: a SUCCESS (or no receipt yet) never does, and neither does a
// failure above the solid block, or one the node that showed it does not
// call solid (behind a balancer, a node left on an orphaned fork), which a
// reorg could still take away.
func TestEvidenceByReceipt(t *testing.T) {
	base := Evidence{Lookup: tron.Included, SolidNumber: 300, BlockNumber: 290, Receipt: tron.ReceiptRevert, SeenSolid: true}
	for _, c := range []struct {
		name   string
		mutate func(*Evidence)
		proves bool
	}{
		{"REVERT below solid", func(*Evidence) {}, true},
		{"OUT_OF_ENERGY at solid", func(e *Evidence) { e.Receipt, e.BlockNumber = tron.ReceiptOutOfEnergy, 300 }, true},
		{"REVERT above solid", func(e *Evidence) { e.BlockNumber = 301 }, false},
		{"REVERT below solid, not solid where seen", func(e *Evidence) { e.SeenSolid = false }, false},
		{"SUCCESS", func(e *Evidence) { e.Receipt = tron.ReceiptSuccess }, false},
		{"no receipt", func(e *Evidence) { e.Receipt = "" }, false},
		{"no block", func(e *Evidence) { e.BlockNumber = 0 }, false},
		{"pending", func(e *Evidence) { e.Lookup = tron.Pending }, false},
	} {
		ev := base
		c.mutate(&ev)
		if got := ev.Proves(); got != c.proves {
			t.Errorf("%s: Proves = %v, want %v (%s)", c.name, got, c.proves, ev)
		}
	}
}

// Goal: a row is parked exactly while a park spell is open on a live row.
func TestParked(t *testing.T) {
	for _, c := range []struct {
		op   Operation
		want bool
	}{
		{Operation{State: Broadcasting, Parks: 2, ParkReason: "re-send refused"}, true},
		{Operation{State: Broadcasting, Parks: 2}, false}, // a transition ended the spell
		{Operation{State: Review, Parks: 31, ParkReason: "re-send refused"}, false},
		{Operation{State: Validated}, false},
	} {
		if got := c.op.Parked(); got != c.want {
			t.Errorf("%s parks=%d reason=%q: Parked = %v, want %v", c.op.State, c.op.Parks, c.op.ParkReason, got, c.want)
		}
	}
}
