# sluicesim: a deterministic simulator and model checker for sluice, an
# idempotent USDT-on-TRON withdrawal processor.

GO ?= go
# Packages whose tests run real goroutines (the HTTP intake and the
# in-memory store's concurrency tests, and tron's caches, which every worker
# of a process shares) also run under the race detector: bugs 26 and 30 of
# scenarios/testdata/independent-bugs are races that only it catches.
RACE_PKGS = ./sluice/intake/... ./sluice/store/... ./sluice/tron/ ./cmd/explore/...

# The CI gate: a fixed range of chaos seeds beyond the README's 1..10000,
# sized to take a few minutes on the 2-core machine.
GATE_SEEDS ?= 40000
GATE_START ?= 10001

.PHONY: test vet fmt-check lint demo bench fuzz explore gate fresh mutants mutants-ci

## test: formatting, vet, every unit test (the PostgreSQL tier included: without
## DATABASE_URL it installs and starts a private cluster and stops it afterwards),
## and the race detector on the concurrent packages
test: fmt-check vet
	@set -e; \
	if [ -z "$$DATABASE_URL" ]; then eval "$$(.ci/postgres.sh start)"; trap '.ci/postgres.sh stop' EXIT; fi; \
	$(GO) test -count=1 ./...; \
	$(GO) test -count=1 -race $(RACE_PKGS) ./sluice/store/postgres/...

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## lint: staticcheck with every check (-checks all: style and naming too), pinned in go.mod as a tool; no exceptions are needed today, list any added here with its reason
lint:
	$(GO) tool staticcheck -checks all ./...

## demo: a crash, a lying timeout and a duplicate POST resolve into one payment
demo:
	$(GO) run ./cmd/demo

## explore: the main job, 10,000 seeds of the chaos world
explore:
	$(GO) run ./cmd/explore -seeds 10000

# gate and mutants-ci run a built binary, not go run: the go command turns
# every non-zero exit of the program into 1, and CI must tell explore's
# own codes apart (1 a violation or an escaped mutant, 2 bad usage or an
# unwritable output, 3 an inconclusive kill table). bin/ is .gitignored;
# go build is incremental, so the rebuild costs nothing when nothing changed.
EXPLORE_BIN = bin/explore
.PHONY: explore-bin
explore-bin:
	$(GO) build -o $(EXPLORE_BIN) ./cmd/explore

## gate: fail on any invariant violation over the CI seed range, on a determinism re-check mismatch, or if a coverage condition was never reached
gate: explore-bin
	$(EXPLORE_BIN) -seeds $(GATE_SEEDS) -seed-start $(GATE_START) -recheck 0.01 -require-coverage -json gate.json

## gate-wire: the same for the wire world (production's node stack, metrics and operator API in the loop), fewer seeds: a wire seed costs about three logs seeds
GATE_WIRE_SEEDS ?= 2000
.PHONY: gate-wire
gate-wire: explore-bin
	$(EXPLORE_BIN) -world wire -seeds $(GATE_WIRE_SEEDS) -seed-start $(GATE_START) -recheck 0.01 -require-coverage -json gate-wire.json

## gate-fees: the same for the fees world (energy bought with TRX at a price that spikes: fee limits that run out, raised, and never sent again)
GATE_FEES_SEEDS ?= 2000
.PHONY: gate-fees
gate-fees: explore-bin
	$(EXPLORE_BIN) -world fees -seeds $(GATE_FEES_SEEDS) -seed-start $(GATE_START) -recheck 0.01 -require-coverage -json gate-fees.json

## gate-deploys: the same for the deploys world (fees with a rolling deploy mid-run: every envelope within the fee limits of the release that built it)
GATE_DEPLOYS_SEEDS ?= 2000
.PHONY: gate-deploys
gate-deploys: explore-bin
	$(EXPLORE_BIN) -world deploys -seeds $(GATE_DEPLOYS_SEEDS) -seed-start $(GATE_START) -recheck 0.01 -require-coverage -json gate-deploys.json

## gate-proxies: the same for the proxies world (wire whose proxy drops fields the node client must insist on, loses the lookup route, has no backend; a per-call balancer; customers watching reviews)
GATE_PROXIES_SEEDS ?= 1000
.PHONY: gate-proxies
gate-proxies: explore-bin
	$(EXPLORE_BIN) -world proxies -seeds $(GATE_PROXIES_SEEDS) -seed-start $(GATE_START) -recheck 0.01 -require-coverage -json gate-proxies.json

