package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"sluicesim/model"
	"sluicesim/sluice/tron/mocknode"
)

// faultTally counts what actually fired this run: worker faults, node lies,
// chain events and hostile clients, every known kind listed, by kind. It
// runs after every seed and every exhaustive run, so the listed kinds and
// the node's names are laid out once (tallyBase, tallyNames), not rebuilt.
func (w *world) faultTally() []model.Tally {
	base := tallyBase()
	out := make([]model.Tally, len(base.kinds), len(base.kinds)+24)
	for i, k := range base.kinds {
		out[i].Kind = k
	}
	add := func(k string, n int) {
		if i, ok := base.index[k]; ok {
			out[i].Count += n
			return
		}
		for i := len(base.kinds); i < len(out); i++ {
			if out[i].Kind == k {
				out[i].Count += n
				return
			}
		}
		out = append(out, model.Tally{Kind: k, Count: n})
	}
	for k, v := range w.tally {
		add(k, v)
	}
	for _, f := range w.net.FaultsFired() {
		add(tallyName("node-", f.Fault), f.Count)
	}
	for _, e := range w.net.Events() {
		if fault, atZero := chainFault(e.Event); fault && (atZero || e.Count > 0) {
			add(tallyName("chain-", e.Event), e.Count)
		}
	}
	if len(out) > len(base.kinds) {
		// The base is sorted; the node's kinds come after it, a dozen or
		// so: sort those and merge, rather than sorting all fifty (which
		// was 3% of a small world's exhaustive run).
		extra := out[len(base.kinds):]
		slices.SortFunc(extra, func(a, b model.Tally) int { return strings.Compare(a.Kind, b.Kind) })
		merged := make([]model.Tally, 0, len(out))
		i, j := 0, len(base.kinds)
		for i < len(base.kinds) || j < len(out) {
			if j == len(out) || (i < len(base.kinds) && out[i].Kind < out[j].Kind) {
				merged = append(merged, out[i])
				i++
			} else {
				merged = append(merged, out[j])
				j++
			}
		}
		out = merged
	}
	return out
}

// chainFault says whether the node's event e is a fault: only the chain
// events the world injects are; a pool entry aging out or an insufficient
// balance is just the chain. atZero says whether the tally lists it when
// it did not happen: the rarer ones are listed only by worlds that have
// them.
func chainFault(e mocknode.Event) (fault, atZero bool) {
	switch e {
	case mocknode.MissedSlot, mocknode.PoolRestart, mocknode.PoolEvict, mocknode.OverrideReceipt:
		return true, true
	case mocknode.Reorged, mocknode.TxOrphaned, mocknode.GossipLost, mocknode.StaleFork, mocknode.PricedOutOfEnergy:
		return true, false
	}
	return false, false
}

// FaultKinds are the kinds a run's fault tally can name, sorted: the
// world's own (TallyKinds), the node's faults and the chain events the
// world injects. A summary naming another kind was not written by a run
// of this build.
var FaultKinds = sync.OnceValue(func() []string {
	out := slices.Clone(tallyBase().kinds)
	for _, f := range mocknode.FaultKinds() {
		out = append(out, tallyName("node-", f))
	}
	for _, e := range mocknode.EventKinds() {
		if fault, _ := chainFault(e); fault {
			out = append(out, tallyName("chain-", e))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
})

// StoreInvariant and PanicInvariant name the violations a run reports
// beside the model's invariants: a store that could not be set up or
// funded, and a run that panicked.
const (
	StoreInvariant = "store"
	PanicInvariant = "panic"
)

// InvariantNames are the names a run's violations can carry: the model's
// invariants, in table order, then StoreInvariant, PanicInvariant and
// MetricsInvariant.
func InvariantNames() []string {
	return append(model.InvariantNames(), StoreInvariant, PanicInvariant, MetricsInvariant)
}

// tallyBase is TallyKinds without repeats (sorted, as TallyKinds is) and
// where each one is.
var tallyBase = sync.OnceValue(func() (b struct {
	kinds []string
	index map[string]int
}) {
	b.index = map[string]int{}
	for _, k := range TallyKinds {
		if _, ok := b.index[k]; !ok {
			b.index[k] = len(b.kinds)
			b.kinds = append(b.kinds, k)
		}
	}
	return b
})

// tallyNames holds prefix+name for the node's faults and chain events,
// made the first time each is asked for (seeds run on several goroutines).
var tallyNames struct {
	sync.RWMutex
	m map[tallyKey]string
}

type tallyKey struct {
	prefix string
	v      fmt.Stringer
}

func tallyName(prefix string, v fmt.Stringer) string {
	k := tallyKey{prefix, v}
	tallyNames.RLock()
	s, ok := tallyNames.m[k]
	tallyNames.RUnlock()
	if ok {
		return s
	}
	s = prefix + v.String()
	tallyNames.Lock()
	if tallyNames.m == nil {
		tallyNames.m = map[tallyKey]string{}
	}
	tallyNames.m[k] = s
	tallyNames.Unlock()
	return s
}
