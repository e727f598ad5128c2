package scenarios

import (
	"time"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// waitObserver stands between a worker and its observer (the step metrics
// in wire, none elsewhere) and records the stuck policy's waits that the
// chain's answers in the step may make wrong: a lookup that did not find
// the row's txid, after a solid block at or past its expiration plus the
// margin. A wait writes nothing; audit-log judges these by the model's own
// reading of the policy (model.WaitRecord). The record is the world's:
// what the node answered the worker in this step and the row it started
// from, never the evidence the core built from them.
type waitObserver struct {
	a     *actor
	inner sluice.Observer
}

func (o waitObserver) Observe(ob sluice.Observation) {
	a := o.a
	if d := ob.Decision; d != nil && d.Action == sluice.Wait && a.stepSolidOK && a.stepLookupOK {
		env := &ob.Before.Envelope
		margin := a.w.cfg.Sluice.SafetyMargin
		if l := &a.stepLookup; l.Txid == env.Txid && l.Status == tron.Unknown &&
			!a.stepSolid.Time.Before(time.UnixMilli(env.Raw.Expiration).Add(margin)) {
			a.w.waits = append(a.w.waits, model.WaitRecord{Op: ob.Before.ID, Proc: a.p.Name(), Txid: env.Txid,
				SolidNumber: a.stepSolid.Number, SolidTime: a.stepSolid.Time, LookupSolid: l.NodeSolid, Reason: d.Reason})
		}
	}
	// A sent row whose txid the node answered in a block it calls solid,
	// with a SUCCESS receipt, the worker getting that answer: the only
	// steps that may follow are a confirmation or, when the logs are not
	// the payment asked, a review. A step that writes neither leaves a
	// paid withdrawal open (its money held, the customer told nothing),
	// however the core read the answer.
	// The row is the world's view of it when the worker got the answer
	// (its record of accepted writes), not the worker's report of where
	// its step began.
	if l, r := &a.stepLookup, &a.stepLookupRow; a.stepLookupOK && a.stepLookupGot && !a.stepWrote &&
		r.state == sluice.Broadcast && r.asked == l.Txid && r.txid == l.Txid &&
		l.Status == tron.Included && l.Solid && l.Receipt == tron.ReceiptSuccess {
		a.w.waits = append(a.w.waits, model.WaitRecord{Op: r.op, Proc: a.p.Name(), Txid: l.Txid,
			SolidNumber: a.stepSolid.Number, SolidTime: a.stepSolid.Time, LookupSolid: l.NodeSolid, Reason: ob.Why,
			Settled: l.BlockNumber})
	}
	// A step that sent its broadcasting row's txid, got it answered as
	// taken (SUCCESS, or DUP: a node holds it already), and tried no write:
	// the row still says no node took the transaction, which the customer
	// is shown and the stuck policy reads as never accepted.
	if r := &a.stepSendRow; a.stepSendGot && !a.stepWrote && r.state == sluice.Broadcasting && r.asked == r.txid {
		a.w.waits = append(a.w.waits, model.WaitRecord{Op: r.op, Proc: a.p.Name(), Txid: r.txid,
			SolidNumber: a.stepSolid.Number, SolidTime: a.stepSolid.Time, Reason: ob.Why, Taken: true})
	}
	if a.countsSteps() {
		a.countWait()
	}
	a.stepSolidOK, a.stepLookupOK, a.stepHeadOK = false, false, false
	a.stepSolidGot, a.stepLookupGot, a.stepHeadAsked, a.stepDecided = false, false, false, false
	a.stepWrote = false
	a.stepLookupRow = lookupRow{}
	a.stepSendRow, a.stepSendGot = lookupRow{}, false
	if o.inner != nil {
		o.inner.Observe(ob)
	}
}
