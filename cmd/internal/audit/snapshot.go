package audit

import (
	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
	"sluicesim/sluice/tron/nodehttp"
)

// Snapshot assembles what the model's checkers look at from the store, the
// ledger and the node's ground truth; the caller adds what it alone knows
// (the live check: the clients' history, the heal point, the liveness
// budget, and its own record of the deposits it made).
//
// A live system cannot watch who claimed what (Claims stays nil, so
// one-writer has nothing to judge) nor every envelope stored: the database
// keeps only each row's current one. The model gets those, the ones a
// failure after a spent build budget retires, and the configuration `sluice
// serve` runs with. The ledger, when read (nil: none), gives the accounts
// and holds as the store keeps them and the credits table as the deposits;
// its rows and log are not used here (Ledger.Snapshot is funds' own view).
func Snapshot(ops []sluice.Operation, events []sluice.Event, truth nodehttp.Truth, ledger *Ledger) *model.Snapshot {
	cfg := sluice.DefaultConfig()
	var envelopes []sluice.Envelope
	for _, op := range ops {
		if !op.Envelope.Txid.IsZero() {
			envelopes = append(envelopes, op.Envelope)
		}
	}
	s := &model.Snapshot{
		Envelopes:    envelopes,
		SafetyMargin: cfg.SafetyMargin,
		BuildsMax:    cfg.Stuck.Rebuilds + 1,
		Stuck:        cfg.Stuck,
		ParkLimit:    cfg.ParkLimit,
		ParkFor:      cfg.ParkFor,
		FeeLimitMax:  cfg.FeeLimitMax,
		Operations:   ops,
		Events:       events,
		Wire:         truth.Wire,
		Accepted:     truth.Accepted,
		Inclusions:   truth.Inclusions,
		Blocks:       truth.Blocks,
		SolidNumber:  truth.Solid.Number,
		HotWallet:    truth.HotWallet,
	}
	if ledger != nil {
		s.Deposits, s.Accounts, s.Holds = ledger.Credits, ledger.Accounts, ledger.Holds
	}
	return s
}

// parksOf stands the rows' park counts (Operation.Parks: every park that
// landed, a count that never goes back) in for the parks an observer of a
// run sees land. It is the store's own record, so it serves only where a
// park can add a finding and never excuse one: no-operational-failure,
// where a failure after a park is an operational failure. Progress, where
// a park excuses a review, is not run on a live system.
func parksOf(ops []sluice.Operation) []model.ReleaseRecord {
	var out []model.ReleaseRecord
	for _, op := range ops {
		for range op.Parks {
			out = append(out, model.ReleaseRecord{Op: op.ID})
		}
	}
	return out
}

// owned is every txid some operation's history names, by the model's rule
// (model.CheckTxidOwnership): its events' txids, current and retired, and
// its row's envelope.
func owned(ops []sluice.Operation, events []sluice.Event) map[tron.Txid]bool {
	out := make(map[tron.Txid]bool, len(ops))
	for _, e := range events {
		out[e.Txid] = true
		out[e.RetiredTxid] = true
	}
	for _, op := range ops {
		out[op.Envelope.Txid] = true
	}
	delete(out, tron.Txid{})
	return out
}

// strangers lists, in first-seen order, the txids the node saw that no
// operation owned at the read.
func strangers(truth nodehttp.Truth, own map[tron.Txid]bool) []tron.Txid {
	seen := make(map[tron.Txid]bool)
	var out []tron.Txid
	note := func(t tron.Txid) {
		if !own[t] && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, w := range truth.Wire {
		note(w.Txid)
	}
	for _, a := range truth.Accepted {
		note(a.Txid)
	}
	for _, in := range truth.Inclusions {
		note(in.Txid)
	}
	return out
}

// inFlight is the txids whose fate the audit leaves to the next one: the
// current txid of every operation that is not terminal (its transaction may
// be on chain already, waiting to become solid; the workers will see it),
// and every txid written ahead after the read (late).
func inFlight(ops []sluice.Operation, late map[tron.Txid]bool) map[tron.Txid]bool {
	out := make(map[tron.Txid]bool, len(late))
	for t, ok := range late {
		if ok {
			out[t] = true
		}
	}
	for _, op := range ops {
		if !op.State.Terminal() && !op.Envelope.Txid.IsZero() {
			out[op.Envelope.Txid] = true
		}
	}
	return out
}

// settled is the chain without the txids in flight: what the node saw of
// every other txid, and every block. Retired txids are never in flight: a
// retired txid that lands is judged at once, whatever its operation's state.
func settled(truth nodehttp.Truth, flight map[tron.Txid]bool) (nodehttp.Truth, int) {
	if len(flight) == 0 {
		return truth, 0
	}
	left := make(map[tron.Txid]bool)
	settles := func(t tron.Txid) bool {
		if flight[t] {
			left[t] = true
			return false
		}
		return true
	}
	out := truth
	out.Wire = keep(truth.Wire, func(w mocknode.WireAttempt) bool { return settles(w.Txid) })
	out.Accepted = keep(truth.Accepted, func(a mocknode.Acceptance) bool { return settles(a.Txid) })
	out.Inclusions = keep(truth.Inclusions, func(in mocknode.Inclusion) bool { return settles(in.Txid) })
	return out, len(left)
}

func keep[T any](xs []T, ok func(T) bool) []T {
	var out []T
	for _, x := range xs {
		if ok(x) {
			out = append(out, x)
		}
	}
	return out
}
