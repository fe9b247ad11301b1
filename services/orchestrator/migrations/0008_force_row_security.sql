-- Row-level security binds the tables' owner too (FORCE): a session that
-- logs in as the owner (the migrations, an operator's psql) sees and writes
-- only the rows of the tenant it names in app.tenant_id, like the services,
-- and none when it names none. (The owner is a member of omniforge_app, so
-- the tenant_isolation policies are its as well.) Superusers and roles with
-- BYPASSRLS are not bound: a logical backup (pg_dump) runs as one of those.
-- No function of this schema spans tenants.
DO $$
DECLARE
  t regclass;
BEGIN
  FOR t IN SELECT c.oid::regclass FROM pg_class c
            WHERE c.relnamespace = 'orchestration'::regnamespace AND c.relkind IN ('r', 'p')
              AND c.relrowsecurity
  LOOP
    EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', t);
  END LOOP;
END
$$;
