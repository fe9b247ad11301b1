# Where the local stack lives; sourced by stack.sh and run.sh so both agree.
# Every value can be overridden from the environment, so a second stack (a
# test, a CI job) runs beside a developer's without sharing anything:
#
#   BUILD_DIR                    binaries from $BUILD_DIR/bin (default build/)
#   OMNIFORGE_STATE_DIR          keys, logs, pid files (default /tmp/omniforge)
#   OMNIFORGE_PORT_BASE          gRPC ports: orchestrator BASE, conversation
#                                BASE+1, intent BASE+2, executor BASE+3
#                                (default 50050)
#   OMNIFORGE_METRICS_PORT_BASE  /metrics ports in the same order (default 9090)
#   OMNIFORGE_PG_PORT, OMNIFORGE_PG_DIR
#                                the PostgreSQL cluster (scripts/pg.sh;
#                                default 127.0.0.1:55432, /tmp/omniforge-pg)
#   OMNIFORGE_STACK_NOW          for tests only: an RFC 3339 time where the
#                                clocks of the meeting flow (the
#                                orchestrator's turn.calendar_now) and of the
#                                sandbox servers (OMNIFORGE_SANDBOX_NOW)
#                                start (default: unset, the real clock)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
STATE_DIR="${OMNIFORGE_STATE_DIR:-/tmp/omniforge}"
PORT_BASE="${OMNIFORGE_PORT_BASE:-50050}"
METRICS_PORT_BASE="${OMNIFORGE_METRICS_PORT_BASE:-9090}"
PG_PORT="${OMNIFORGE_PG_PORT:-55432}"
STACK_NOW="${OMNIFORGE_STACK_NOW:-}"
for value in "$PORT_BASE" "$METRICS_PORT_BASE" "$PG_PORT"; do
  [[ "$value" =~ ^[0-9]+$ ]] || { echo "stack: ports must be numbers (got '$value')" >&2; exit 2; }
done
SERVICES=(conversation intent executor orchestrator)
declare -A PORTS=([orchestrator]=$PORT_BASE [conversation]=$((PORT_BASE + 1))
                  [intent]=$((PORT_BASE + 2)) [executor]=$((PORT_BASE + 3)))
declare -A METRICS_PORTS=([orchestrator]=$METRICS_PORT_BASE
                          [conversation]=$((METRICS_PORT_BASE + 1))
                          [intent]=$((METRICS_PORT_BASE + 2))
                          [executor]=$((METRICS_PORT_BASE + 3)))
# The owner (the local cluster's superuser): migrations and maintenance.
DATABASE_DSN="host=127.0.0.1 port=$PG_PORT user=omniforge dbname=omniforge"
# What service $1 logs in as: its own role (deploy/postgres-roles.sql).
service_dsn() { echo "host=127.0.0.1 port=$PG_PORT user=omniforge_$1 dbname=omniforge"; }
addr() { echo "127.0.0.1:${PORTS[$1]}"; }
