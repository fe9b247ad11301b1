-- The orchestrator's own records. llm_usage: one row per model call made for
-- a turn (the planner's), with who it was for, what it used and what it cost,
-- so operators can account for spend per tenant, user and conversation.
-- tenant_id leads the key so the schema distributes by tenant.

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'omniforge_app') THEN
    CREATE ROLE omniforge_app NOLOGIN NOSUPERUSER NOBYPASSRLS;
  END IF;
END
$$;
-- The migrating role must be able to SET ROLE to the application role.
GRANT omniforge_app TO CURRENT_USER;

CREATE SCHEMA IF NOT EXISTS orchestration;
GRANT USAGE ON SCHEMA orchestration TO omniforge_app;

CREATE TABLE orchestration.llm_usage (
  tenant_id         text        NOT NULL,
  id                uuid        NOT NULL,
  user_id           text        NOT NULL,
  conversation_id   uuid,
  turn_id           text        NOT NULL DEFAULT '',
  context_type      text        NOT NULL DEFAULT '',
  operation_type    text        NOT NULL,
  profile           text        NOT NULL,
  provider          text        NOT NULL,
  model             text        NOT NULL,
  prompt_tokens     bigint      NOT NULL,
  completion_tokens bigint      NOT NULL,
  cached_tokens     bigint      NOT NULL,
  cost_usd          double precision NOT NULL,
  latency_ms        double precision NOT NULL,
  ttft_ms           double precision,
  attempts          integer     NOT NULL,
  fallback_used     boolean     NOT NULL,
  outcome           text        NOT NULL CHECK (outcome IN ('ok', 'error')),
  error_kind        text        NOT NULL DEFAULT '',
  created_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX llm_usage_by_time ON orchestration.llm_usage (tenant_id, created_at);

GRANT SELECT, INSERT ON orchestration.llm_usage TO omniforge_app;

ALTER TABLE orchestration.llm_usage ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orchestration.llm_usage TO omniforge_app
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
