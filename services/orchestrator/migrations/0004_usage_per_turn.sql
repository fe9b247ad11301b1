-- Model-call usage is stored one row per turn: llm_turn_usage holds who the
-- turn served and, in `calls`, one object per model call it made. A chat
-- turn makes several calls, so this writes a fraction of the rows.
-- orchestration.llm_usage stays the place to query usage one row per call,
-- with the columns it always had: it becomes a view over the rows stored
-- one per call before this migration (now llm_usage_calls) and the calls
-- unnested from llm_turn_usage. The view is security_invoker, so the
-- tables' row-level security applies to whoever queries it.
-- An orchestrator of the previous release still inserts one row per call
-- into orchestration.llm_usage while a rolling update runs: an INSTEAD OF
-- trigger stores such rows in llm_usage_calls.

ALTER TABLE orchestration.llm_usage RENAME TO llm_usage_calls;
ALTER TABLE orchestration.llm_usage_calls RENAME CONSTRAINT llm_usage_pkey TO llm_usage_calls_pkey;
ALTER INDEX orchestration.llm_usage_by_time RENAME TO llm_usage_calls_by_time;

-- calls: [{"id", "created_at", "operation_type", "profile", "provider",
-- "model", "prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd",
-- "latency_ms", "ttft_ms" (null when nothing was streamed), "attempts",
-- "fallback_used", "outcome" ('ok' or 'error'), "error_kind"}], in the order
-- the calls ended; created_at of a call is when it ended, that of the row
-- when the row was stored.
CREATE TABLE orchestration.llm_turn_usage (
  tenant_id       text        NOT NULL,
  id              uuid        NOT NULL,
  user_id         text        NOT NULL,
  conversation_id uuid,
  turn_id         text        NOT NULL DEFAULT '',
  context_type    text        NOT NULL DEFAULT '',
  calls           jsonb       NOT NULL
    CHECK (CASE WHEN jsonb_typeof(calls) = 'array' THEN jsonb_array_length(calls) > 0
                ELSE false END),
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX llm_turn_usage_by_time ON orchestration.llm_turn_usage (tenant_id, created_at);

GRANT SELECT, INSERT ON orchestration.llm_turn_usage TO omniforge_app;

ALTER TABLE orchestration.llm_turn_usage ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orchestration.llm_turn_usage TO omniforge_app
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

CREATE VIEW orchestration.llm_usage WITH (security_invoker = true) AS
  SELECT tenant_id, id, user_id, conversation_id, turn_id, context_type, operation_type, profile,
         provider, model, prompt_tokens, completion_tokens, cached_tokens, cost_usd, latency_ms,
         ttft_ms, attempts, fallback_used, outcome, error_kind, created_at
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
         coalesce((c.call ->> 'created_at')::timestamptz, t.created_at)
    FROM orchestration.llm_turn_usage AS t
         CROSS JOIN LATERAL jsonb_array_elements(t.calls) AS c(call);

-- The table's defaults, for inserts that leave these columns out.
ALTER VIEW orchestration.llm_usage ALTER COLUMN turn_id SET DEFAULT '';
ALTER VIEW orchestration.llm_usage ALTER COLUMN context_type SET DEFAULT '';
ALTER VIEW orchestration.llm_usage ALTER COLUMN error_kind SET DEFAULT '';
ALTER VIEW orchestration.llm_usage ALTER COLUMN created_at SET DEFAULT now();

-- Runs as the inserting role, so llm_usage_calls' row-level security
-- checks the row's tenant as it did when llm_usage was that table.
CREATE FUNCTION orchestration.llm_usage_insert_call() RETURNS trigger
  LANGUAGE plpgsql SECURITY INVOKER AS $$
BEGIN
  INSERT INTO orchestration.llm_usage_calls (
    tenant_id, id, user_id, conversation_id, turn_id, context_type, operation_type, profile,
    provider, model, prompt_tokens, completion_tokens, cached_tokens, cost_usd, latency_ms,
    ttft_ms, attempts, fallback_used, outcome, error_kind, created_at)
  VALUES (
    NEW.tenant_id, NEW.id, NEW.user_id, NEW.conversation_id, NEW.turn_id, NEW.context_type,
    NEW.operation_type, NEW.profile, NEW.provider, NEW.model, NEW.prompt_tokens,
    NEW.completion_tokens, NEW.cached_tokens, NEW.cost_usd, NEW.latency_ms, NEW.ttft_ms,
    NEW.attempts, NEW.fallback_used, NEW.outcome, NEW.error_kind, NEW.created_at);
  RETURN NEW;
END
$$;
CREATE TRIGGER insert_call INSTEAD OF INSERT ON orchestration.llm_usage
  FOR EACH ROW EXECUTE FUNCTION orchestration.llm_usage_insert_call();

GRANT SELECT, INSERT ON orchestration.llm_usage TO omniforge_app;
GRANT EXECUTE ON FUNCTION orchestration.llm_usage_insert_call() TO omniforge_app;
