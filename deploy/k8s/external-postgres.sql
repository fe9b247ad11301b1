-- The roles omniforge needs on a PostgreSQL outside the cluster, run once
-- by a superuser against the omniforge database (docs/deploy/kubernetes.md).
-- The passwords come from the environment (psql 15's \getenv), not the
-- command line, where every local user could read them:
--   read -rs OMNIFORGE_OWNER_PASSWORD; ... ; export OMNIFORGE_OWNER_PASSWORD \
--     OMNIFORGE_CONVERSATION_PASSWORD OMNIFORGE_EXECUTOR_PASSWORD OMNIFORGE_ORCHESTRATOR_PASSWORD
--   psql "host=... dbname=omniforge user=ADMIN" -f deploy/k8s/external-postgres.sql
-- (with log_statement at ddl or above, the server logs the ALTER ROLE
-- statements: turn it down for this session's role, or set the passwords
-- as SCRAM verifiers).
-- omniforge owns the schemas (the migration Job logs in as it); each service
-- logs in as its own role, which is neither the owner nor a superuser nor
-- able to bypass row-level security, and may only SET ROLE omniforge_app.
-- Safe to repeat: it sets the passwords again.
\set ON_ERROR_STOP on
\getenv owner_password OMNIFORGE_OWNER_PASSWORD
\getenv conversation_password OMNIFORGE_CONVERSATION_PASSWORD
\getenv executor_password OMNIFORGE_EXECUTOR_PASSWORD
\getenv orchestrator_password OMNIFORGE_ORCHESTRATOR_PASSWORD
SELECT format('CREATE ROLE %I', r) FROM unnest(ARRAY['omniforge', 'omniforge_app',
    'omniforge_conversation', 'omniforge_executor', 'omniforge_orchestrator']) AS r
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) \gexec
ALTER ROLE omniforge LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD :'owner_password';
ALTER ROLE omniforge_app NOLOGIN NOSUPERUSER NOBYPASSRLS;
ALTER ROLE omniforge_conversation LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD :'conversation_password';
ALTER ROLE omniforge_executor LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD :'executor_password';
ALTER ROLE omniforge_orchestrator LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD :'orchestrator_password';
-- The owner grants omniforge_app's table rights in the migrations.
GRANT omniforge_app TO omniforge WITH ADMIN OPTION;
GRANT omniforge_app TO omniforge_conversation, omniforge_executor, omniforge_orchestrator;
SELECT format('ALTER DATABASE %I OWNER TO omniforge', current_database()) \gexec
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
