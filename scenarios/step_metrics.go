package scenarios

import (
	"errors"
	"fmt"
	"math"

	dto "github.com/prometheus/client_model/go"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/metrics"
	"sluicesim/sluice/tron"
)

// stepTally is the world's own count of what workers' steps did to the
// store, in the terms of the step metrics (README, "Metrics"): every worker
// write the store answered, as the worker got the answer. It is read from
// the writes the world carried to the store (the Change asked, the row
// answered, the error the worker was handed), never from the Observation
// the worker builds for its observer: a worker that tells its observer
// something other than what it wrote is what the comparison is for.
type stepTally struct {
	rebuilds     int     // a new envelope that retires a txid
	stuckReviews int     // sent to review with a stuck policy's decision
	logsReviews  int     // sent to review from broadcast after a SUCCESS receipt in a solid block
	staleReviews int     // sent to review from signed after the node's head block (stale before the first send)
	parkReviews  int     // sent to review otherwise: past the park bounds
	confirmed    int     // confirmed by a worker
	latency      float64 // the confirmed rows' seconds from creation, as the store stamped them
	parks        int     // parked (the store's Park landed)
	fenced       int     // a write the store fenced
	errs         int     // a write that failed otherwise (the world's store faults)
	// The stuck policy's decisions (sluice_stuck_decisions_total), by
	// decisionLabels' order: wait, rebuild, cancel, review.
	decisions [4]int
}

func (t *stepTally) add(u stepTally) {
	t.rebuilds += u.rebuilds
	t.stuckReviews += u.stuckReviews
	t.logsReviews += u.logsReviews
	t.staleReviews += u.staleReviews
	t.parkReviews += u.parkReviews
	t.confirmed += u.confirmed
	t.latency += u.latency
	t.parks += u.parks
	t.fenced += u.fenced
	t.errs += u.errs
	for i, n := range u.decisions {
		t.decisions[i] += n
	}
}

// countsSteps: the worker's step writes are held to the step metrics (a
// wire world's workers, whose observer is the metrics).
func (a *actor) countsSteps() bool { return a.worker && a.w.meter != nil }

// stepFailed counts a worker write whose answer was an error: a step ends
// at its first failed write, so each is one step the metrics count.
func (a *actor) stepFailed(err error) {
	if errors.Is(err, sluice.ErrFenced) {
		a.step.fenced++
	} else {
		a.step.errs++
	}
}

// stepCAS counts a worker's CAS as the worker got its answer.
func (a *actor) stepCAS(c sluice.Change, row sluice.Operation, err error) {
	a.stepWrote = true
	if !a.countsSteps() {
		return
	}
	a.stepDecided = a.stepDecided || c.Decision != nil
	if err != nil {
		a.stepFailed(err)
		return
	}
	if c.Envelope != nil && !c.RetiredTxid.IsZero() {
		a.step.rebuilds++
	}
	if c.Decision != nil {
		// The decision landed, and the write says which: a new envelope is
		// a rebuild, failed a cancel, review a review. Read from the
		// write, not from the Decision's own Action.
		switch {
		case c.To == sluice.Signing && c.Envelope != nil:
			a.step.decisions[decisionRebuild]++
		case c.To == sluice.Failed:
			a.step.decisions[decisionCancel]++
		case c.To == sluice.Review:
			a.step.decisions[decisionReview]++
		default:
			panic(fmt.Sprintf("scenarios: a worker wrote a stuck policy's decision into %s (from %s)", c.To, c.From))
		}
	}
	switch c.To {
	case sluice.Review:
		a.reviewCause(c, row)
	case sluice.Confirmed:
		a.step.confirmed++
		a.step.latency += row.UpdatedAt.Sub(row.CreatedAt).Seconds()
	}
}

// reviewCause counts a review under its cause as the world saw the step,
// not as the worker reports it (metrics.ReviewCause reads the worker's
// Observation): the Change written and the node's answers in the step.
//   - stuck: the Change carries a stuck policy's decision;
//   - logs: from broadcast, after the node answered the row's txid
//     included in a solid block with a SUCCESS receipt (the only review
//     that follows such an answer: anything else confirms);
//   - stale: from signed, after the node answered the head block (a send
//     that stopped before its write-ahead; a signed row whose head block
//     failed parks, and past the bounds that review is parked);
//   - parked: any other review, which only the park bounds write.
func (a *actor) reviewCause(c sluice.Change, row sluice.Operation) {
	switch a.reviewRead(c, row) {
	case model.ReviewDecision:
		a.step.stuckReviews++
	case model.ReviewLogs:
		a.step.logsReviews++
	case model.ReviewStale:
		a.step.staleReviews++
	default:
		a.step.parkReviews++
	}
}

// reviewRead is why the world saw the worker's step send a row to review
// (model.WriteRecord.Review): the write c, row the row it answered, and the
// node's answers in the step.
func (a *actor) reviewRead(c sluice.Change, row sluice.Operation) string {
	l := &a.stepLookup
	switch {
	case c.Decision != nil:
		return model.ReviewDecision
	case c.From == sluice.Broadcast && a.stepLookupOK && l.Txid == row.Envelope.Txid &&
		l.Status == tron.Included && l.Solid && l.Receipt == tron.ReceiptSuccess:
		return model.ReviewLogs
	case c.From == sluice.Signed && a.stepHeadOK:
		return model.ReviewStale
	}
	return model.ReviewParked
}

