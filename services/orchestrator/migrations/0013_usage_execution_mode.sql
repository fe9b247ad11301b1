-- The usage rows say how the plan their calls served is carried out:
-- execution_mode is auto_execute, draft_only or agent_review when the turn
-- (or plan step) made or acted on a plan, '' otherwise (and for every row
-- stored before this migration). Cost can then be told apart by mode: what
-- a reviewer round costs, what drafts the user never ran cost.
-- orchestration.llm_usage, the one-row-per-call view, gains the column at
-- its end ('' for the calls stored one per row before llm_turn_usage); the
-- previous release's inserts into the view leave it out and keep working.

ALTER TABLE orchestration.llm_turn_usage
  ADD COLUMN execution_mode text NOT NULL DEFAULT ''
    CHECK (execution_mode IN ('', 'auto_execute', 'draft_only', 'agent_review'));

CREATE OR REPLACE VIEW orchestration.llm_usage WITH (security_invoker = true) AS
  SELECT tenant_id, id, user_id, conversation_id, turn_id, context_type, operation_type, profile,
         provider, model, prompt_tokens, completion_tokens, cached_tokens, cost_usd, latency_ms,
         ttft_ms, attempts, fallback_used, outcome, error_kind, created_at,
         ''::text AS execution_mode
    FROM orchestration.llm_usage_calls
  UNION ALL
  SELECT t.tenant_id,
         (c.call ->> 'id')::uuid,
         t.user_id,
         t.conversation_id,
         t.turn_id,
         t.context_type,
         c.call ->> 'operation_type',
         c.call ->> 'profile',
         c.call ->> 'provider',
         c.call ->> 'model',
         (c.call ->> 'prompt_tokens')::bigint,
         (c.call ->> 'completion_tokens')::bigint,
         (c.call ->> 'cached_tokens')::bigint,
         (c.call ->> 'cost_usd')::double precision,
         (c.call ->> 'latency_ms')::double precision,
         (c.call ->> 'ttft_ms')::double precision,
         (c.call ->> 'attempts')::integer,
         (c.call ->> 'fallback_used')::boolean,
         c.call ->> 'outcome',
         coalesce(c.call ->> 'error_kind', ''),
         coalesce((c.call ->> 'created_at')::timestamptz, t.created_at),
         t.execution_mode
    FROM orchestration.llm_turn_usage AS t
         CROSS JOIN LATERAL jsonb_array_elements(t.calls) AS c(call);

ALTER VIEW orchestration.llm_usage ALTER COLUMN execution_mode SET DEFAULT '';
