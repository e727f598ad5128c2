package main

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"sluicesim/sluice/metrics"
	"sluicesim/sluice/store"
	"sluicesim/sluice/store/storetest"
)

// cannedScrape is a scrape as sluice serve's operator listener answers it
// in the middle of a run (trimmed: the series the live check reads, and one
// it does not). The histogram's p95: rank 95 of 100 falls in the bucket
// (45, 60] holding observations 91..98, so 45 + 15 x (95-90)/(98-90) =
// 54.375 s.
const cannedScrape = `# HELP sluice_confirmation_latency_seconds Time from a withdrawal's creation to its confirmation.
# TYPE sluice_confirmation_latency_seconds histogram
sluice_confirmation_latency_seconds_bucket{le="1"} 0
sluice_confirmation_latency_seconds_bucket{le="5"} 0
sluice_confirmation_latency_seconds_bucket{le="10"} 2
sluice_confirmation_latency_seconds_bucket{le="15"} 10
sluice_confirmation_latency_seconds_bucket{le="20"} 30
sluice_confirmation_latency_seconds_bucket{le="30"} 60
sluice_confirmation_latency_seconds_bucket{le="45"} 90
sluice_confirmation_latency_seconds_bucket{le="60"} 98
sluice_confirmation_latency_seconds_bucket{le="75"} 100
sluice_confirmation_latency_seconds_bucket{le="+Inf"} 100
sluice_confirmation_latency_seconds_sum 2500
sluice_confirmation_latency_seconds_count 100
# HELP sluice_ledger_chain_mismatches_total Reviews entered because the logs did not show the payment asked.
# TYPE sluice_ledger_chain_mismatches_total counter
sluice_ledger_chain_mismatches_total 0
# HELP sluice_review_size Withdrawals in review now.
# TYPE sluice_review_size gauge
sluice_review_size 0
# HELP sluice_stuck_ratio Parked withdrawals / open withdrawals, now.
# TYPE sluice_stuck_ratio gauge
sluice_stuck_ratio 0.05
# HELP sluice_withdrawal_queue_depth Withdrawals in each non-terminal state now.
# TYPE sluice_withdrawal_queue_depth gauge
sluice_withdrawal_queue_depth{state="broadcast"} 31
sluice_withdrawal_queue_depth{state="broadcasting"} 2
sluice_withdrawal_queue_depth{state="requested"} 4
sluice_withdrawal_queue_depth{state="signed"} 1
sluice_withdrawal_queue_depth{state="signing"} 0
sluice_withdrawal_queue_depth{state="validated"} 2
# HELP sluice_rebuilds_total Envelopes rebuilt.
# TYPE sluice_rebuilds_total counter
sluice_rebuilds_total 3
`

// canned parses cannedScrape after each replacement (old, new pairs) and
// gives it plausible database counts and authentication answers.
func canned(t *testing.T, replace ...string) *scrape {
	t.Helper()
	text := cannedScrape
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(text, replace[i]) {
			t.Fatalf("the canned scrape has no %q", replace[i])
		}
		text = strings.Replace(text, replace[i], replace[i+1], 1)
	}
	s, err := parseScrape(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	s.rowsDB, s.confirmedDB, s.noToken, s.wrongToken = 400, 300, http.StatusUnauthorized, http.StatusForbidden
	return s
}

// Goal: the scrape's numbers are read as Prometheus reads them: every
// state's queue depth, the histogram's count, sum and p95 interpolated in
// its buckets as histogram_quantile does, the gauges and the counter; a
// canned scrape of plausible numbers has no problem.
func TestParseScrape(t *testing.T) {
	s := canned(t)
	if s.count != 100 || s.sum != 2500 || s.p95 != 54.375 || s.stuck != 0.05 || s.review != 0 || s.mismatches != 0 ||
		s.depth["broadcast"] != 31 || len(s.depth) != 6 || len(s.missing) != 0 || len(s.depositLag) != 0 {
		t.Errorf("parsed %+v; want 100 observations summing to 2500 s, p95 54.375 s, stuck 0.05, six states, nothing missing", s)
	}
	if p := s.problems(); len(p) != 0 {
		t.Errorf("a plausible scrape has problems: %q", p)
	}
	if got := s.summary(); !strings.Contains(got, "queue depth requested 4, validated 2, signing 0, signed 1, broadcasting 2, broadcast 31") ||
		!strings.Contains(got, "100 observations, p95 54.4 s, mean 25.0 s") || !strings.Contains(got, "deposit lag absent, as documented") {
		t.Errorf("summary %q lacks the key numbers", got)
	}
	if _, err := parseScrape(strings.NewReader("sluice_review_size{ 1\n")); err == nil {
		t.Error("a scrape that is not Prometheus's text parses")
	}
}