// The stuck decisions' places in stepTally.decisions; decisionLabels are
// their labels on sluice_stuck_decisions_total (README, "Metrics").
const (
	decisionWait = iota
	decisionRebuild
	decisionCancel
	decisionReview
)

var decisionLabels = [...]string{decisionWait: "wait", decisionRebuild: "rebuild", decisionCancel: "cancel", decisionReview: "review"}

// countWait counts the step just reported as a wait decision when the
// world saw the stuck policy asked and no other answer carried out. The
// policy is asked exactly when a step on a sent row got a solid block and
// then a lookup of the row's txid that found it neither pending nor in a
// block (the only other lookup answers: pending, which moves the row or
// polls, and included, which waits for solidity, confirms, reviews or
// meets a failed receipt, whose decisions are written). Its answer is a
// wait unless the step went on to build a replacement (a head block asked:
// a rebuild, counted when its write lands, or not at all when the node
// failed it) or tried a write carrying the decision (cancel or review,
// counted when it lands). A wait is counted whatever followed it (a
// re-send that failed, a park the store refused): it writes nothing.
func (a *actor) countWait() {
	if a.stepSolidOK && a.stepSolidGot && a.stepLookupOK && a.stepLookupGot &&
		a.stepLookup.Status != tron.Pending && a.stepLookup.Status != tron.Included &&
		!a.stepHeadAsked && !a.stepDecided {
		a.step.decisions[decisionWait]++
	}
}

// stepPark counts a worker's Park as the worker got its answer.
func (a *actor) stepPark(err error) {
	a.stepWrote = true
	switch {
	case !a.countsSteps():
	case err != nil:
		a.stepFailed(err)
	default:
		a.step.parks++
	}
}

// stepObserver stands between a worker and its observer (the metrics):
// when the worker reports a step, the writes the world saw that step make
// become the world's count, with no yield point before the metrics count
// it too. It does not read the Observation. A worker that crashes between
// a write's answer and its report takes the pending writes with it, as it
// takes the report.
type stepObserver struct {
	a     *actor
	inner sluice.Observer
}

func (o stepObserver) Observe(ob sluice.Observation) {
	o.a.w.steps.add(o.a.step)
	o.a.step = stepTally{}
	o.inner.Observe(ob)
}

// checkStepMetrics compares the step metrics of a scrape with the world's
// count of the steps workers reported.
func (w *world) checkStepMetrics(when string, fams map[string]*dto.MetricFamily) {
	t := w.steps
	counter := func(name string, want int, labels ...string) float64 {
		got, ok := value(fams, name, labels...)
		if !ok || got != float64(want) {
			w.metricsBreak(when, fmt.Sprintf("%s%v is %v (present %v), the workers' writes say %d", name, labels, got, ok, want))
		}
		return got
	}
	counter("sluice_rebuilds_total", t.rebuilds)
	counter("sluice_parks_total", t.parks)
	counter("sluice_fenced_writes_total", t.fenced)
	counter("sluice_step_errors_total", t.errs)
	// Each cause by the world's own reading of the step (reviewCause); a
	// cause never written reads zero. Every series is there from the
	// first scrape, at 0 before its first event (metrics.New): a series
	// that appears with its first increment hides that increment from a
	// rate() (independent bug 168 left review out of the decisions).
	for _, c := range []struct {
		cause string
		want  int
	}{{metrics.CauseLogs, t.logsReviews}, {metrics.CauseStuck, t.stuckReviews}, {metrics.CauseParked, t.parkReviews}, {metrics.CauseStale, t.staleReviews}, {metrics.CauseOther, 0}} {
		if got, ok := value(fams, "sluice_reviews_entered_total", "cause", c.cause); !ok || got != float64(c.want) {
			w.metricsBreak(when, fmt.Sprintf("sluice_reviews_entered_total{cause=%q} is %v (present %v), the workers' writes and the node's answers say %d", c.cause, got, ok, c.want))
		}
	}
	counter("sluice_ledger_chain_mismatches_total", t.logsReviews)
	for i, action := range decisionLabels {
		if got, ok := value(fams, "sluice_stuck_decisions_total", "action", action); !ok || got != float64(t.decisions[i]) {
			w.metricsBreak(when, fmt.Sprintf("sluice_stuck_decisions_total{action=%q} is %v (present %v), the node's answers and the workers' writes say %d", action, got, ok, t.decisions[i]))
		}
	}
	var h *dto.Histogram
	if f := fams["sluice_confirmation_latency_seconds"]; f != nil && len(f.GetMetric()) == 1 {
		h = f.GetMetric()[0].GetHistogram()
	}
	switch {
	case h == nil:
		w.metricsBreak(when, "no sluice_confirmation_latency_seconds histogram")
	case h.GetSampleCount() != uint64(t.confirmed):
		w.metricsBreak(when, fmt.Sprintf("sluice_confirmation_latency_seconds counts %d confirmations, the workers confirmed %d", h.GetSampleCount(), t.confirmed))
	case math.Abs(h.GetSampleSum()-t.latency) > 1e-6*max(1, t.latency):
		w.metricsBreak(when, fmt.Sprintf("sluice_confirmation_latency_seconds sums %v s, the rows the workers confirmed waited %v s since creation", h.GetSampleSum(), t.latency))
	}
}
