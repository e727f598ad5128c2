package model

import (
	"fmt"
	"strings"
)

// Tally is how often one kind of fault or event fired in a run. A run reports
// every kind it could have fired, zeros included, so that a green run of a
// world that never lied shows as such.
type Tally struct {
	Kind  string
	Count int
}

// MergeTallies merges tallies by kind name, summing the counts, and returns
// one entry per kind sorted by kind. A kind that appears only with a zero
// count is kept.
func MergeTallies(ts ...[]Tally) []Tally {
	sum := make(map[string]int)
	for _, t := range ts {
		for _, k := range t {
			sum[k.Kind] += k.Count
		}
	}
	out := make([]Tally, 0, len(sum))
	for _, kind := range sortedKeys(sum) {
		out = append(out, Tally{Kind: kind, Count: sum[kind]})
	}
	return out
}

// FormatTally lists every kind, zeros included, one per line sorted by kind
// (repeated kinds merged): kinds left-aligned, counts right-aligned, each
// line ending in a newline.
func FormatTally(t []Tally) string {
	t = MergeTallies(t)
	kindWidth, countWidth := 0, 0
	for _, k := range t {
		kindWidth = max(kindWidth, len(k.Kind))
		countWidth = max(countWidth, len(fmt.Sprint(k.Count)))
	}
	var b strings.Builder
	for _, k := range t {
		fmt.Fprintf(&b, "%-*s  %*d\n", kindWidth, k.Kind, countWidth, k.Count)
	}
	return b.String()
}
