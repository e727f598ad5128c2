package model

import (
	"time"

	"github.com/anishathalye/porcupine"
)

// checkLinHistory is porcupine.CheckOperationsTimeout(linFast, history,
// timeout) for a history that CheckLinearizable built (grouped by id), with
// the ids that are linearizable decided without porcupine.
//
// Each id is searched here (someOrder) as porcupine would search it, but
// without porcupine's goroutines: it starts one per id it is given, and
// with a core to spare it wakes a thread to run them, which cost more than
// the search. Most ids never branch: in chaos runs about 96% have
// operations that are one after another (each returns strictly before the
// next is called), which admit exactly one order, so the search takes one
// step an operation. An id too costly to search here goes to porcupine,
// with any others like it. When an id is illegal, the whole history goes
// to porcupine as it always did, so that an illegal verdict (and
// everything reported with it) is porcupine's. TestSomeOrderIsPorcupine
// holds the search to porcupine's verdict on random histories.
func checkLinHistory(history []porcupine.Operation, timeout time.Duration) porcupine.CheckResult {
	var searched []porcupine.Operation // the ids too costly to decide here
	for _, part := range linFast.Partition(history) {
		switch decided, legal := someOrder(part); {
		case !decided:
			searched = append(searched, part...)
		case !legal:
			return porcupine.CheckOperationsTimeout(linFast, history, timeout)
		}
	}
	if len(searched) == 0 {
		return porcupine.Ok
	}
	return porcupine.CheckOperationsTimeout(linFast, searched, timeout)
}

// someOrderBudget bounds someOrder's search, in model steps: an id whose
// operations are one after another takes one step an operation, a few that
// overlap a handful; a pathological one goes to porcupine, whose search
// remembers the states it has seen.
const someOrderBudget = 512

// someOrder decides one id's operations (at most 64) by searching, depth
// first, the orders that respect real time for one that the model accepts,
// as porcupine's search does: an operation may come next unless another
// not yet placed returned strictly before it was called (a return at the
// instant of a call overlaps it, as porcupine orders calls before returns
// at one instant). It reports decided false when the search would take
// more than someOrderBudget steps.
func someOrder(part []porcupine.Operation) (decided, legal bool) {
	if len(part) > 64 {
		return false, false
	}
	s := orderSearch{part: part, all: uint64(1)<<len(part) - 1, budget: someOrderBudget}
	legal = s.from(0, linInitial)
	return legal || s.budget > 0, legal
}

// orderSearch is someOrder's search: a method rather than a recursive
// closure, which would be allocated for every id.
type orderSearch struct {
	part   []porcupine.Operation
	all    uint64 // every operation placed
	budget int    // model steps left
}

// from reports whether the operations not in placed can follow, in some
// order, those in placed, which brought the model to state.
func (s *orderSearch) from(placed uint64, state *linStates) bool {
	if placed == s.all {
		return true
	}
	for i := range s.part {
		if placed&(1<<i) != 0 || !s.mayComeNext(placed, i) {
			continue
		}
		if s.budget == 0 {
			return false
		}
		s.budget--
		op := &s.part[i]
		if next := linStep(state, op.Input.(*linInput), op.Output.(*linOutput)); next != nil && s.from(placed|1<<i, next) {
			return true
		}
	}
	return false
}

// mayComeNext reports whether operation i may be linearized next once the
// operations in placed are: no unplaced operation returned strictly before
// it was called. That includes i itself: an operation recorded as
// returning before its call can never be placed, as porcupine can never
// place it, so such a history is illegal here as there.
func (s *orderSearch) mayComeNext(placed uint64, i int) bool {
	for j := range s.part {
		if placed&(1<<j) == 0 && s.part[j].Return < s.part[i].Call {
			return false
		}
	}
	return true
}
