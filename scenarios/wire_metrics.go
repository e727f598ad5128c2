package scenarios

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"sluicesim/model"
	"sluicesim/sluice"
	"sluicesim/sluice/tron"
)

// MetricsInvariant names what a wire world's scrapes must show: the node
// calls the world saw cross the wire and the rows the store holds, as the
// README's metrics table defines them (see checkMetrics).
const MetricsInvariant = "metrics"

// The node metrics' call labels (README, "Metrics").
var wireCalls = []string{"broadcast", "lookup", "head_block", "solid_block"}

// tronCodes are the broadcast codes TRON.md names; any other code is
// counted under "unknown_code" (README, sluice_node_errors_total).
var tronCodes = []tron.Code{
	tron.CodeNoConnection, tron.CodeNotEnoughEffectiveConnection, tron.CodeServerBusy,
	tron.CodeBlockUnsolidified, tron.CodeContractValidateError, tron.CodeContractExeError,
	tron.CodeBandwidthError, tron.CodeDupTransactionError, tron.CodeTaposError,
	tron.CodeTooBigTransactionError, tron.CodeTransactionExpirationError, tron.CodeSigError,
	tron.CodeOtherError,
}

// wireTally is the world's own count of what crossed its wires: every call
// the metrics wrapper was handed, and every failure or refusal by the label
// the README gives it ("call/kind" or "broadcast/CODE").
type wireTally struct {
	calls map[string]int
	fails map[string]int
}

// tallied wraps a wire's outermost node (the metrics wrapper) so that the
// world counts each call as it returns, with the answer the wrapper gave.
type tallied struct {
	w     *world
	inner tron.Node
}

func (w *world) tally1(call string, err error) {
	w.asked = wireAsked{}
	w.crossed(call, err)
	if w.wt.calls == nil {
		w.wt = wireTally{calls: map[string]int{}, fails: map[string]int{}}
	}
	w.wt.calls[call]++
	if class := failureClass(err); class != "" {
		w.wt.fails[call+"/"+class]++
	}
}

func (t tallied) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	t.w.asked = wireAsked{call: "broadcast", tx: tx}
	res, err := t.inner.Broadcast(ctx, tx)
	t.w.tally1("broadcast", err)
	if err == nil && res.Code != tron.CodeSuccess && res.Code != tron.CodeDupTransactionError {
		code := "unknown_code"
		if slices.Contains(tronCodes, res.Code) {
			code = string(res.Code)
		}
		t.w.wt.fails["broadcast/"+code]++
	}
	return res, err
}

func (t tallied) Lookup(ctx context.Context, id tron.Txid) (tron.TxInfo, error) {
	t.w.asked = wireAsked{call: "lookup", txid: id}
	info, err := t.inner.Lookup(ctx, id)
	t.w.tally1("lookup", err)
	return info, err
}

func (t tallied) HeadBlock(ctx context.Context) (tron.Block, error) {
	t.w.asked = wireAsked{call: "head_block"}
	b, err := t.inner.HeadBlock(ctx)
	t.w.tally1("head_block", err)
	return b, err
}

func (t tallied) SolidBlock(ctx context.Context) (tron.Block, error) {
	t.w.asked = wireAsked{call: "solid_block"}
	b, err := t.inner.SolidBlock(ctx)
	t.w.tally1("solid_block", err)
	return b, err
}

// scrape serves a scrape of the wire world's metrics, as Prometheus would
// make one (GET /metrics through the wrapper's own handler, the store's
// census included), and reads it back from the text format.
func (w *world) scrape() (map[string]*dto.MetricFamily, error) {
	var rec recorder
	rec.reset()
	req, err := http.NewRequestWithContext(w.ctx, http.MethodGet, "/metrics", http.NoBody)
	if err != nil {
		return nil, err
	}
	w.meter.ServeHTTP(&rec, req)
	if rec.code != http.StatusOK {
		return nil, fmt.Errorf("scrape answered %d: %.200s", rec.code, rec.body)
	}
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(rec.body)))
	if err != nil {
		return nil, fmt.Errorf("scrape unreadable: %w", err)
	}
	return fams, nil
}

