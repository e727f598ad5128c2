#!/usr/bin/env bash
# Measures the checker against bugs it was not written for: each patch in
# scenarios/testdata/independent-bugs is applied alone to a scratch copy of
# the committed tree, the unit tests of sluice run (and its concurrent
# packages under the race detector), and explore runs every world; one
# line per bug says which world caught it first, how, and whether sluice's
# own tests did. Slow (minutes per bug); not part of make test (which
# checks that every patch still applies). Usage:
# .ci/independent-bugs.sh [PATCH...]
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
patches=("$@")
if [ ${#patches[@]} -eq 0 ]; then patches=("$repo"/scenarios/testdata/independent-bugs/*.patch); fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
worlds=("calm 200" "chaos 1000" "zombies 1000" "laggy 3000" "pair 2000" "nodes 1000" "reorgs 1000" "logs 1000" "storefaults 1000" "ledger 1000")

# neverReached prints the coverage conditions an explore output names as
# expected and never reached, one per line.
neverReached() { sed -n 's/^coverage: .*; never reached: //p' | tr ',' '\n' | sed 's/^ *//' | sort; }

# The unpatched tree's coverage, world by world: a bug that makes a world
# stop reaching a condition it reaches without the bug (an edge of the
# state machine never taken, say) is reported, which is what
# -require-coverage in the CI gate would fail on.
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
	if ! (cd "$dir" && go test -count=1 ./sluice/ ./sluice/intake/ ./sluice/money/ ./sluice/store/ ./sluice/tron/ >/dev/null 2>&1); then
		units="unit tests FAIL"
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
	for spec in "${worlds[@]}"; do
		set -- $spec
		out=$(cd "$dir" && ./explore.bin -world "$1" -seeds "$2" -trace /dev/null 2>&1)
		code=$?
		lost=$(comm -13 <(echo "${baseline[$1]}") <(echo "$out" | neverReached) | paste -sd, -)
		if [ -n "$lost" ]; then
			line="$line; $1: coverage lost ($lost)"
		fi
		if [ $code -eq 1 ]; then
			first=$(echo "$out" | awk '/^first failing seed:/ {print $4}')
			invs=$(echo "$out" | awk '/^invariant/ {f=1; next} f && NF == 2 && $2 > 0 {printf "%s%s", sep, $1; sep=","} f && NF == 0 {f=0}')
			line="$line; $1: caught at seed $first ($invs)"
		elif [ $code -ne 0 ]; then
			line="$line; $1: explore exit $code"
		fi
	done
	echo "$line"
done
