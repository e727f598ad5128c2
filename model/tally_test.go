package model

import (
	"slices"
	"testing"

	"sluicesim/sluice/tron/mocknode"
)

// Goal: merging sums by kind, keeps zero counts (a fault that never fired
// must show) and sorts by kind whatever the input order.
func TestMergeTallies(t *testing.T) {
	got := MergeTallies(
		[]Tally{{"lose-request", 2}, {"busy", 0}},
		nil,
		[]Tally{{"crash", 3}, {"lose-request", 1}},
	)
	want := []Tally{{"busy", 0}, {"crash", 3}, {"lose-request", 3}}
	if !slices.Equal(got, want) {
		t.Errorf("MergeTallies = %v, want %v", got, want)
	}
	if got := AddTally([]Tally{{"a", 1}}, []Tally{{"a", 2}, {"b", 0}}); !slices.Equal(got, []Tally{{"a", 3}, {"b", 0}}) {
		t.Errorf("AddTally = %v, want [{a 3} {b 0}]", got)
	}
	if got := MergeTallies(); len(got) != 0 {
		t.Errorf("MergeTallies() = %v, want empty", got)
	}
}

func TestFormatTally(t *testing.T) {
	got := FormatTally([]Tally{{"lose-request", 12}, {"busy", 0}, {"crash", 3}})
	want := "" +
		"busy           0\n" +
		"crash          3\n" +
		"lose-request  12\n"
	if got != want {
		t.Errorf("FormatTally =\n%s\nwant\n%s", got, want)
	}
	if got := FormatTally(nil); got != "" {
		t.Errorf("FormatTally(nil) = %q, want \"\"", got)
	}
}

// Goal: the node's counters become tallies with every kind, zeros included.
func TestFaultAndEventTally(t *testing.T) {
	n := mocknode.New(&fixedClock{t0}, mocknode.Config{})
	faults, events := FaultTally(n.FaultsFired()), EventTally(n.Events())
	if len(faults) != len(n.FaultsFired()) || len(events) != len(n.Events()) {
		t.Fatalf("tallies have %d and %d kinds, want %d and %d", len(faults), len(events), len(n.FaultsFired()), len(n.Events()))
	}
	if faults[0] != (Tally{"lose-request", 0}) {
		t.Errorf("FaultTally[0] = %v, want {lose-request 0}", faults[0])
	}
	if merged := MergeTallies(faults, events); len(merged) != len(faults)+len(events) {
		t.Errorf("fault and event kinds collide: %d merged kinds from %d+%d", len(merged), len(faults), len(events))
	}
}
