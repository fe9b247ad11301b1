#!/bin/sh
# The login roles of the omniforge services, one per service, none of them a
# superuser, the schema owner or able to bypass row-level security: each may
# only SET ROLE omniforge_app (what every service statement runs as). The
# migrations run as the database owner (POSTGRES_USER).
#
# docker-compose.yml mounts this into /docker-entrypoint-initdb.d, which runs
# it once, when the data volume is new; on an older volume run it yourself
# (it is safe to repeat and sets the passwords again):
#   docker-compose exec postgres sh /docker-entrypoint-initdb.d/10-omniforge-roles.sh
# Passwords: /run/secrets/db_<service>_password (deploy/docker/init-secrets.sh).
set -eu

secrets="${OMNIFORGE_DB_SECRETS_DIR:-/run/secrets}"
sql=""
for service in conversation executor orchestrator; do
  file="$secrets/db_${service}_password"
  [ -s "$file" ] || { echo "postgres-roles: $file is missing or empty" >&2; exit 1; }
  password="$(cat "$file")"
  case "$password" in
    *"'"* | *'\'*) echo "postgres-roles: $file holds a quote or backslash" >&2; exit 1 ;;
  esac
  sql="$sql
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'omniforge_$service') THEN
    CREATE ROLE omniforge_$service LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
  END IF;
END \$\$;
ALTER ROLE omniforge_$service LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD '$password';
GRANT omniforge_app TO omniforge_$service;
GRANT CONNECT ON DATABASE \"${POSTGRES_DB:-omniforge}\" TO omniforge_$service;"
done

psql -v ON_ERROR_STOP=1 --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-omniforge}" -q <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'omniforge_app') THEN
    CREATE ROLE omniforge_app NOLOGIN NOSUPERUSER NOBYPASSRLS;
  END IF;
END \$\$;
-- Nobody but the owner creates objects in the public schema.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
$sql
SQL
echo "postgres-roles: omniforge_conversation, omniforge_executor, omniforge_orchestrator"
