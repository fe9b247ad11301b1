#!/usr/bin/env bash
# Manages a local, throw-away PostgreSQL 15 cluster for omniforge development
# and tests. The server never runs as root: when this script runs as root it
# uses the `postgres` system user (created if missing); otherwise it runs the
# server as the calling user.
#
# Usage: pg.sh start|stop|status|dsn|psql [psql args...]
#
# Environment:
#   OMNIFORGE_PG_PORT  TCP port on 127.0.0.1 (default 55432)
#   OMNIFORGE_PG_DIR   base directory (default /tmp/omniforge-pg);
#                      data in $DIR/data, unix socket and log in $DIR/run
#   OMNIFORGE_PG_THROWAWAY=1  a cluster for tests: initdb does not sync
#   OMNIFORGE_PG_TLS_CERT, OMNIFORGE_PG_TLS_KEY
#                      the server's certificate and key (PEM files, both or
#                      neither): `start` turns TLS on and then accepts TCP
#                      connections over TLS only (the unix socket stays open);
#                      the files are copied into $DIR/run/tls
#   OMNIFORGE_PG_TLS_CA
#                      with the two above: the CA that signed the server's
#                      certificate. The server verifies client certificates
#                      signed by it (sslcert/sslkey in a client's DSN; none is
#                      required), and `dsn` and `psql` verify the server with
#                      it (host=localhost sslmode=verify-full; without it they
#                      use sslmode=require)
#
# Exit codes: 0 ok; 1 error; 2 usage; status exits 3 when not running.
set -euo pipefail

PGBIN=/usr/lib/postgresql/15/bin
PORT="${OMNIFORGE_PG_PORT:-55432}"
DIR="${OMNIFORGE_PG_DIR:-/tmp/omniforge-pg}"
PG_USER=postgres    # system user that runs the server when we are root
DB_USER=omniforge   # database superuser created by initdb

die() { echo "postgres: $*" >&2; exit 1; }

usage() {
  echo "usage: $(basename "$0") start|stop|status|dsn|psql [args...]" >&2
  exit 2
}