## gate-settings: the same for the settings world (chaos whose swarm also draws the pipeline's settings: margins, park and claim bounds, stuck policies at the edges Validate allows)
GATE_SETTINGS_SEEDS ?= 4000
.PHONY: gate-settings
gate-settings: explore-bin
	$(EXPLORE_BIN) -world settings -seeds $(GATE_SETTINGS_SEEDS) -seed-start $(GATE_START) -recheck 0.01 -require-coverage -json gate-settings.json

## fresh: chaos seeds from a random start, never run before (the start is printed, and in fresh.json); a failure is kept in testdata/regressions; fails on any violation or a determinism re-check mismatch
FRESH_SEEDS ?= 10000
.PHONY: fresh
fresh: explore-bin
	$(EXPLORE_BIN) -seeds $(FRESH_SEEDS) -seed-start random -recheck 0.02 -regressions testdata/regressions -json fresh.json

## explore-pg: the worlds (chaos, zombies, and wire, whose deposits arrive mid-run) and the store mutants on the real PostgreSQL store at DATABASE_URL (a fresh schema per seed; same seed, same trace as on memory); fails on any violation or a surviving store mutant
.PHONY: explore-pg
PG_SEEDS ?= 100
explore-pg:
	@if [ -z "$$DATABASE_URL" ]; then echo "explore-pg: DATABASE_URL is unset; start a cluster with: eval \"\$$(.ci/postgres.sh start)\""; exit 1; fi
	$(GO) run ./cmd/explore -store postgres -seeds $(PG_SEEDS)
	$(GO) run ./cmd/explore -store postgres -world zombies -seeds $$(( $(PG_SEEDS) * 2 ))
	$(GO) run ./cmd/explore -store postgres -world wire -seeds $$(( $(PG_SEEDS) / 2 ))
	$(GO) run ./cmd/explore -store postgres -mutants -seeds $$(( $(PG_SEEDS) / 2 ))

## mutants: the kill table, every mutant against its world, 10,000 seeds each at most
mutants:
	$(GO) run ./cmd/explore -mutants -seeds 10000

## mutants-ci: the kill table with CI's budget (above every recorded seeds-to-kill); fails if a catchable mutant survives, or dies later than its recorded seed
mutants-ci: explore-bin
	$(EXPLORE_BIN) -mutants -seeds 2000 -json mutants.json

## independent-bugs: the checker against bugs written without it (scenarios/testdata/independent-bugs); slow
.PHONY: independent-bugs
independent-bugs:
	.ci/independent-bugs.sh

## independent-kill: the kill table of those bugs (testdata/independent-bugs/caught.tsv): each is still caught where it was last measured; PostgreSQL rows need DATABASE_URL; a few minutes
.PHONY: independent-kill
independent-kill:
	.ci/independent-kill.sh

## bench: Go benchmarks (medians: run with -count and compare with benchstat)
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=5 ./...

## bench-check: every benchmark run once, twice over (-count=2, as make bench
## repeats them), so that CI catches one that fails or cannot be repeated
## before someone measuring meets it; about half a minute
.PHONY: bench-check
bench-check:
	$(GO) test -run='^$$' -bench=. -benchtime=1x -count=2 ./...

## bench-ab: the benchmarks matching BENCH at commit BASE against the working tree, alternated round by round (cmd/benchab)
BENCH ?= .
ROUNDS ?= 5
.PHONY: bench-ab
bench-ab:
	@test -n "$(BASE)" || { echo "make bench-ab: set BASE to the commit to compare with, e.g. make bench-ab BASE=HEAD~3 BENCH=Calm"; exit 2; }
	$(GO) run ./cmd/benchab -base '$(BASE)' -bench '$(BENCH)' -rounds $(ROUNDS)

## fuzz: a short fuzzing pass over the parsers, and the HTTP intake against the model's reference reading
fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzParse$$ -fuzztime=30s ./sluice/money/
	$(GO) test -run='^$$' -fuzz=FuzzParseAddress -fuzztime=30s ./sluice/tron/
	$(GO) test -run='^$$' -fuzz=FuzzIntakeAgainstReference -fuzztime=30s ./model/
	$(GO) test -run='^$$' -fuzz=FuzzPostAgainstReference -fuzztime=30s ./model/
	$(GO) test -run='^$$' -fuzz=FuzzReadPage -fuzztime=30s ./scenarios/

