-- The approval audit trail: one row per decision on a pending action (or
-- plan), whoever made it: the user approving, rejecting or editing it (in
-- words or through the API), the approval policy running or refusing it,
-- or its time running out. A decision names the action it was about by id
-- and digest, so the trail says exactly what was approved. Rows are only
-- added; ChatService.ListActions reads a conversation's, newest first.
-- risk and outcome are the enum values' names without their prefix, in
-- lower case (executor.v1.ToolRisk, orchestrator.v1.ActionOutcome).
-- tenant_id leads every key so the schema distributes by tenant; row-level
-- security confines every statement to the tenant set in app.tenant_id.

CREATE TABLE orchestration.approval_decisions (
  tenant_id       text        NOT NULL,
  id              uuid        NOT NULL,
  user_id         text        NOT NULL,
  conversation_id uuid        NOT NULL,
  turn_id         text        NOT NULL DEFAULT '',
  action_id       text        NOT NULL,
  digest          text        NOT NULL DEFAULT '',
  tool            text        NOT NULL DEFAULT '',
  summary         text        NOT NULL DEFAULT '',
  risk            text        NOT NULL
    CHECK (risk IN ('unspecified', 'read', 'write', 'high')),
  outcome         text        NOT NULL
    CHECK (outcome IN ('approved', 'rejected', 'edited', 'expired', 'stale', 'denied',
                       'auto_approved')),
  decided_by      text        NOT NULL,
  via             text        NOT NULL CHECK (via IN ('words', 'api', 'policy')),
  decided_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
-- A conversation's trail, newest first (id, a UUIDv7, orders decisions of
-- the same instant as they were recorded).
CREATE INDEX approval_decisions_by_conversation ON orchestration.approval_decisions
  (tenant_id, user_id, conversation_id, decided_at DESC, id DESC);

GRANT SELECT, INSERT ON orchestration.approval_decisions TO omniforge_app;

ALTER TABLE orchestration.approval_decisions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orchestration.approval_decisions TO omniforge_app
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
