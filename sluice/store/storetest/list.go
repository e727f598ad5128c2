package storetest

import (
	"fmt"
	"slices"
	"time"

	"sluicesim/sluice"
)

var listCases = []testCase{
	{"List/FiltersInIDOrder", testList},
	{"List/RefusesBadFilters", testListRefused},
	{"Census/CountsStatesAndParked", testCensus},
}

// listFixture makes rows in several states, some parked, inserted in an
// order unlike their id order (so neither can pass for the other):
//
//	1 validated          2 validated, parked     3 rejected
//	4 requested, parked  5 review                6 requested
//	7 validated, parked once, the spell ended by a transition
func listFixture(e *env) {
	for _, n := range []int{5, 3, 1, 4, 2, 6, 7} {
		e.insert(n)
		e.clock.Advance(time.Second)
	}
	held := map[sluice.OperationID]sluice.Operation{}
	for _, op := range e.claim("w1", 100) {
		held[op.ID] = op
	}
	if len(held) != 7 {
		e.t.Fatalf("fixture: claimed %d rows, want 7", len(held))
	}
	e.step(held[id(1)], "w1", sluice.Validated)
	e.park(e.step(held[id(2)], "w1", sluice.Validated), "w1", time.Hour, "bandwidth")
	e.step(held[id(3)], "w1", sluice.Rejected)
	e.park(held[id(4)], "w1", time.Hour, "node unreachable")
	e.step(e.step(held[id(5)], "w1", sluice.Validated), "w1", sluice.Review)
	e.park(held[id(7)], "w1", 0, "energy")
	e.step(e.claimID("w2", id(7)), "w2", sluice.Validated)
}

// Goal: List selects by states (any of them; all when none), by parked now
// (sluice.Operation.Parked: a spell a transition ended does not count), and
// by ids after After, in id order, at most Limit; paging with After = the
// last id seen walks every row once; each row is the row Get reads.
func testList(e *env) {
	listFixture(e)
	list := func(f sluice.ListFilter) []sluice.Operation {
		e.t.Helper()
		ops, err := e.s.List(e.ctx, f)
		if err != nil {
			e.t.Fatalf("List(%+v): %v", f, err)
		}
		return ops
	}
	ns := func(ns ...int) []sluice.OperationID {
		out := []sluice.OperationID{}
		for _, n := range ns {
			out = append(out, id(n))
		}
		return out
	}
	for _, tc := range []struct {
		f    sluice.ListFilter
		want []sluice.OperationID
	}{
		{sluice.ListFilter{Limit: 100}, ns(1, 2, 3, 4, 5, 6, 7)},
		{sluice.ListFilter{Limit: sluice.ListMax}, ns(1, 2, 3, 4, 5, 6, 7)},
		{sluice.ListFilter{States: []sluice.State{sluice.Validated}, Limit: 100}, ns(1, 2, 7)},
		{sluice.ListFilter{States: []sluice.State{sluice.Review, sluice.Requested}, Limit: 100}, ns(4, 5, 6)},
		{sluice.ListFilter{States: []sluice.State{sluice.Confirmed}, Limit: 100}, ns()},
		{sluice.ListFilter{Parked: true, Limit: 100}, ns(2, 4)},
		{sluice.ListFilter{Parked: true, States: []sluice.State{sluice.Validated}, Limit: 100}, ns(2)},
		{sluice.ListFilter{Parked: true, States: []sluice.State{sluice.Review, sluice.Rejected}, Limit: 100}, ns()},
		{sluice.ListFilter{After: id(2), Limit: 100}, ns(3, 4, 5, 6, 7)},
		{sluice.ListFilter{After: id(2), Limit: 2}, ns(3, 4)},
		{sluice.ListFilter{After: id(2), States: []sluice.State{sluice.Validated}, Limit: 100}, ns(7)},
		{sluice.ListFilter{Limit: 3}, ns(1, 2, 3)},
		{sluice.ListFilter{After: id(7), Limit: 100}, ns()},
		// After is compared as the id's text, whatever it is.
		{sluice.ListFilter{After: "0", Limit: 100}, ns(1, 2, 3, 4, 5, 6, 7)},
		{sluice.ListFilter{After: id(3)[:30], Limit: 100}, ns(1, 2, 3, 4, 5, 6, 7)},
		{sluice.ListFilter{After: id(3) + "0", Limit: 100}, ns(4, 5, 6, 7)},
		{sluice.ListFilter{After: "~", Limit: 100}, ns()},
	} {
		got := list(tc.f)
		if !slices.Equal(ids(got), tc.want) {
			e.t.Errorf("List(%+v) = %v, want %v", tc.f, ids(got), tc.want)
		}
		for _, op := range got {
			for _, d := range diffOperation(op, e.get(op.ID)) {
				e.t.Errorf("List(%+v): row %s differs from Get: %s", tc.f, op.ID, d)
			}
		}
	}
	var paged []sluice.OperationID
	f := sluice.ListFilter{Limit: 2}
	for range 10 {
		page := list(f)
		paged = append(paged, ids(page)...)
		if len(page) < f.Limit {
			break
		}
		f.After = page[len(page)-1].ID
	}
	if want := ns(1, 2, 3, 4, 5, 6, 7); !slices.Equal(paged, want) {
		e.t.Errorf("paging by 2 = %v, want %v", paged, want)
	}
}

// Goal: a filter sluice.CheckListFilter refuses is refused by every store,
// with a plain error.
func testListRefused(e *env) {
	e.insert(1)
	for _, f := range []sluice.ListFilter{
		{Limit: 0}, {Limit: -1}, {Limit: sluice.ListMax + 1},
		{States: []sluice.State{sluice.None}, Limit: 10},
		{States: []sluice.State{sluice.Requested, sluice.State(200)}, Limit: 10},
	} {
		ops, err := e.s.List(e.ctx, f)
		if err == nil {
			e.t.Errorf("List(%+v) = %v, nil; want an error", f, ids(ops))
		}
		if isSentinel(err) {
			e.t.Errorf("List(%+v): err = %v matches an operating condition; want a plain error", f, err)
		}
	}
}

// Goal: Census counts every row by state, and the rows parked now; an empty
// store counts nothing.
func testCensus(e *env) {
	census := func() sluice.Census {
		e.t.Helper()
		c, err := e.s.Census(e.ctx)
		if err != nil {
			e.t.Fatalf("Census: %v", err)
		}
		return c
	}
	if got := census(); got != (sluice.Census{}) {
		e.t.Errorf("Census of an empty store = %+v, want zero", got)
	}
	listFixture(e)
	var want sluice.Census
	want.States[sluice.Validated] = 3
	want.States[sluice.Requested] = 2
	want.States[sluice.Rejected] = 1
	want.States[sluice.Review] = 1
	want.Parked = 2
	if got := census(); got != want {
		e.t.Errorf("Census = %s, want %s", censusString(got), censusString(want))
	}
}

func censusString(c sluice.Census) string {
	s := ""
	for st, n := range c.States {
		if n != 0 {
			s += fmt.Sprintf("%s:%d ", sluice.State(st), n)
		}
	}
	return fmt.Sprintf("{%sparked:%d}", s, c.Parked)
}