// value is the one sample of family name whose labels are exactly labels
// (name=value pairs); ok is false when there is none or more than one.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (v float64, ok bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	n := 0
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels)/2 {
			continue
		}
		match := true
		for i, l := range m.GetLabel() {
			if l.GetName() != labels[2*i] || l.GetValue() != labels[2*i+1] {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		n++
		switch {
		case m.GetCounter() != nil:
			v = m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			v = m.GetGauge().GetValue()
		default:
			return 0, false
		}
	}
	return v, n == 1
}

// checkMetrics scrapes the wire world's metrics and holds them to the
// world: the node metrics to its tally (checkNodeMetrics), the census
// gauges to rows, the store's rows at that instant (checkCensusMetrics).
// when says which scrape.
func (w *world) checkMetrics(when string, rows []sluice.Operation) {
	fams, err := w.scrape()
	failed := w.censusFailed
	w.censusFailed = false
	if err != nil {
		w.metricsBreak(when, err.Error())
		return
	}
	w.checkNodeMetrics(when, fams)
	if got, ok := value(fams, "sluice_census_errors_total"); !ok || got != float64(w.tally["census-fault"]) {
		w.metricsBreak(when, fmt.Sprintf("sluice_census_errors_total is %v (present %v), the store failed %d censuses", got, ok, w.tally["census-fault"]))
	}
	if failed {
		// The census failed: its gauges must be left out, not served
		// from the last census as if it were now.
		for _, name := range censusGauges {
			if fams[name] != nil {
				w.metricsBreak(when, fmt.Sprintf("%s served though the scrape's census failed", name))
			}
		}
	} else {
		w.checkCensusMetrics(when, fams, rows)
	}
	w.checkActionMetrics(when, fams)
	w.checkStepMetrics(when, fams)
}

// actionLabels are sluice_operator_actions_total's action labels (README,
// "Metrics"), by the path an action is posted to.
var actionLabels = [...]string{"retry", "cancel", "resolve", "credit"}

// answered counts the operator API's answer code to a POST to path: a 409
// is a refusal (nothing changed), a 503 a failure, a 415, 422 or 404 an
// invalid request (malformed, or naming no operation: nothing changed).
func (w *world) answered(path string, code int) {
	label := "credit"
	if path != "/v1/credits" {
		label = path[strings.LastIndexByte(path, '/')+1:]
	}
	i := slices.Index(actionLabels[:], label)
	switch {
	case i < 0:
		panic("scenarios: an operator POST to " + path + ", which is no action")
	case code == http.StatusConflict:
		w.refusedActs[i]++
	case code == http.StatusServiceUnavailable:
		w.failedActs[i]++
	case code == http.StatusUnprocessableEntity, code == http.StatusUnsupportedMediaType, code == http.StatusNotFound:
		w.invalidActs[i]++
	}
}

// checkActionMetrics compares the operator actions counted as landed with
// the actions the world's operator and depositor saw land (a 200 or 201 the
// API gave them): a refusal or a failure counted as landed tells a
// dashboard of cancels and resolutions that never happened. Between a
// landing's count and the world's there is no yield point, so any scrape
// sees them agree.
func (w *world) checkActionMetrics(when string, fams map[string]*dto.MetricFamily) {
	for _, a := range [...]struct {
		action string
		kinds  []string
	}{
		{"retry", []string{"operator-retry"}},
		{"cancel", []string{"operator-cancel", "customer-cancel"}},
		{"resolve", []string{"operator-resolve"}},
		{"credit", []string{"deposit", "deposit-repeat"}},
	} {
		want := 0
		for _, k := range a.kinds {
			want += w.tally[k]
		}
		if got, ok := value(fams, "sluice_operator_actions_total", "action", a.action, "outcome", "landed"); !ok || got != float64(want) {
			w.metricsBreak(when, fmt.Sprintf("sluice_operator_actions_total{action=%q,outcome=\"landed\"} is %v (present %v), the world saw %d land", a.action, got, ok, want))
		}
	}
	for i, action := range actionLabels {
		for _, o := range [...]struct {
			outcome, answer string
			want            int
		}{{"refused", "409", w.refusedActs[i]}, {"failed", "503", w.failedActs[i]}, {"invalid", "415, 422 or 404", w.invalidActs[i]}} {
			if got, ok := value(fams, "sluice_operator_actions_total", "action", action, "outcome", o.outcome); !ok || got != float64(o.want) {
				w.metricsBreak(when, fmt.Sprintf("sluice_operator_actions_total{action=%q,outcome=%q} is %v (present %v), the API answered %d %s", action, o.outcome, got, ok, o.want, o.answer))
			}
		}
	}
}

