package metrics

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"sluicesim/sluice"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/tron"
)

// Metrics holds the instruments and their registry. Its methods are safe
// for concurrent use: workers observe from their own goroutines.
type Metrics struct {
	store sluice.Store
	reg   *prometheus.Registry
	// scrape serializes scrapes: the census collector's reading is set by
	// one scrape and read by its gather.
	scrape sync.Mutex
	census *censusCollector
	served http.Handler

	confirmation prometheus.Histogram
	mismatches   prometheus.Counter
	reviews      *prometheus.CounterVec
	rebuilds     prometheus.Counter
	fenced       prometheus.Counter
	parks        prometheus.Counter
	decisions    *prometheus.CounterVec
	stepErrors   prometheus.Counter
	nodeCalls    *prometheus.CounterVec
	nodeErrors   *prometheus.CounterVec
	actions      *prometheus.CounterVec
	censusErrors prometheus.Counter
}

// LatencyBuckets are the confirmation latency histogram's upper bounds, in
// seconds: dense between 30 s and 3 min, where a confirmation on TRON's
// solid lag falls, and reaching 2 h so that a p95 of an hour still lands
// inside a bucket rather than in +Inf.
var LatencyBuckets = []float64{1, 2, 5, 10, 15, 20, 30, 45, 60, 75, 90, 105, 120, 150, 180, 240, 300, 450, 600, 900, 1200, 1800, 2700, 3600, 5400, 7200}

// Causes of a review, the label of sluice_reviews_entered_total.
const (
	CauseLogs   = "logs"   // SUCCESS in a solid block, but not the Transfer log asked
	CauseStuck  = "stuck"  // proven dead (or failed on chain) with the rebuild budget spent after operational trouble
	CauseParked = "parked" // parked past the park bounds
	CauseStale  = "stale"  // stale before the first send with the rebuild budget spent
	CauseOther  = "other"  // a route this classification does not know (a new edge into review)
)

// New makes the instruments over st (read at each scrape for the gauges)
// and registers them in a registry of their own.
func New(st sluice.Store) *Metrics {
	if st == nil {
		panic("metrics.New: nil store")
	}
	m := &Metrics{store: st, reg: prometheus.NewRegistry(), census: newCensusCollector()}
	m.confirmation = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "sluice_confirmation_latency_seconds",
		Help:    "Time from a withdrawal's creation to its confirmation (solid block, checked Transfer log), store clock; confirmations landed by this process's workers.",
		Buckets: LatencyBuckets,
	})
	m.mismatches = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sluice_ledger_chain_mismatches_total",
		Help: "Reviews entered because a SUCCESS receipt in a solid block did not carry exactly the USDT Transfer log asked (tokens may have moved, not as asked).",
	})
	m.reviews = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_reviews_entered_total",
		Help: "Operations this process's workers sent to review, by cause: logs, stuck, parked, stale, other.",
	}, []string{"cause"})
	m.rebuilds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sluice_rebuilds_total",
		Help: "Envelopes rebuilt (a new txid): after proof of death, a failed receipt, or stale before the first send.",
	})
	m.fenced = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sluice_fenced_writes_total",
		Help: "Worker writes that matched no row because another claim took the operation (the worker stopped).",
	})
	m.parks = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sluice_parks_total",
		Help: "Operations parked for an operational error (bandwidth, energy, node or signer unreachable).",
	})
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_stuck_decisions_total",
		Help: "The stuck policy's decisions, by action: wait, rebuild, cancel, review.",
	}, []string{"action"})
	m.stepErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sluice_step_errors_total",
		Help: "Worker steps that failed on the store (not fencing): the write may or may not have landed.",
	})
	m.nodeCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_node_calls_total",
		Help: "Calls to the TRON node, by call.",
	}, []string{"call"})
	m.nodeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_node_errors_total",
		Help: "Node calls that failed (code timeout, canceled or error) and broadcast answers other than SUCCESS or DUP_TRANSACTION_ERROR (their code, or unknown_code), by call.",
	}, []string{"call", "code"})
	m.actions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_operator_actions_total",
		Help: "Operator actions by action (retry, cancel, resolve, credit) and outcome (landed, refused, invalid, failed).",
	}, []string{"action", "outcome"})
	m.censusErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sluice_census_errors_total",
		Help: "Scrapes whose store census failed; their gauges were left out.",
	})
	m.reg.MustRegister(m.census, m.confirmation, m.mismatches, m.reviews, m.rebuilds, m.fenced, m.parks,
		m.decisions, m.stepErrors, m.nodeCalls, m.nodeErrors, m.actions, m.censusErrors)
	// Every label value is known in advance: initialize them all, so that a
	// series exists at 0 before its first event (a rate() over a series
	// that appears only with its first increment misses that increment).
	for _, c := range []string{CauseLogs, CauseStuck, CauseParked, CauseStale, CauseOther} {
		m.reviews.WithLabelValues(c)
	}
	for _, a := range []sluice.Action{sluice.Wait, sluice.Rebuild, sluice.Cancel, sluice.Escalate} {
		m.decisions.WithLabelValues(a.String())
	}
	for _, c := range calls {
		m.nodeCalls.WithLabelValues(c)
		for _, k := range callErrorKinds {
			m.nodeErrors.WithLabelValues(c, k)
		}
	}
	for _, code := range slices.Sorted(maps.Keys(knownCodes)) {
		if code != tron.CodeDupTransactionError {
			m.nodeErrors.WithLabelValues(callBroadcast, string(code))
		}
	}
	m.nodeErrors.WithLabelValues(callBroadcast, "unknown_code")
	for _, k := range operator.Kinds {
		for _, o := range outcomes {
			m.actions.WithLabelValues(k.String(), o)
		}
	}
	m.served = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return m
}

