-- Row-level security binds the tables' owner too (FORCE): a session that
-- logs in as the owner (the migrations, an operator's psql) sees and writes
-- only the rows of the tenant it names in app.tenant_id, like the services,
-- and none when it names none. (The owner is a member of omniforge_app, so
-- the tenant_isolation policies are its as well.) Superusers and roles with
-- BYPASSRLS are not bound: a logical backup (pg_dump) runs as one of those.
--
-- The scheduler's and the retention's functions span tenants: they run as
-- the owner (SECURITY DEFINER) and turn omniforge.cross_tenant on for their
-- call only, which the cross_tenant policies let see every tenant's rows of
-- the tables they use. The policies name the owner alone: a service, running
-- as omniforge_app, gains nothing by turning the switch on.
DO $$
DECLARE
  t regclass;
BEGIN
  FOREACH t IN ARRAY ARRAY['platform.agents', 'platform.agent_schedules',
                           'platform.schedule_slots', 'platform.runs',
                           'platform.tool_invocations']::regclass[]
  LOOP
    EXECUTE format(
      'CREATE POLICY cross_tenant ON %s TO %I'
      ' USING (current_setting(''omniforge.cross_tenant'', true) = ''on'')'
      ' WITH CHECK (current_setting(''omniforge.cross_tenant'', true) = ''on'')',
      t, (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = t));
  END LOOP;
  FOR t IN SELECT c.oid::regclass FROM pg_class c
            WHERE c.relnamespace = 'platform'::regnamespace AND c.relkind IN ('r', 'p')
              AND c.relrowsecurity
  LOOP
    EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', t);
  END LOOP;
END
$$;

-- Each cross-tenant function as it was, renamed <name>_all_tenants and
-- callable by the owner only, and under its name a wrapper that turns the
-- switch on around it and back to what it was (a function's own SET clause
-- cannot name a custom variable unless a superuser runs this).
DO $$
DECLARE
  f regprocedure;
  p pg_proc;
  body text;
BEGIN
  FOREACH f IN ARRAY ARRAY[
      'platform.purge_tool_invocations(timestamptz, integer)',
      'platform.claim_due_schedules(timestamptz, integer)',
      'platform.record_claims(timestamptz, text, text[], uuid[], bigint[], uuid[], bigint[],'
      ' bigint[], integer[], bigint[], boolean[], boolean[])',
      'platform.earliest_schedule()',
      'platform.fail_abandoned_runs(timestamptz, integer)',
      'platform.unread_schedules(text, uuid, integer)']::regprocedure[]
  LOOP
    SELECT * INTO p FROM pg_proc WHERE oid = f;
    EXECUTE format('ALTER FUNCTION %s RENAME TO %I', f, p.proname || '_all_tenants');
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC, omniforge_app', f);
    -- The call: the input arguments by name.
    body := format('platform.%I(%s)', p.proname || '_all_tenants',
                   (SELECT coalesce(string_agg(quote_ident(n), ', '), '')
                      FROM unnest(p.proargnames[1:p.pronargs]) AS n));
    body := CASE WHEN p.proretset
      THEN 'RETURN QUERY SELECT * FROM ' || body || ';'
      ELSE 'result := ' || body || ';' END;
    EXECUTE format(
      'CREATE FUNCTION platform.%I(%s) RETURNS %s LANGUAGE plpgsql SECURITY DEFINER'
      ' SET search_path = pg_catalog, pg_temp AS $w$'
      ' DECLARE prior text := current_setting(''omniforge.cross_tenant'', true); %s'
      ' BEGIN'
      '   PERFORM set_config(''omniforge.cross_tenant'', ''on'', true);'
      '   %s'
      '   PERFORM set_config(''omniforge.cross_tenant'', coalesce(prior, ''''), true);'
      '   RETURN %s;'
      ' END $w$',
      p.proname, pg_get_function_arguments(f), pg_get_function_result(f),
      CASE WHEN p.proretset THEN '' ELSE 'result ' || pg_get_function_result(f) || ';' END,
      body, CASE WHEN p.proretset THEN '' ELSE 'result' END);
    EXECUTE format('REVOKE ALL ON FUNCTION platform.%I(%s) FROM PUBLIC', p.proname,
                   pg_get_function_identity_arguments(f));
    EXECUTE format('GRANT EXECUTE ON FUNCTION platform.%I(%s) TO omniforge_app', p.proname,
                   pg_get_function_identity_arguments(f));
  END LOOP;
END
$$;
