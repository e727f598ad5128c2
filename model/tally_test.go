package model

import (
	"slices"
	"testing"
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