// Registry is where the instruments are registered: a caller may add its
// own collectors (the Go runtime's, the process's).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ServeHTTP is a scrape: the store's census, then every metric in
// Prometheus's text format. A census that fails leaves its gauges out of
// this scrape (and counts sluice_census_errors_total); the rest is served.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.scrape.Lock()
	defer m.scrape.Unlock()
	c, err := m.store.Census(r.Context())
	if err != nil {
		m.censusErrors.Inc()
	}
	m.census.set(c, err)
	m.served.ServeHTTP(w, r)
}

// Observe counts one worker step (sluice.Observer).
func (m *Metrics) Observe(o sluice.Observation) {
	if o.Decision != nil {
		m.decisions.WithLabelValues(o.Decision.Action.String()).Inc()
	}
	b, a := o.Before, o.After
	if b.Builds >= 1 && a.Builds > b.Builds {
		// Before the error: a rebuild after a failed receipt is followed
		// by a park in the same step, and a park that fails leaves the
		// new envelope in the row all the same (After shows it; a failed
		// rebuild write leaves After at Before).
		m.rebuilds.Inc()
	}
	switch {
	case errors.Is(o.Err, sluice.ErrFenced):
		m.fenced.Inc()
		return
	case o.Err != nil:
		m.stepErrors.Inc()
		return
	}
	switch {
	case a.State == b.State:
		if o.Park != "" && a.Parked() {
			m.parks.Inc()
		}
	case a.State == sluice.Confirmed:
		m.confirmation.Observe(a.UpdatedAt.Sub(a.CreatedAt).Seconds())
	case a.State == sluice.Review:
		cause := ReviewCause(o)
		m.reviews.WithLabelValues(cause).Inc()
		if cause == CauseLogs {
			m.mismatches.Inc()
		}
	case o.Park != "" && a.Parked():
		// A step that moved the row and then parked it (a rebuild after a
		// failed receipt parks the new envelope).
		m.parks.Inc()
	}
}

