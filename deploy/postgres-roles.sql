-- The PostgreSQL roles omniforge needs, run by a superuser against the
-- omniforge database; safe to repeat (it sets the passwords again). One
-- file for every deployment that makes its own roles: docker-compose runs
-- it when its database volume is new (deploy/docker/postgres-roles.sh,
-- with the passwords from its secrets), and a PostgreSQL outside a
-- Kubernetes cluster gets it once by hand (docs/deploy/kubernetes.md):
--   read -rs OMNIFORGE_OWNER_PASSWORD; ... ; export OMNIFORGE_OWNER_PASSWORD \
--     OMNIFORGE_CONVERSATION_PASSWORD OMNIFORGE_EXECUTOR_PASSWORD OMNIFORGE_ORCHESTRATOR_PASSWORD
--   psql "host=... dbname=omniforge user=ADMIN" -f deploy/postgres-roles.sql
-- (CloudNativePG makes the same roles from the Cluster's managed roles.)
--
-- The passwords come from the environment (psql 15's \getenv), not the
-- command line, where every local user could read them; with log_statement
-- at ddl or above the server logs the ALTER ROLE statements: turn it down
-- for this session's role, or set the passwords as SCRAM verifiers.
--   OMNIFORGE_CONVERSATION_PASSWORD, OMNIFORGE_EXECUTOR_PASSWORD,
--   OMNIFORGE_ORCHESTRATOR_PASSWORD (required): each service logs in as
--     its own role, omniforge_<service>, which is neither the owner nor a
--     superuser nor able to bypass row-level security, and a member of no
--     role: the migrations grant it its own service's schema and nothing
--     else (tests/database/service_roles_test.cc).
--   OMNIFORGE_SANDBOX_PASSWORD (optional): the password of
--     omniforge_sandbox, the login of the sandbox email, calendar and
--     contacts MCP servers (docs/sandbox.md), bound like the services' roles
--     to its own schema, `sandbox`. Without it the role can log in only
--     where the server trusts the connection (the local stack).
--   OMNIFORGE_OWNER_PASSWORD (optional): makes `omniforge` a login that is
--     not a superuser and the database's owner; the migrations log in as
--     it and own the schemas. Without it the owner is whoever owns the
--     database already (compose: the image's POSTGRES_USER).
\set ON_ERROR_STOP on
\getenv owner_password OMNIFORGE_OWNER_PASSWORD
\getenv conversation_password OMNIFORGE_CONVERSATION_PASSWORD
\getenv executor_password OMNIFORGE_EXECUTOR_PASSWORD
\getenv orchestrator_password OMNIFORGE_ORCHESTRATOR_PASSWORD
\getenv sandbox_password OMNIFORGE_SANDBOX_PASSWORD
\if :{?conversation_password}
\else
DO $$ BEGIN RAISE EXCEPTION 'OMNIFORGE_CONVERSATION_PASSWORD is not set'; END $$;
\endif
\if :{?executor_password}
\else
DO $$ BEGIN RAISE EXCEPTION 'OMNIFORGE_EXECUTOR_PASSWORD is not set'; END $$;
\endif
\if :{?orchestrator_password}
\else
DO $$ BEGIN RAISE EXCEPTION 'OMNIFORGE_ORCHESTRATOR_PASSWORD is not set'; END $$;
\endif
\if :{?owner_password}
-- The owner is made an ordinary login: never the superuser running this.
DO $$ BEGIN
  IF current_user = 'omniforge' THEN
    RAISE EXCEPTION 'run this as a superuser other than omniforge, the owner it makes';
  END IF;
END $$;
\endif

SELECT format('CREATE ROLE %I', r) FROM unnest(ARRAY['omniforge_app',
    'omniforge_conversation', 'omniforge_executor', 'omniforge_orchestrator',
    'omniforge_sandbox']) AS r
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) \gexec
ALTER ROLE omniforge_app NOLOGIN NOSUPERUSER NOBYPASSRLS;
ALTER ROLE omniforge_conversation LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD :'conversation_password';
ALTER ROLE omniforge_executor LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD :'executor_password';
ALTER ROLE omniforge_orchestrator LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD :'orchestrator_password';
\if :{?sandbox_password}
ALTER ROLE omniforge_sandbox LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD :'sandbox_password';
\else
ALTER ROLE omniforge_sandbox LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD NULL;
\endif
-- omniforge_app, which every service shared in earlier releases, holds
-- nothing once the migrations have run; no service is a member of it.
REVOKE omniforge_app FROM omniforge_conversation, omniforge_executor, omniforge_orchestrator;
SELECT format('GRANT CONNECT ON DATABASE %I TO omniforge_conversation, omniforge_executor,'
              ' omniforge_orchestrator, omniforge_sandbox', current_database()) \gexec

\if :{?owner_password}
SELECT 'CREATE ROLE omniforge'
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'omniforge') \gexec
ALTER ROLE omniforge LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD :'owner_password';
-- The first migrations grant omniforge_app to the role running them.
GRANT omniforge_app TO omniforge WITH ADMIN OPTION;
SELECT format('ALTER DATABASE %I OWNER TO omniforge', current_database()) \gexec
\endif
-- Nobody but the owner creates objects in the public schema.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
