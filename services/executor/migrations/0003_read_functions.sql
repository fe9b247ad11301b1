-- The read tools as functions: each sets the tenant for row-level security
-- (set_config with is_local, so it ends with the caller's statement) and
-- returns the tool's whole result as JSON text, or NULL when the thing
-- asked for does not exist. A call is one round trip, and PL/pgSQL keeps the
-- plans of the statements inside for the session: a read no longer parses
-- and plans its query every time. SECURITY INVOKER: the caller's role, with
-- row-level security, is the wall; each query still filters on tenant and
-- user itself. An agent or project named by id or by name is resolved to
-- its id first, so each statement has one shape and one cached plan.

CREATE FUNCTION platform.read_list_agents(p_tenant text, p_user text, p_status text,
                                          p_limit integer)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_result text;
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant, true);
  SELECT jsonb_build_object('agents', coalesce(jsonb_agg(x.j ORDER BY x.n), '[]'::jsonb),
                            'count', count(*))::text
    INTO v_result
    FROM (SELECT jsonb_build_object('id', a.id, 'name', a.name, 'description', a.description,
                                    'status', a.status, 'schedule', a.schedule,
                                    'skills', to_jsonb(a.skills), 'updated_at', a.updated_at) AS j,
                 lower(a.name) AS n
            FROM platform.agents a
           WHERE a.tenant_id = p_tenant AND a.user_id = p_user
             AND (p_status = '' OR a.status = p_status)
           ORDER BY lower(a.name) LIMIT p_limit) x;
  RETURN v_result;
END
$$;

-- The id of the user's agent `p_id`, or named `p_name` (case-insensitive)
-- when p_id is NULL; NULL when there is none.
CREATE FUNCTION platform.resolve_agent(p_tenant text, p_user text, p_id uuid, p_name text)
RETURNS uuid LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_id uuid;
BEGIN
  IF p_id IS NOT NULL THEN
    SELECT a.id INTO v_id FROM platform.agents a
     WHERE a.tenant_id = p_tenant AND a.user_id = p_user AND a.id = p_id;
  ELSE
    SELECT a.id INTO v_id FROM platform.agents a
     WHERE a.tenant_id = p_tenant AND a.user_id = p_user AND lower(a.name) = lower(p_name);
  END IF;
  RETURN v_id;
END
$$;

CREATE FUNCTION platform.read_get_agent(p_tenant text, p_user text, p_id uuid, p_name text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_agent uuid;
  v_result text;
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant, true);
  v_agent := platform.resolve_agent(p_tenant, p_user, p_id, p_name);
  IF v_agent IS NULL THEN
    RETURN NULL;
  END IF;
  SELECT jsonb_build_object(
           'agent', to_jsonb(a) - 'tenant_id' - 'user_id',
           'recent_runs', (SELECT coalesce(jsonb_agg(x.j ORDER BY x.s DESC), '[]'::jsonb)
                             FROM (SELECT jsonb_build_object('id', r.id, 'status', r.status,
                                                             'started_at', r.started_at,
                                                             'finished_at', r.finished_at) AS j,
                                          r.started_at AS s
                                     FROM platform.runs r
                                    WHERE r.tenant_id = a.tenant_id AND r.agent_id = a.id
                                    ORDER BY r.started_at DESC LIMIT 5) x))::text
    INTO v_result
    FROM platform.agents a
   WHERE a.tenant_id = p_tenant AND a.user_id = p_user AND a.id = v_agent;
  RETURN v_result;
END
$$;

CREATE FUNCTION platform.read_list_skills(p_tenant text, p_user text, p_like text,
                                          p_limit integer)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_result text;
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant, true);
  SELECT jsonb_build_object('skills', coalesce(jsonb_agg(x.j ORDER BY x.n), '[]'::jsonb),
                            'count', count(*))::text
    INTO v_result
    FROM (SELECT jsonb_build_object('id', s.id, 'name', s.name,
                                    'description', s.description) AS j,
                 lower(s.name) AS n
            FROM platform.skills s
           WHERE s.tenant_id = p_tenant AND s.user_id = p_user
             AND (s.name ILIKE p_like OR s.description ILIKE p_like)
           ORDER BY lower(s.name) LIMIT p_limit) x;
  RETURN v_result;
END
$$;

-- p_by_agent: only the runs of the agent p_id / p_name (NULL when the user
-- has no such agent).
CREATE FUNCTION platform.read_list_runs(p_tenant text, p_user text, p_by_agent boolean,
                                        p_id uuid, p_name text, p_status text, p_limit integer)
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
    FROM (SELECT jsonb_build_object('id', r.id, 'agent_id', r.agent_id,
                                    'agent_name', r.agent_name, 'status', r.status,
                                    'started_at', r.started_at,
                                    'finished_at', r.finished_at) AS j,
                 r.started_at AS s, r.id AS i
            FROM platform.runs r
           WHERE r.tenant_id = p_tenant AND r.user_id = p_user
             AND (v_agent IS NULL OR r.agent_id = v_agent)
             AND (p_status = '' OR r.status = p_status)
           ORDER BY r.started_at DESC, r.id DESC LIMIT p_limit) x;
  RETURN v_result;
END
$$;

CREATE FUNCTION platform.read_get_run(p_tenant text, p_user text, p_id uuid)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_result text;
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant, true);
  SELECT jsonb_build_object('run', to_jsonb(r) - 'tenant_id' - 'user_id')::text
    INTO v_result
    FROM platform.runs r
   WHERE r.tenant_id = p_tenant AND r.user_id = p_user AND r.id = p_id;
  RETURN v_result;
