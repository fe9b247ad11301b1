-- What a user is told once, the user's own settings, and where an agent's
-- output goes.
--
-- A scheduled run that failed or did only part of its work, and slots
-- missed while no scheduler ran, are news for the agent's owner: list_agents
-- reports them as notices until the assistant has told the user
-- (mark_notices_seen sets reported_at).

ALTER TABLE platform.runs ADD COLUMN reported_at timestamptz;
ALTER TABLE platform.schedule_slots ADD COLUMN reported_at timestamptz;
-- What happened before notices existed is not news.
UPDATE platform.runs SET reported_at = now()
 WHERE trigger = 'schedule' AND status IN ('failed', 'partial');
UPDATE platform.schedule_slots SET reported_at = now() WHERE outcome = 'missed';
CREATE INDEX runs_unreported ON platform.runs (tenant_id, user_id)
  WHERE reported_at IS NULL AND trigger = 'schedule' AND status IN ('failed', 'partial');
CREATE INDEX schedule_slots_unreported ON platform.schedule_slots (tenant_id, agent_id)
  WHERE reported_at IS NULL AND outcome = 'missed';

-- Per user: the time zone new schedules are read in when they name none.
CREATE TABLE platform.user_settings (
  tenant_id  text        NOT NULL,
  user_id    text        NOT NULL,
  time_zone  text        NOT NULL DEFAULT 'UTC',
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, user_id)
);
GRANT SELECT, INSERT, UPDATE, DELETE ON platform.user_settings TO omniforge_app;
ALTER TABLE platform.user_settings ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON platform.user_settings TO omniforge_app
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

-- A time as whole microseconds since 1970: how a notice names a slot.
CREATE FUNCTION platform.epoch_micros(p_at timestamptz)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT ((extract(epoch FROM p_at) * 1000000)::numeric)::bigint
$$;

-- The user's notices, oldest first (at most 20): failed and partial
-- scheduled runs, then missed slots; [] when there are none.
CREATE FUNCTION platform.read_user_notices(p_tenant text, p_user text)
RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
BEGIN
  -- plpgsql, so that its plan is kept for the session (a SQL function
  -- would be planned at every call).
  RETURN (SELECT coalesce(jsonb_agg(n.j ORDER BY n.at, n.id), '[]'::jsonb)
    FROM (SELECT * FROM (
            SELECT jsonb_strip_nulls(jsonb_build_object(
                     'id', r.id::text, 'kind', 'run_' || r.status, 'agent', r.agent_name,
                     'agent_id', r.agent_id, 'run_id', r.id, 'slot', r.slot,
                     'at', coalesce(r.finished_at, r.started_at),
                     'error', nullif(r.error, ''), 'summary', r.output ->> 'summary')) AS j,
                   coalesce(r.finished_at, r.started_at) AS at, r.id::text AS id
              FROM platform.runs r
             WHERE r.tenant_id = p_tenant AND r.user_id = p_user AND r.reported_at IS NULL
               AND r.trigger = 'schedule' AND r.status IN ('failed', 'partial')
            UNION ALL
            SELECT jsonb_build_object(
                     'id', 'missed:' || s.agent_id || ':' || platform.epoch_micros(s.slot),
                     'kind', 'missed',
                     'agent', a.name, 'agent_id', a.id, 'slot', s.slot,
                     'at', s.claimed_at, 'missed', s.missed,
                     'missed_until', coalesce(s.missed_until, s.slot),
                     'policy', a.missed_runs),
                   s.claimed_at, 'missed:' || s.agent_id || ':' || platform.epoch_micros(s.slot)
              FROM platform.agents a
              JOIN platform.schedule_slots s ON s.tenant_id = a.tenant_id AND s.agent_id = a.id
             WHERE a.tenant_id = p_tenant AND a.user_id = p_user AND s.reported_at IS NULL
               AND s.outcome = 'missed') u
           ORDER BY u.at, u.id LIMIT 20) n);
