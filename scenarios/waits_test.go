package scenarios

import (
	"context"
	"testing"

	"sluicesim/sim"
	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// TestSettledAnswerLeftUnwritten: the world records a step on a broadcast
// row that got the row's txid settled (included, solid, SUCCESS) and tried
// no write, and only such a step (audit-log reports the record).
func TestSettledAnswerLeftUnwritten(t *testing.T) {
	txid := tron.Txid{7}
	sent := sluice.Operation{ID: "op-1", State: sluice.Broadcast, Envelope: sluice.Envelope{Txid: txid}}
	settled := tron.TxInfo{Txid: txid, Status: tron.Included, BlockNumber: 90, Solid: true, Receipt: tron.ReceiptSuccess}
	for _, c := range []struct {
		name string
		step func(a *actor, ob *sluice.Observation)
		want int64 // the record's Settled block, 0 for none
	}{
		{"settled, nothing written", func(a *actor, ob *sluice.Observation) {}, 90},
		{"settled, a confirmation tried", func(a *actor, ob *sluice.Observation) {
			a.stepCAS(sluice.Change{From: sluice.Broadcast, To: sluice.Confirmed}, sluice.Operation{}, errStoreDown)
		}, 0},
		{"settled, a park tried", func(a *actor, ob *sluice.Observation) { a.stepPark(nil) }, 0},
		{"the answer lost on its way to the worker", func(a *actor, ob *sluice.Observation) { a.stepLookupGot = false }, 0},
		{"not solid", func(a *actor, ob *sluice.Observation) { a.stepLookup.Solid = false }, 0},
		{"a failed receipt", func(a *actor, ob *sluice.Observation) { a.stepLookup.Receipt = tron.ReceiptRevert }, 0},
		{"another txid", func(a *actor, ob *sluice.Observation) { a.stepLookup.Txid = tron.Txid{8} }, 0},
		{"a row not yet broadcast", func(a *actor, ob *sluice.Observation) { a.stepLookupRow.state = sluice.Broadcasting }, 0},
		{"a row whose txid is another", func(a *actor, ob *sluice.Observation) { a.stepLookupRow.txid = tron.Txid{8} }, 0},
		{"a row of another txid asked last", func(a *actor, ob *sluice.Observation) { a.stepLookupRow.asked = tron.Txid{8} }, 0},
		// The row is the world's view, whatever the worker reports.
		{"the worker reports a row not yet broadcast", func(a *actor, ob *sluice.Observation) {
			ob.Before.State, ob.Before.Envelope.Txid = sluice.Broadcasting, tron.Txid{8}
		}, 90},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &world{ctx: context.Background()}
			p := sim.New(sim.NewRandom(1), sim.Options{Start: epoch, StepsMax: 1}).Spawn("w1", func(*sim.Proc) {})
			a := &actor{w: w, p: p, worker: true}
			o := waitObserver{a: a}
			// A step before it that wrote: its write is not this step's.
			a.stepCAS(sluice.Change{To: sluice.Broadcast}, sluice.Operation{}, nil)
			o.Observe(sluice.Observation{Before: sent, After: sent})
			a.stepLookup, a.stepLookupOK, a.stepLookupGot = settled, true, true
			a.stepLookupRow = lookupRow{asked: txid, op: "op-1", rowView: rowView{state: sluice.Broadcast, txid: txid}}
			ob := sluice.Observation{Worker: "w1", Before: sent, After: sent, Wait: 3}
			c.step(a, &ob)
			o.Observe(ob)
			var got int64
			for _, r := range w.waits {
				got = r.Settled
				if r.Op != "op-1" || r.Proc != "w1" {
					t.Errorf("record of %s by %s, want op-1 by w1", r.Op, r.Proc)
				}
			}
			if len(w.waits) > 1 || got != c.want {
				t.Errorf("records %+v, want one settled at %d (0: none)", w.waits, c.want)
			}
		})
	}
}

// TestTakenAnswerLeftUnwritten: the world records a step on a broadcasting
// row that sent the row's txid, got it answered as taken (SUCCESS or DUP),
// and tried no write, and only such a step (audit-log reports the record).
func TestTakenAnswerLeftUnwritten(t *testing.T) {
	txid := tron.Txid{7}
	row := sluice.Operation{ID: "op-1", State: sluice.Broadcasting, Envelope: sluice.Envelope{Txid: txid}}
	for _, c := range []struct {
		name string
		step func(a *actor)
		want bool
	}{
		{"taken, nothing written", func(a *actor) {}, true},
		{"taken, the record tried", func(a *actor) {
			a.stepCAS(sluice.Change{From: sluice.Broadcasting, To: sluice.Broadcast}, sluice.Operation{}, errStoreDown)
		}, false},
		{"taken, a park tried", func(a *actor) { a.stepPark(nil) }, false},
		{"no taken answer got", func(a *actor) { a.stepSendGot = false }, false},
		{"a row already broadcast", func(a *actor) { a.stepSendRow.state = sluice.Broadcast }, false},
		{"a row whose txid is another", func(a *actor) { a.stepSendRow.txid = tron.Txid{8} }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &world{ctx: context.Background()}
			p := sim.New(sim.NewRandom(1), sim.Options{Start: epoch, StepsMax: 1}).Spawn("w1", func(*sim.Proc) {})
			a := &actor{w: w, p: p, worker: true}
			o := waitObserver{a: a}
			// A step before it that wrote: its write is not this step's.
			a.stepCAS(sluice.Change{To: sluice.Broadcasting}, sluice.Operation{}, nil)
			o.Observe(sluice.Observation{Before: row, After: row})
			a.stepSendRow, a.stepSendGot = lookupRow{asked: txid, op: "op-1", rowView: rowView{state: sluice.Broadcasting, txid: txid}}, true
			c.step(a)
			o.Observe(sluice.Observation{Worker: "w1", Before: row, After: row, Wait: 3})
			got := len(w.waits) == 1 && w.waits[0].Taken && w.waits[0].Op == "op-1" && w.waits[0].Proc == "w1" && w.waits[0].Txid == txid
			if got != c.want || len(w.waits) > 1 {
				t.Errorf("records %+v, want a taken record: %v", w.waits, c.want)
			}
		})
	}
}
