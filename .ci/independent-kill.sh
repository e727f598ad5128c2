#!/usr/bin/env bash
# The kill table of the bugs written without the checker
# (scenarios/testdata/independent-bugs): each patch is applied alone to a
# scratch clone of the committed tree, and what caught it last time it was
# measured (caught.tsv beside the patches) must catch it again. Without
# this a change to a world (a new fault draws from the tape, a probability
# moves) could stop the checker catching a bug it once caught, and nothing
# would say so: make independent-bugs is too slow to run on every change.
#
# caught.tsv has one row per patch, tab-separated: the patch's name, a kind
# and its arguments.
#   world W N      explore -world W finds a violation (exit 1) in seeds 1..N
#   postgres W N   the same with -store postgres (needs DATABASE_URL): the
#                  memory store cannot see a bug in the PostgreSQL store
#   coverage W N COND  explore -require-coverage -world W in seeds 1..N
#                  never reaches the coverage condition COND (exit 3), as the
#                  CI gate would fail it: a bug that passes every invariant
#                  but stops the world reaching a danger it must test (a
#                  call cancelled under a stopped worker, say)
#   hang W N       with -store postgres, a seed of W among 1..N hangs (a lock
#                  never let go): explore's seed watchdog exits 4
#   test PKG RUN   sluice's own tests catch it (its packages', or its
#                  command's: cmd/sluice, cmd/internal): go test -run RUN PKG fails
#   race PKG RUN   only the race detector does: go test -race reports a race
#   checker PKG RUN  a test of the checker's own (not sluice's) catches it:
#                  go test -run RUN PKG fails (e.g. the PostgreSQL store's
#                  traces held byte for byte to the memory store's)
#   live TARGET    make TARGET (livecheck or livecheck-race, without
#                  PostgreSQL's restarts and crashes; needs DATABASE_URL)
#                  reports a FAIL: line: a live check that catches the bug
#                  in every run, about 90 s
#   livecheck WHY  only the live check does (real processes, PostgreSQL
#                  crashed); it takes minutes and is not deterministic, so
#                  it is not run here (make independent-bugs runs it)
#   harmless WHY   a later change to sluice made the edit harmless (the
#                  README says which): nothing to catch
#   survivor WHY   nothing catches it yet: a known blind spot, said here so
#                  that the table is whole
# A world row is the first catching seed of the first catching world, so a
# world whose tapes change (a new fault) may need the table measured
# again: .ci/independent-kill.sh -update PATCH... searches every world
# (seeds 1 to 1000, laggy 3000), then PostgreSQL, then the unit tests and
# the race detector, and prints the rows to put in caught.tsv.
#
# Usage: .ci/independent-kill.sh [-update] [PATCH...]
# Exit 0 when every row still catches its bug, 1 when one does not (or a
# patch has no row, or a row names no patch).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bugs="$repo/scenarios/testdata/independent-bugs"
table="$bugs/caught.tsv"
update=false
if [ "${1:-}" = "-update" ]; then update=true; shift; fi
patches=("$@")
if [ ${#patches[@]} -eq 0 ]; then patches=("$bugs"/*.patch); fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
dir="$scratch/tree"
git clone -q "$repo" "$dir" || { echo "cannot clone $repo"; exit 1; }

# firstFailing prints the first failing seed an explore output names.
firstFailing() { awk '/^first failing seed:/ {print $4; exit}'; }

# explore W START COUNT [FLAGS...] runs a seed range of world W with the
# patched binary; its output in $out, its exit code in $code.
explore() {
	local w=$1 start=$2 count=$3
	shift 3
	out=$(cd "$dir" && timeout 900 ./explore.bin -world "$w" -seed-start "$start" -seeds "$count" -seed-timeout 2m -trace /dev/null "$@" 2>&1)
	code=$?
}

# firstTest prints "PKG RUN" for the first top-level test a go test output
# reports failed (RUN anchored, for -run).
firstTest() {
	awk '/^--- FAIL: / {if (t == "") t = $3} /^FAIL\t/ && t != "" {print $2, "^" t "$"; exit}'
}

# search prints the row for the applied patch: a world that catches it
# early, looking at seeds 1-20 of every world first, then
# 21-200, then the rest of each world's budget (a row's seeds are what CI
# runs); then PostgreSQL, then sluice's tests.
search() {
	local name=$1 spec w budget lo hi
	for lo in 1 21 201; do
		for spec in "wire 1000" "chaos 1000" "nodes 1000" "logs 1000" "fees 1000" "deploys 1000" "storefaults 1000" "zombies 1000" "reorgs 1000" "ledger 1000" "laggy 3000" "pair 2000" "calm 200" "proxies 1000" "settings 1000"; do
			set -- $spec
			w=$1 budget=$2
			case $lo in 1) hi=20 ;; 21) hi=200 ;; *) hi=$budget ;; esac
			[ "$hi" -gt "$budget" ] && hi=$budget
			[ "$lo" -gt "$hi" ] && continue
			explore "$w" "$lo" $((hi - lo + 1))
			if [ "$code" -eq 1 ]; then
				printf '%s\tworld\t%s %s\n' "$name" "$w" "$(echo "$out" | firstFailing)"
				return
			fi
		done
	done
	if git -C "$dir" diff --name-only | grep -q '^sluice/store/postgres/' && [ -n "${DATABASE_URL:-}" ]; then
		for w in chaos zombies wire ledger; do
			explore "$w" 1 100 -store postgres
			if [ "$code" -eq 1 ]; then
				printf '%s\tpostgres\t%s %s\n' "$name" "$w" "$(echo "$out" | firstFailing)"
				return
			fi
		done
	fi
	local t
	t=$(cd "$dir" && go test -count=1 ./sluice/... 2>&1 | firstTest)
	if [ -n "$t" ]; then
		printf '%s\ttest\t%s\n' "$name" "$t"
		return
	fi
	local raced
	raced=$(cd "$dir" && go test -count=1 -race ./sluice/intake/ ./sluice/store/ ./sluice/tron/ 2>&1)
	if grep -q "WARNING: DATA RACE" <<<"$raced"; then
		printf '%s\trace\t%s\n' "$name" "$(echo "$raced" | firstTest)"
		return
	fi
	printf '%s\tNONE\tno world, store, unit test or race caught it here (livecheck?)\n' "$name"
}

