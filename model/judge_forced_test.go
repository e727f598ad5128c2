package model

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// Goal: checkLinHistory decides exactly what porcupine decides, on random
// histories over a few ids whose operations are often one after another
// (one order only: the common case) and often overlapping; and for every
// id, someOrder's search agrees with porcupine's search of that id alone.
func TestSomeOrderIsPorcupine(t *testing.T) {
	ins, outs := linOps()
	r := rand.New(rand.NewPCG(5, 6))
	kinds := map[string]int{}
	for range 6000 {
		n := 1 + r.IntN(7)
		history := make([]porcupine.Operation, n)
		sequential := r.IntN(3) > 0
		clock := int64(0)
		for j := range n {
			k := r.IntN(len(ins))
			in, out := ins[k], outs[k]
			in.ID = []string{"b", "a", "c"}[r.IntN(3)]
			if in.Hash != "" && r.IntN(2) == 0 {
				in.succ = new(linSucc).init(in.Hash)
			}
			var call, ret int64
			if sequential {
				call = clock + int64(r.IntN(3)) // may equal the last return: overlapping
				ret = call + int64(r.IntN(3))
				clock = ret
				if r.IntN(12) == 0 {
					ret = 1 << 62 // never returned
				}
			} else {
				call = int64(r.IntN(10))
				ret = call + int64(r.IntN(5))
			}
			if r.IntN(40) == 0 {
				// A record that returns before its call: no order can
				// place it (porcupine's verdict is Illegal).
				ret = call - 1 - int64(r.IntN(3))
			}
			history[j] = porcupine.Operation{ClientId: j, Input: &in, Output: &out, Call: call, Return: ret}
		}
		// Grouped by id, as CheckLinearizable builds it.
		slices.SortStableFunc(history, func(a, b porcupine.Operation) int {
			return strings.Compare(a.Input.(*linInput).ID, b.Input.(*linInput).ID)
		})
		for _, part := range linFast.Partition(history) {
			want := porcupine.CheckOperations(linFast, part)
			decided, legal := someOrder(part)
			kind := "overlapping"
			if oneAfterAnother(part) {
				kind = "one after another"
			}
			switch {
			case !decided:
				t.Fatalf("id %s: %d operations undecided within %d steps: %+v", part[0].Input.(*linInput).ID, len(part), someOrderBudget, part)
			case legal != want:
				t.Fatalf("id %s (%s): someOrder legal %v, porcupine %v: %+v", part[0].Input.(*linInput).ID, kind, legal, want, part)
			case legal:
				kinds[kind+" legal"]++
			default:
				kinds[kind+" illegal"]++
			}
		}
		got, want := checkLinHistory(history, time.Minute), porcupine.CheckOperationsTimeout(linFast, history, time.Minute)
		if got != want {
			t.Fatalf("history %+v: checkLinHistory %v, porcupine %v", history, got, want)
		}
		kinds[string(got)]++
	}
	t.Logf("%v", kinds)
	for _, k := range []string{"one after another legal", "one after another illegal", "overlapping legal", "overlapping illegal", string(porcupine.Ok), string(porcupine.Illegal)} {
		if kinds[k] < 200 {
			t.Errorf("only %d %q: too few to compare (%v)", kinds[k], k, kinds)
		}
	}
}

// Goal: an id too costly to search here goes to porcupine, and the verdict
// is still porcupine's, illegal or not. Method: ten overlapping operations
// on one id, listed so that the depth-first search runs out of steps long
// before it has tried their orders:
//   - illegal: eight reads that found nothing and one that found a row no
//     post made; every order of the eight is legal as far as it goes and
//     none can take the ninth (8! orders);
//   - legal: eight reads that found the row, listed first, then the post
//     that made it, then one read that found nothing; the only orders are
//     the empty read, the post, the eight reads, and the search tries the
//     reads first. A give-up path that answered Illegal (or dropped the id)
//     fails here.
func TestSomeOrderGivesUpToPorcupine(t *testing.T) {
	absent, found := linOutput{}, linOutput{Present: true, Hash: "h1"}
	read := func(i int, out *linOutput) porcupine.Operation {
		return porcupine.Operation{ClientId: i, Input: &linInput{Read: true, ID: "x"}, Output: out, Call: 0, Return: 100}
	}
	var illegal, legal []porcupine.Operation
	for i := range 8 {
		illegal = append(illegal, read(i, &absent))
		legal = append(legal, read(i, &found))
	}
	illegal = append(illegal, read(8, &found))
	legal = append(legal,
		porcupine.Operation{ClientId: 8, Input: &linInput{ID: "x", Hash: "h1"}, Output: &linOutput{Outcome: Created, Returned: "h1"}, Call: 0, Return: 100},
		read(9, &absent))
	for _, c := range []struct {
		name    string
		history []porcupine.Operation
		want    porcupine.CheckResult
	}{{"illegal", illegal, porcupine.Illegal}, {"legal", legal, porcupine.Ok}} {
		if decided, legal := someOrder(c.history); decided {
			t.Fatalf("%s: someOrder decided %v within %d steps, want it to give up", c.name, legal, someOrderBudget)
		}
		got, want := checkLinHistory(c.history, time.Minute), porcupine.CheckOperationsTimeout(linFast, c.history, time.Minute)
		if got != want || got != c.want {
			t.Fatalf("%s: checkLinHistory %v, porcupine %v, want both %v", c.name, got, want, c.want)
		}
	}
}

// oneAfterAnother reports whether part's operations return each strictly
// before the next (by call) is called: the histories with one order only.
func oneAfterAnother(part []porcupine.Operation) bool {
	byCall := slices.Clone(part)
	slices.SortFunc(byCall, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	for k := 1; k < len(byCall); k++ {
		if byCall[k-1].Return >= byCall[k].Call {
			return false
		}
	}
	return true
}
