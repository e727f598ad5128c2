#!/usr/bin/env bash
# Measures the checker against bugs it was not written for: each patch in
# scenarios/testdata/independent-bugs is applied alone to a scratch copy of
# the committed tree, the unit tests of sluice run (and its concurrent
# packages under the race detector; a patch to cmd/ runs the command's
# tests too), and explore runs every world; one
# line per bug says which world caught it first, how, and whether sluice's
# own tests did. A patch to the PostgreSQL store (sluice/store/postgres)
# also runs that store's tests, the checker's comparison of its traces with
# the memory store's, and the chaos, zombies, wire and ledger worlds on it
# (PG_BUG_SEEDS seeds each, 100 by default; a seed costs about a second)
# when DATABASE_URL names a cluster (.ci/postgres.sh start gives one); the
# memory worlds cannot see such a bug. A patch to the code production's
# processes run at their boundaries (the PostgreSQL store, the node's HTTP
# client and server, the metrics wrapper around the node, the operator's
# service and handler, the sluice command and the audit it runs; the wire world runs all but the
# store and the command in the simulator) also runs the live check (make livecheck: real processes,
# SIGKILLed workers, PostgreSQL restarted and crashed when SLUICE_PG_DIR
# names the cluster, about 90 s; make livecheck-race, the same with every
# process built with the race detector, about 90 s; and make
# livecheck-quiet when SLUICE_PG_DIR names the cluster, about 3 minutes); it is not
# deterministic, so a pass is one run's. Slow (minutes per bug); not part of
# make test (which checks that every patch still applies). Usage:
# .ci/independent-bugs.sh [PATCH...]
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
patches=("$@")
if [ ${#patches[@]} -eq 0 ]; then patches=("$repo"/scenarios/testdata/independent-bugs/*.patch); fi
scratch=$(mktemp -d)
# Several runs of this script may share one cluster (one per blind helper's
# patches, in parallel), and a live check restarts and crashes it: another
# run's PostgreSQL tests or live check then fail for that, not for its bug
# (session 53 read two such failures before it serialized them). Every
# stage that touches the cluster holds this lock, one per DATABASE_URL.
pglock=""
if [ -n "${DATABASE_URL:-}" ] && command -v flock >/dev/null; then
	pglock="${TMPDIR:-/tmp}/sluice-independent-bugs-$(printf %s "$DATABASE_URL" | cksum | cut -d' ' -f1).lock"
fi
lockPG() { if [ -n "$pglock" ]; then exec 9>>"$pglock" && flock 9; fi; }
unlockPG() { if [ -n "$pglock" ]; then flock -u 9; fi; }
trap 'rm -rf "$scratch"' EXIT
worlds=("calm 200" "chaos 1000" "zombies 1000" "laggy 3000" "pair 2000" "nodes 1000" "reorgs 1000" "logs 1000" "wire 1000" "storefaults 1000" "ledger 1000" "fees 1000" "deploys 1000" "proxies 1000" "settings 1000")

# neverReached prints the coverage conditions an explore output names as
# expected and never reached, one per line.
neverReached() { sed -n 's/^coverage: .*; never reached: //p' | tr ',' '\n' | sed 's/^ *//' | sort; }

# The unpatched tree's coverage, world by world: a bug that makes a world
# stop reaching a condition it reaches without the bug (an edge of the
# state machine never taken, say) is reported, which is what
# -require-coverage in the CI gate would fail on.
# verdict WORLD CODE OUTPUT prints "; WORLD: caught at seed N (invariants)"
# for explore's exit 1 (a violation), "; WORLD: explore exit N" for any
# other failure, and nothing for a clean run.
# failReason names why a live check failed: its first FAIL line (the
# check's own verdict), else its first error line (a run that did not
# finish), else its last line.
failReason() {
	local r
	r=$(echo "$1" | grep -m1 '^FAIL: ')
	[ -n "$r" ] || r=$(echo "$1" | grep -m1 -E '^livecheck: .*(error|cannot|did not)')
	[ -n "$r" ] || r=$(echo "$1" | tail -n1)
	echo "$r" | cut -c1-200
}

verdict() {
	local first invs
	if [ "$2" -eq 1 ]; then
		first=$(echo "$3" | awk '/^first failing seed:/ {print $4}')
		invs=$(echo "$3" | awk '/^invariant/ {f=1; next} f && NF == 2 && $2 > 0 {printf "%s%s", sep, $1; sep=","} f && NF == 0 {f=0}')
		echo "; $1: caught at seed $first ($invs)"
	elif [ "$2" -eq 4 ]; then
		echo "; $1: a seed hung (explore's -seed-timeout): $(echo "$3" | grep -m1 -o 'seed [0-9]* of world [^ ]*')"
	elif [ "$2" -eq 124 ]; then
		echo "; $1: explore did not finish (hung past the timeout)"
	elif [ "$2" -ne 0 ]; then
		echo "; $1: explore exit $2"
	fi
}

declare -A baseline
git clone -q "$repo" "$scratch/baseline"
(cd "$scratch/baseline" && go build -o explore.bin ./cmd/explore) || { echo "the unpatched tree does not build"; exit 1; }
for spec in "${worlds[@]}"; do
	set -- $spec
	baseline[$1]=$(cd "$scratch/baseline" && ./explore.bin -world "$1" -seeds "$2" -trace /dev/null 2>&1 | neverReached)
done

for patch in "${patches[@]}"; do
	# git apply runs in the scratch clone: a relative path would name a
	# file there, not the patch the caller meant.
	patch=$(realpath "$patch")
	name=$(basename "$patch" .patch)
	dir="$scratch/$name"
	git clone -q "$repo" "$dir"
	if ! git -C "$dir" apply "$patch"; then
		echo "$name: does not apply to HEAD"
		continue
	fi
	units="unit tests pass"
	lockPG
	if ! (cd "$dir" && go test -count=1 ./sluice/... >/dev/null 2>&1); then
		units="unit tests FAIL"
	fi
	unlockPG
	# A patch to the command (the sluice binary, the audit it runs) is
	# judged by the command's own tests too: they start the real processes.
	if git -C "$dir" diff --name-only | grep -q '^cmd/'; then
		if (cd "$dir" && go test -count=1 ./cmd/sluice/ ./cmd/internal/... >/dev/null 2>&1); then
			units="$units, command tests pass"
		else
			units="$units, command tests FAIL"
		fi
	fi
	# make test runs these under the race detector, which is what catches a
	# race between goroutines (a seed is single-threaded: the simulator
	# never sees one).
	# A test that fails without a race fails here too: only a reported
	# race counts, or every bug the unit tests catch would read as a race.
	# (Captured first: under pipefail, go test's own failure would decide a
	# pipe into grep.)
	raced=$(cd "$dir" && go test -count=1 -race ./sluice/intake/ ./sluice/store/ ./sluice/tron/ 2>&1)
	if grep -q "WARNING: DATA RACE" <<<"$raced"; then
		units="$units, race detector FAIL"
	fi
	(cd "$dir" && go build -o explore.bin ./cmd/explore) || { echo "$name: does not build"; continue; }
	line="$name: $units"
	lockPG
	if git -C "$dir" diff --name-only | grep -q '^sluice/store/postgres/'; then
		if [ -z "${DATABASE_URL:-}" ]; then
			line="$line; postgres: NOT RUN (DATABASE_URL unset)"
		else
			if (cd "$dir" && go test -count=1 ./sluice/store/postgres/ >/dev/null 2>&1); then
				line="$line; postgres tests pass"
			else
				line="$line; postgres tests FAIL"
			fi
			# The checker's own comparison: seeds run on PostgreSQL must
			# give the memory store's traces byte for byte (a claim that
			# takes other rows, an order lost), which make test runs too.
			if (cd "$dir" && go test -count=1 -run '^TestPostgresStoreGivesTheSameTraces$' ./scenarios/ >/dev/null 2>&1); then
				line="$line; postgres traces match memory's"
			else
				line="$line; postgres traces DIFFER from memory's (TestPostgresStoreGivesTheSameTraces)"
			fi
			for spec in "chaos" "zombies" "wire" "ledger"; do
				# A bug that makes the store hang (a lock never let go) must
				# not hang the harness: PG_BUG_TIMEOUT seconds a world.
				out=$(cd "$dir" && timeout "${PG_BUG_TIMEOUT:-600}" ./explore.bin -store postgres -world "$spec" -seeds "${PG_BUG_SEEDS:-100}" -seed-timeout 2m -trace /dev/null 2>&1)
				code=$?
				line="$line$(verdict "$spec on postgres" "$code" "$out")"
			done
		fi
	fi
	if git -C "$dir" diff --name-only | grep -qE '^(sluice/store/postgres|sluice/tron/nodehttp|sluice/metrics|sluice/operator|cmd/sluice|cmd/internal)/'; then
		if [ -z "${DATABASE_URL:-}" ]; then
			line="$line; livecheck: NOT RUN (DATABASE_URL unset)"
		else
			outages="LIVECHECK_PG_RESTARTS=0 LIVECHECK_PG_CRASHES=0"
			if [ -n "${SLUICE_PG_DIR:-}" ]; then outages=""; fi
			if out=$(cd "$dir" && env $outages make -s livecheck 2>&1); then
				line="$line; livecheck passes"
			else
				line="$line; livecheck FAILS ($(failReason "$out"))"
			fi
			if out=$(cd "$dir" && make -s livecheck-race 2>&1); then
				line="$line; livecheck-race passes"
			else
				line="$line; livecheck-race FAILS ($(failReason "$out"))"
			fi
			if [ -z "${SLUICE_PG_DIR:-}" ]; then
				line="$line; livecheck-quiet: NOT RUN (SLUICE_PG_DIR unset)"
			elif out=$(cd "$dir" && make -s livecheck-quiet 2>&1); then
				line="$line; livecheck-quiet passes"
			else
				line="$line; livecheck-quiet FAILS ($(failReason "$out"))"
			fi
		fi
	fi
	unlockPG
	for spec in "${worlds[@]}"; do
		set -- $spec
		out=$(cd "$dir" && ./explore.bin -world "$1" -seeds "$2" -trace /dev/null 2>&1)
		code=$?
		lost=$(comm -13 <(echo "${baseline[$1]}") <(echo "$out" | neverReached) | paste -sd, -)
		if [ -n "$lost" ]; then
			line="$line; $1: coverage lost ($lost)"
		fi
		line="$line$(verdict "$1" "$code" "$out")"
	done
	echo "$line"
done
