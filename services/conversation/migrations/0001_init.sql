-- Conversation memory. tenant_id leads every key so the schema distributes
-- by tenant (Citus) and every index scan stays inside one tenant.

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'omniforge_app') THEN
    CREATE ROLE omniforge_app NOLOGIN NOSUPERUSER NOBYPASSRLS;
  END IF;
END
$$;
-- The migrating role must be able to SET ROLE to the application role.
GRANT omniforge_app TO CURRENT_USER;

CREATE SCHEMA IF NOT EXISTS conversation;
GRANT USAGE ON SCHEMA conversation TO omniforge_app;

-- Per-tenant data keys, wrapped (encrypted) by the master key.
CREATE TABLE conversation.tenant_keys (
  tenant_id     text        NOT NULL,
  key_id        integer     NOT NULL,
  master_key_id text        NOT NULL,
  wrapped_key   bytea       NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, key_id)
);

CREATE TABLE conversation.conversations (
  tenant_id   text        NOT NULL,
  id          uuid        NOT NULL,
  user_id     text        NOT NULL,
  kind        smallint    NOT NULL,
  parent_id   uuid,
  key_id      integer     NOT NULL,
  title       bytea       NOT NULL,  -- nonce || ciphertext
  metadata    jsonb       NOT NULL DEFAULT '{}'::jsonb,
  last_seq    bigint      NOT NULL DEFAULT 0,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, parent_id)
    REFERENCES conversation.conversations (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX conversations_by_user_activity
  ON conversation.conversations (tenant_id, user_id, updated_at DESC, id DESC)
  WHERE parent_id IS NULL;
CREATE INDEX conversations_by_parent
  ON conversation.conversations (tenant_id, parent_id, updated_at DESC, id DESC)
  WHERE parent_id IS NOT NULL;
CREATE INDEX conversations_by_idle ON conversation.conversations (updated_at)
  WHERE parent_id IS NULL;

CREATE TABLE conversation.messages (
  tenant_id       text        NOT NULL,
  conversation_id uuid        NOT NULL,
  seq             bigint      NOT NULL,
  id              uuid        NOT NULL,
  role            smallint    NOT NULL,
  key_id          integer     NOT NULL,
  content         bytea       NOT NULL,  -- nonce || ciphertext
  token_count     integer     NOT NULL,
  metadata        jsonb       NOT NULL DEFAULT '{}'::jsonb,
  idempotency_key text,
  created_at      timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, conversation_id, seq),
  FOREIGN KEY (tenant_id, conversation_id)
    REFERENCES conversation.conversations (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX messages_by_idempotency_key
  ON conversation.messages (tenant_id, conversation_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;

GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA conversation TO omniforge_app;

-- Row-level security: the second wall behind the application's own checks.
-- The service sets app.tenant_id per transaction; a row of another tenant is
-- invisible and cannot be written.
ALTER TABLE conversation.tenant_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE conversation.conversations ENABLE ROW LEVEL SECURITY;
ALTER TABLE conversation.messages ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON conversation.tenant_keys TO omniforge_app
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
CREATE POLICY tenant_isolation ON conversation.conversations TO omniforge_app
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
CREATE POLICY tenant_isolation ON conversation.messages TO omniforge_app
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

-- Retention is the one operation that spans tenants: it runs with the
-- owner's rights (which row-level security does not restrict) and can do
-- nothing but delete idle top-level conversations (their messages and agent
-- dialogues follow by cascade), at most p_limit per call.
CREATE FUNCTION conversation.purge_idle(p_default_days integer, p_tenant_days jsonb,
                                        p_now timestamptz, p_limit integer)
RETURNS bigint
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
  WITH doomed AS (
    SELECT c.tenant_id, c.id
    FROM conversation.conversations c
    WHERE c.parent_id IS NULL
      AND c.updated_at < p_now - make_interval(
            days => COALESCE((p_tenant_days ->> c.tenant_id)::integer, p_default_days))
    ORDER BY c.updated_at
    LIMIT p_limit
  ), deleted AS (
    DELETE FROM conversation.conversations c
    USING doomed d
    WHERE c.tenant_id = d.tenant_id AND c.id = d.id
    RETURNING 1
  )
  SELECT count(*) FROM deleted
$$;
REVOKE ALL ON FUNCTION conversation.purge_idle(integer, jsonb, timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION conversation.purge_idle(integer, jsonb, timestamptz, integer) TO omniforge_app;