[[ "$PORT" =~ ^[0-9]+$ ]] || die "OMNIFORGE_PG_PORT must be a number (got '$PORT')"
[[ "$DIR" == /* ]] || DIR="$PWD/$DIR"
DATA="$DIR/data"
RUN="$DIR/run"
LOG="$RUN/postgres.log"
TLS_CERT="${OMNIFORGE_PG_TLS_CERT:-}"
TLS_KEY="${OMNIFORGE_PG_TLS_KEY:-}"
TLS_CA="${OMNIFORGE_PG_TLS_CA:-}"
TLS_DIR="$RUN/tls"
TLS_STATE="$RUN/tls-state"  # "off", or what `tls_state` printed at start
if [[ -n "$TLS_CERT" || -n "$TLS_KEY" ]]; then
  [[ -n "$TLS_CERT" && -n "$TLS_KEY" ]] \
    || die "OMNIFORGE_PG_TLS_CERT and OMNIFORGE_PG_TLS_KEY go together (got only one)"
fi
[[ -z "$TLS_CA" || -n "$TLS_CERT" ]] \
  || die "OMNIFORGE_PG_TLS_CA needs OMNIFORGE_PG_TLS_CERT and OMNIFORGE_PG_TLS_KEY"
if [[ -n "$TLS_CERT" && -n "$TLS_CA" ]]; then
  DSN="host=localhost port=$PORT user=$DB_USER dbname=postgres sslmode=verify-full sslrootcert=$TLS_CA"
elif [[ -n "$TLS_CERT" ]]; then
  DSN="host=127.0.0.1 port=$PORT user=$DB_USER dbname=postgres sslmode=require"
else
  DSN="host=127.0.0.1 port=$PORT user=$DB_USER dbname=postgres"
fi

# Run a PostgreSQL binary as the server user. Runs from / so that the
# postgres user never trips over an unreadable working directory (/root).
as_pg() {
  if ((EUID == 0)); then
    (cd / && runuser -u "$PG_USER" -- "$@")
  else
    (cd / && "$@")
  fi
}

need_bin() {
  [[ -x "$PGBIN/$1" ]] || die "$PGBIN/$1 not found (install postgresql-15: bash scripts/deps.sh)"
}

# True when PID is a live (non-zombie) postgres process.
is_live_postgres() {
  local pid="$1" comm state
  [[ "$pid" =~ ^[0-9]+$ && -r "/proc/$pid/comm" ]] || return 1
  comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
  state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$pid/status" 2>/dev/null || true)
  [[ "$comm" == postgres* && -n "$state" && "$state" != Z && "$state" != X ]]
}

# PID of the live postmaster for $DATA, or nothing. Removes a stale
# postmaster.pid (no such process, or the PID now belongs to something else).
live_pid() {
  local pidfile="$DATA/postmaster.pid" pid
  [[ -f "$pidfile" ]] || return 0
  pid=$(head -n 1 "$pidfile" 2>/dev/null || true)
  if is_live_postgres "$pid"; then
    echo "$pid"
    return 0
  fi
  echo "postgres: removing stale $pidfile (pid ${pid:-?} is not a live postgres)" >&2
  rm -f "$pidfile"
}

# A crashed server can leave its socket lock behind; postgres refuses to start
# while the recorded PID still exists (e.g. as an unreaped zombie).
clear_stale_socket() {
  local lock="$RUN/.s.PGSQL.$PORT.lock" pid
  [[ -f "$lock" ]] || return 0
  pid=$(head -n 1 "$lock" 2>/dev/null || true)
  if ! is_live_postgres "$pid"; then
    rm -f "$lock" "$RUN/.s.PGSQL.$PORT"
  fi
}

# Port recorded in postmaster.pid (line 4) of the running server.
running_port() {
  sed -n 4p "$DATA/postmaster.pid" 2>/dev/null || true
}

# Serialise start/stop for the same directory (parallel tests, CI).
# The lock fd is closed for every child that may outlive us (the postmaster).
take_lock() {
  exec 9>"$DIR/.lock"
  flock -w 120 9 || die "timed out waiting for lock $DIR/.lock"
}

prepare_dirs() {
  mkdir -p "$DIR" "$DATA" "$RUN"
  if ((EUID == 0)); then
    if ! id -u "$PG_USER" >/dev/null 2>&1; then
      useradd --system --no-create-home "$PG_USER" \
        || die "could not create system user $PG_USER"
    fi
    chmod 755 "$DIR"
    if [[ "$(stat -c %U "$DATA")" != "$PG_USER" ]]; then
      chown -R "$PG_USER" "$DATA"
    fi
    chown "$PG_USER" "$RUN"
  fi
  chmod 700 "$DATA"
}

init_cluster() {
  [[ -f "$DATA/PG_VERSION" ]] && return 0
  if [[ -n "$(ls -A "$DATA" 2>/dev/null)" ]]; then
    die "$DATA is not empty but holds no cluster (no PG_VERSION); remove it and retry"
  fi
  need_bin initdb
  local out
  # A throw-away cluster (the tests') need not wait for the disk at
  # creation: seconds on a busy machine. The local stack's, which keeps
  # users' data, is synced. The server itself always runs with fsync on.
  local sync=()
  [[ "${OMNIFORGE_PG_THROWAWAY:-}" == 1 ]] && sync=(--no-sync)
  if ! out=$(as_pg "$PGBIN/initdb" "${sync[@]}" -D "$DATA" -U "$DB_USER" -A trust -E UTF8 \
      --locale=C.UTF-8 9>&- 2>&1); then
    echo "$out" >&2
    die "initdb failed for $DATA"
  fi
  echo "postgres: initialised cluster in $DATA"
}

# What the requested TLS settings are: "off", or the checksum of the
# certificate, key and CA files (a running server is reused only as is).
tls_state() {
  if [[ -z "$TLS_CERT" ]]; then
    echo off
    return 0
  fi
  local file
  for file in "$TLS_CERT" "$TLS_KEY" ${TLS_CA:+"$TLS_CA"}; do
    [[ -f "$file" && -r "$file" ]] || die "TLS file $file is missing or unreadable"
  done
  cat "$TLS_CERT" "$TLS_KEY" ${TLS_CA:+"$TLS_CA"} | sha256sum | cut -d' ' -f1
}

# Copies the TLS files where the server user can read them (the key private
# to it, as PostgreSQL requires) and writes an hba file that admits TCP
# clients over TLS only. Sets TLS_OPTS to the server options that turn TLS on.
TLS_OPTS=""
install_tls() {
  rm -rf "$TLS_DIR"
  [[ -n "$TLS_CERT" ]] || return 0
  mkdir -m 700 "$TLS_DIR"
  cp "$TLS_CERT" "$TLS_DIR/server.crt"
  cp "$TLS_KEY" "$TLS_DIR/server.key"
  chmod 600 "$TLS_DIR/server.key"
  if [[ -n "$TLS_CA" ]]; then
    cp "$TLS_CA" "$TLS_DIR/ca.crt"
  fi
  cat >"$TLS_DIR/pg_hba.conf" <<'HBA'
local   all all              trust
hostssl all all 127.0.0.1/32 trust
hostssl all all ::1/128      trust
HBA
  if ((EUID == 0)); then
    chown -R "$PG_USER" "$TLS_DIR"
  fi
  TLS_OPTS="-c ssl=on -c ssl_cert_file=$TLS_DIR/server.crt"
  TLS_OPTS+=" -c ssl_key_file=$TLS_DIR/server.key -c hba_file=$TLS_DIR/pg_hba.conf"
  if [[ -n "$TLS_CA" ]]; then
    TLS_OPTS+=" -c ssl_ca_file=$TLS_DIR/ca.crt"
  fi
}

cmd_start() {
  need_bin pg_ctl
  need_bin pg_isready
  mkdir -p "$DIR"
  take_lock

  local pid state
  state=$(tls_state)
  pid=$(live_pid)
  if [[ -n "$pid" ]]; then
    local port
    port=$(running_port)
    if [[ -n "$port" && "$port" != "$PORT" ]]; then
      die "already running on port $port (pid $pid), not $PORT; run '$0 stop' first"
    fi
    if [[ "$(cat "$TLS_STATE" 2>/dev/null || echo off)" != "$state" ]]; then
      die "already running (pid $pid) with other TLS settings than requested; run '$0 stop' first"
    fi
    echo "postgres: already running on 127.0.0.1:$PORT (pid $pid, data $DATA)"
    return 0
  fi

  prepare_dirs
  init_cluster
  clear_stale_socket

  install_tls
  echo "$state" >"$TLS_STATE"
  local opts="-c listen_addresses=127.0.0.1 -p $PORT -k $RUN $TLS_OPTS"
  opts+=" -c max_connections=200 -c shared_buffers=256MB"
  opts+=" -c fsync=on -c synchronous_commit=on"

  local out
  if ! out=$(as_pg "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 30 -o "$opts" start \
      9>&- 2>&1); then
    [[ -n "$out" ]] && echo "$out" >&2
    echo "postgres: failed to start (data $DATA, port $PORT); last log lines:" >&2
    tail -n 30 "$LOG" >&2 2>/dev/null || true
    exit 1
  fi

  local i
  for ((i = 0; i < 150; i++)); do
    if "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" -U "$DB_USER" -d postgres -t 2; then
      echo "postgres: started on 127.0.0.1:$PORT (data $DATA, TLS $([[ -n "$TLS_CERT" ]] && echo "on, TCP over TLS only" || echo off))"
      return 0
    fi
    sleep 0.2
  done
  echo "postgres: server started but 127.0.0.1:$PORT is not accepting connections; last log lines:" >&2
  tail -n 30 "$LOG" >&2 2>/dev/null || true
  exit 1
}

cmd_stop() {
  if [[ ! -d "$DIR" ]]; then
    echo "postgres: not running"
    return 0
  fi
  take_lock
  local pid
  pid=$(live_pid)
  if [[ -z "$pid" ]]; then
    echo "postgres: not running"
    return 0
  fi
  need_bin pg_ctl
  local out
  if ! out=$(as_pg "$PGBIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop 9>&- 2>&1); then
    [[ -n "$out" ]] && echo "$out" >&2
    echo "postgres: failed to stop pid $pid; last log lines:" >&2
    tail -n 30 "$LOG" >&2 2>/dev/null || true
    exit 1
  fi
  echo "postgres: stopped (data $DATA)"
}

cmd_status() {
  local pid=""
  [[ -d "$DATA" ]] && pid=$(live_pid)
  if [[ -z "$pid" ]]; then
    echo "postgres: not running (data $DATA)"
    exit 3
  fi
  local port ready=no
  port=$(running_port)
  port=${port:-$PORT}
  if "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$port" -U "$DB_USER" -d postgres -t 2; then
    ready=yes
  fi
  local tls=on
  [[ "$(cat "$TLS_STATE" 2>/dev/null || echo off)" == off ]] && tls=off
  echo "postgres: running on 127.0.0.1:$port (pid $pid, data $DATA, TLS $tls, accepting connections: $ready)"
}

cmd_psql() {
  local psql="$PGBIN/psql"
  [[ -x "$psql" ]] || psql=$(command -v psql) || die "psql not found"
  exec "$psql" "$DSN" "$@"
}

[[ $# -ge 1 ]] || usage
cmd="$1"
shift
case "$cmd" in
  start)  [[ $# -eq 0 ]] || usage; cmd_start ;;
  stop)   [[ $# -eq 0 ]] || usage; cmd_stop ;;
  status) [[ $# -eq 0 ]] || usage; cmd_status ;;
  dsn)    [[ $# -eq 0 ]] || usage; echo "$DSN" ;;
  psql)   cmd_psql "$@" ;;
  -h|--help|help) usage ;;
  *) usage ;;
esac
