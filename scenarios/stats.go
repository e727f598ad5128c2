package scenarios

import (
	"sort"

	"sluicesim/model"
	"sluicesim/sluice/tron/mocknode"
)

// faultTally counts what actually fired this run: worker faults, node lies,
// chain events and hostile clients, every known kind listed.
func (w *world) faultTally() []model.Tally {
	counts := map[string]int{}
	for _, k := range TallyKinds {
		counts[k] = 0
	}
	for k, v := range w.tally {
		counts[k] += v
	}
	for _, f := range w.net.FaultsFired() {
		counts["node-"+f.Fault.String()] += f.Count
	}
	for _, e := range w.net.Events() {
		// Only the chain events the world injects are faults; a pool
		// entry aging out or an insufficient balance is just the chain.
		switch e.Event {
		case mocknode.MissedSlot, mocknode.PoolRestart, mocknode.PoolEvict, mocknode.OverrideReceipt:
			counts["chain-"+e.Event.String()] += e.Count
		case mocknode.Reorged, mocknode.TxOrphaned, mocknode.GossipLost:
			if e.Count == 0 {
				continue // listed only by worlds that have them
			}
			counts["chain-"+e.Event.String()] += e.Count
		}
	}
	out := make([]model.Tally, 0, len(counts))
	for k, v := range counts {
		out = append(out, model.Tally{Kind: k, Count: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}
