package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"sluicesim/sluice"
	"sluicesim/sluice/intake"
	"sluicesim/sluice/metrics"
	"sluicesim/sluice/operator"
	"sluicesim/sluice/store"
	"sluicesim/sluice/tron"
	"sluicesim/sluice/tron/mocknode"
)

var (
	hotWallet = tron.AddressFromBytes20([20]byte{0xaa, 1, 2, 3})
	bob       = tron.AddressFromBytes20([20]byte{0xb0, 0xb0, 2, 3})
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// hookNode runs a test's hook before each broadcast reaches the node.
type hookNode struct {
	tron.Node
	beforeBroadcast func()
}

func (n hookNode) Broadcast(ctx context.Context, tx tron.Transaction) (tron.BroadcastResult, error) {
	if n.beforeBroadcast != nil {
		n.beforeBroadcast()
	}
	return n.Node.Broadcast(ctx, tx)
}

// scrape reads h's answer as Prometheus's text format.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body.String())
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("scrape does not parse: %v\n%s", err, rec.Body.String())
	}
	return fams
}

// value is the value of the series of name whose labels include the given
// pairs ("k=v"); -1 if there is none. A histogram's value is its count.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			found := false
			for _, lp := range m.GetLabel() {
				found = found || lp.GetName() == k && lp.GetValue() == v
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

// Goal: a scrape after real withdrawals through a real worker, the memory
// store and the mock node shows each metric with the value those
// withdrawals make plausible: six confirmed with latencies of about a
// minute; one in review because its transfer moved nothing (a ledger-chain
// mismatch); one parked for bandwidth (stuck ratio 1/1); a rebuild after an
// OUT_OF_ENERGY receipt; a write fenced by an operator's retry; a lost send
// the stuck policy waits out; the node's refusals and timeouts by code.
func TestScrapeAfterRealWithdrawals(t *testing.T) {
	ctx := context.Background()
	c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	st := store.NewMemory(c, 30*time.Second)
	signer := tron.NewHMACSigner([]byte("metrics-test-key"))
	node := mocknode.New(c, mocknode.Config{Genesis: c.Now().Add(-10 * time.Minute), HotWallet: hotWallet,
		HotBalance: 1_000_000 * 1_000_000, Verifier: signer})
	// The withdrawal of 7 USDT succeeds on chain but moves nothing.
	node.Network().SetExecution(func(r mocknode.ExecRequest) mocknode.Execution {
		return mocknode.Execution{NoTransfer: r.Amount == 7_000_000}
	})
	m := metrics.New(st)
	cfg := sluice.DefaultConfig()
	svc := &operator.Service{Store: st, Node: node.Client("operator"), HotWallet: hotWallet, Clock: c, Config: cfg, Observer: m}
	var fenceNext func()
	w := &sluice.Worker{
		ID: "w1",
		Pipeline: &sluice.Pipeline{Store: st, Signer: signer, Clock: c, HotWallet: hotWallet, Config: cfg,
			Node: m.Node(hookNode{Node: node.Client("w1"), beforeBroadcast: func() {
				if fenceNext != nil {
					fenceNext()
					fenceNext = nil
				}
			}})},
		Rand:     rand.New(rand.NewPCG(1, 2)),
		Observer: m,
	}
	if _, _, err := svc.Credit(ctx, sluice.Credit{Ref: "dep-1", Customer: "cust-1", Amount: 1000_000_000},
		operator.Act{Operator: "alice", Why: "opening deposit"}); err != nil {
		t.Fatal(err)
	}
	seq := 0
	submit := func(amount string) sluice.OperationID {
		seq++
		res, err := (&intake.Service{Store: st}).Submit(ctx, intake.Submission{
			OperationID: fmt.Sprintf("00000000-0000-4000-8000-%012d", seq), Customer: "cust-1",
			ToAddress: bob.String(), Amount: amount, Asset: sluice.Asset})
		if err != nil {
			t.Fatal(err)
		}
		return res.Operation.ID
	}
	run := func(d time.Duration) {
		for range int(d / time.Second) {
			c.advance(time.Second)
			if _, err := w.Tick(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}

	for _, a := range []string{"1", "2", "3"} {
		submit(a)
	}
	energy := submit("4")
	run(time.Second)
	node.SetOutcome(mustGet(t, st, energy).Envelope.Txid, tron.ReceiptOutOfEnergy)
	submit("7")
	// An operator retries this one while the worker is sending it: the
	// worker's next write is fenced, and the next claim carries on.
	fenced := submit("5")
	fenceNext = func() {
		if _, err := svc.Retry(ctx, fenced, operator.Act{Operator: "alice", Why: "testing the fence"}); err != nil {
			t.Error(err)
		}
	}
	node.Next(mocknode.Lookup, mocknode.QueryTimeout)
	// The first send of the next one is lost: reconcile asks the stuck
	// policy, which waits (no proof of death) and re-sends.
	node.Next(mocknode.Broadcast, mocknode.LoseRequest)
	submit("8")
	run(5 * time.Minute)
	node.Next(mocknode.Broadcast, mocknode.BandwidthExhausted)
	parked := submit("6")
	run(time.Second)
	if op := mustGet(t, st, parked); !op.Parked() {
		t.Fatalf("%s is %s and not parked", parked, op.State)
	}

	fams := scrape(t, m)
	census, err := st.Census(ctx)
	if err != nil {
		t.Fatal(err)
	}
	confirmed := census.States[sluice.Confirmed]
	if confirmed != 6 || census.States[sluice.Review] != 1 {
		t.Fatalf("census %+v: want 6 confirmed (1, 2, 3, 4 rebuilt, 5 fenced, 8 re-sent) and 1 review (7)", census)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sluice_withdrawals_finished", []string{"state=confirmed"}, 6},
		{"sluice_withdrawal_queue_depth", []string{"state=broadcasting"}, 1},
		{"sluice_withdrawal_queue_depth", []string{"state=requested"}, 0},
		{"sluice_review_size", nil, 1},
		{"sluice_parked_operations", nil, 1},
		{"sluice_stuck_ratio", nil, 1},
		{"sluice_confirmation_latency_seconds", nil, 6},
		{"sluice_ledger_chain_mismatches_total", nil, 1},
		{"sluice_reviews_entered_total", []string{"cause=logs"}, 1},
		{"sluice_reviews_entered_total", []string{"cause=parked"}, 0},
		{"sluice_rebuilds_total", nil, 1},
		{"sluice_fenced_writes_total", nil, 1},
		{"sluice_stuck_decisions_total", []string{"action=wait"}, 1},
		{"sluice_node_errors_total", []string{"call=broadcast", "code=BANDWITH_ERROR"}, 1},
		{"sluice_node_errors_total", []string{"call=lookup", "code=timeout"}, 1},
		{"sluice_operator_actions_total", []string{"action=retry", "outcome=landed"}, 1},
		{"sluice_operator_actions_total", []string{"action=credit", "outcome=landed"}, 1},
		{"sluice_census_errors_total", nil, 0},
	} {
		if got := value(fams, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Each park (the energy shortage's and the bandwidth refusal's) is
	// counted; the lookup timeout is not a park (an unreachable node only
	// delays).
	if got := value(fams, "sluice_parks_total"); got < 2 {
		t.Errorf("sluice_parks_total = %v, want at least 2", got)
	}
	if got := value(fams, "sluice_node_calls_total", "call=lookup"); got < 6 {
		t.Errorf("sluice_node_calls_total{call=lookup} = %v, want at least one per confirmation", got)
	}
	// A confirmation waits out the solid lag (19 blocks of 3 s): about a
	// minute, and the histogram's buckets put its p95 there.
	h := fams["sluice_confirmation_latency_seconds"].GetMetric()[0].GetHistogram()
	if mean := h.GetSampleSum() / float64(h.GetSampleCount()); mean < 57 || mean > 300 {
		t.Errorf("mean confirmation latency %.1fs, want about a minute (57 s of solid lag and more)", mean)
	}
	// The oracle: each confirmed row's life, creation to confirmation, on
	// the store's clock.
	rows, err := st.List(ctx, sluice.ListFilter{States: []sluice.State{sluice.Confirmed}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := 0.0
	for _, op := range rows {
		want += op.UpdatedAt.Sub(op.CreatedAt).Seconds()
	}
	if got := h.GetSampleSum(); got != want {
		t.Errorf("latency sum %.3fs, want %.3fs: the confirmed rows' UpdatedAt - CreatedAt", got, want)
	}
	var below60, below300 uint64
	for _, b := range h.GetBucket() {
		switch b.GetUpperBound() {
		case 45:
			below60 = b.GetCumulativeCount()
		case 300:
			below300 = b.GetCumulativeCount()
		}
	}
	if below60 != 0 || below300 != 6 {
		t.Errorf("latency buckets: %d at or below 45 s, %d at or below 300 s; want 0 and all 6", below60, below300)
	}
}

func mustGet(t *testing.T, st sluice.Store, id sluice.OperationID) sluice.Operation {
	t.Helper()
	op, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// failingCensus is a store whose census fails.
type failingCensus struct{ sluice.Store }

func (failingCensus) Census(context.Context) (sluice.Census, error) {
	return sluice.Census{}, errors.New("connection reset")
}

// Goal: a scrape whose census fails still serves every other metric, leaves
// the census's gauges out rather than showing stale or zero numbers, and
// counts the failure.
func TestScrapeWhenTheCensusFails(t *testing.T) {
	c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	m := metrics.New(failingCensus{store.NewMemory(c, time.Minute)})
	fams := scrape(t, m)
	for _, name := range []string{"sluice_withdrawal_queue_depth", "sluice_review_size", "sluice_stuck_ratio"} {
		if fams[name] != nil {
			t.Errorf("%s is served although the census failed", name)
		}
	}
	if got := value(fams, "sluice_census_errors_total"); got != 1 {
		t.Errorf("sluice_census_errors_total = %v, want 1", got)
	}
	if got := value(fams, "sluice_rebuilds_total"); got != 0 {
		t.Errorf("sluice_rebuilds_total = %v, want 0 (served)", got)
	}
}

// Goal: every route into review is classified by the observation's data,
// and only the logs' route counts as a ledger-chain mismatch (a step that
// parked past its bounds from broadcast is not one).
func TestReviewCause(t *testing.T) {
	d := &sluice.Decision{Action: sluice.Escalate}
	for _, c := range []struct {
		name string
		o    sluice.Observation
		want string
	}{
		{"logs", sluice.Observation{Before: sluice.Operation{State: sluice.Broadcast}}, metrics.CauseLogs},
		{"parked from broadcast", sluice.Observation{Before: sluice.Operation{State: sluice.Broadcast}, Park: "lookup: timeout"}, metrics.CauseParked},
		{"parked from validated", sluice.Observation{Before: sluice.Operation{State: sluice.Validated}, Park: "head block: timeout"}, metrics.CauseParked},
		{"escalated", sluice.Observation{Before: sluice.Operation{State: sluice.Broadcasting}, Decision: d}, metrics.CauseStuck},
		{"failed receipt, budget spent", sluice.Observation{Before: sluice.Operation{State: sluice.Broadcast}, Decision: d}, metrics.CauseStuck},
		{"stale", sluice.Observation{Before: sluice.Operation{State: sluice.Signed}}, metrics.CauseStale},
		{"unknown route", sluice.Observation{Before: sluice.Operation{State: sluice.Signing}}, metrics.CauseOther},
	} {
		c.o.After = sluice.Operation{State: sluice.Review}
		if got := metrics.ReviewCause(c.o); got != c.want {
			t.Errorf("%s: ReviewCause = %q, want %q", c.name, got, c.want)
		}
	}
}

// Goal: the confirmation latency histogram, as scraped (what an alert's
// histogram_quantile reads), has the buckets the README promises: from 1 s
// to 2 h, dense between 30 s and 3 min (every 30 s at most, where
// confirmations on TRON's solid lag fall), and above 3 min no bound more
// than half again the one before, so a p95 anywhere up to 2 h reads within
// a bucket of half its size, never in +Inf. Confirmations of an hour and
// of 90 minutes are counted in finite buckets, at 2 h at the latest.
func TestConfirmationLatencyBuckets(t *testing.T) {
	c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	m := metrics.New(store.NewMemory(c, time.Minute))
	for _, d := range []time.Duration{time.Hour, 90 * time.Minute} {
		created := c.now.Add(-d)
		m.Observe(sluice.Observation{Before: sluice.Operation{State: sluice.Broadcast, CreatedAt: created},
			After: sluice.Operation{State: sluice.Confirmed, CreatedAt: created, UpdatedAt: c.now}})
	}
	f := scrape(t, m)["sluice_confirmation_latency_seconds"]
	if f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetHistogram() == nil {
		t.Fatalf("no confirmation latency histogram in the scrape: %v", f)
	}
	h := f.GetMetric()[0].GetHistogram()
	var bounds []float64
	for _, b := range h.GetBucket() {
		if ub := b.GetUpperBound(); !math.IsInf(ub, 1) {
			bounds = append(bounds, ub)
		}
	}
	if len(bounds) == 0 || bounds[0] > 1 || bounds[len(bounds)-1] < 7200 {
		t.Fatalf("finite buckets %v: want from 1 s (or less) to 2 h (or more)", bounds)
	}
	for i := 1; i < len(bounds); i++ {
		lo, hi := bounds[i-1], bounds[i]
		switch {
		case hi <= lo:
			t.Errorf("bucket %v after %v: the bounds must increase", hi, lo)
		case lo >= 30 && hi <= 180 && hi-lo > 30:
			t.Errorf("buckets %v and %v: more than 30 s apart between 30 s and 3 min", lo, hi)
		case lo >= 180 && hi <= 7200 && hi > 1.5*lo:
			t.Errorf("buckets %v and %v: more than half again apart below 2 h", lo, hi)
		}
	}
	for _, b := range h.GetBucket() {
		ub, n := b.GetUpperBound(), b.GetCumulativeCount()
		if ub == 7200 && n != 2 {
			t.Errorf("le=%v counts %d confirmations, want both the hour's and the 90 minutes'", ub, n)
		}
		if ub < 3600 && n != 0 {
			t.Errorf("le=%v counts %d confirmations, want none: both took an hour or more", ub, n)
		}
	}
}

// Goal: a broadcast code the node invents is counted under one label, not
// under its own: label values never come from the wire.
func TestUnknownCodesShareOneLabel(t *testing.T) {
	c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	m := metrics.New(store.NewMemory(c, time.Minute))
	for i := range 3 {
		n := m.Node(codeNode{code: tron.Code(fmt.Sprintf("WEIRD_%d", i))})
		n.Broadcast(context.Background(), tron.Transaction{})
	}
	fams := scrape(t, m)
	if got := value(fams, "sluice_node_errors_total", "call=broadcast", "code=unknown_code"); got != 3 {
		t.Errorf("unknown codes counted %v under unknown_code, want 3", got)
	}
	for _, m := range fams["sluice_node_errors_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "code" && strings.HasPrefix(l.GetValue(), "WEIRD") {
				t.Errorf("a series labelled with the wire's code %q", l.GetValue())
			}
		}
	}
}

// Goal: a DUP_TRANSACTION_ERROR answer (the node holds the transaction: the
// usual answer to a re-send of the same bytes) is not a node error, and
// every error series exists at 0 before its first event, so that an
// increase() over it sees the first one. Found by an independent review.
func TestNodeErrorsCountTroubleFromZero(t *testing.T) {
	c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	m := metrics.New(store.NewMemory(c, time.Minute))
	fams := scrape(t, m)
	for _, labels := range [][]string{
		{"call=lookup", "code=timeout"}, {"call=broadcast", "code=error"}, {"call=head_block", "code=canceled"},
		{"call=broadcast", "code=" + string(tron.CodeServerBusy)}, {"call=broadcast", "code=unknown_code"},
	} {
		if got := value(fams, "sluice_node_errors_total", labels...); got != 0 {
			t.Errorf("sluice_node_errors_total %v before any call: %v (-1: no series), want a series at 0", labels, got)
		}
	}
	n := m.Node(codeNode{code: tron.CodeDupTransactionError})
	n.Broadcast(context.Background(), tron.Transaction{})
	fams = scrape(t, m)
	for _, mt := range fams["sluice_node_errors_total"].GetMetric() {
		if mt.GetCounter().GetValue() != 0 {
			t.Errorf("a DUP_TRANSACTION_ERROR answer was counted as a node error: %v", mt.GetLabel())
		}
	}
}

type codeNode struct {
	tron.Node
	code tron.Code
}

func (n codeNode) Broadcast(context.Context, tron.Transaction) (tron.BroadcastResult, error) {
	return tron.BroadcastResult{Code: n.code}, nil
}

// Goal: a rebuild is counted when the row shows it, whatever the rest of
// its step did: after a failed receipt the worker rebuilds and then parks,
// and a park the store fails or fences leaves the new envelope in the row
// (the observation's After). A rebuild write that failed itself leaves
// After at Before and counts nothing. (The wire world's count of the
// workers' writes found the rebuild a failed park hid.)
func TestRebuildCountedWhenItsParkFails(t *testing.T) {
	c := &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	m := metrics.New(store.NewMemory(c, time.Minute))
	before := sluice.Operation{State: sluice.Broadcast, Builds: 1}
	rebuilt := sluice.Operation{State: sluice.Signing, Builds: 2}
	m.Observe(sluice.Observation{Before: before, After: rebuilt, Park: "receipt OUT_OF_ENERGY", Err: errors.New("park: connection reset")})
	m.Observe(sluice.Observation{Before: before, After: rebuilt, Park: "receipt OUT_OF_ENERGY", Err: fmt.Errorf("park: %w", sluice.ErrFenced)})
	m.Observe(sluice.Observation{Before: before, After: before, Err: errors.New("cas: connection reset")})
	fams := scrape(t, m)
	for name, want := range map[string]float64{"sluice_rebuilds_total": 2, "sluice_step_errors_total": 2, "sluice_fenced_writes_total": 1, "sluice_parks_total": 0} {
		if got := value(fams, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// Goal: only a fenced write counts as fenced; every other error of a step
// is a step error, the store's refusal of an edge above all. A store that
// refuses an edge to a worker still holding the row (id, token and state
// match) disagrees with the core about the transition table (a trigger
// drifted from Go's): every claim of that row fails the same way, and
// counted among the fenced writes, routine under lease expiry, no alert
// on step errors would fire (blind bug 285).
func TestOnlyFencedWritesCountAsFenced(t *testing.T) {
	m := metrics.New(store.NewMemory(&clock{}, time.Minute))
	row := sluice.Operation{State: sluice.Signed, Builds: 1}
	for _, err := range []error{
		fmt.Errorf("cas: %w", sluice.ErrIllegalTransition),
		fmt.Errorf("cas: %w", sluice.ErrInvalidChange),
		fmt.Errorf("get: %w", sluice.ErrNotFound),
		errors.New("cas: connection reset"),
		fmt.Errorf("cas: %w", sluice.ErrFenced),
	} {
		m.Observe(sluice.Observation{Before: row, After: row, Err: err})
	}
	fams := scrape(t, m)
	for name, want := range map[string]float64{"sluice_step_errors_total": 4, "sluice_fenced_writes_total": 1} {
		if got := value(fams, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// Goal: an operator action's outcome label says what the operator API
// answered: a refusal (409, the service's or the store's own: nothing
// changed) is refused, not failed. Counted failed, a store's refusal reads
// as an outage on the dashboard while the API told the person on call that
// nothing changed.
func TestActionOutcomes(t *testing.T) {
	m := metrics.New(store.NewMemory(&clock{}, time.Minute))
	for _, c := range []struct {
		err     error
		outcome string
	}{
		{nil, "landed"},
		{fmt.Errorf("cancel: %w", operator.ErrRefused), "refused"},
		{fmt.Errorf("resolve: %w", sluice.ErrIllegalTransition), "refused"},
		{fmt.Errorf("resolve: %w", sluice.ErrHoldClosed), "refused"},
		{fmt.Errorf("resolve: %w", sluice.ErrTxidTaken), "refused"},
		{fmt.Errorf("credit: %w", sluice.ErrPayloadMismatch), "refused"},
		{fmt.Errorf("cancel: %w", operator.ErrInvalid), "invalid"},
		// An id that names no operation (a 404): nothing changed, and no
		// outage either.
		{fmt.Errorf("cancel 0f0f: %w", sluice.ErrNotFound), "invalid"},
		{fmt.Errorf("cancel: %w", operator.ErrNodeUnavailable), "failed"},
		{errors.New("store unavailable: connection reset"), "failed"},
	} {
		before := value(scrape(t, m), "sluice_operator_actions_total", "action=cancel", "outcome="+c.outcome)
		m.ObserveAction(operator.Action{Kind: operator.Cancel, Err: c.err})
		if got := value(scrape(t, m), "sluice_operator_actions_total", "action=cancel", "outcome="+c.outcome); got != before+1 {
			t.Errorf("an action that ended in %v: outcome=%s went from %v to %v, want one more", c.err, c.outcome, before, got)
		}
	}
}
