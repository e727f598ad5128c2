package model

import (
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// checkLinHistory is porcupine.CheckOperationsTimeout(linFast, history,
// timeout) for a history that CheckLinearizable built (grouped by id), with
// the ids that are linearizable decided without porcupine.
//
// One id's operations whose real-time intervals are pairwise disjoint (each
// returns strictly before the next is called) admit exactly one
// linearization, the real-time order, so the history is linearizable iff the
// model accepts them in that order: a replay, where porcupine would start a
// goroutine and build its entry lists for the same answer. In chaos runs
// about 96% of the ids are so. The others, whose operations overlap, are
// searched here too (someOrder), as porcupine would search them but
// without its goroutines: porcupine starts one per id it is given, and
// with a core to spare it wakes a thread to run them, which cost more than
// the search. An id too costly to search here goes to porcupine, with any
// others like it. When an id is illegal, the whole history goes to
// porcupine as it always did, so that an illegal verdict (and everything
// reported with it) is porcupine's. TestForcedOrderIsPorcupine holds both
// shortcuts to porcupine's verdict on random histories; linForcedOrder
// turns them off.
func checkLinHistory(history []porcupine.Operation, timeout time.Duration) porcupine.CheckResult {
	if !linForcedOrder {
		return porcupine.CheckOperationsTimeout(linFast, history, timeout)
	}
	var searched []porcupine.Operation // the ids too costly to decide here
	for _, part := range linFast.Partition(history) {
		forced, legal := forcedOrder(part)
		if !forced {
			var decided bool
			if decided, legal = someOrder(part); !decided {
				searched = append(searched, part...)
				continue
			}
		}
		if !legal {
			return porcupine.CheckOperationsTimeout(linFast, history, timeout)
		}
	}
	if len(searched) == 0 {
		return porcupine.Ok
	}
	return porcupine.CheckOperationsTimeout(linFast, searched, timeout)
}

// linForcedOrder is whether checkLinHistory decides forced ids itself; off
// only in tests that compare it with porcupine.
var linForcedOrder = true

// forcedOrder reports whether part (one id's operations) has a forced
// order, every operation returning strictly before the next one (by call)
// is called, and if so whether linFast accepts it in that order. An equal
// return and call counts as overlapping: porcupine may order those either
// way.
func forcedOrder(part []porcupine.Operation) (forced, legal bool) {
	var buf [16]int32
	order := buf[:0]
	for i := range part {
		order = append(order, int32(i))
	}
	slices.SortFunc(order, func(a, b int32) int {
		switch x, y := part[a].Call, part[b].Call; {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	for k := 1; k < len(order); k++ {
		if part[order[k-1]].Return >= part[order[k]].Call {
			return false, false
		}
	}
	state := linInitial
	for _, i := range order {
		op := &part[i]
		if state = linStep(state, op.Input.(*linInput), op.Output.(*linOutput)); state == nil {
			return true, false
		}
	}
	return true, true
}

// someOrderBudget bounds someOrder's search, in model steps: an id's few
// overlapping operations take a handful; a pathological one goes to
// porcupine, whose search remembers the states it has seen.
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
	budget := someOrderBudget
	all := uint64(1)<<len(part) - 1
	var search func(placed uint64, state *linStates) bool
	search = func(placed uint64, state *linStates) bool {
		if placed == all {
			return true
		}
		for i := range part {
			if placed&(1<<i) != 0 || !mayComeNext(part, placed, i) {
				continue
			}
			if budget == 0 {
				return false
			}
			budget--
			op := &part[i]
			if next := linStep(state, op.Input.(*linInput), op.Output.(*linOutput)); next != nil && search(placed|1<<i, next) {
				return true
			}
		}
		return false
	}
	legal = search(0, linInitial)
	return legal || budget > 0, legal
}

// mayComeNext reports whether part[i] may be linearized next once the
// operations in placed are: no other unplaced operation returned strictly
// before it was called.
func mayComeNext(part []porcupine.Operation, placed uint64, i int) bool {
	for j := range part {
		if j != i && placed&(1<<j) == 0 && part[j].Return < part[i].Call {
			return false
		}
	}
	return true
}