# check runs a row against the applied patch; prints a verdict line and
# returns 1 when the bug was not caught.
check() {
	local name=$1 kind=$2 a=$3 b=$4 c=${5:-} t
	case "$kind" in
	world | postgres)
		local flags=()
		if [ "$kind" = postgres ]; then
			if [ -z "${DATABASE_URL:-}" ]; then
				echo "$name: NOT CHECKED: a postgres row needs DATABASE_URL (.ci/postgres.sh start)"
				return 1
			fi
			flags=(-store postgres)
		fi
		explore "$a" 1 "$b" "${flags[@]}"
		if [ "$code" -eq 1 ]; then
			echo "$name: caught by $kind $a at seed $(echo "$out" | firstFailing) (of 1..$b)"
			return 0
		fi
		echo "$name: SURVIVES $kind $a seeds 1..$b (explore exit $code; the row says seed $b caught it): measure it again with -update"
		# A panic's stack would bury its message: the first lines say why.
		echo "$out" | grep -m3 -E '^(panic|explore|fatal error|world )' | sed 's/^/    /'
		echo "$out" | tail -n 3 | sed 's/^/    /'
		return 1
		;;
	coverage)
		explore "$a" 1 "$b" -require-coverage
		local missed
		missed=$(echo "$out" | sed -n 's/^coverage: .*; never reached: //p' | tr ',' '\n' | sed 's/^ *//')
		if [ "$code" -eq 3 ] && grep -qx -- "$c" <<<"$missed"; then
			echo "$name: caught by the coverage requirement: $a seeds 1..$b never reached $c"
			return 0
		fi
		echo "$name: SURVIVES the coverage requirement of $a seeds 1..$b (explore exit $code; never reached: ${missed:-nothing})"
		return 1
		;;
	hang)
		if [ -z "${DATABASE_URL:-}" ]; then
			echo "$name: NOT CHECKED: a hang row needs DATABASE_URL (.ci/postgres.sh start)"
			return 1
		fi
		out=$(cd "$dir" && timeout 300 ./explore.bin -world "$a" -seeds "$b" -seed-timeout 30s -trace /dev/null -store postgres 2>&1)
		code=$?
		if [ "$code" -eq 4 ]; then
			echo "$name: caught by the seed watchdog: $(echo "$out" | grep -m1 -o 'explore: .* without finishing')"
			return 0
		fi
		echo "$name: SURVIVES: no seed of $a 1..$b hung on postgres (explore exit $code)"
		echo "$out" | tail -n 5 | sed 's/^/    /'
		return 1
		;;
	test | checker)
		local whose="sluice's"
		[ "$kind" = checker ] && whose="the checker's"
		if t=$(cd "$dir" && go test -count=1 -run "$b" "$a" 2>&1); then
			echo "$name: SURVIVES $whose test $a -run '$b'"
			return 1
		fi
		if ! grep -q -- '^--- FAIL: ' <<<"$t"; then
			# A build failure is not a catch: the patch must build.
			echo "$name: go test $a did not run to a verdict:"
			echo "$t" | tail -n 5 | sed 's/^/    /'
			return 1
		fi
		echo "$name: caught by $whose test $a -run '$b'"
		;;
	race)
		# The detector reports a race only when the schedule makes one
		# happen: a loaded machine can run a racing test without it (CI
		# missed 253 once in session 53, which catches it 8 times of 8
		# alone). Up to three runs, the first report ends them.
		for try in 1 2 3; do
			t=$(cd "$dir" && go test -count=1 -race -run "$b" "$a" 2>&1)
			if grep -q "WARNING: DATA RACE" <<<"$t"; then
				echo "$name: caught by the race detector in $a -run '$b'$( [ "$try" -gt 1 ] && echo " (run $try of 3)")"
				return 0
			fi
		done
		echo "$name: SURVIVES the race detector in $a -run '$b', three runs (it is not deterministic: run it again before -update)"
		return 1
		;;
	live)
		# A live check that fails the bug in every run (not one whose catch
		# hangs on timing, as 42's does): its make target, without
		# PostgreSQL's restarts and crashes, must report a FAIL: line.
		if [ -z "${DATABASE_URL:-}" ]; then
			echo "$name: NOT CHECKED: a live row needs DATABASE_URL (.ci/postgres.sh start)"
			return 1
		fi
		t=$(cd "$dir" && LIVECHECK_PG_RESTARTS=0 LIVECHECK_PG_CRASHES=0 timeout 900 make -s "$a" 2>&1)
		if grep -q '^FAIL: ' <<<"$t"; then
			echo "$name: caught by make $a: $(grep -m1 '^FAIL: ' <<<"$t" | cut -c1-160)"
			return 0
		fi
		echo "$name: SURVIVES make $a (it is not deterministic: run it again before changing the row)"
		echo "$t" | tail -n 3 | sed 's/^/    /'
		return 1
		;;
	livecheck)
		echo "$name: not checked here (only the live check catches it: make independent-bugs)"
		;;
	harmless | survivor)
		echo "$name: $kind, not checked ($a${b:+ $b}${c:+ $c})"
		;;
	*)
		echo "$name: caught.tsv row of unknown kind '$kind'"
		return 1
		;;
	esac
}

