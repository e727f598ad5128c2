// Command explore runs the sluice simulator: many seeds of a world, one seed,
// or the replay of a trace, and checks the invariants on every run.
//
//	go run ./cmd/explore -seeds 10000          # seeds 1..10000 of the chaos world
//	go run ./cmd/explore -seed 42 -trace t.jsonl
//	go run ./cmd/explore -replay t.jsonl
//	go run ./cmd/explore merge -json all.json shard-*.json
//
// Exit status: 0 no violation; 1 a violation was found (or, with -mutants,
// a catchable mutant escaped or the real core failed); 2 bad usage, an
// output that cannot be written, unreadable input, or a trace that does
// not reproduce; 3 a kill table that is inconclusive (a mutant survived a
// budget below the seeds its first kill took when recorded), or a seed
// range that never reached a coverage condition under -require-coverage;
// 4 a seed that ran longer than -seed-timeout (a hang: runner.go).
// go run turns every non-zero status into 1: build the binary where the
// codes matter.
//
// Files: main.go parses the flags and dispatches to a mode; seeds.go (a
// seed range), single.go (-seed), replay.go, shrink.go, exhaustive.go and
// mutants.go (the kill table, with killbudget.go) are the modes; runner.go
// is the one parallel seed runner they share; repro.go builds every
// reproduce command and trace name; outputs.go and report.go write the JSON
// summary and the HTML report; merge.go is `explore merge`, which folds
// shards' summaries into one run's; swarm.go (-swarm), fresh.go
// (-seed-start random, -duration), recheck.go (-recheck), regressions.go
// (the regression corpus) and coverage.go (-require-coverage) shape and
// judge a seed range.
package main
