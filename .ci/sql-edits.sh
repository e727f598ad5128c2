#!/usr/bin/env bash
# The PostgreSQL tier must notice any state or column dropped from the
# store's SQL. This script makes each such edit alone, in a scratch clone of
# HEAD, and runs the PostgreSQL tests (go test ./sluice/store/postgres/):
#   - each state removed from the op_state enum and from every list of
#     terminal states (migration and store.go),
#   - each pair removed from the migration's state_transitions,
#   - each column removed from the guard's "the request never changes" test.
# Every edit must make the tests fail; one that passes is printed SURVIVED and
# the script exits 1. Needs DATABASE_URL (or starts a private cluster with
# .ci/postgres.sh). Slow: about 15 s an edit. Usage: .ci/sql-edits.sh
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${DATABASE_URL:-}" ]; then
	eval "$("$repo/.ci/postgres.sh" start)"
	trap '"$repo/.ci/postgres.sh" stop >/dev/null' EXIT
fi
scratch=$(mktemp -d)
git clone -q "$repo" "$scratch/src"
src=$scratch/src
mig=sluice/store/postgres/migrations/0001_operations.sql
store=sluice/store/postgres/store.go
survived=0 total=0

# try NAME PERL-ARGS...: apply one edit with perl, run the tests, restore.
try() {
	local name=$1 file=$2
	shift 2
	cp "$src/$file" "$scratch/orig"
	perl "$@" "$src/$file"
	if cmp -s "$src/$file" "$scratch/orig"; then
		echo "NOT APPLIED  $name (the edit matched nothing: update this script)"
		survived=$((survived + 1))
	elif (cd "$src" && go test -count=1 ./sluice/store/postgres/ >"$scratch/log" 2>&1); then
		echo "SURVIVED     $name"
		survived=$((survived + 1))
	else
		echo "caught       $name  ($(grep -m1 -oE -- '--- FAIL: [^ ]+' "$scratch/log" || echo 'build or migration failed'))"
	fi
	total=$((total + 1))
	cp "$scratch/orig" "$src/$file"
}

states="requested validated signing signed broadcasting broadcast confirmed failed rejected"
for s in $states; do
	try "enum without $s" "$mig" -0pi -e "s/(CREATE TYPE op_state AS ENUM \\([^;]*?)'$s',\\s*/\$1/s or s/(CREATE TYPE op_state AS ENUM \\([^;]*?),\\s*'$s'/\$1/s"
done
for s in confirmed failed rejected; do
	for line in $(grep -n "('confirmed', 'failed', 'rejected')" "$src/$mig" | cut -d: -f1); do
		try "$mig:$line terminal list without $s" "$mig" -pi -e "if (\$. == $line) { s/'$s',\\s*// or s/,\\s*'$s'// }"
	done
	try "store.go terminalSQL without $s" "$store" -pi -e "if (/^const terminalSQL/) { s/'$s',\\s*// or s/,\\s*'$s'// }"
done
grep -oE "^\s*\('[a-z]+', '[a-z]+'\)[,;]$" "$src/$mig" | tr -d "\t();,'" | while read -r from to; do
	echo "$from $to"
done > "$scratch/pairs"
while read -r from to; do
	try "state_transitions without $from->$to" "$mig" -0pi -e "s/\n\s*\('$from', '$to'\),// or s/,\n\s*\('$from', '$to'\);/;/"
done < "$scratch/pairs"
for c in id seq to_address amount asset request_hash created_at_ns; do
	try "guard without $c" "$mig" -0pi -e "s/NEW\\.$c <> OLD\\.$c OR\\s*// or s/\\s*OR NEW\\.$c <> OLD\\.$c//"
done
rm -rf "$scratch"
echo "$((total - survived)) of $total edits caught"
[ "$survived" -eq 0 ]