// Goal: the p95 of a histogram follows histogram_quantile at the edges:
// in the first bucket it interpolates from 0, past the last finite bound it
// reads as that bound, with no observations it is NaN.
func TestQuantile(t *testing.T) {
	h := func(count uint64, bounds []float64, cums []uint64) *dto.Histogram {
		out := &dto.Histogram{SampleCount: &count}
		for i := range bounds {
			out.Bucket = append(out.Bucket, &dto.Bucket{UpperBound: &bounds[i], CumulativeCount: &cums[i]})
		}
		return out
	}
	inf := math.Inf(+1)
	for _, c := range []struct {
		name string
		h    *dto.Histogram
		want float64
	}{
		{"first bucket", h(10, []float64{10, 20}, []uint64{10, 10}), 9.5},
		{"past the last finite bound", h(10, []float64{1, 2, inf}, []uint64{0, 1, 10}), 2},
		{"the rank on a bucket's edge", h(20, []float64{1, 2, 3}, []uint64{0, 19, 20}), 2},
		{"the rank on a bucket's edge, empty buckets above", h(20, []float64{1, 2, 3, 4}, []uint64{0, 19, 19, 20}), 2},
		{"empty buckets below", h(4, []float64{1, 2, 4}, []uint64{0, 0, 4}), 3.9},
	} {
		if got := quantile(0.95, c.h); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: p95 %v, want %v", c.name, got, c.want)
		}
	}
	if got := quantile(0.95, h(0, []float64{1}, []uint64{0})); !math.IsNaN(got) {
		t.Errorf("no observations: p95 %v, want NaN", got)
	}
}

// Goal: each implausible number, each missing metric, a deposit lag
// (documented as omitted) and an operator listener that serves /metrics
// without the token make a problem, named.
func TestScrapeProblems(t *testing.T) {
	for _, c := range []struct {
		name  string
		spoil func(t *testing.T) *scrape
		want  string
	}{
		{"no confirmation observed", func(t *testing.T) *scrape {
			return canned(t, "seconds_count 100", "seconds_count 0")
		}, "has no observations"},
		{"p95 past half an hour", func(t *testing.T) *scrape {
			return canned(t, `{le="75"} 100`, `{le="7200"} 100`, `{le="60"} 98`, `{le="3600"} 98`, `{le="45"} 90`, `{le="2700"} 90`)
		}, "p95 is 3262.5 s"},
		{"p95 under a second", func(t *testing.T) *scrape {
			return canned(t, `{le="1"} 0`, `{le="1"} 100`)
		}, "p95 is 0.9 s"},
		{"more confirmations than the database holds", func(t *testing.T) *scrape {
			s := canned(t)
			s.confirmedDB = 99
			return s
		}, "counts 100 confirmations, but the database held only 99"},
		{"stuck ratio above 1", func(t *testing.T) *scrape {
			return canned(t, "sluice_stuck_ratio 0.05", "sluice_stuck_ratio 1.5")
		}, "sluice_stuck_ratio is 1.5"},
		{"review size negative", func(t *testing.T) *scrape {
			return canned(t, "sluice_review_size 0", "sluice_review_size -1")
		}, "sluice_review_size is -1"},
		{"review size missing", func(t *testing.T) *scrape {
			return canned(t, "sluice_review_size 0", "")
		}, "absent: sluice_review_size"},
		{"mismatch counter missing", func(t *testing.T) *scrape {
			return canned(t, "sluice_ledger_chain_mismatches_total 0", "")
		}, "absent: sluice_ledger_chain_mismatches_total"},
		{"a state without its queue depth", func(t *testing.T) *scrape {
			return canned(t, `sluice_withdrawal_queue_depth{state="signing"} 0`+"\n", "")
		}, "no series for state signing"},
		{"a terminal state's queue depth", func(t *testing.T) *scrape {
			return canned(t, `{state="signing"} 0`, `{state="signing"} 0`+"\n"+`sluice_withdrawal_queue_depth{state="confirmed"} 3`)
		}, `series for "confirmed"`},
		{"more open than stored", func(t *testing.T) *scrape {
			s := canned(t)
			s.rowsDB = 10
			return s
		}, "adds up to 40 open withdrawals"},
		{"a deposit lag", func(t *testing.T) *scrape {
			return canned(t, "# HELP sluice_rebuilds_total", "# TYPE sluice_deposit_lag_seconds gauge\nsluice_deposit_lag_seconds 4\n# HELP sluice_rebuilds_total")
		}, "deposit lag is documented as omitted, but the scrape has sluice_deposit_lag_seconds"},
		{"served without a token", func(t *testing.T) *scrape {
			s := canned(t)
			s.noToken = http.StatusOK
			return s
		}, "answered 200 without a token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := c.spoil(t).problems()
			if len(got) != 1 || !strings.Contains(got[0], c.want) {
				t.Errorf("problems %q; want exactly one saying %q", got, c.want)
			}
		})
	}
}

