-- The platform the built-in tools act on: agents, skills, runs, projects,
-- tasks, project templates, context documents, and the record of tool calls
-- made with an idempotency key. tenant_id leads every key so the schema
-- distributes by tenant (Citus) and every index scan stays inside one tenant;
-- rows also carry the owning user, and every tool filters on both.

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'omniforge_app') THEN
    CREATE ROLE omniforge_app NOLOGIN NOSUPERUSER NOBYPASSRLS;
  END IF;
END
$$;
-- The migrating role must be able to SET ROLE to the application role.
GRANT omniforge_app TO CURRENT_USER;

CREATE SCHEMA IF NOT EXISTS platform;
GRANT USAGE ON SCHEMA platform TO omniforge_app;

CREATE TABLE platform.agents (
  tenant_id    text        NOT NULL,
  id           uuid        NOT NULL,
  user_id      text        NOT NULL,
  name         text        NOT NULL,
  description  text        NOT NULL DEFAULT '',
  instructions text        NOT NULL DEFAULT '',
  schedule     text        NOT NULL DEFAULT '',
  skills       text[]      NOT NULL DEFAULT '{}',
  config       jsonb       NOT NULL DEFAULT '{}'::jsonb,
  status       text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused')),
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX agents_by_name ON platform.agents (tenant_id, user_id, lower(name));

CREATE TABLE platform.skills (
  tenant_id    text        NOT NULL,
  id           uuid        NOT NULL,
  user_id      text        NOT NULL,
  name         text        NOT NULL,
  description  text        NOT NULL DEFAULT '',
  instructions text        NOT NULL DEFAULT '',
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX skills_by_name ON platform.skills (tenant_id, user_id, lower(name));

-- One run of an agent, with what it was given and what it produced.
CREATE TABLE platform.runs (
  tenant_id   text        NOT NULL,
  id          uuid        NOT NULL,
  user_id     text        NOT NULL,
  agent_id    uuid        NOT NULL,
  agent_name  text        NOT NULL,
  status      text        NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
  input       jsonb       NOT NULL DEFAULT '{}'::jsonb,
  output      jsonb,
  error       text        NOT NULL DEFAULT '',
  started_at  timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, agent_id) REFERENCES platform.agents (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX runs_by_user ON platform.runs (tenant_id, user_id, started_at DESC);
CREATE INDEX runs_by_agent ON platform.runs (tenant_id, agent_id, started_at DESC);

CREATE TABLE platform.project_templates (
  tenant_id   text        NOT NULL,
  id          uuid        NOT NULL,
  user_id     text        NOT NULL,
  name        text        NOT NULL,
  description text        NOT NULL DEFAULT '',
  -- The tasks a project made from the template starts with: [{title, description}].
  tasks       jsonb       NOT NULL DEFAULT '[]'::jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX project_templates_by_name
  ON platform.project_templates (tenant_id, user_id, lower(name));

CREATE TABLE platform.projects (
  tenant_id   text        NOT NULL,
  id          uuid        NOT NULL,
  user_id     text        NOT NULL,
  name        text        NOT NULL,
  description text        NOT NULL DEFAULT '',
  status      text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
  template_id uuid,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, template_id)
    REFERENCES platform.project_templates (tenant_id, id) ON DELETE SET NULL (template_id)
);
CREATE UNIQUE INDEX projects_by_name ON platform.projects (tenant_id, user_id, lower(name));

CREATE TABLE platform.tasks (
  tenant_id   text        NOT NULL,
  id          uuid        NOT NULL,
  project_id  uuid        NOT NULL,
  position    integer     NOT NULL,
  title       text        NOT NULL,
  description text        NOT NULL DEFAULT '',
  status      text        NOT NULL DEFAULT 'todo'
                          CHECK (status IN ('todo', 'in_progress', 'blocked', 'done')),
  assignee    text        NOT NULL DEFAULT '',
  due_date    date,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, project_id) REFERENCES platform.projects (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX tasks_by_project ON platform.tasks (tenant_id, project_id, position);

-- What a project is about: briefs, goals, constraints, for the agents that
-- work on it.
CREATE TABLE platform.context_documents (
  tenant_id  text        NOT NULL,
  id         uuid        NOT NULL,
  project_id uuid        NOT NULL,
  user_id    text        NOT NULL,
  title      text        NOT NULL,
  content    text        NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, project_id) REFERENCES platform.projects (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX context_documents_by_project
  ON platform.context_documents (tenant_id, project_id, created_at);

-- InvokeTool calls made with an idempotency key. A call claims its key
-- ('running', with a lease until its deadline), runs the tool, then records
-- the result ('done'); a retry finds the result and does not run the tool
-- again. A claim whose lease ran out (its executor died) can be taken over.
CREATE TABLE platform.tool_invocations (
  tenant_id       text        NOT NULL,
  user_id         text        NOT NULL,
  idempotency_key text        NOT NULL,
  tool_name       text        NOT NULL,
  arguments_hash  text        NOT NULL,
  status          text        NOT NULL CHECK (status IN ('running', 'done')),
  lease_until     timestamptz NOT NULL,
  result          text,
  is_error        boolean     NOT NULL DEFAULT false,
  truncated       boolean     NOT NULL DEFAULT false,
  duration_us     bigint      NOT NULL DEFAULT 0,
  created_at      timestamptz NOT NULL DEFAULT now(),
  completed_at    timestamptz,
  PRIMARY KEY (tenant_id, user_id, idempotency_key)
);

GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA platform TO omniforge_app;

-- Row-level security: the second wall behind the tools' own checks. The
-- service sets app.tenant_id per transaction; a row of another tenant is
-- invisible and cannot be written.
DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['agents', 'skills', 'runs', 'project_templates', 'projects', 'tasks',
                           'context_documents', 'tool_invocations']
  LOOP
    EXECUTE format('ALTER TABLE platform.%I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('CREATE POLICY tenant_isolation ON platform.%I TO omniforge_app '
                   'USING (tenant_id = current_setting(''app.tenant_id'', true)) '
                   'WITH CHECK (tenant_id = current_setting(''app.tenant_id'', true))', t);
  END LOOP;
END
$$;