// checkNodeMetrics compares the node metrics of a scrape with the world's
// tally: every call and every failure, by the README's labels, and no
// failure series the world did not see.
func (w *world) checkNodeMetrics(when string, fams map[string]*dto.MetricFamily) {
	for _, call := range wireCalls {
		want := w.wt.calls[call]
		if got, ok := value(fams, "sluice_node_calls_total", "call", call); !ok || got != float64(want) {
			w.metricsBreak(when, fmt.Sprintf("sluice_node_calls_total{call=%q} is %v (present %v), the world made %d such calls", call, got, ok, want))
		}
	}
	// Every failure series must read what the world counted under its
	// label (0 for the ones that never happened), and every label the
	// world counted must have its series.
	seen := map[string]bool{}
	if f := fams["sluice_node_errors_total"]; f != nil {
		for _, m := range f.GetMetric() {
			var call, code string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "call":
					call = l.GetValue()
				case "code":
					code = l.GetValue()
				}
			}
			key := call + "/" + code
			seen[key] = true
			if got, want := m.GetCounter().GetValue(), float64(w.wt.fails[key]); got != want {
				w.metricsBreak(when, fmt.Sprintf("sluice_node_errors_total{call=%q,code=%q} is %v, the world saw %v", call, code, got, want))
			}
		}
	}
	keys := make([]string, 0, len(w.wt.fails))
	for k := range w.wt.fails {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !seen[k] {
			w.metricsBreak(when, fmt.Sprintf("no sluice_node_errors_total series for %s, which the world saw %d times", k, w.wt.fails[k]))
		}
	}
}

// censusGauges are the series read from the store's census at each scrape.
var censusGauges = [...]string{"sluice_withdrawal_queue_depth", "sluice_review_size", "sluice_withdrawals_finished", "sluice_parked_operations", "sluice_stuck_ratio"}

// checkCensusMetrics compares the census gauges of a scrape with rows and
// the world's own record of parks: a row is parked when its latest record
// is a park (no transition since) and it is not terminal.
func (w *world) checkCensusMetrics(when string, fams map[string]*dto.MetricFamily, rows []sluice.Operation) {
	states := map[sluice.State]int{}
	lastPark := map[sluice.OperationID]int64{}
	for _, p := range w.parks {
		lastPark[p.Op] = p.Seq
	}
	lastWrite := map[sluice.OperationID]int64{}
	for _, wr := range w.writes {
		lastWrite[wr.Op] = wr.Seq
	}
	open, parked := 0, 0
	for i := range rows {
		r := &rows[i]
		states[r.State]++
		if r.State.Terminal() {
			continue
		}
		open++
		if seq, ok := lastPark[r.ID]; ok && seq >= lastWrite[r.ID] {
			parked++
		}
	}
	gauge := func(name string, want float64, labels ...string) {
		if got, ok := value(fams, name, labels...); !ok || got != want {
			w.metricsBreak(when, fmt.Sprintf("%s%v is %v (present %v), the store's rows say %v", name, labels, got, ok, want))
		}
	}
	for _, s := range sluice.States {
		switch {
		case !s.Terminal():
			gauge("sluice_withdrawal_queue_depth", float64(states[s]), "state", s.String())
		case s == sluice.Review:
			gauge("sluice_review_size", float64(states[s]))
		default:
			gauge("sluice_withdrawals_finished", float64(states[s]), "state", s.String())
		}
	}
	gauge("sluice_parked_operations", float64(parked))
	ratio := 0.0
	if open > 0 {
		ratio = float64(parked) / float64(open)
	}
	if got, ok := value(fams, "sluice_stuck_ratio"); !ok || math.Abs(got-ratio) > 1e-9 {
		w.metricsBreak(when, fmt.Sprintf("sluice_stuck_ratio is %v (present %v), want %d parked of %d open", got, ok, parked, open))
	}
}

// metricsBreak records a metrics violation (the first few: one broken
// series would otherwise repeat at every scrape).
func (w *world) metricsBreak(when, msg string) {
	if len(w.metricsBreaks) < 8 {
		w.metricsBreaks = append(w.metricsBreaks, model.Violation{Invariant: MetricsInvariant, Message: "scrape " + when + ": " + msg})
	}
}
