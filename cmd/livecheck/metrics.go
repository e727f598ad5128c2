package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"sluicesim/sluice"
)

// The metrics the live check scrapes: the six of seed 003 as sluice names
// them (sluice/metrics), deposit lag being the one sluice documents as
// omitted.
const (
	metricQueueDepth = "sluice_withdrawal_queue_depth"
	metricLatency    = "sluice_confirmation_latency_seconds"
	metricStuck      = "sluice_stuck_ratio"
	metricReview     = "sluice_review_size"
	metricMismatches = "sluice_ledger_chain_mismatches_total"
	// metricActions counts the operator API's actions by action and
	// outcome: the depositor's credits are held to it.
	metricActions = "sluice_operator_actions_total"
	// depositLagPrefix: any family named so would be a deposit lag, which
	// sluice does not measure (deposits are operators' credits, there is no
	// chain watcher) and says it omits.
	depositLagPrefix = "sluice_deposit"
)

// operatorTokenEnv is where sluice serve reads the operator API's bearer
// token (cmd/sluice's operatorTokenEnv).
const operatorTokenEnv = "SLUICE_OPERATOR_TOKEN"

// Bounds of a plausible p95 of the confirmation latency: the mock's solid
// lag makes a confirmation take seconds to a minute, kills and restarts add
// leases and backoffs; below a second nothing was waited for, above half an
// hour the workers were not working.
const (
	p95Min = 1.0
	p95Max = 30 * 60.0
)

// scrape is what one scrape of the API process's /metrics showed.
type scrape struct {
	at    time.Duration // since the run began
	depth map[string]float64
	// The histogram: its count and sum, and the p95 read from its buckets
	// as Prometheus's histogram_quantile reads it.
	count      uint64
	sum        float64
	p95        float64
	stuck      float64
	review     float64
	mismatches float64
	depositLag []string // families that would be a deposit lag (none, as documented)
	missing    []string // of the six, those absent
	// actions is metricActions by "action/outcome" (absent: no series).
	actions     map[string]float64
	confirmedDB int // rows confirmed in the database, counted right after the scrape
	rowsDB      int // rows stored, counted right after the scrape
	// auth is what the operator listener answered a scrape without a token
	// and one with a wrong token (want 401 and 403).
	noToken, wrongToken int
}

