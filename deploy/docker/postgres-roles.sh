#!/bin/sh
# The login roles of the omniforge services, one per service, none of them a
# superuser, the schema owner or able to bypass row-level security; the
# migrations, run as the database owner (POSTGRES_USER), grant each only its
# own schema. The SQL is
# deploy/postgres-roles.sql, shared with a PostgreSQL outside Kubernetes;
# this gives it the passwords from the secrets.
#
# docker-compose.yml mounts this into /docker-entrypoint-initdb.d (and the
# SQL at /omniforge/postgres-roles.sql); PostgreSQL runs it once, when the
# data volume is new. On an older volume run it yourself (it is safe to
# repeat and sets the passwords again):
#   docker-compose exec postgres sh /docker-entrypoint-initdb.d/10-omniforge-roles.sh
# Passwords: /run/secrets/db_<service>_password (deploy/docker/init-secrets.sh).
set -eu

secrets="${OMNIFORGE_DB_SECRETS_DIR:-/run/secrets}"
for service in conversation executor orchestrator; do
  file="$secrets/db_${service}_password"
  [ -s "$file" ] || { echo "postgres-roles: $file is missing or empty" >&2; exit 1; }
done
OMNIFORGE_CONVERSATION_PASSWORD="$(cat "$secrets/db_conversation_password")"
OMNIFORGE_EXECUTOR_PASSWORD="$(cat "$secrets/db_executor_password")"
OMNIFORGE_ORCHESTRATOR_PASSWORD="$(cat "$secrets/db_orchestrator_password")"
export OMNIFORGE_CONVERSATION_PASSWORD OMNIFORGE_EXECUTOR_PASSWORD OMNIFORGE_ORCHESTRATOR_PASSWORD
# The sandbox MCP servers' login (optional: secrets made before it existed
# lack it; the role then logs in only where the server trusts the connection).
if [ -s "$secrets/db_sandbox_password" ]; then
  OMNIFORGE_SANDBOX_PASSWORD="$(cat "$secrets/db_sandbox_password")"
  export OMNIFORGE_SANDBOX_PASSWORD
fi
unset OMNIFORGE_OWNER_PASSWORD
psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" \
  --dbname "${POSTGRES_DB:-omniforge}" -q -f "${OMNIFORGE_ROLES_SQL:-/omniforge/postgres-roles.sql}"
echo "postgres-roles: omniforge_conversation, omniforge_executor, omniforge_orchestrator, omniforge_sandbox"
