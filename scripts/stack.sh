#!/usr/bin/env bash
# Starts and stops the local omniforge stack: PostgreSQL (scripts/pg.sh) and
# the services, in the background, with logs and pid files under
# $OMNIFORGE_STATE_DIR (default /tmp/omniforge). Ports, directories and the
# build are set by the environment (scripts/stack_env.sh lists the variables).
#
#   stack.sh up       start what is not running yet, wait until it serves
#   stack.sh down     stop the services and PostgreSQL
#   stack.sh status   show what is running
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/stack_env.sh"
CLI="$BUILD_DIR/bin/omniforge"

log() { printf 'stack: %s\n' "$*"; }

pid_of() {
  local pidfile="$STATE_DIR/run/$1.pid"
  [[ -f "$pidfile" ]] || return 1
  local pid
  pid="$(cat "$pidfile")"
  kill -0 "$pid" 2>/dev/null || return 1
  # A process killed a moment ago may linger as a zombie until it is
  # reaped: it is not running.
  if [[ -r "/proc/$pid/stat" ]]; then
    local state
    state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)"
    [[ "$state" != Z && "$state" != X ]] || return 1
  fi
  echo "$pid"
}

# The encryption master keys, one per service that seals what users wrote:
# the conversation service's (master.key), the orchestrator's
# (orchestrator-master.key), the executor's (executor-master.key) and the
# sandbox MCP servers' (sandbox-master.key). None can open another's data.
ensure_master_key() {
  local key
  for key in "$STATE_DIR/master.key" "$STATE_DIR/orchestrator-master.key" \
             "$STATE_DIR/executor-master.key" "$STATE_DIR/sandbox-master.key"; do
    if [[ ! -s "$key" ]]; then
      (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$key")
      log "generated a local encryption master key in $key"
    fi
  done
}

# The caller-assertion keys (docs/security.md): the orchestrator and the
# executor sign their calls to the other services, each with a key of its
# own ($STATE_DIR/<name>-identity.key, 64 hex digits), and the services
# that are called trust the public keys (<name>-identity.pub). A third key,
# the operator's, signs direct calls with the CLI (make run's demo).
ensure_identity_keys() {
  local name key
  for name in orchestrator executor operator; do
    key="$STATE_DIR/$name-identity.key"
    if [[ ! -s "$key" ]]; then
      (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' > "$key")
      log "generated the $name's identity key in $key"
    fi
    "$CLI" identity-key "$key" > "$STATE_DIR/$name-identity.pub"
  done
}

# The API key of the local demo user (tenant demo, user demo-user): the key
# in $STATE_DIR/demo.key, its hash in the orchestrator's key file.
ensure_api_key() {
  if [[ ! -s "$STATE_DIR/demo.key" || ! -s "$STATE_DIR/api_keys" ]]; then
    local out
    out="$("$BUILD_DIR/bin/omniforge-orchestrator" keys create --tenant demo --user demo-user \
      --label "local demo")"
    (umask 077 && sed -n 's/^key:  *//p' <<<"$out" > "$STATE_DIR/demo.key" &&
      sed -n 's/^line:  *//p' <<<"$out" > "$STATE_DIR/api_keys")
    log "created an API key for the demo user in $STATE_DIR/demo.key"
  fi
}

ensure_database() {
  if ! bash "$ROOT/scripts/pg.sh" psql -tAc "SELECT 1 FROM pg_database WHERE datname = 'omniforge'" \
      | grep -q 1; then
    bash "$ROOT/scripts/pg.sh" psql -qc "CREATE DATABASE omniforge" >/dev/null
    log "created database omniforge"
  fi
  # Each service's own login role, as every deployment has them (the local
  # cluster trusts loopback logins, so the passwords are never asked for).
  local password
  password="$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')"
  env -u OMNIFORGE_OWNER_PASSWORD OMNIFORGE_CONVERSATION_PASSWORD="$password" \
    OMNIFORGE_EXECUTOR_PASSWORD="$password" OMNIFORGE_ORCHESTRATOR_PASSWORD="$password" \
    bash "$ROOT/scripts/pg.sh" psql -v ON_ERROR_STOP=1 -q -c '\c omniforge' \
      -f "$ROOT/deploy/postgres-roles.sql" >/dev/null
}

wait_serving() {
  local svc="$1" deadline=$((SECONDS + 30))
  while (( SECONDS < deadline )); do
    if ! pid_of "$svc" >/dev/null; then
      log "$svc exited during start; last log lines:"
      tail -n 20 "$STATE_DIR/logs/$svc.log" >&2
      return 1
    fi
    if "$CLI" --server "$(addr "$svc")" --timeout 2 health >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.2
  done
  log "$svc did not become healthy within 30 s; see $STATE_DIR/logs/$svc.log"
  return 1
}

# Sets SERVICE_ENV to the NAME=VALUE pairs of SERVICE's own configuration
# keys (what it reads beyond its config file).
service_env() {
  local trusted="orchestrator=$STATE_DIR/orchestrator-identity.pub"
  trusted+=",operator=$STATE_DIR/operator-identity.pub"
  SERVICE_ENV=()
  case "$1" in
    conversation)
      SERVICE_ENV=("OMNIFORGE_DATABASE_DSN=$(service_dsn conversation)"
                   "OMNIFORGE_DATABASE_MIGRATE_DSN=$DATABASE_DSN"
                   "OMNIFORGE_ENCRYPTION_MASTER_KEY_FILE=$STATE_DIR/master.key"
                   "OMNIFORGE_IDENTITY_TRUSTED_KEYS=$trusted,executor=$STATE_DIR/executor-identity.pub") ;;
    intent)
      SERVICE_ENV=("OMNIFORGE_IDENTITY_TRUSTED_KEYS=$trusted") ;;
    executor)
      SERVICE_ENV=("OMNIFORGE_DATABASE_DSN=$(service_dsn executor)"
                   "OMNIFORGE_DATABASE_MIGRATE_DSN=$DATABASE_DSN"
                   "OMNIFORGE_ENCRYPTION_MASTER_KEY_FILE=$STATE_DIR/executor-master.key"
                   "OMNIFORGE_CONVERSATION_ADDRESS=$(addr conversation)"
                   "OMNIFORGE_IDENTITY_TRUSTED_KEYS=$trusted"
                   "OMNIFORGE_IDENTITY_SIGNING_KEY_FILE=$STATE_DIR/executor-identity.key"
                   "OMNIFORGE_IDENTITY_SIGNING_KEY_ID=executor")
      # The sandbox email, calendar and contacts servers it starts
      # (deploy/local/executor.yaml): this build's binary, this cluster, as
      # omniforge_sandbox only (`up` has applied their schema), sealing
      # with their master key, a file their file sandbox lets them read.
      local domain sandbox_env
      sandbox_env="OMNIFORGE_DATABASE_DSN=$(service_dsn sandbox),OMNIFORGE_DATABASE_MIGRATE_ON_START=false,OMNIFORGE_ENCRYPTION_MASTER_KEY_FILE=$STATE_DIR/sandbox-master.key"
      [[ -z "$STACK_NOW" ]] || sandbox_env+=",OMNIFORGE_SANDBOX_NOW=$STACK_NOW"
      for domain in EMAIL CALENDAR CONTACTS; do
        SERVICE_ENV+=("OMNIFORGE_MCP_SERVERS_SANDBOX_${domain}_COMMAND=$BUILD_DIR/bin/omniforge-sandbox-mcp"
                      "OMNIFORGE_MCP_SERVERS_SANDBOX_${domain}_ENV=$sandbox_env"
                      "OMNIFORGE_MCP_SERVERS_SANDBOX_${domain}_READ_PATHS=$STATE_DIR/sandbox-master.key")
      done ;;
    orchestrator)
      SERVICE_ENV=("OMNIFORGE_DATABASE_DSN=$(service_dsn orchestrator)"
                   "OMNIFORGE_DATABASE_MIGRATE_DSN=$DATABASE_DSN"
                   "OMNIFORGE_ENCRYPTION_MASTER_KEY_FILE=$STATE_DIR/orchestrator-master.key"
                   "OMNIFORGE_IDENTITY_SIGNING_KEY_FILE=$STATE_DIR/orchestrator-identity.key"
                   "OMNIFORGE_IDENTITY_SIGNING_KEY_ID=orchestrator"
                   "OMNIFORGE_AUTH_API_KEYS_FILE=$STATE_DIR/api_keys"
                   "OMNIFORGE_SPOOL_DIR=$STATE_DIR/spool"
                   "OMNIFORGE_DOWNSTREAM_CONVERSATION=$(addr conversation)"
                   "OMNIFORGE_DOWNSTREAM_INTENT=$(addr intent)"
                   "OMNIFORGE_DOWNSTREAM_EXECUTOR=$(addr executor)")
      [[ -z "$STACK_NOW" ]] || SERVICE_ENV+=("OMNIFORGE_TURN_CALENDAR_NOW=$STACK_NOW") ;;
  esac
}

