package model

import (
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// linFast is linModel.ToModel() written out by hand, so that porcupine's
// search does not allocate at every step: ToModel boxes every state in an
// interface and builds a new set of states at each step, even when the step
// changes nothing (which is every read, replay, conflict and refusal).
//
// It is the same model: a state is the set of linStates that ToModel's
// power-set construction would hold, listed in the order it would list
// them (so DescribeState, and with it porcupine's visualization, reads the
// same); Step computes each member's successors by linModel.Step's rules
// and merges them as ToModel does, keeping the first of each; Equal is
// ToModel's set equality. A step that keeps every member as it is returns
// the set it was given, unchanged (states are never written once made).
// Inputs and outputs are pointers to linInput and linOutput (boxing a
// pointer costs nothing). TestLinFastIsLinModel checks it against
// linModel.ToModel(), step by step.
var linFast = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		return partitionByID(history, func(input any) string { return input.(*linInput).ID })
	},
	Init: func() any { return linInitial },
	Step: func(state, input, output any) (bool, any) {
		next := linStep(state.(*linStates), input.(*linInput), output.(*linOutput))
		if next == nil {
			return false, nil
		}
		return true, next
	},
	Equal: func(a, b any) bool {
		x, y := a.(*linStates), b.(*linStates)
		if x == y {
			return true
		}
		if len(x.s) != len(y.s) {
			return false
		}
		for _, s := range x.s {
			if !slices.Contains(y.s, s) {
				return false
			}
		}
		return true
	},
	DescribeOperation: func(input, output any) string {
		return linModel.DescribeOperation(*input.(*linInput), *output.(*linOutput))
	},
	DescribeState: func(state any) string {
		set := state.(*linStates)
		descs := make([]string, len(set.s))
		for i, s := range set.s {
			descs[i] = linModel.DescribeState(s)
		}
		return "{" + strings.Join(descs, ", ") + "}"
	},
}

// linStates is a set of states of one id's row: no repeats, in the order
// ToModel's construction lists them. Never written once made.
type linStates struct {
	s      []linState
	inline [2]linState // s's backing when it fits: one allocation, not two
}

// linInitial is the set every partition starts from: the row absent.
var linInitial = &linStates{s: []linState{{}}}

// linNext is linModel.Step for one state, as what becomes of it: kept
// (the state itself is a successor) and/or added (the row present with the
// post's payload is one). Neither: the answer is impossible from s.
func linNext(s linState, in *linInput, out *linOutput) (kept, added bool) {
	if in.Read {
		return out.Present == s.Exists && (!s.Exists || out.Hash == s.Hash), false
	}
	switch out.Outcome {
	case Invalid:
		return in.Hash == "", false
	case Unfunded:
		return !s.Exists && in.Hash != "", false
	case Created:
		return false, !s.Exists && in.Hash != "" && out.Returned == in.Hash
	case Replayed:
		return s.Exists && s.Hash == in.Hash && out.Returned == in.Hash, false
	case Conflict:
		return s.Exists && in.Hash != "" && s.Hash != in.Hash, false
	case Failed:
		return true, !s.Exists && in.Hash != ""
	}
	return false, false
}

// linStep is ToModel's step: every member's successors, in order, the
// first of each kept; nil when there are none. It returns set itself when
// every member is kept and nothing is added.
func linStep(set *linStates, in *linInput, out *linOutput) *linStates {
	var buf [4]linState
	var next []linState // once a member changes: the successors so far
	changed := false
	for i, s := range set.s {
		kept, added := linNext(s, in, out)
		if kept && !added && !changed {
			continue // the successors so far are set.s[:i+1]
		}
		if !changed {
			changed = true
			next = append(buf[:0], set.s[:i]...)
		}
		if kept && !slices.Contains(next, s) {
			next = append(next, s)
		}
		if present := (linState{Exists: true, Hash: in.Hash}); added && !slices.Contains(next, present) {
			next = append(next, present)
		}
	}
	switch {
	case !changed:
		return set
	case len(next) == 0:
		return nil
	case len(next) == 1 && next[0] == linState{}:
		return linInitial
	}
	if in.succ != nil {
		// The sets a post most often makes, made with the input: the row
		// inserted, or (an answer lost) perhaps inserted.
		if present := (linState{Exists: true, Hash: in.Hash}); len(next) == 1 && next[0] == present {
			return &in.succ.present
		} else if len(next) == 2 && next[0] == (linState{}) && next[1] == present {
			return &in.succ.maybe
		}
	}
	made := &linStates{}
	made.s = append(made.inline[:0:len(made.inline)], next...)
	return made
}

// linSucc is what linStep returns, rather than a new set, when a post with
// payload hash h makes {present h} (the row inserted) or {absent, present
// h} (perhaps inserted), in that order. Both are made with the post's
// input, before the search, and only read by it.
type linSucc struct {
	present, maybe linStates
}

// init makes u the successors of a post with hash h, and returns it.
func (u *linSucc) init(h string) *linSucc {
	u.present.inline[0] = linState{Exists: true, Hash: h}
	u.present.s = u.present.inline[:1:1]
	u.maybe.inline = [2]linState{{}, {Exists: true, Hash: h}}
	u.maybe.s = u.maybe.inline[:2:2]
	return u
}

// partitionByID splits a history by operation id (id reads it from an
// input), ids in order, each part in history order, as linModel.Partition
// does. A history already sorted by id (CheckLinearizable builds it so) is
// cut where the id changes, without copying; any other is copied and sorted
// stably.
func partitionByID(history []porcupine.Operation, id func(input any) string) [][]porcupine.Operation {
	n, sorted := 0, true // parts, and whether history is sorted by id
	for i := range history {
		if i == 0 {
			n++
			continue
		}
		switch c := strings.Compare(id(history[i-1].Input), id(history[i].Input)); {
		case c > 0:
			sorted = false
		case c < 0:
			n++
		}
	}
	if !sorted {
		history = slices.Clone(history)
		slices.SortStableFunc(history, func(a, b porcupine.Operation) int { return strings.Compare(id(a.Input), id(b.Input)) })
		return partitionByID(history, id)
	}
	out := make([][]porcupine.Operation, 0, n)
	for start := 0; start < len(history); {
		end := start + 1
		for end < len(history) && id(history[end].Input) == id(history[start].Input) {
			end++
		}
		out = append(out, history[start:end:end])
		start = end
	}
	return out
}
