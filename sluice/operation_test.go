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
