-- Row-level security binds the tables' owner too (FORCE): a session that
-- logs in as the owner (the migrations, an operator's psql) sees and writes
-- only the rows of the tenant it names in app.tenant_id, like the services,
-- and none when it names none. (The owner is a member of omniforge_app, so
-- the tenant_isolation policies are its as well.) Superusers and roles with
-- BYPASSRLS are not bound: a logical backup (pg_dump) runs as one of those.
--
-- Two operations span tenants, both as the owner: the retention purge (a
-- SECURITY DEFINER function, which turns omniforge.cross_tenant on for its
-- call only) and the master key's re-wrap (`omniforge-conversation
-- rewrap-keys`, which turns it on for its own transactions). The
-- cross_tenant policies let them see every tenant's rows of the tables they
-- use. They name the owner alone: a service, running as omniforge_app,
-- gains nothing by turning the switch on. Messages and child conversations go with their conversation by
-- the foreign keys' cascade, which row-level security does not restrict.
DO $$
DECLARE
  t regclass;
BEGIN
  FOREACH t IN ARRAY ARRAY['conversation.conversations',
                           'conversation.tenant_keys']::regclass[]
  LOOP
    EXECUTE format(
      'CREATE POLICY cross_tenant ON %s TO %I'
      ' USING (current_setting(''omniforge.cross_tenant'', true) = ''on'')'
      ' WITH CHECK (current_setting(''omniforge.cross_tenant'', true) = ''on'')',
      t, (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = t));
  END LOOP;
  FOR t IN SELECT c.oid::regclass FROM pg_class c
            WHERE c.relnamespace = 'conversation'::regnamespace AND c.relkind IN ('r', 'p')
              AND c.relrowsecurity
  LOOP
    EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', t);
  END LOOP;
END
$$;

-- The purge as it was, now callable by the owner only, and under its name a
-- wrapper that turns the switch on around it and back to what it was (a
-- function's own SET clause cannot name a custom variable unless a
-- superuser runs this).
ALTER FUNCTION conversation.purge_idle(integer, jsonb, timestamptz, integer)
  RENAME TO purge_idle_all_tenants;
REVOKE ALL ON FUNCTION conversation.purge_idle_all_tenants(integer, jsonb, timestamptz, integer)
  FROM PUBLIC, omniforge_app;
CREATE FUNCTION conversation.purge_idle(p_default_days integer, p_tenant_days jsonb,
                                        p_now timestamptz, p_limit integer)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  prior text := current_setting('omniforge.cross_tenant', true);
  purged bigint;
BEGIN
  PERFORM set_config('omniforge.cross_tenant', 'on', true);
  purged := conversation.purge_idle_all_tenants(p_default_days, p_tenant_days, p_now, p_limit);
  PERFORM set_config('omniforge.cross_tenant', coalesce(prior, ''), true);
  RETURN purged;
END
$$;
REVOKE ALL ON FUNCTION conversation.purge_idle(integer, jsonb, timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION conversation.purge_idle(integer, jsonb, timestamptz, integer)
  TO omniforge_app;
