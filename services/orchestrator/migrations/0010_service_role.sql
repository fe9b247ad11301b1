-- The orchestrator service's own database role, omniforge_orchestrator, holds
-- exactly what the service needs: the rights on the tables, sequences and
-- functions of schema orchestration that the shared role omniforge_app held until
-- now, and the tenant_isolation policies. omniforge_app keeps nothing here,
-- so the other services' roles cannot read, write or call anything in this
-- schema (the role test, tests/database/service_roles_test.cc, proves it).
-- The service logs in as omniforge_orchestrator (or a login that is a member of
-- it); nothing runs SET ROLE from a privileged login. The owner stays bound
-- to the policies as before (it is named in them beside the service's role).
-- deploy/postgres-roles.sql makes the role as a login; where it is missing
-- a migrator allowed to create roles makes it here, without login.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'omniforge_orchestrator') THEN
    BEGIN
      CREATE ROLE omniforge_orchestrator NOLOGIN NOSUPERUSER NOBYPASSRLS;
    EXCEPTION WHEN insufficient_privilege THEN
      RAISE EXCEPTION 'role omniforge_orchestrator does not exist and % may not create it', current_user
        USING HINT = 'run deploy/postgres-roles.sql as a superuser first';
    END;
  END IF;
END
$$;

DO $$
DECLARE
  grant_row record;
  policy_row record;
BEGIN
  EXECUTE 'GRANT USAGE ON SCHEMA orchestration TO omniforge_orchestrator';
  -- Tables and sequences: the same privileges, moved.
  FOR grant_row IN
    SELECT c.oid::regclass AS rel, c.relkind = 'S' AS is_sequence,
           string_agg(DISTINCT a.privilege_type, ', ') AS privileges
      FROM pg_class c, aclexplode(c.relacl) a
     WHERE c.relnamespace = 'orchestration'::regnamespace
       AND a.grantee = 'omniforge_app'::regrole
     GROUP BY c.oid, c.relkind
  LOOP
    EXECUTE format('GRANT %s ON %s %s TO omniforge_orchestrator', grant_row.privileges,
                   CASE WHEN grant_row.is_sequence THEN 'SEQUENCE' ELSE 'TABLE' END, grant_row.rel);
    EXECUTE format('REVOKE ALL ON %s FROM omniforge_app', grant_row.rel);
  END LOOP;
  -- Functions: EXECUTE, moved.
  FOR grant_row IN
    SELECT p.oid::regprocedure AS fn
      FROM pg_proc p, aclexplode(p.proacl) a
     WHERE p.pronamespace = 'orchestration'::regnamespace
       AND a.grantee = 'omniforge_app'::regrole AND a.privilege_type = 'EXECUTE'
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO omniforge_orchestrator', grant_row.fn);
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM omniforge_app', grant_row.fn);
  END LOOP;
  -- Policies that named omniforge_app name the service's role and the owner.
  FOR policy_row IN
    SELECT policyname, tablename FROM pg_policies
     WHERE schemaname = 'orchestration' AND 'omniforge_app' = ANY (roles)
  LOOP
    EXECUTE format('ALTER POLICY %I ON orchestration.%I TO omniforge_orchestrator, CURRENT_USER',
                   policy_row.policyname, policy_row.tablename);
  END LOOP;
  EXECUTE 'REVOKE ALL ON SCHEMA orchestration FROM omniforge_app';
END
$$;
