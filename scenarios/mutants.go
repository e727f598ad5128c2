package scenarios

import (
	"context"
	"errors"

	"sluicesim/sluice"
)

// Mutant is a deliberately broken variant of the core, used to measure what
// the checkers catch. Mutants are injected through the interfaces the world
// already wraps, so no mutant branch exists in the production code at all:
// the real build cannot be weakened by them.
type Mutant struct {
	Name   string
	Breaks string // what guard it removes
	// intakeStore wraps the store intake sees, if the mutant breaks intake.
	intakeStore func(sluice.Store) sluice.Store
}

// Mutants is the catalog, in a fixed order.
var Mutants = []Mutant{
	{
		Name:        "check-then-insert",
		Breaks:      "intake looks the id up, then inserts, as two store calls, and believes it created the row",
		intakeStore: func(s sluice.Store) sluice.Store { return checkThenInsert{s} },
	},
}

func mutant(name string) (Mutant, bool) {
	for _, m := range Mutants {
		if m.Name == name {
			return m, true
		}
	}
	return Mutant{}, false
}

// MutantNames lists the catalog's names in order.
func MutantNames() []string {
	names := make([]string, len(Mutants))
	for i, m := range Mutants {
		names[i] = m.Name
	}
	return names
}

// checkThenInsert is the classic intake race: a lookup, then an insert, as
// two separate store calls. Between them another request for the same id can
// insert first; the loser never learns, and tells its client "created".
type checkThenInsert struct{ sluice.Store }

func (c checkThenInsert) Insert(ctx context.Context, op sluice.NewOperation) (sluice.Operation, bool, error) {
	row, err := c.Store.Get(ctx, op.ID)
	if err == nil {
		return row, false, nil
	}
	if !errors.Is(err, sluice.ErrNotFound) {
		return row, false, err
	}
	row, _, err = c.Store.Insert(ctx, op)
	return row, err == nil, err
}
