-- Agents that run: an agent is a runnable definition (its tools, the steps
-- a run takes without a model, limits, a schedule read into cron and a time
-- zone), a run records every tool call, its tokens and cost, and a
-- scheduler fires each slot of each agent's schedule exactly once across
-- any number of executor replicas.

ALTER TABLE platform.agents
  -- The tools a run may use: the grant the user approved with the agent.
  ADD COLUMN tools         text[]  NOT NULL DEFAULT '{}',
  -- The calls a run makes without a model: [{"tool": ..., "arguments": {...}}].
  ADD COLUMN steps         jsonb   NOT NULL DEFAULT '[]'::jsonb,
  -- {"max_tool_calls": n, "timeout_s": n, "max_cost_usd": x}
  ADD COLUMN limits        jsonb   NOT NULL DEFAULT '{}'::jsonb,
  -- The schedule read (libs/schedule): normalised cron and IANA zone; ''
  -- when the agent runs only on demand. `schedule` keeps it in words.
  ADD COLUMN schedule_cron text    NOT NULL DEFAULT '',
  ADD COLUMN time_zone     text    NOT NULL DEFAULT 'UTC',
  -- After downtime: run the latest missed slot once, or skip the missed.
  ADD COLUMN missed_runs   text    NOT NULL DEFAULT 'run_once'
                                   CHECK (missed_runs IN ('run_once', 'skip')),
  -- Whether a slot may start while the agent's previous run still runs.
  ADD COLUMN allow_overlap boolean NOT NULL DEFAULT false;

ALTER TABLE platform.runs DROP CONSTRAINT runs_status_check;
ALTER TABLE platform.runs
  ADD CONSTRAINT runs_status_check
    CHECK (status IN ('running', 'succeeded', 'partial', 'failed')),
  -- 'manual' (run_agent) or 'schedule'; a scheduled run names its slot.
  ADD COLUMN trigger    text        NOT NULL DEFAULT 'manual'
                                    CHECK (trigger IN ('manual', 'schedule')),
  ADD COLUMN slot       timestamptz,
  -- [{"tool", "arguments", "result", "is_error", "duration_ms"}]
  ADD COLUMN tool_calls jsonb       NOT NULL DEFAULT '[]'::jsonb,
  ADD COLUMN tokens     integer     NOT NULL DEFAULT 0,
  ADD COLUMN cost_usd   numeric(12, 6) NOT NULL DEFAULT 0,
  -- A running run not finished by then was abandoned (its executor
  -- stopped): the scheduler marks it failed.
  ADD COLUMN lease_until timestamptz;
CREATE INDEX runs_running ON platform.runs (tenant_id, agent_id) WHERE status = 'running';

