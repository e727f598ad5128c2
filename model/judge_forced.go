package model

import (
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// checkLinHistory is porcupine.CheckOperationsTimeout(linFast, history,
// timeout) for a history that CheckLinearizable built (grouped by id), with
// the ids whose order is forced decided without the search.
//
// One id's operations whose real-time intervals are pairwise disjoint (each
// returns strictly before the next is called) admit exactly one
// linearization, the real-time order, so the history is linearizable iff the
// model accepts them in that order: a replay, where porcupine would start a
// goroutine and build its entry lists for the same answer. In chaos runs
// about 96% of the ids are so. The others go to porcupine together, as
// before. When a forced id is illegal, the whole history goes to porcupine
// as it always did, so that an illegal verdict (and everything reported
// with it) is porcupine's. TestForcedOrderIsPorcupine holds the shortcut to
// porcupine's verdict on random histories; linForcedOrder turns it off.
func checkLinHistory(history []porcupine.Operation, timeout time.Duration) porcupine.CheckResult {
	if !linForcedOrder {
		return porcupine.CheckOperationsTimeout(linFast, history, timeout)
	}
	var searched []porcupine.Operation // the ids whose order is not forced
	for _, part := range linFast.Partition(history) {
		switch forced, legal := forcedOrder(part); {
		case !forced:
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
