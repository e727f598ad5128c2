package scenarios

import (
	"reflect"
	"strings"
	"testing"
)

// Goal: the person on call's slips cost the world nothing but their own
// checks: a slip draws no tape choice and, refused for its input, reaches
// no store or node call (no yield point), so a wire seed with slips makes
// the same steps, draws the same tape and ends with the same outcomes as
// the seed without them, and every kind of slip is made and refused.
func TestSlipsKeepTheSchedule(t *testing.T) {
	slips := map[string]bool{}
	for seed := uint64(1); seed <= 6; seed++ {
		with := Run(Wire(), seed, Options{TapeDigest: true, Tracing: true})
		without := Run(Wire(), seed, Options{TapeDigest: true, noSlips: true})
		if len(with.Violations) > 0 || len(without.Violations) > 0 {
			t.Fatalf("wire seed %d: violations %v (with slips), %v (without)", seed, with.Violations, without.Violations)
		}
		if with.Steps != without.Steps || with.TapeDigest != without.TapeDigest {
			t.Errorf("wire seed %d: %d steps, tape %x with slips; %d steps, tape %x without: a slip moved the schedule", seed, with.Steps, with.TapeDigest, without.Steps, without.TapeDigest)
		}
		if !reflect.DeepEqual(without.Outcomes, with.Outcomes) {
			t.Errorf("wire seed %d: the outcomes differ with slips:\n%+v\nwithout:\n%+v", seed, with.Outcomes, without.Outcomes)
		}
		for _, e := range with.Trace.Events {
			for _, s := range append(append(actionSlips[:], creditSlips[:]...), resolveSlip) {
				if strings.Contains(e.Text, "("+s.name+")") {
					slips[s.name] = true
				}
			}
		}
	}
	for _, s := range append(append(actionSlips[:], creditSlips[:]...), resolveSlip) {
		if !slips[s.name] {
			t.Errorf("no wire seed of 1 to 6 made the slip %q", s.name)
		}
	}
}

// Goal: a hostile client's lie about its body's length is answered 400
// and costs the world nothing else: chaos seeds with the lie make the same
// steps, draw the same tape and end with the same outcomes as without it.
func TestLengthLieKeepsTheSchedule(t *testing.T) {
	lies := 0
	for seed := uint64(1); seed <= 4; seed++ {
		with := Run(Chaos(), seed, Options{TapeDigest: true})
		without := Run(Chaos(), seed, Options{TapeDigest: true, noLengthLie: true})
		if len(with.Violations) > 0 || len(without.Violations) > 0 {
			t.Fatalf("chaos seed %d: violations %v (with the lie), %v (without)", seed, with.Violations, without.Violations)
		}
		if with.Steps != without.Steps || with.TapeDigest != without.TapeDigest {
			t.Errorf("chaos seed %d: %d steps, tape %x with the lie; %d steps, tape %x without: the lie moved the schedule", seed, with.Steps, with.TapeDigest, without.Steps, without.TapeDigest)
		}
		if !reflect.DeepEqual(without.Outcomes, with.Outcomes) {
			t.Errorf("chaos seed %d: the outcomes differ with the lie:\n%+v\nwithout:\n%+v", seed, with.Outcomes, without.Outcomes)
		}
		for _, tl := range with.Tally {
			if tl.Kind == "client-length-lie" {
				lies += tl.Count
			}
		}
	}
	if lies == 0 {
		t.Error("no hostile client of chaos seeds 1 to 4 lied about its length")
	}
}
