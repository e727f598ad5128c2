package model

import (
	"time"

	"sluicesim/sluice"
)

// Stats summarize what one run did, for reports: read from its snapshot
// (the store's event log and rows), never used by a checker.
type Stats struct {
	// Transitions counts the event log's edges: [from][to].
	Transitions [sluice.StateCount][sluice.StateCount]int
	// ConfirmTimes is, per confirmed operation, the virtual time from its
	// creation to its confirmation, in creation order.
	ConfirmTimes []time.Duration
	// Rebuilds is, per operation, how many envelopes it retired.
	Rebuilds []int
}

// StatsOf reads a run's Stats from its snapshot.
func StatsOf(snap *Snapshot) Stats {
	var st Stats
	created := map[sluice.OperationID]time.Time{}
	rebuilds := map[sluice.OperationID]int{}
	for _, e := range snap.Events {
		st.Transitions[e.From][e.To]++
		if e.From == sluice.None {
			created[e.OperationID] = e.At
		}
		if !e.RetiredTxid.IsZero() {
			rebuilds[e.OperationID]++
		}
	}
	for _, op := range snap.Operations {
		st.Rebuilds = append(st.Rebuilds, rebuilds[op.ID])
		if op.State == sluice.Confirmed {
			st.ConfirmTimes = append(st.ConfirmTimes, op.UpdatedAt.Sub(created[op.ID]))
		}
	}
	return st
}