-- The next slot of every scheduled, active agent: the scheduler's queue.
CREATE TABLE platform.agent_schedules (
  tenant_id     text        NOT NULL,
  agent_id      uuid        NOT NULL,
  user_id       text        NOT NULL,
  cron          text        NOT NULL,
  time_zone     text        NOT NULL,
  next_slot     timestamptz NOT NULL,
  missed_runs   text        NOT NULL,
  allow_overlap boolean     NOT NULL,
  active        boolean     NOT NULL DEFAULT true,
  PRIMARY KEY (tenant_id, agent_id),
  FOREIGN KEY (tenant_id, agent_id) REFERENCES platform.agents (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX agent_schedules_due ON platform.agent_schedules (next_slot) WHERE active;

-- What became of each slot: one row per agent and slot, so a slot is
-- claimed once whatever the number of schedulers. outcome: 'run' (run_id),
-- 'missed' (the scheduler was down: `missed` slots from `slot` to
-- `missed_until`, none run), 'overlap' (the previous run still ran).
CREATE TABLE platform.schedule_slots (
  tenant_id    text        NOT NULL,
  agent_id     uuid        NOT NULL,
  slot         timestamptz NOT NULL,
  outcome      text        NOT NULL CHECK (outcome IN ('run', 'missed', 'overlap')),
  run_id       uuid,
  missed       integer     NOT NULL DEFAULT 1,
  missed_until timestamptz,
  claimed_at   timestamptz NOT NULL,
  claimed_by   text        NOT NULL,
  PRIMARY KEY (tenant_id, agent_id, slot),
  FOREIGN KEY (tenant_id, agent_id) REFERENCES platform.agents (tenant_id, id) ON DELETE CASCADE
);

GRANT SELECT, INSERT, UPDATE, DELETE ON platform.agent_schedules, platform.schedule_slots
  TO omniforge_app;
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['agent_schedules', 'schedule_slots']
  LOOP
    EXECUTE format('ALTER TABLE platform.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_isolation ON platform.%I TO omniforge_app '
                   'USING (tenant_id = current_setting(''app.tenant_id'', true)) '
                   'WITH CHECK (tenant_id = current_setting(''app.tenant_id'', true))', t);
  END LOOP;
END
$$;

-- The due schedules of every tenant, locked for the calling transaction
-- (others skip them): the one read that spans tenants, so it runs with the
-- owner's rights and returns keys and timing only, nothing a user wrote.
CREATE FUNCTION platform.claim_due_schedules(p_now timestamptz, p_limit integer)
RETURNS TABLE (tenant_id text, agent_id uuid, user_id text, cron text, time_zone text,
               next_slot timestamptz, missed_runs text, allow_overlap boolean)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT s.tenant_id, s.agent_id, s.user_id, s.cron, s.time_zone, s.next_slot, s.missed_runs,
         s.allow_overlap
    FROM platform.agent_schedules s
   WHERE s.active AND s.next_slot <= p_now
   ORDER BY s.next_slot
   LIMIT p_limit
     FOR UPDATE SKIP LOCKED
$$;
REVOKE ALL ON FUNCTION platform.claim_due_schedules(timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION platform.claim_due_schedules(timestamptz, integer) TO omniforge_app;

-- Records what a pass made of the schedules it claimed (locked by
-- claim_due_schedules in the same transaction), all in one statement: the
-- missed slots, each slot that runs or overlaps its agent's running run
-- (a unique key per agent and slot: a slot is recorded once whoever
-- claims it), the runs to start (status running, leased for the agent's
-- timeout and a minute), and each schedule's next slot (or its end).
-- Times are microseconds since the epoch. Returns the slots recorded with
-- their outcome and run. Spans tenants, so it runs with the owner's
-- rights, and acts only on agents that have a schedule.
CREATE FUNCTION platform.record_claims(p_now timestamptz, p_claimant text, p_tenants text[],
                                       p_agents uuid[], p_run_slots bigint[], p_run_ids uuid[],
                                       p_missed_first bigint[], p_missed_last bigint[],
                                       p_missed integer[], p_next bigint[], p_ended boolean[],
                                       p_overlap_ok boolean[])
RETURNS TABLE (tenant_id text, agent_id uuid, slot timestamptz, outcome text, run_id uuid)
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  WITH plan AS (
    SELECT p.tenant_id, p.agent_id,
           to_timestamp(p.run_slot::double precision / 1e6) AS run_slot, p.run_id,
           to_timestamp(p.missed_first::double precision / 1e6) AS missed_first,
           to_timestamp(p.missed_last::double precision / 1e6) AS missed_last, p.missed,
           to_timestamp(p.next_slot::double precision / 1e6) AS next_slot, p.ended, p.overlap_ok
      FROM unnest(p_tenants, p_agents, p_run_slots, p_run_ids, p_missed_first, p_missed_last,
                  p_missed, p_next, p_ended, p_overlap_ok)
             AS p(tenant_id, agent_id, run_slot, run_id, missed_first, missed_last, missed,
                  next_slot, ended, overlap_ok)
      JOIN platform.agent_schedules s ON s.tenant_id = p.tenant_id AND s.agent_id = p.agent_id
     -- Only what a claim can have found: active schedules that are due, and
     -- slots no later than now, moving the schedule past now.
     WHERE s.active AND s.next_slot <= p_now
       AND (p.ended OR to_timestamp(p.next_slot::double precision / 1e6) > p_now)
       AND (p.run_slot IS NULL OR to_timestamp(p.run_slot::double precision / 1e6) <= p_now)
  ), missed AS (
    INSERT INTO platform.schedule_slots AS x (tenant_id, agent_id, slot, outcome, missed,
                                               missed_until, claimed_at, claimed_by)
    SELECT tenant_id, agent_id, missed_first, 'missed', missed, missed_last, p_now, p_claimant
      FROM plan WHERE missed > 0
    ON CONFLICT DO NOTHING
    RETURNING x.tenant_id, x.agent_id, x.slot, x.outcome, x.run_id
  ), decided AS (
    SELECT p.*, CASE WHEN NOT p.overlap_ok AND EXISTS (
                  SELECT 1 FROM platform.runs r
                   WHERE r.tenant_id = p.tenant_id AND r.agent_id = p.agent_id
                     AND r.status = 'running') THEN 'overlap' ELSE 'run' END AS outcome
      FROM plan p WHERE p.run_slot IS NOT NULL
  ), slots AS (
    INSERT INTO platform.schedule_slots AS x (tenant_id, agent_id, slot, outcome, run_id,
                                               claimed_at, claimed_by)
    SELECT d.tenant_id, d.agent_id, d.run_slot, d.outcome,
           CASE WHEN d.outcome = 'run' THEN d.run_id END, p_now, p_claimant
      FROM decided d
    ON CONFLICT DO NOTHING
    RETURNING x.tenant_id, x.agent_id, x.slot, x.outcome, x.run_id
  ), started AS (
    INSERT INTO platform.runs (tenant_id, id, user_id, agent_id, agent_name, status, trigger, slot,
                               lease_until)
    SELECT a.tenant_id, s.run_id, a.user_id, a.id, a.name, 'running', 'schedule', s.slot,
           clock_timestamp() + make_interval(secs => CASE
             WHEN jsonb_typeof(a.limits -> 'timeout_s') = 'number'
               THEN least(greatest((a.limits ->> 'timeout_s')::numeric, 1), 3600)
             ELSE 120 END + 60)
      FROM slots s JOIN platform.agents a ON a.tenant_id = s.tenant_id AND a.id = s.agent_id
     WHERE s.outcome = 'run'
    RETURNING 1
  ), moved AS (
    UPDATE platform.agent_schedules s
       SET next_slot = CASE WHEN p.ended THEN s.next_slot ELSE p.next_slot END,
           active = s.active AND NOT p.ended
      FROM plan p
     WHERE s.tenant_id = p.tenant_id AND s.agent_id = p.agent_id
    RETURNING 1
  )
  SELECT tenant_id, agent_id, slot, outcome, run_id FROM slots
  UNION ALL
  SELECT tenant_id, agent_id, slot, outcome, run_id FROM missed
$$;
REVOKE ALL ON FUNCTION platform.record_claims(timestamptz, text, text[], uuid[], bigint[], uuid[],
                                              bigint[], bigint[], integer[], bigint[], boolean[],
                                              boolean[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION platform.record_claims(timestamptz, text, text[], uuid[], bigint[],
                                                 uuid[], bigint[], bigint[], integer[], bigint[],
                                                 boolean[], boolean[]) TO omniforge_app;

-- The earliest next slot of any active schedule, so an idle scheduler
-- sleeps until then; NULL when nothing is scheduled.
CREATE FUNCTION platform.earliest_schedule()
RETURNS timestamptz
LANGUAGE sql
SECURITY DEFINER
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
  SELECT min(s.next_slot) FROM platform.agent_schedules s WHERE s.active
$$;
REVOKE ALL ON FUNCTION platform.earliest_schedule() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION platform.earliest_schedule() TO omniforge_app;

-- Runs whose executor stopped before they ended fail, saying so; at most
-- p_limit per call. Spans tenants like claim_due_schedules, and can only
-- end runs that are past their lease by the database's clock (a caller's
-- later time counts for no more than that).
CREATE FUNCTION platform.fail_abandoned_runs(p_now timestamptz, p_limit integer)
RETURNS bigint
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  WITH doomed AS (
    SELECT tenant_id, id FROM platform.runs
     WHERE status = 'running' AND lease_until < least(p_now, clock_timestamp())
     LIMIT p_limit FOR UPDATE SKIP LOCKED
  ), failed AS (
    UPDATE platform.runs r
       SET status = 'failed', finished_at = clock_timestamp(),
           error = 'the run was abandoned: its executor stopped before it ended'
      FROM doomed d
     WHERE r.tenant_id = d.tenant_id AND r.id = d.id
    RETURNING 1
  )
  SELECT count(*) FROM failed
$$;
REVOKE ALL ON FUNCTION platform.fail_abandoned_runs(timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION platform.fail_abandoned_runs(timestamptz, integer) TO omniforge_app;
CREATE INDEX runs_leases ON platform.runs (lease_until) WHERE status = 'running';

-- Runs show how they were started, their slot and a line of what they did.
CREATE OR REPLACE FUNCTION platform.read_list_runs(p_tenant text, p_user text, p_by_agent boolean,
                                                   p_id uuid, p_name text, p_status text,
                                                   p_limit integer)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_agent uuid;
  v_result text;
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant, true);
  IF p_by_agent THEN
    v_agent := platform.resolve_agent(p_tenant, p_user, p_id, p_name);
    IF v_agent IS NULL THEN
      RETURN NULL;
    END IF;
  END IF;
  SELECT jsonb_build_object('runs', coalesce(jsonb_agg(x.j ORDER BY x.s DESC, x.i DESC),
                                             '[]'::jsonb),
                            'count', count(*))::text
    INTO v_result
    FROM (SELECT jsonb_strip_nulls(jsonb_build_object(
                   'id', r.id, 'agent_id', r.agent_id, 'agent_name', r.agent_name,
                   'status', r.status, 'trigger', r.trigger, 'slot', r.slot,
                   'summary', r.output ->> 'summary', 'error', nullif(r.error, ''),
                   'started_at', r.started_at, 'finished_at', r.finished_at)) AS j,
                 r.started_at AS s, r.id AS i
            FROM platform.runs r
           WHERE r.tenant_id = p_tenant AND r.user_id = p_user
             AND (v_agent IS NULL OR r.agent_id = v_agent)
             AND (p_status = '' OR r.status = p_status)
           ORDER BY r.started_at DESC, r.id DESC LIMIT p_limit) x;
  RETURN v_result;
END
$$;
