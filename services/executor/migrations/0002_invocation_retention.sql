-- Idempotency records are needed while a caller may still retry: purge the
-- old ones. Like conversation.purge_idle this spans tenants, so it runs with
-- the owner's rights and can do nothing but delete, at most p_limit rows per
-- call: finished records completed before p_before, and claims whose lease
-- ran out before p_before (their call died).
CREATE FUNCTION platform.purge_tool_invocations(p_before timestamptz, p_limit integer)
RETURNS bigint
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  WITH doomed AS (
    SELECT tenant_id, user_id, idempotency_key
    FROM platform.tool_invocations
    WHERE (status = 'done' AND completed_at < p_before)
       OR (status = 'running' AND lease_until < p_before)
    LIMIT p_limit
  ), deleted AS (
    DELETE FROM platform.tool_invocations t
    USING doomed d
    WHERE t.tenant_id = d.tenant_id AND t.user_id = d.user_id
      AND t.idempotency_key = d.idempotency_key
    RETURNING 1
  )
  SELECT count(*) FROM deleted
$$;
REVOKE ALL ON FUNCTION platform.purge_tool_invocations(timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION platform.purge_tool_invocations(timestamptz, integer) TO omniforge_app;
CREATE INDEX tool_invocations_by_age ON platform.tool_invocations (completed_at)
  WHERE status = 'done';
