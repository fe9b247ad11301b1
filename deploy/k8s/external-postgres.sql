-- The roles omniforge needs on a PostgreSQL outside the cluster, run once
-- by an administrator (a superuser, or a role with CREATEROLE) against the
-- omniforge database (docs/deploy/kubernetes.md):
--   psql "host=... dbname=omniforge user=ADMIN" \
--     -v owner_password=... -v conversation_password=... \
--     -v executor_password=... -v orchestrator_password=... \
--     -f deploy/k8s/external-postgres.sql
-- omniforge owns the schemas (the migration Job logs in as it); each service
-- logs in as its own role, which is neither the owner nor a superuser nor
-- able to bypass row-level security, and may only SET ROLE omniforge_app.
-- Safe to repeat: it sets the passwords again.
\set ON_ERROR_STOP on
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
