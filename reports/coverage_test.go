package reports

import (
	"fmt"
	"html"
	"strings"
	"testing"

	"sluicesim/scenarios"
)

// Goal: the index lists every condition of the coverage catalog with the
// seeds that reached it, flags an expected one no seed reached, and tells
// a condition the world cannot reach from a missed one.
func TestIndexCoverage(t *testing.T) {
	r := &Run{World: "chaos", Strategy: "random", SeedStart: 1, Seeds: 10, SeedsRun: 10, Coverage: []CoverageRow{
		{Name: "edge:broadcast->signing", Doc: "rebuild with proof of death", Seeds: 7, Expected: true},
		{Name: "worker:crash-after-write-ahead", Doc: "a worker crashes", Seeds: 0, Expected: true},
		{Name: "intake:unfunded-refused", Doc: "a POST the balance does not cover", Seeds: 0},
		{Name: "edge:signed->failed", Doc: "never taken", Note: "unreachable: signed never parks"},
	}}
	files, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	idx := string(files[0].Data)
	for _, want := range []string{
		"<h2>Coverage</h2>", `<span class="flag">1 never reached</span>`,
		`<tr><td>edge:broadcast-&gt;signing</td><td class="num">7</td>`,
		`<tr class="zero"><td>worker:crash-after-write-ahead</td><td class="num">0 <span class="flag">never reached</span>`,
		`<tr><td>intake:unfunded-refused</td><td class="num">0 <span class="meta">not expected here</span>`,
		`(unreachable: signed never parks)`,
	} {
		if !strings.Contains(idx, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
	// Reached or not expected, nothing is flagged.
	r.Coverage[1].Seeds = 3
	files, err = Render(r)
	if err != nil {
		t.Fatal(err)
	}
	if idx := string(files[0].Data); strings.Contains(idx, "never reached</span>") || !strings.Contains(idx, "Every expected condition was reached.") {
		t.Errorf("every expected condition reached, yet the index flags one or does not say so")
	}
	// A run that did not count coverage has no section.
	r.Coverage = nil
	files, err = Render(r)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(files[0].Data), "<h2>Coverage</h2>") {
		t.Error("index.html has a Coverage section without coverage")
	}
}

// Goal: the worlds' coverage table converts to the report's rows as is,
// and the index flags exactly the expected conditions no seed reached.
func TestIndexCoverageFromCatalog(t *testing.T) {
	cfg := scenarios.Chaos()
	seeds := map[string]int{"edge:broadcast->signing": 3}
	r := &Run{World: "chaos", Strategy: "random", SeedStart: 1, Seeds: 3, SeedsRun: 3}
	for _, l := range scenarios.CoverageTable(cfg, seeds) {
		r.Coverage = append(r.Coverage, CoverageRow(l))
	}
	files, err := Render(r)
	if err != nil {
		t.Fatal(err)
	}
	idx := string(files[0].Data)
	missed := len(scenarios.MissingCoverage(cfg, seeds))
	if want := fmt.Sprintf(`<span class="flag">%d never reached</span>`, missed); !strings.Contains(idx, want) {
		t.Errorf("index.html lacks %q", want)
	}
	if got := strings.Count(idx, `<span class="flag">never reached</span>`); got != missed {
		t.Errorf("index.html flags %d conditions, want the %d MissingCoverage names", got, missed)
	}
	wants := []string{`<td>edge:broadcast-&gt;signing</td><td class="num">3</td>`}
	for _, l := range scenarios.CoverageTable(cfg, seeds) {
		if l.Note != "" {
			// Each condition never required says why, as the catalog does.
			wants = append(wants, "("+html.EscapeString(l.Note)+")")
		}
	}
	if len(wants) == 1 {
		t.Fatal("the catalog has no condition with a note: nothing to check the notes by")
	}
	for _, want := range wants {
		if !strings.Contains(idx, want) {
			t.Errorf("index.html lacks %q", want)
		}
	}
}