declare -A rows
if [ -f "$table" ]; then
	while IFS=$'\t' read -r name kind rest; do
		case "$name" in '' | '#'*) continue ;; esac
		rows[$name]="$kind	$rest"
	done <"$table"
fi

failed=0 checked=0 skipped=0
for patch in "${patches[@]}"; do
	patch=$(realpath "$patch")
	name=$(basename "$patch" .patch)
	git -C "$dir" checkout -q -- . && git -C "$dir" clean -qfd -e explore.bin
	if ! git -C "$dir" apply "$patch"; then
		echo "$name: does not apply to HEAD"
		failed=$((failed + 1))
		continue
	fi
	kind="" args=""
	if ! $update; then
		if [ -z "${rows[$name]:-}" ]; then
			echo "$name: no row in caught.tsv: measure it with -update"
			failed=$((failed + 1))
			continue
		fi
		IFS=$'\t' read -r kind args <<<"${rows[$name]}"
	fi
	# Only a world needs explore built (about 4 s a patch); go test builds
	# what its package needs.
	if $update || [ "$kind" = world ] || [ "$kind" = postgres ] || [ "$kind" = hang ] || [ "$kind" = coverage ]; then
		if ! (cd "$dir" && go build -o explore.bin ./cmd/explore); then
			echo "$name: does not build"
			failed=$((failed + 1))
			continue
		fi
	fi
	if $update; then
		search "$name"
		continue
	fi
	read -r a b c <<<"$args"
	case "$kind" in
	livecheck | harmless | survivor) skipped=$((skipped + 1)) ;;
	*) checked=$((checked + 1)) ;;
	esac
	check "$name" "$kind" "$a" "$b" "$c" || failed=$((failed + 1))
done

if ! $update && [ $# -eq 0 ]; then
	# Every row names a patch: a renamed patch must not leave its row
	# behind, checking nothing.
	for name in "${!rows[@]}"; do
		[ -f "$bugs/$name.patch" ] || { echo "caught.tsv names $name, which is no patch"; failed=$((failed + 1)); }
	done
fi
if $update; then exit 0; fi
echo "independent kill table: $checked checked, $skipped not checked here (live check, harmless, survivor), $failed failed"
[ "$failed" -eq 0 ]
