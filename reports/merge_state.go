package reports

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"sluicesim/model"
	"sluicesim/sluice"
)

// State is the part of an Aggregate that a JSON summary does not hold
// otherwise: the charts' histograms. Shards write it into their summaries,
// and a merge folds the shards' states into the state a single run of all
// their seeds would have had (every part is a sum, so the order of the
// shards does not matter). It stays small however many seeds ran: the
// steps are a histogram of distinct step counts, not one entry per seed
// (the chart bins steps and never reads their order).
type State struct {
	// Transitions are the non-zero cells of the [from][to] matrix, in
	// matrix order.
	Transitions []TransitionCount `json:"transitions"`
	// ConfirmSeconds and Rebuilds are the histograms as Run has them.
	ConfirmSeconds []int `json:"confirm_seconds"`
	Rebuilds       []int `json:"rebuilds"`
	// Steps counts seeds per step count, by step count; a step count no
	// seed took is left out.
	Steps StepsHistogram `json:"steps"`
}

// StepsHistogram is written to JSON as one string, "STEPS[*SEEDS] ...",
// ascending ("555 589 600*2": one seed of 555 steps, one of 589, two of
// 600): a swarm's seeds take anything from hundreds to tens of thousands
// of steps, so most counts are distinct, and an array of objects would
// make a 100,000-seed summary hundreds of thousands of lines long.
type StepsHistogram []StepsCount

// MarshalJSON writes the compact string.
func (h StepsHistogram) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	for i, c := range h {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(c.Steps))
		if c.Seeds != 1 {
			b.WriteByte('*')
			b.WriteString(strconv.Itoa(c.Seeds))
		}
	}
	return json.Marshal(b.String())
}

// UnmarshalJSON reads the compact string, refusing anything else.
func (h *StepsHistogram) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("steps: want a string of STEPS[*SEEDS]: %w", err)
	}
	out := StepsHistogram{}
	for f := range strings.FieldsSeq(s) {
		steps, seeds, hasSeeds := strings.Cut(f, "*")
		c := StepsCount{Seeds: 1}
		var err error
		if c.Steps, err = strconv.Atoi(steps); err == nil && hasSeeds {
			c.Seeds, err = strconv.Atoi(seeds)
		}
		if err != nil || c.Steps < 0 || c.Seeds < 1 || len(out) > 0 && out[len(out)-1].Steps >= c.Steps {
			return fmt.Errorf("steps: %q: want STEPS[*SEEDS], ascending, with SEEDS >= 1", f)
		}
		out = append(out, c)
	}
	*h = out
	return nil
}

// TransitionCount is one cell of the transitions matrix, by state name.
type TransitionCount struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Count int    `json:"count"`
}

// StepsCount is one bar of the steps histogram: Seeds seeds took Steps
// steps.
type StepsCount struct {
	Steps int `json:"steps"`
	Seeds int `json:"seeds"`
}

// CoverageSeeds is how many seeds reached one named condition.
type CoverageSeeds struct {
	Name  string `json:"name"`
	Seeds int    `json:"seeds"`
}

// State is the aggregate's histograms, as a merge needs them.
func (a *Aggregate) State() State {
	a.mu.Lock()
	defer a.mu.Unlock()
	var st State
	for i, row := range a.transitions {
		for j, n := range row {
			if n != 0 {
				st.Transitions = append(st.Transitions, TransitionCount{From: sluice.State(i).String(), To: sluice.State(j).String(), Count: n})
			}
		}
	}
	st.ConfirmSeconds = slices.Clone(a.confirmSeconds)
	st.Rebuilds = slices.Clone(a.rebuilds)
	steps := maps.Clone(a.stepCounts)
	if steps == nil {
		steps = map[int]int{}
	}
	for _, n := range a.steps[:a.stepsSeen()] {
		steps[n]++
	}
	st.Steps = stepCounts(steps)
	return st
}

// stepsSeen is how many of the per-seed step slots hold a seed that ran:
// a run that stopped early (a time budget) fills a prefix. Slots of seeds
// that did not run would count as seeds of zero steps. Call with a.mu
// held.
func (a *Aggregate) stepsSeen() int {
	return min(a.added, len(a.steps))
}

func stepCounts(m map[int]int) StepsHistogram {
	out := make(StepsHistogram, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, StepsCount{Steps: k, Seeds: m[k]})
	}
	return out
}