END
$$;

-- list_agents also says the user's time zone and, when there are any, the
-- notices not yet told.
CREATE OR REPLACE FUNCTION platform.read_list_agents(p_tenant text, p_user text, p_status text,
                                                     p_limit integer)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_result jsonb;
  v_zone text;
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant, true);
  SELECT jsonb_build_object('agents', coalesce(jsonb_agg(x.j ORDER BY x.n), '[]'::jsonb),
                            'count', count(*))
    INTO v_result
    FROM (SELECT jsonb_build_object('id', a.id, 'name', a.name, 'description', a.description,
                                    'status', a.status, 'schedule', a.schedule,
                                    'skills', to_jsonb(a.skills), 'updated_at', a.updated_at) AS j,
                 lower(a.name) AS n
            FROM platform.agents a
           WHERE a.tenant_id = p_tenant AND a.user_id = p_user
             AND (p_status = '' OR a.status = p_status)
           ORDER BY lower(a.name) LIMIT p_limit) x;
  SELECT u.time_zone INTO v_zone FROM platform.user_settings u
   WHERE u.tenant_id = p_tenant AND u.user_id = p_user;
  v_result := v_result || jsonb_build_object('time_zone', coalesce(v_zone, 'UTC'));
  -- Most turns have no notice: two index probes say so.
  IF EXISTS (SELECT 1 FROM platform.runs r
              WHERE r.tenant_id = p_tenant AND r.user_id = p_user AND r.reported_at IS NULL
                AND r.trigger = 'schedule' AND r.status IN ('failed', 'partial'))
     OR EXISTS (SELECT 1 FROM platform.agents a
                  JOIN platform.schedule_slots s
                    ON s.tenant_id = a.tenant_id AND s.agent_id = a.id
                 WHERE a.tenant_id = p_tenant AND a.user_id = p_user
                   AND s.reported_at IS NULL AND s.outcome = 'missed') THEN
    v_result := v_result || jsonb_build_object('notices',
                                               platform.read_user_notices(p_tenant, p_user));
  END IF;
  RETURN v_result::text;
END
$$;

-- get_settings: the user's settings (the defaults when never set).
CREATE FUNCTION platform.read_get_settings(p_tenant text, p_user text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_result text;
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant, true);
  SELECT jsonb_build_object('settings', jsonb_build_object(
           'time_zone', coalesce(u.time_zone, 'UTC'), 'updated_at', u.updated_at))::text
    INTO v_result
    FROM (SELECT 1) one
    LEFT JOIN platform.user_settings u ON u.tenant_id = p_tenant AND u.user_id = p_user;
  RETURN v_result;
END
$$;

-- Where each run's output goes besides the run record: {"tool": ...,
-- "arguments": {...}, "field": "text"} calls the tool (in the agent's grant)
-- with the output in `field`; {} when it goes nowhere else.
ALTER TABLE platform.agents ADD COLUMN deliver jsonb NOT NULL DEFAULT '{}'::jsonb;

-- Agents whose schedule is still only words (created before schedules were
-- read into cron), after (p_after_tenant, p_after_agent) in key order: the
-- executor reads them at start, as their owner. Spans tenants, so it runs
-- with the owner's rights and returns keys only.
CREATE FUNCTION platform.unread_schedules(p_after_tenant text, p_after_agent uuid,
                                          p_limit integer)
RETURNS TABLE (tenant_id text, user_id text, agent_id uuid)
LANGUAGE sql
SECURITY DEFINER
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT a.tenant_id, a.user_id, a.id FROM platform.agents a
   WHERE a.schedule <> '' AND a.schedule_cron = ''
     AND (a.tenant_id, a.id) > (p_after_tenant, p_after_agent)
   ORDER BY a.tenant_id, a.id LIMIT p_limit
$$;
REVOKE ALL ON FUNCTION platform.unread_schedules(text, uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION platform.unread_schedules(text, uuid, integer) TO omniforge_app;