END
$$;

CREATE FUNCTION platform.read_search_projects(p_tenant text, p_user text, p_like text,
                                              p_status text, p_limit integer)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_result text;
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant, true);
  SELECT jsonb_build_object('projects', coalesce(jsonb_agg(x.j ORDER BY x.n), '[]'::jsonb),
                            'count', count(*))::text
    INTO v_result
    FROM (SELECT jsonb_build_object('id', p.id, 'name', p.name, 'description', p.description,
                                    'status', p.status, 'task_count', t.total,
                                    'open_task_count', t.open, 'updated_at', p.updated_at) AS j,
                 lower(p.name) AS n
            FROM platform.projects p
            CROSS JOIN LATERAL (SELECT count(*) AS total,
                                       count(*) FILTER (WHERE t.status <> 'done') AS open
                                  FROM platform.tasks t
                                 WHERE t.tenant_id = p.tenant_id AND t.project_id = p.id) t
           WHERE p.tenant_id = p_tenant AND p.user_id = p_user
             AND (p.name ILIKE p_like OR p.description ILIKE p_like)
             AND (p_status = '' OR p.status = p_status)
           ORDER BY lower(p.name) LIMIT p_limit) x;
  RETURN v_result;
END
$$;

-- The id of the user's project `p_id`, or named `p_name` when p_id is NULL.
CREATE FUNCTION platform.resolve_project(p_tenant text, p_user text, p_id uuid, p_name text)
RETURNS uuid LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_id uuid;
BEGIN
  IF p_id IS NOT NULL THEN
    SELECT p.id INTO v_id FROM platform.projects p
     WHERE p.tenant_id = p_tenant AND p.user_id = p_user AND p.id = p_id;
  ELSE
    SELECT p.id INTO v_id FROM platform.projects p
     WHERE p.tenant_id = p_tenant AND p.user_id = p_user AND lower(p.name) = lower(p_name);
  END IF;
  RETURN v_id;
END
$$;

CREATE FUNCTION platform.read_get_project_details(p_tenant text, p_user text, p_id uuid,
                                                  p_name text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_project uuid;
  v_result text;
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant, true);
  v_project := platform.resolve_project(p_tenant, p_user, p_id, p_name);
  IF v_project IS NULL THEN
    RETURN NULL;
  END IF;
  SELECT jsonb_build_object(
           'project', to_jsonb(p) - 'tenant_id' - 'user_id',
           'tasks', (SELECT coalesce(jsonb_agg(to_jsonb(t) - 'tenant_id' - 'project_id'
                                               ORDER BY t.position, t.id), '[]'::jsonb)
                       FROM platform.tasks t
                      WHERE t.tenant_id = p.tenant_id AND t.project_id = p.id),
           'context_documents',
             (SELECT coalesce(jsonb_agg(jsonb_build_object('id', d.id, 'title', d.title,
                                                           'content', d.content,
                                                           'created_at', d.created_at)
                                        ORDER BY d.created_at, d.id), '[]'::jsonb)
                FROM platform.context_documents d
               WHERE d.tenant_id = p.tenant_id AND d.project_id = p.id))::text
    INTO v_result
    FROM platform.projects p
   WHERE p.tenant_id = p_tenant AND p.user_id = p_user AND p.id = v_project;
  RETURN v_result;
END
$$;

CREATE FUNCTION platform.read_list_tasks(p_tenant text, p_user text, p_id uuid, p_name text,
                                         p_status text)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_project uuid;
  v_result text;
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant, true);
  v_project := platform.resolve_project(p_tenant, p_user, p_id, p_name);
  IF v_project IS NULL THEN
    RETURN NULL;
  END IF;
  SELECT jsonb_build_object(
           'project', jsonb_build_object('id', p.id, 'name', p.name),
           'tasks', (SELECT coalesce(jsonb_agg(to_jsonb(t) - 'tenant_id' - 'project_id'
                                               ORDER BY t.position, t.id), '[]'::jsonb)
                       FROM platform.tasks t
                      WHERE t.tenant_id = p.tenant_id AND t.project_id = p.id
                        AND (p_status = '' OR t.status = p_status)))::text
    INTO v_result
    FROM platform.projects p
   WHERE p.tenant_id = p_tenant AND p.user_id = p_user AND p.id = v_project;
  RETURN v_result;
END
$$;

CREATE FUNCTION platform.read_list_project_templates(p_tenant text, p_user text, p_like text,
                                                     p_limit integer)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_result text;
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant, true);
  SELECT jsonb_build_object('templates', coalesce(jsonb_agg(x.j ORDER BY x.n), '[]'::jsonb),
                            'count', count(*))::text
    INTO v_result
    FROM (SELECT (to_jsonb(pt) - 'tenant_id' - 'user_id') AS j, lower(pt.name) AS n
            FROM platform.project_templates pt
           WHERE pt.tenant_id = p_tenant AND pt.user_id = p_user
             AND (pt.name ILIKE p_like OR pt.description ILIKE p_like)
           ORDER BY lower(pt.name) LIMIT p_limit) x;
  RETURN v_result;
END
$$;

DO $$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
            WHERE p.pronamespace = 'platform'::regnamespace
              AND (p.proname LIKE 'read\_%' OR p.proname LIKE 'resolve\_%') LOOP
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO omniforge_app', f);
  END LOOP;
END
$$;
