package scenarios

import (
	"slices"
	"testing"

	"sluicesim/scenarios/hostile"
)

// Goal: each hostile-client category earns its place. For every category
// there is an intake mutant that the worlds catch when the hostile clients
// draw from that category alone, and that passes when they draw from every
// other category (the tidy clients, duplicates, conflicts and the invalid
// menu all still running): only that category's inputs reach the rule the
// mutant breaks.
func TestEachHostileCategoryCatchesItsMutant(t *testing.T) {
	const seeds = 40
	for _, cat := range hostile.Categories {
		var mine []Mutant
		for _, m := range Mutants {
			if m.Category == cat.Name {
				mine = append(mine, m)
			}
		}
		if len(mine) == 0 {
			t.Errorf("hostile category %s has no mutant that it alone catches", cat.Name)
		}
		others := slices.DeleteFunc(hostile.Names(), func(n string) bool { return n == cat.Name })
		for _, m := range mine {
			cfg := Chaos()
			cfg.HostileEvery = 2 // thirty hostile posts a seed
			cfg.Mutant = m.Name

			cfg.Hostile = []string{cat.Name}
			caught := uint64(0)
			for seed := uint64(1); seed <= seeds && caught == 0; seed++ {
				if len(Run(cfg, seed, Options{}).Violations) > 0 {
					caught = seed
				}
			}
			if caught == 0 {
				t.Errorf("%s: not caught in %d seeds with hostile clients of category %s", m.Name, seeds, cat.Name)
			} else {
				t.Logf("%s: caught by %s at seed %d", m.Name, cat.Name, caught)
			}

			cfg.Hostile = others
			for seed := uint64(1); seed <= seeds; seed++ {
				if res := Run(cfg, seed, Options{}); len(res.Violations) > 0 {
					v := res.Violations[0]
					t.Errorf("%s: caught at seed %d without category %s (%s: %s): the category is not what catches it",
						m.Name, seed, cat.Name, v.Invariant, v.Message)
					break
				}
			}
		}
	}
}