up() {
  mkdir -p "$STATE_DIR/run" "$STATE_DIR/logs"
  bash "$ROOT/scripts/pg.sh" start
  ensure_database
  ensure_master_key
  ensure_identity_keys
  ensure_api_key
  # The sandbox servers' schema, once (the executor starts them per tenant,
  # without the owner's login).
  env $(compgen -e | sed -n 's/^\(OMNIFORGE_[A-Za-z0-9_]*\)$/-u \1/p') \
    OMNIFORGE_DATABASE_DSN="$DATABASE_DSN" OMNIFORGE_DATABASE_MIGRATE_DSN="$DATABASE_DSN" \
    "$BUILD_DIR/bin/omniforge-sandbox-mcp" migrate >>"$STATE_DIR/logs/sandbox-migrate.log" 2>&1 \
    || { log "omniforge-sandbox-mcp migrate failed; see $STATE_DIR/logs/sandbox-migrate.log"; return 1; }
  for svc in "${SERVICES[@]}"; do
    if pid=$(pid_of "$svc"); then
      log "$svc already running (pid $pid, 127.0.0.1:${PORTS[$svc]})"
      continue
    fi
    # The shell's OMNIFORGE_* variables are the scripts', the client's and
    # the build's settings, not the services' configuration (deploy/local
    # is): each service gets only the keys it reads here (a service warns
    # about a variable that names no key of it).
    service_env "$svc"
    env $(compgen -e | sed -n 's/^\(OMNIFORGE_[A-Za-z0-9_]*\)$/-u \1/p') \
      OMNIFORGE_SERVER_PORT="${PORTS[$svc]}" OMNIFORGE_SERVER_METRICS_PORT="${METRICS_PORTS[$svc]}" \
      ${SERVICE_ENV[@]+"${SERVICE_ENV[@]}"} \
      setsid "$BUILD_DIR/bin/omniforge-$svc" --config "$ROOT/deploy/local/$svc.yaml" \
      >>"$STATE_DIR/logs/$svc.log" 2>&1 < /dev/null &
    echo $! > "$STATE_DIR/run/$svc.pid"
    wait_serving "$svc"
    log "$svc serving on 127.0.0.1:${PORTS[$svc]} (log $STATE_DIR/logs/$svc.log)"
  done
}

down() {
  for svc in "${SERVICES[@]}"; do
    if pid=$(pid_of "$svc"); then
      kill -TERM "$pid"
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
      log "$svc stopped"
    fi
    rm -f "$STATE_DIR/run/$svc.pid"
  done
  bash "$ROOT/scripts/pg.sh" stop
}

status() {
  bash "$ROOT/scripts/pg.sh" status || true
  for svc in "${SERVICES[@]}"; do
    if pid=$(pid_of "$svc"); then
      log "$svc running (pid $pid, 127.0.0.1:${PORTS[$svc]})"
    else
      log "$svc not running"
    fi
  done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
