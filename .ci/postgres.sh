#!/usr/bin/env bash
# A private, throwaway PostgreSQL cluster for the PostgreSQL test tier.
#
#   eval "$(.ci/postgres.sh start)"   # installs if missing, starts, exports DATABASE_URL and SLUICE_PG_DIR
#   .ci/postgres.sh restart            # restarts that cluster (fast shutdown), same port and settings
#   .ci/postgres.sh stop               # stops the cluster named by SLUICE_PG_DIR and removes it
#
# The cluster lives in a temporary directory, listens on 127.0.0.1 only, on a
# free port, with fsync off: it holds test data that nobody wants back, and a
# crash of the machine only costs a rerun. Nothing touches a system cluster.
# Commits are synchronous (the default a production database runs with): a
# commit is answered once its WAL is written, so a crash of the server (not
# of the machine: fsync is off) loses nothing acknowledged, and the live
# check's crashes (a server process SIGKILLed) can hold the store to that. A
# transaction that asks for an asynchronous commit is answered before its
# WAL is written, and a crash loses it if nothing flushed the WAL since; the
# WAL writer flushes such commits every wal_writer_delay, set to its maximum
# (10 s) so that a crash shows such a loss more often than the default
# 200 ms would.
#
# start prints shell assignments on stdout (for eval) and its progress on
# stderr, so `eval "$(...)"` exports only what it should.
set -euo pipefail

log() { echo "postgres.sh: $*" >&2; }

# The server binaries are not on PATH in Debian's packaging; find the newest.
pg_bindir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
	if [ -z "$d" ] || [ ! -x "$d/initdb" ]; then
		return 1
	fi
	echo "$d"
}

# as_postgres runs a command as the postgres user: initdb and the server refuse
# to run as root.
as_postgres() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

free_port() {
	python3 - <<'PY' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

start() {
	local bindir
	if ! bindir=$(pg_bindir); then
		log "PostgreSQL not found; installing Debian's package"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update >&2
		apt-get install -y postgresql >&2
		bindir=$(pg_bindir)
	fi
	local dir port
	dir=$(mktemp -d /tmp/sluice-pg.XXXXXX)
	chmod 755 "$dir"
	if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
	port=$(free_port)
	log "initdb in $dir ($bindir)"
	as_postgres "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
	log "starting on 127.0.0.1:$port"
	# Sessions run in a time zone that is not UTC, with summer time: the
	# store's clock must not depend on the session's zone (a database in
	# production is often set to the operator's), and only a non-UTC zone
	# shows a clock that does (TestDatabaseClock).
	as_postgres "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 start \
		-o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=on -c wal_writer_delay=10s -c full_page_writes=off -c max_connections=200 -c timezone=America/New_York" >/dev/null
	as_postgres "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres sluice
	local url="postgres://postgres@127.0.0.1:$port/sluice?sslmode=disable"
	log "DATABASE_URL=$url"
	echo "export DATABASE_URL='$url'"
	echo "export SLUICE_PG_DIR='$dir'"
}

stop() {
	local dir=${1:-${SLUICE_PG_DIR:-}}
	if [ -z "$dir" ] || [ ! -d "$dir/data" ]; then
		log "stop: no cluster (SLUICE_PG_DIR unset or gone)"
		return 0
	fi
	local bindir
	bindir=$(pg_bindir)
	as_postgres "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
	rm -rf "$dir"
	log "stopped and removed $dir"
}

# restart stops the cluster with a fast shutdown (every session is
# terminated, open transactions roll back, committed ones are checkpointed:
# nothing acknowledged is lost) and starts it again; pg_ctl reuses the
# options of the previous start (postmaster.opts), so the port and the
# settings stay. It returns once the server accepts connections. The live
# check uses it to restart the database under load.
restart() {
	local dir=${1:-${SLUICE_PG_DIR:-}}
	if [ -z "$dir" ] || [ ! -d "$dir/data" ]; then
		log "restart: no cluster (SLUICE_PG_DIR unset or gone)"
		return 1
	fi
	local bindir
	bindir=$(pg_bindir)
	as_postgres "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -m fast -w -t 60 restart >/dev/null
	log "restarted $dir"
}

case "${1:-}" in
start) start ;;
restart) restart "${2:-}" ;;
stop) stop "${2:-}" ;;
*)
	echo "usage: $0 start | restart [dir] | stop [dir]" >&2
	exit 2
	;;
esac