// parseScrape reads a scrape in Prometheus's text format.
func parseScrape(r io.Reader) (*scrape, error) {
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("the scrape does not parse: %w", err)
	}
	s := &scrape{depth: map[string]float64{}, actions: map[string]float64{}}
	if f := fams[metricActions]; f != nil {
		for _, m := range f.GetMetric() {
			var action, outcome string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "action":
					action = l.GetValue()
				case "outcome":
					outcome = l.GetValue()
				}
			}
			if m.GetCounter() != nil {
				s.actions[action+"/"+outcome] = m.GetCounter().GetValue()
			}
		}
	}
	gauge := func(name string) float64 {
		f := fams[name]
		if f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge() == nil {
			s.missing = append(s.missing, name)
			return math.NaN()
		}
		return f.GetMetric()[0].GetGauge().GetValue()
	}
	if f := fams[metricQueueDepth]; f != nil {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" && m.GetGauge() != nil {
					s.depth[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	if len(s.depth) == 0 {
		s.missing = append(s.missing, metricQueueDepth)
	}
	if f := fams[metricLatency]; f != nil && len(f.GetMetric()) == 1 && f.GetMetric()[0].GetHistogram() != nil {
		h := f.GetMetric()[0].GetHistogram()
		s.count, s.sum = h.GetSampleCount(), h.GetSampleSum()
		s.p95 = quantile(0.95, h)
	} else {
		s.missing = append(s.missing, metricLatency)
	}
	s.stuck = gauge(metricStuck)
	s.review = gauge(metricReview)
	if f := fams[metricMismatches]; f != nil && len(f.GetMetric()) == 1 && f.GetMetric()[0].GetCounter() != nil {
		s.mismatches = f.GetMetric()[0].GetCounter().GetValue()
	} else {
		s.missing = append(s.missing, metricMismatches)
		s.mismatches = math.NaN()
	}
	for name := range fams {
		if strings.HasPrefix(name, depositLagPrefix) {
			s.depositLag = append(s.depositLag, name)
		}
	}
	slices.Sort(s.depositLag)
	return s, nil
}

// quantile is Prometheus's histogram_quantile over one histogram's
// cumulative buckets: the bucket the q-th rank falls in, interpolated
// linearly from its lower bound (the previous bucket's upper bound, 0 for
// the first) to its upper bound. A rank in the +Inf bucket reads as the
// highest finite bound; no observations read as NaN.
func quantile(q float64, h *dto.Histogram) float64 {
	total := float64(h.GetSampleCount())
	bs := h.GetBucket()
	if total == 0 || len(bs) == 0 {
		return math.NaN()
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range bs {
		upper, cum := b.GetUpperBound(), float64(b.GetCumulativeCount())
		if math.IsInf(upper, +1) {
			break
		}
		if cum >= rank { // rank > 0, so the bucket holds observations: cum > below
			return lower + (upper-lower)*(rank-below)/(cum-below)
		}
		lower, below = upper, cum
	}
	return lower
}

// problems lists what makes the scrape implausible for a run that has
// confirmed withdrawals through the API process's own worker.
func (s *scrape) problems() []string {
	var out []string
	// An absent metric is one problem, said here, not a value out of range
	// too.
	present := func(name string) bool { return !slices.Contains(s.missing, name) }
	if len(s.missing) > 0 {
		out = append(out, "absent: "+strings.Join(s.missing, ", "))
	}
	var total float64
	for _, st := range sluice.States {
		if st.Terminal() {
			continue
		}
		v, ok := s.depth[st.String()]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s has no series for state %s", metricQueueDepth, st))
		case v < 0 || v != math.Trunc(v):
			out = append(out, fmt.Sprintf("%s{state=%q} is %v, not a count", metricQueueDepth, st, v))
		}
		total += v
	}
	for state := range s.depth {
		if st, err := sluice.ParseState(state); err != nil || st.Terminal() {
			out = append(out, fmt.Sprintf("%s has a series for %q, which is not a non-terminal state", metricQueueDepth, state))
		}
	}
	if total > float64(s.rowsDB) {
		out = append(out, fmt.Sprintf("%s adds up to %v open withdrawals, but the database held only %d rows after the scrape", metricQueueDepth, total, s.rowsDB))
	}
	switch {
	case !present(metricLatency):
	case s.count == 0:
		out = append(out, metricLatency+" has no observations, though the API process's worker confirms withdrawals")
	case math.IsNaN(s.p95) || s.p95 < p95Min || s.p95 > p95Max:
		out = append(out, fmt.Sprintf("%s p95 is %.1f s, want between %.0f s and %.0f min", metricLatency, s.p95, p95Min, p95Max/60))
	}
	if int(s.count) > s.confirmedDB {
		out = append(out, fmt.Sprintf("%s counts %d confirmations, but the database held only %d confirmed rows after the scrape", metricLatency, s.count, s.confirmedDB))
	}
	if present(metricStuck) && !(s.stuck >= 0 && s.stuck <= 1) {
		out = append(out, fmt.Sprintf("%s is %v, want a ratio in [0, 1]", metricStuck, s.stuck))
	}
	if present(metricReview) && (s.review < 0 || s.review != math.Trunc(s.review)) {
		out = append(out, fmt.Sprintf("%s is %v, want a count", metricReview, s.review))
	}
	if present(metricMismatches) && (s.mismatches < 0 || s.mismatches != math.Trunc(s.mismatches)) {
		out = append(out, fmt.Sprintf("%s is %v, want a count", metricMismatches, s.mismatches))
	}
	if len(s.depositLag) > 0 {
		out = append(out, "deposit lag is documented as omitted, but the scrape has "+strings.Join(s.depositLag, ", "))
	}
	if s.noToken != http.StatusUnauthorized || s.wrongToken != http.StatusForbidden {
		out = append(out, fmt.Sprintf("/metrics answered %d without a token and %d with a wrong one, want 401 and 403", s.noToken, s.wrongToken))
	}
	return out
}

// summary is the scrape's key numbers, one line.
func (s *scrape) summary() string {
	var depth []string
	for _, st := range sluice.States {
		if v, ok := s.depth[st.String()]; ok {
			depth = append(depth, fmt.Sprintf("%s %v", st, v))
		}
	}
	mean := math.NaN()
	if s.count > 0 {
		mean = s.sum / float64(s.count)
	}
	return fmt.Sprintf("scraped at %s (%d rows, %d confirmed in the database): queue depth %s; confirmation latency %d observations, p95 %.1f s, mean %.1f s; stuck ratio %.3f; review size %v; ledger-chain mismatches %v; deposit lag %s",
		s.at.Round(time.Second), s.rowsDB, s.confirmedDB, strings.Join(depth, ", "), s.count, s.p95, mean, s.stuck, s.review, s.mismatches, lagSaid(s.depositLag))
}

func lagSaid(fams []string) string {
	if len(fams) == 0 {
		return "absent, as documented"
	}
	return "PRESENT: " + strings.Join(fams, ", ")
}

// metricsWatch scrapes the API process's /metrics during the run.
type metricsWatch struct {
	url, token string
	hc         *http.Client
	// count reads the database's rows and confirmed rows, right after a
	// scrape, for the scrape's bounds.
	count   func(ctx context.Context) (rows, confirmed int, err error)
	outages *outages
	began   time.Time
	// minObs is how many confirmations the histogram must count for a
	// scrape to be kept before the end.
	minObs uint64
}

// get scrapes once with the given token ("" for none) and returns the
// status and body.
func (w *metricsWatch) get(ctx context.Context, token string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.url, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// once is one scrape with the token, parsed, with the database's counts
// after it. ok is false for a scrape that overlapped a PostgreSQL restart:
// the census behind the gauges failed by design, so it is no evidence
// either way.
func (w *metricsWatch) once(ctx context.Context) (s *scrape, ok bool, err error) {
	call := time.Now()
	code, body, err := w.get(ctx, w.token)
	if err == nil && code != http.StatusOK {
		err = fmt.Errorf("GET %s: %d %s", w.url, code, strings.TrimSpace(string(body)))
	}
	if err == nil {
		s, err = parseScrape(strings.NewReader(string(body)))
	}
	if err == nil {
		s.at = call.Sub(w.began)
		s.rowsDB, s.confirmedDB, err = w.count(ctx)
	}
	if w.outages.overlaps(call, time.Now()) {
		return nil, false, nil
	}
	return s, true, err
}

// watch scrapes every two seconds until a scrape counts at least minObs
// confirmations in the histogram, and keeps that one: the run is still
// busy then, so the queue depth gauges see withdrawals in flight. If none
// has by the time final is closed, one last scrape is kept instead. It then
// asks once without a token and once with a wrong one. A scrape that fails
// (no answer, not 200, not Prometheus's text) before the end is retried;
// the last one's failure is the result.
func (w *metricsWatch) watch(ctx context.Context, final <-chan struct{}) (*scrape, error) {
	var kept *scrape
	for kept == nil {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-final:
			// A restart keeps the database away for seconds; a minute of
			// scrapes that all overlapped one is a restart that never ended.
			for try := 0; kept == nil; try++ {
				s, ok, err := w.once(ctx)
				switch {
				case ok && err != nil:
					return nil, err
				case ok:
					kept = s
					continue
				case try == 60:
					return nil, errors.New("every scrape at the end overlapped a PostgreSQL restart")
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(time.Second):
				}
			}
		case <-time.After(2 * time.Second):
			if s, ok, err := w.once(ctx); ok && err == nil && s.count >= w.minObs {
				kept = s
			}
		}
	}
	var err error
	if kept.noToken, _, err = w.get(ctx, ""); err != nil {
		return nil, err
	}
	if kept.wrongToken, _, err = w.get(ctx, "not-"+w.token); err != nil {
		return nil, err
	}
	return kept, nil
}

// actionsAtEnd scrapes once more for the operator actions, after every
// action the run makes has been answered (the kept scrape may be from
// before some of them), retrying past a PostgreSQL restart as the final
// scrape does; nil when no scrape got through.
func (w *metricsWatch) actionsAtEnd(ctx context.Context) map[string]float64 {
	for try := 0; try <= 60 && ctx.Err() == nil; try++ {
		if s, ok, err := w.once(ctx); ok && err == nil {
			return s.actions
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}
