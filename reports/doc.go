// Package reports renders a run of the explorer as a self-contained HTML
// report: an index page for the whole seed range and one page per failing
// seed.
//
// The caller aggregates while it runs (sums and histograms, so memory stays
// flat however many seeds run), re-runs the failing seeds it wants to show
// with tracing on, fills a Run and calls Write:
//
//	dir/index.html                     world, seeds, invariants, faults, state machine, distributions, kill table
//	dir/seed-N.html                    violations, replay commands, swimlane timeline, the operation's event log
//	dir/seed-N-linearizability.html    porcupine's visualization, when linearizable-intake failed
//
// Pages use html/template with embedded CSS and inline SVG, no JavaScript of
// their own and nothing fetched from the network, so a report can be
// archived as a CI artifact and opened anywhere.
//
// Determinism: the same Run renders to the same bytes, apart from the one
// element that shows wall-clock timings (class "timings", see TimingsClass),
// which golden tests mask. Nothing that reaches a page is built by ranging
// over a map; every list is in a documented order.
package reports
