// Package metrics is what a team running sluice watches, as Prometheus
// metrics: the six of seed 003 where sluice has them, and the service's own
// trouble (node errors, rebuilds, fenced writes, parks).
//
// # Driving it
//
// New(store) makes a Metrics with its own registry (no global state).
// Wire it three ways:
//
//   - as every worker's sluice.Observer (Worker.Observer): each step is
//     counted as it lands (confirmations and their latency, reviews and
//     why, rebuilds, parks, fenced writes, the stuck policy's decisions);
//   - around each worker's node (Metrics.Node): broadcast answers other
//     than SUCCESS and failed calls, by code;
//   - as the operator service's Observer (operator actions).
//
// and serve Metrics (an http.Handler) at /metrics. Each scrape reads the
// store's Census first, so the gauges (queue depth by state, review size,
// parked operations, stuck ratio) are the store's, shared by every process
// on it; the counters and the histogram are this process's own, like any
// Prometheus counter.
//
// # Definitions
//
//   - sluice_withdrawal_queue_depth{state}: rows in each non-terminal state.
//   - sluice_confirmation_latency_seconds: for each confirmation a worker
//     of this process landed, the row's UpdatedAt minus its CreatedAt (both
//     the store's clock): from the POST to the solid, checked payment.
//     Buckets from 1 s to 2 h, dense around the minute a confirmation takes,
//     so that histogram_quantile(0.95, ...) reads well from seconds to an
//     hour. An operator's resolve-as-paid is not a confirmation latency.
//   - sluice_stuck_ratio: parked / open, where open is every non-terminal
//     row and parked those in a park spell now (an operational error of
//     ours: bandwidth, energy, node or signer unreachable). 0 with none open.
//   - sluice_review_size: rows in review (the dead-letter queue: terminal
//     for the automation, an operator decides).
//   - sluice_ledger_chain_mismatches_total: reviews entered because the
//     chain's logs did not show the payment asked (a SUCCESS receipt in a
//     solid block without exactly one matching USDT Transfer log). A
//     reconciliation (sluice audit) runs in another process and reports its
//     own findings; they are not counted here.
//   - deposit lag: omitted. Deposits are operators' credits; there is no
//     chain watcher whose lag could be measured.
package metrics