// MergeStates folds states into one: the state one aggregate of all their
// seeds has. A state naming a state-machine state that does not exist, or
// holding a negative count, is refused (it was not written by State).
func MergeStates(states ...State) (State, error) {
	var tr [sluice.StateCount][sluice.StateCount]int
	var confirm, rebuilds []int
	steps := map[int]int{}
	for _, st := range states {
		for _, t := range st.Transitions {
			from, err1 := stateIndex(t.From)
			to, err2 := stateIndex(t.To)
			if err := cmp.Or(err1, err2); err != nil {
				return State{}, fmt.Errorf("transitions: %w", err)
			}
			if t.Count < 0 {
				return State{}, fmt.Errorf("transitions: %s -> %s: negative count %d", t.From, t.To, t.Count)
			}
			tr[from][to] += t.Count
		}
		var err error
		if confirm, err = addHistogram(confirm, st.ConfirmSeconds, "confirm_seconds"); err != nil {
			return State{}, err
		}
		if rebuilds, err = addHistogram(rebuilds, st.Rebuilds, "rebuilds"); err != nil {
			return State{}, err
		}
		for _, s := range st.Steps {
			if s.Steps < 0 || s.Seeds < 0 {
				return State{}, fmt.Errorf("steps: negative entry {steps %d, seeds %d}", s.Steps, s.Seeds)
			}
			if s.Seeds > 0 {
				steps[s.Steps] += s.Seeds
			}
		}
	}
	a := &Aggregate{transitions: tr, confirmSeconds: confirm, rebuilds: rebuilds, stepCounts: steps}
	return a.State(), nil
}

// stateIndex is the matrix index of a state's name: sluice.ParseState
// without refusing "none", the row of creations.
func stateIndex(name string) (int, error) {
	for i := range sluice.StateCount {
		if sluice.State(i).String() == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown state %q", name)
}

// addHistogram adds h into sum bucket by bucket. Both keep their length
// from bump (the highest bucket hit, plus one), so the sum is what one
// aggregate bumping every value would hold.
func addHistogram(sum, h []int, name string) ([]int, error) {
	for i, n := range h {
		if n < 0 {
			return nil, fmt.Errorf("%s: negative count %d in bucket %d", name, n, i)
		}
		for len(sum) <= i {
			sum = append(sum, 0)
		}
		sum[i] += n
	}
	return sum, nil
}

// Totals are the sums a JSON summary holds beside the State; with it they
// rebuild an aggregate from merged summaries (AddMerged).
type Totals struct {
	Failed       int
	PerInvariant map[string]int
	Outcomes     model.Outcomes
	Faults       []model.Tally
	Coverage     []CoverageSeeds
}

// AddMerged folds merged shards into the aggregate: their state (see
// MergeStates) and their totals, so that Fill gives the report one run of
// all their seeds would. The steps from a state go into the chart in
// ascending order rather than in seed order, which the chart does not
// read. Failing seeds are not kept: the caller gives the report its pages.
func (a *Aggregate) AddMerged(st State, t Totals) error {
	merged, err := MergeStates(a.State(), st)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.transitions = [sluice.StateCount][sluice.StateCount]int{}
	for _, c := range merged.Transitions {
		from, _ := stateIndex(c.From)
		to, _ := stateIndex(c.To)
		a.transitions[from][to] = c.Count
	}
	a.confirmSeconds, a.rebuilds = merged.ConfirmSeconds, merged.Rebuilds
	a.steps, a.added = nil, 0
	a.stepCounts = map[int]int{}
	for _, s := range merged.Steps {
		a.stepCounts[s.Steps] = s.Seeds
	}
	a.failed += t.Failed
	for k, v := range t.PerInvariant {
		a.perInvariant[k] += v
	}
	a.outcomes = a.outcomes.Add(t.Outcomes)
	for _, f := range t.Faults {
		a.tally[f.Kind] += f.Count
	}
	for _, c := range t.Coverage {
		if a.coverage == nil {
			a.coverage = map[string]int{}
		}
		a.coverage[c.Name] += c.Seeds
	}
	return nil
}

// Coverage is, per named condition, how many seeds reached it, sorted by
// name.
func (a *Aggregate) Coverage() []CoverageSeeds {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]CoverageSeeds, 0, len(a.coverage))
	for _, k := range slices.Sorted(maps.Keys(a.coverage)) {
		out = append(out, CoverageSeeds{Name: k, Seeds: a.coverage[k]})
	}
	return out
}

// MergeCoverage sums coverage lists per name, in the order the lists name
// them (the first list's order, then names first seen later): lists of
// one catalog merge in the catalog's order, whatever it is.
func MergeCoverage(lists ...[]CoverageSeeds) []CoverageSeeds {
	var out []CoverageSeeds
	at := map[string]int{}
	for _, l := range lists {
		for _, c := range l {
			i, ok := at[c.Name]
			if !ok {
				i = len(out)
				at[c.Name] = i
				out = append(out, CoverageSeeds{Name: c.Name})
			}
			out[i].Seeds += c.Seeds
		}
	}
	return out
}

// stepsPerSeed is the chart's steps: one entry per seed, those added one
// by one in seed order, then those merged in ascending order. Call with
// a.mu held.
func (a *Aggregate) stepsPerSeed() []int {
	if len(a.stepCounts) == 0 {
		return a.steps[:a.stepsSeen()]
	}
	out := slices.Clone(a.steps[:a.stepsSeen()])
	for _, s := range stepCounts(a.stepCounts) {
		for range s.Seeds {
			out = append(out, s.Steps)
		}
	}
	return out
}
