#!/bin/sh
# Entry point of the omniforge image: picks the service's config file when
# OMNIFORGE_CONFIG is unset, reads the database password from a file when
# PGPASSWORD_FILE is set (libpq reads PGPASSWORD), then runs the command.
set -eu

case "${1:-}" in
  omniforge-conversation | omniforge-intent | omniforge-executor | omniforge-orchestrator)
    if [ -z "${OMNIFORGE_CONFIG:-}" ]; then
      OMNIFORGE_CONFIG="/etc/omniforge/local/${1#omniforge-}.yaml"
      export OMNIFORGE_CONFIG
    fi
    ;;
esac

if [ -n "${PGPASSWORD_FILE:-}" ]; then
  PGPASSWORD="$(cat "$PGPASSWORD_FILE")"
  export PGPASSWORD
fi

exec "$@"
