-- Plans made by agent_create_plan and their steps: what each step is, where
-- it is and what it produced, so a plan survives a restart of the
-- orchestrator (finished steps keep their results and are not run again).
-- tenant_id leads every key so the schema distributes by tenant; row-level
-- security confines every statement to the tenant set in app.tenant_id.
-- Independent of 0002: either may be applied first.

CREATE TABLE orchestration.plans (
  tenant_id          text        NOT NULL,
  id                 uuid        NOT NULL,
  user_id            text        NOT NULL,
  conversation_id    uuid,
  objective          text        NOT NULL,
  context_type       text        NOT NULL,
  entity_id          text        NOT NULL DEFAULT '',
  execution_mode     text        NOT NULL
    CHECK (execution_mode IN ('auto_execute', 'draft_only', 'agent_review')),
  status             text        NOT NULL
    CHECK (status IN ('draft', 'pending_review', 'approved', 'running', 'waiting_on_user',
                      'completed', 'failed', 'rejected')),
  requested_outputs  jsonb       NOT NULL DEFAULT '[]',
  priority_entities  jsonb       NOT NULL DEFAULT '[]',
  writes_approved    boolean     NOT NULL DEFAULT false,
  review_verdict     text        CHECK (review_verdict IN ('approved', 'rejected', 'needs_changes')),
  review_notes       text        NOT NULL DEFAULT '',
  -- {"step_id", "question", "options"} while status is waiting_on_user.
  pending_question   jsonb,
  summary            text        NOT NULL DEFAULT '',
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX plans_by_conversation ON orchestration.plans (tenant_id, conversation_id, created_at);

CREATE TABLE orchestration.plan_steps (
  tenant_id                text        NOT NULL,
  plan_id                  uuid        NOT NULL,
  step_id                  text        NOT NULL,
  position                 integer     NOT NULL,
  description              text        NOT NULL,
  tools                    jsonb       NOT NULL DEFAULT '[]',
  needs_executor           boolean     NOT NULL DEFAULT true,
  depends_on               jsonb       NOT NULL DEFAULT '[]',
  expected_output          text        NOT NULL DEFAULT '',
  -- [{"tool", "arguments"}]: the calls the step consists of, when known.
  tool_calls               jsonb       NOT NULL DEFAULT '[]',
  status                   text        NOT NULL
    CHECK (status IN ('pending', 'running', 'completed', 'failed', 'skipped')),
  result_summary           text        NOT NULL DEFAULT '',
  result                   jsonb       NOT NULL DEFAULT '{}',
  error                    text        NOT NULL DEFAULT '',
  -- [{"question", "answer", "answered_by"}]: answers a re-run gets again.
  answers                  jsonb       NOT NULL DEFAULT '[]',
  dialogue_conversation_id text        NOT NULL DEFAULT '',
  attempts                 integer     NOT NULL DEFAULT 0,
  started_at               timestamptz,
  finished_at              timestamptz,
  PRIMARY KEY (tenant_id, plan_id, step_id),
  FOREIGN KEY (tenant_id, plan_id) REFERENCES orchestration.plans (tenant_id, id) ON DELETE CASCADE
);

GRANT SELECT, INSERT, UPDATE, DELETE ON orchestration.plans, orchestration.plan_steps
  TO omniforge_app;

ALTER TABLE orchestration.plans ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orchestration.plans TO omniforge_app
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

ALTER TABLE orchestration.plan_steps ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orchestration.plan_steps TO omniforge_app
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
