-- flows: one row per flow (a task that spans turns) with its context box
-- (GOAL, ENTITIES, CONSTRAINTS, DATA, PROGRESS, BLOCKERS, NEXT, notes) and
-- where it stands; written once per turn, read when a turn continues or
-- resumes the flow.
-- error_log: orchestration-level failures of turns (guardrails reached,
-- downstream services unavailable, the model failing after its fallbacks),
-- written in background batches.
-- tenant_id leads every key so the schema distributes by tenant.

CREATE TABLE orchestration.flows (
  tenant_id       text        NOT NULL,
  flow_id         text        NOT NULL,
  user_id         text        NOT NULL,
  conversation_id uuid        NOT NULL,
  turn_id         text        NOT NULL,
  status          text        NOT NULL CHECK (status IN ('done', 'waiting', 'suspended')),
  box             jsonb       NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, flow_id)
);
CREATE INDEX flows_by_conversation ON orchestration.flows (tenant_id, conversation_id, updated_at);

GRANT SELECT, INSERT, UPDATE ON orchestration.flows TO omniforge_app;

ALTER TABLE orchestration.flows ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orchestration.flows TO omniforge_app
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

CREATE TABLE orchestration.error_log (
  tenant_id       text        NOT NULL,
  id              uuid        NOT NULL,
  user_id         text        NOT NULL,
  conversation_id uuid,
  turn_id         text        NOT NULL DEFAULT '',
  kind            text        NOT NULL,
  message         text        NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX error_log_by_time ON orchestration.error_log (tenant_id, created_at);

GRANT SELECT, INSERT ON orchestration.error_log TO omniforge_app;

ALTER TABLE orchestration.error_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orchestration.error_log TO omniforge_app
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
