#!/usr/bin/env bash
# Scratch PostgreSQL 15 cluster for tests and benchmarks.
#
#   scripts/pg.sh start DIR   start (or reuse) a cluster whose data lives in DIR/data
#   scripts/pg.sh stop  DIR   stop it (no-op when it is not running)
#   scripts/pg.sh url   DIR   print its connection URL (postgres://postgres@127.0.0.1:PORT/postgres)
#   scripts/pg.sh reset DIR   drop every database but postgres and the templates (leftovers of
#                             earlier test runs; each test creates its own database)
#   scripts/pg.sh status DIR  exit 0 when running
#
# Trust authentication, superuser `postgres`, TCP on 127.0.0.1 only, unix socket inside DIR.
# Port: $RESOLUTE_PG_PORT, default 55432. When the default port is taken by something else
# (e.g. a cluster of another checkout), the next free port is used; an explicitly requested port
# that is taken is an error. The chosen port is remembered in DIR/port.
# When run as root, initdb/postgres run as user `postgres` (DIR is chowned to it).
# Binaries: $RESOLUTE_PG_BIN, default /usr/lib/postgresql/15/bin.
set -euo pipefail

usage() { echo "usage: $0 start|stop|url|reset|status DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1
mkdir -p "$2"
dir=$(cd "$2" && pwd)
bin=${RESOLUTE_PG_BIN:-/usr/lib/postgresql/15/bin}

# Where the cluster really lives. The postgres user must be able to reach it; when DIR sits under
# a directory it cannot traverse (e.g. /root), the cluster goes to a private directory under
# /tmp and DIR/run links to it.
run_dir() {
  if [ -L "$dir/run" ] || [ -d "$dir/run" ]; then
    readlink -f "$dir/run"
  fi
}

as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

prepare_run_dir() {
  [ -n "$(run_dir)" ] && return 0
  mkdir -p "$dir/run"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres:postgres "$dir/run"
    if ! runuser -u postgres -- test -w "$dir/run"; then
      rmdir "$dir/run"
      local alt
      alt=$(mktemp -d "${TMPDIR:-/tmp}/resolute-pg.XXXXXX")
      chown postgres:postgres "$alt"
      chmod 700 "$alt"
      ln -s "$alt" "$dir/run"
    fi
  fi
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

is_running() {
  local rd
  rd=$(run_dir)
  [ -n "$rd" ] && [ -f "$rd/data/PG_VERSION" ] && as_pg "$bin/pg_ctl" -D "$rd/data" status >/dev/null 2>&1
}

current_port() {
  if [ -f "$dir/port" ]; then cat "$dir/port"; else echo "${RESOLUTE_PG_PORT:-55432}"; fi
}

choose_port() {
  local want=${RESOLUTE_PG_PORT:-55432}
  if ! port_in_use "$want"; then echo "$want"; return; fi
  if [ -n "${RESOLUTE_PG_PORT:-}" ]; then
    echo "pg.sh: port $want (RESOLUTE_PG_PORT) is already in use by another process" >&2
    return 1
  fi
  local p
  for p in $(seq $((want + 1)) $((want + 100))); do
    if ! port_in_use "$p"; then
      echo "pg.sh: port $want is taken, using $p" >&2
      echo "$p"
      return
    fi
  done
  echo "pg.sh: no free port in $want..$((want + 100))" >&2
  return 1
}

start() {
  [ -x "$bin/initdb" ] || { echo "pg.sh: $bin/initdb not found (apt-get install postgresql)" >&2; exit 1; }
  # A cluster already running from this DIR is reused. Right after a crash its postmaster can
  # still look alive for a moment; wait until it either answers or is gone.
  local i
  for i in $(seq 1 40); do
    is_running || break
    if "$bin/pg_isready" -q -h 127.0.0.1 -p "$(current_port)" -t 1; then
      echo "pg.sh: already running on port $(current_port) ($dir)" >&2
      return 0
    fi
    sleep 0.5
  done
  if is_running; then
    echo "pg.sh: a postgres for $dir is running but does not answer on port $(current_port)" >&2
    exit 1
  fi
  prepare_run_dir
  local rd
  rd=$(run_dir)
  if [ ! -f "$rd/data/PG_VERSION" ]; then
    rm -rf "$rd/data"
    as_pg "$bin/initdb" -D "$rd/data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || {
      cat "$dir/initdb.log" >&2
      exit 1
    }
    # Scratch cluster: durability is irrelevant, speed is not. Many test databases and pools.
    as_pg sh -c "cat >>'$rd/data/postgresql.conf'" <<'CONF'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 400
shared_buffers = 128MB
# Each CREATE DATABASE logs its whole template (~8 MB); a hundred test databases would otherwise
# leave ~500 MB of WAL behind. Nothing replicates or archives this cluster.
wal_level = minimal
max_wal_senders = 0
max_wal_size = 96MB
min_wal_size = 32MB
CONF
  fi
  local port
  port=$(choose_port)
  echo "$port" >"$dir/port"
  # A stale postmaster.pid from a killed cluster is handled by pg_ctl itself.
  if ! as_pg "$bin/pg_ctl" -D "$rd/data" -l "$rd/postgres.log" -w -t 60 \
      -o "-h 127.0.0.1 -p $port -k $rd" start >/dev/null; then
    echo "pg.sh: postgres failed to start; log:" >&2
    tail -n 30 "$rd/postgres.log" >&2 || true
    exit 1
  fi
  echo "pg.sh: started on port $port ($dir)" >&2
}

stop() {
  if is_running; then
    as_pg "$bin/pg_ctl" -D "$(run_dir)/data" -m fast -w -t 60 stop >/dev/null
    echo "pg.sh: stopped ($dir)" >&2
  fi
}

reset() {
  is_running || { echo "pg.sh: not running ($dir)" >&2; exit 1; }
  local url db n=0
  url="postgres://postgres@127.0.0.1:$(current_port)/postgres"
  for db in $(psql "$url" -qtAc "SELECT datname FROM pg_database WHERE NOT datistemplate AND datname <> 'postgres'"); do
    psql "$url" -qc "DROP DATABASE \"$db\" WITH (FORCE)"
    n=$((n + 1))
  done
  echo "pg.sh: dropped $n databases ($dir)" >&2
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  reset) reset ;;
  url) echo "postgres://postgres@127.0.0.1:$(current_port)/postgres" ;;
  status) if is_running; then echo "running on port $(current_port)"; else echo "stopped"; exit 3; fi ;;
  *) usage ;;
esac