// Goal: the names the live check reads are the ones sluice serves: a
// scrape of sluice/metrics over a store has every one of the six but the
// omitted deposit lag (its histogram empty: nothing confirmed).
func TestScrapeNamesAreSluices(t *testing.T) {
	m := metrics.New(store.NewMemory(&storetest.Clock{}, time.Minute))
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	s, err := parseScrape(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.missing) != 0 || len(s.depositLag) != 0 || s.count != 0 || !math.IsNaN(s.p95) {
		t.Errorf("sluice's own scrape: missing %v, deposit lag %v, %d observations; want none missing, no deposit lag, an empty histogram", s.missing, s.depositLag, s.count)
	}
	s.noToken, s.wrongToken, s.rowsDB = http.StatusUnauthorized, http.StatusForbidden, 0
	if p := s.problems(); !slices.Equal(p, []string{metricLatency + " has no observations, though the API process's worker confirms withdrawals"}) {
		t.Errorf("problems of an empty store's scrape: %q; want only the empty histogram", p)
	}
}

// Goal: the watch keeps the first scrape whose histogram counts enough
// confirmations, before the end; short of them, the one made when told the
// run is ending; it scrapes with the token, and records what /metrics
// answers without one and with a wrong one. Method: an operator listener
// of canned answers (100 confirmations), checking the bearer token as
// sluice's does.
func TestMetricsWatch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "":
			w.WriteHeader(http.StatusUnauthorized)
		case "Bearer tok":
			w.Write([]byte(cannedScrape))
		default:
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	defer srv.Close()
	for _, c := range []struct {
		name   string
		minObs uint64
		early  bool // kept before the end
	}{
		{"enough confirmations", 100, true},
		{"too few until the end", 101, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &metricsWatch{url: srv.URL, token: "tok", hc: srv.Client(), began: time.Now(), minObs: c.minObs,
				count: func(context.Context) (int, int, error) { return 400, 300, nil }}
			final := make(chan struct{})
			done := make(chan *scrape, 1)
			go func() {
				s, err := w.watch(t.Context(), final)
				if err != nil {
					t.Error(err)
				}
				done <- s
			}()
			var s *scrape
			select {
			case s = <-done:
			case <-time.After(5 * time.Second):
				close(final)
				s = <-done
			}
			if s == nil {
				return
			}
			if early := s.at < 5*time.Second; early != c.early || s.count != 100 || s.rowsDB != 400 || s.confirmedDB != 300 ||
				s.noToken != http.StatusUnauthorized || s.wrongToken != http.StatusForbidden {
				t.Errorf("kept a scrape at %s (%d observations, %d rows, %d confirmed; %d without a token, %d with a wrong one); want it kept early: %v",
					s.at, s.count, s.rowsDB, s.confirmedDB, s.noToken, s.wrongToken, c.early)
			}
		})
	}
}
