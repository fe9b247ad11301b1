#!/bin/sh
# Entry point of omniforge-postgres: on an empty $PGDATA, initdb with
# POSTGRES_USER as the superuser (password from POSTGRES_PASSWORD_FILE or
# POSTGRES_PASSWORD, scram-sha-256 for every remote login), create
# POSTGRES_DB, run /docker-entrypoint-initdb.d/*.sh|*.sql against a server
# that listens on its socket only; then run the command (postgres).
set -eu

user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
if [ -n "${POSTGRES_PASSWORD_FILE:-}" ]; then
  POSTGRES_PASSWORD="$(cat "$POSTGRES_PASSWORD_FILE")"
fi
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD or POSTGRES_PASSWORD_FILE}"

if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  # A first start that fails half way (an init script, a missing secret)
  # leaves the volume empty again, so the next start initialises it anew
  # rather than serve a database without its roles.
  initialised=false
  trap 'if [ "$initialised" = false ]; then
          pg_ctl -D "$PGDATA" -m immediate -w stop >/dev/null 2>&1 || true
          find "$PGDATA" -mindepth 1 -delete
          echo "postgres-entrypoint: initialisation failed; $PGDATA emptied" >&2
        fi' EXIT
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb -D "$PGDATA" --username="$user" --pwfile="$pwfile" --auth-local=trust \
    --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  printf "listen_addresses = '*'\n" >> "$PGDATA/postgresql.conf"
  printf 'host all all all scram-sha-256\n' >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start >/dev/null
  if [ "$db" != postgres ]; then
    psql -v ON_ERROR_STOP=1 --username "$user" --dbname postgres \
      -c "CREATE DATABASE \"$db\"" >/dev/null
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "postgres-entrypoint: running $f"; POSTGRES_USER="$user" POSTGRES_DB="$db" sh "$f" ;;
      *.sql) echo "postgres-entrypoint: running $f"
        psql -v ON_ERROR_STOP=1 --username "$user" --dbname "$db" -f "$f" ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  initialised=true
  trap - EXIT
  echo "postgres-entrypoint: initialised $PGDATA"
fi

exec "$@"