// ReviewCause says why a step that entered review did, from the
// observation's data: the park reason (past the park bounds), the stuck
// policy's decision (escalated), the state it left (broadcast: the logs did
// not show the payment; signed: stale with the rebuild budget spent).
func ReviewCause(o sluice.Observation) string {
	switch {
	case o.Park != "":
		return CauseParked
	case o.Decision != nil:
		return CauseStuck
	case o.Before.State == sluice.Broadcast:
		return CauseLogs
	case o.Before.State == sluice.Signed:
		return CauseStale
	}
	return CauseOther
}

// Outcomes of an operator action, the label of sluice_operator_actions_total.
var outcomes = []string{"landed", "refused", "invalid", "failed"}

// ObserveAction counts one operator action (operator.Observer).
func (m *Metrics) ObserveAction(a operator.Action) {
	outcome := "landed"
	switch {
	case errors.Is(a.Err, operator.ErrRefused), errors.Is(a.Err, sluice.ErrPayloadMismatch), operator.StoreRefused(a.Err):
		// The store's own refusal is answered 409 like the service's:
		// nothing changed. Counted failed, it would read as an outage.
		outcome = "refused"
	case errors.Is(a.Err, operator.ErrInvalid), errors.Is(a.Err, sluice.ErrInvalidOperation), errors.Is(a.Err, sluice.ErrNotFound):
		// Answered 415, 422 or 404: the request was malformed or named no
		// operation, and nothing changed. Counted failed, an operator's
		// typo of an id would read as an outage.
		outcome = "invalid"
	case a.Err != nil:
		outcome = "failed"
	}
	m.actions.WithLabelValues(a.Kind.String(), outcome).Inc()
}

// censusCollector serves the gauges read from one Census per scrape.
type censusCollector struct {
	depth, finished, review, parked, stuck *prometheus.Desc

	mu     sync.Mutex
	census sluice.Census
	err    error
}

func newCensusCollector() *censusCollector {
	return &censusCollector{
		depth: prometheus.NewDesc("sluice_withdrawal_queue_depth",
			"Withdrawals in each non-terminal state now (the store's census at scrape time).", []string{"state"}, nil),
		finished: prometheus.NewDesc("sluice_withdrawals_finished",
			"Withdrawals in each terminal state but review now.", []string{"state"}, nil),
		review: prometheus.NewDesc("sluice_review_size",
			"Withdrawals in review now: the dead-letter queue, where an operator decides.", nil, nil),
		parked: prometheus.NewDesc("sluice_parked_operations",
			"Non-terminal withdrawals parked now for an operational error of ours.", nil, nil),
		stuck: prometheus.NewDesc("sluice_stuck_ratio",
			"Parked withdrawals / open (non-terminal) withdrawals, now; 0 with none open.", nil, nil),
	}
}

func (c *censusCollector) set(census sluice.Census, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.census, c.err = census, err
}

func (c *censusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.depth, c.finished, c.review, c.parked, c.stuck} {
		ch <- d
	}
}

func (c *censusCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	census, err := c.census, c.err
	c.mu.Unlock()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.depth, err)
		return
	}
	open := 0
	for _, s := range sluice.States {
		n := census.States[s]
		switch {
		case !s.Terminal():
			open += n
			ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(n), s.String())
		case s == sluice.Review:
			ch <- prometheus.MustNewConstMetric(c.review, prometheus.GaugeValue, float64(n))
		default:
			ch <- prometheus.MustNewConstMetric(c.finished, prometheus.GaugeValue, float64(n), s.String())
		}
	}
	ch <- prometheus.MustNewConstMetric(c.parked, prometheus.GaugeValue, float64(census.Parked))
	ratio := 0.0
	if open > 0 {
		ratio = float64(census.Parked) / float64(open)
	}
	ch <- prometheus.MustNewConstMetric(c.stuck, prometheus.GaugeValue, ratio)
}