## test-pg: the PostgreSQL tier (store conformance, schema guards, real concurrency); needs DATABASE_URL (eval "$$(.ci/postgres.sh start)")
.PHONY: test-pg
test-pg:
	@if [ -z "$$DATABASE_URL" ]; then echo "test-pg: DATABASE_URL is unset; start a cluster with: eval \"\$$(.ci/postgres.sh start)\""; exit 1; fi
	$(GO) test -count=1 ./sluice/store/postgres/... ./cmd/sluice/...
	$(GO) test -count=1 -race ./sluice/store/postgres/...

## livecheck: the live check against PostgreSQL at DATABASE_URL: sluice processes on loopback (API + mock node, worker processes SIGKILLed and restarted), 1,000 withdrawals with duplicate, conflicting and invalid posts, PostgreSQL restarted LIVECHECK_PG_RESTARTS times (.ci/postgres.sh restart) and crashed LIVECHECK_PG_CRASHES times (a server process SIGKILLed right after a commit; nothing acknowledged may be lost) under load, the cluster named by SLUICE_PG_DIR (0 for none); the node refuses the first three sends of each 25th new transaction for bandwidth, so that rows park and the person on call retries them from the operator's queue; every invariant of the model (porcupine included); fails on any violation, a count below the acceptance bounds, or a service that does not live through a restart
.PHONY: livecheck
LIVECHECK_PG_RESTARTS ?= 2
LIVECHECK_PG_CRASHES ?= 2
livecheck:
	@if [ -z "$$DATABASE_URL" ]; then echo "livecheck: DATABASE_URL is unset; start a cluster with: eval \"\$$(.ci/postgres.sh start)\""; exit 1; fi
	@if [ "$(LIVECHECK_PG_RESTARTS)$(LIVECHECK_PG_CRASHES)" != 00 ] && [ -z "$$SLUICE_PG_DIR" ]; then echo "livecheck: it restarts PostgreSQL $(LIVECHECK_PG_RESTARTS) times and crashes it $(LIVECHECK_PG_CRASHES) times, which only a cluster of .ci/postgres.sh allows (SLUICE_PG_DIR is unset); start one with: eval \"\$$(.ci/postgres.sh start)\", or run with LIVECHECK_PG_RESTARTS=0 LIVECHECK_PG_CRASHES=0"; exit 1; fi
	$(GO) run ./cmd/livecheck -restart-postgres $(LIVECHECK_PG_RESTARTS) -crash-postgres $(LIVECHECK_PG_CRASHES) -short-every 25 $(LIVECHECK_FLAGS)

## livecheck-race: the live check with cmd/sluice built with the race detector (no PostgreSQL restarts or crashes: those are livecheck's): a data race any process meets under the live load (workers' goroutines, the API's and the mock node's handlers) fails it (independent bug 106)
.PHONY: livecheck-race
livecheck-race:
	@if [ -z "$$DATABASE_URL" ]; then echo "livecheck-race: DATABASE_URL is unset; start a cluster with: eval \"\$$(.ci/postgres.sh start)\""; exit 1; fi
	$(GO) run ./cmd/livecheck -race -restart-postgres 0 -crash-postgres 0 $(LIVECHECK_FLAGS)

## livecheck-quiet: the live check in a quiet hour: 100 withdrawals from 2 clients, one worker process, PostgreSQL crashed LIVECHECK_QUIET_CRASHES times right after a commit lands, nothing acknowledged may be lost; and the node refuses every send of each 20th new transaction, which dies unsent and must be proven dead over HTTP before its withdrawal is rebuilt (independent bug 40). Under load another session's commit flushes an asynchronous one before a crash can take it; only a quiet moment shows a store that answers commits before they are durable (independent bug 42)
.PHONY: livecheck-quiet
LIVECHECK_QUIET_CRASHES ?= 6
livecheck-quiet:
	@if [ -z "$$DATABASE_URL" ] || [ -z "$$SLUICE_PG_DIR" ]; then echo "livecheck-quiet: it crashes PostgreSQL, which only a cluster of .ci/postgres.sh allows (DATABASE_URL or SLUICE_PG_DIR is unset); start one with: eval \"\$$(.ci/postgres.sh start)\""; exit 1; fi
	$(GO) run ./cmd/livecheck -withdrawals 100 -invalid 5 -clients 2 -worker-procs 1 -kills 2 -kill-point 0 -min-withdrawals 100 -min-kills 1 -min-dup-conflict 5 -crash-postgres $(LIVECHECK_QUIET_CRASHES) -drop-every 20 -liveness-budget 5m -settle 6m $(LIVECHECK_FLAGS)
