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
    -- The idle test is repeated here: if an append revived a conversation
    -- after `doomed` was read, the delete waits for its row lock and then
    -- re-checks this condition on the newest version, which keeps it.
    DELETE FROM conversation.conversations c
    USING doomed d
    WHERE c.tenant_id = d.tenant_id AND c.id = d.id
      AND c.updated_at < p_now - make_interval(
            days => COALESCE((p_tenant_days ->> c.tenant_id)::integer, p_default_days))
    RETURNING 1
  )
  SELECT count(*) FROM deleted
$$;
REVOKE ALL ON FUNCTION conversation.purge_idle(integer, jsonb, timestamptz, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION conversation.purge_idle(integer, jsonb, timestamptz, integer) TO omniforge_app;

-- Appends a batch of prepared (already sealed) messages in one round trip.
-- p_items: [{o, tenant, u, c, i, r, k, b, t, m, ik, at}] with o the caller's
-- ordinal, u the caller's user id, b the sealed content in base64 and at the
-- creation time in microseconds. Idempotency keys must be unique per
-- conversation within one call. Returns one row per item: outcome 'stored'
-- (with the assigned seq), 'duplicate' (the stored message for that key) or
-- 'not_found' (no such conversation of that user).
CREATE FUNCTION conversation.append_messages(p_items jsonb)
RETURNS TABLE (ord integer, outcome text, id uuid, seq bigint, role smallint, key_id integer,
               content bytea, token_count integer, metadata text, created_us bigint)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  v_tenant text;
BEGIN
  FOR v_tenant IN
    SELECT DISTINCT x.tenant FROM jsonb_to_recordset(p_items) AS x(tenant text) ORDER BY 1
  LOOP
    PERFORM set_config('app.tenant_id', v_tenant, true);
    -- Lock first, in id order (no deadlocks between concurrent batches);
    -- the statement below then runs on a fresh snapshot, so it sees every
    -- message a concurrent writer committed before we got the lock.
    PERFORM 1 FROM conversation.conversations cv
      WHERE cv.tenant_id = v_tenant
        AND cv.id IN (SELECT x.c FROM jsonb_to_recordset(p_items) AS x(tenant text, c uuid)
                      WHERE x.tenant = v_tenant)
      ORDER BY cv.id FOR UPDATE;
    RETURN QUERY
    WITH items AS (
      SELECT x.* FROM jsonb_to_recordset(p_items) AS x(o integer, tenant text, u text, c uuid,
        i uuid, r smallint, k integer, b text, t integer, m jsonb, ik text, at bigint)
      WHERE x.tenant = v_tenant
    ), owned AS (
      SELECT x.*, cv.last_seq FROM items x
      JOIN conversation.conversations cv
        ON cv.tenant_id = v_tenant AND cv.id = x.c AND cv.user_id = x.u
    ), existing AS (
      SELECT x.o, msg.* FROM owned x
      JOIN conversation.messages msg
        ON msg.tenant_id = v_tenant AND msg.conversation_id = x.c AND msg.idempotency_key = x.ik
    ), fresh AS (
      SELECT x.*, x.last_seq + row_number() OVER (PARTITION BY x.c ORDER BY x.o) AS new_seq
      FROM owned x WHERE NOT EXISTS (SELECT 1 FROM existing e WHERE e.o = x.o)
    ), inserted AS (
      INSERT INTO conversation.messages (tenant_id, conversation_id, seq, id, role, key_id,
        content, token_count, metadata, idempotency_key, created_at)
      SELECT v_tenant, f.c, f.new_seq, f.i, f.r, f.k, decode(f.b, 'base64'), f.t, f.m, f.ik,
             'epoch'::timestamptz + f.at * interval '1 microsecond'
      FROM fresh f
      RETURNING 1
    ), bumped AS (
      UPDATE conversation.conversations cv
      SET last_seq = s.max_seq,
          updated_at = GREATEST(cv.updated_at,
                                'epoch'::timestamptz + s.max_at * interval '1 microsecond')
      FROM (SELECT f.c, max(f.new_seq) AS max_seq, max(f.at) AS max_at FROM fresh f GROUP BY f.c) s
      WHERE cv.tenant_id = v_tenant AND cv.id = s.c
      RETURNING 1
    )
    SELECT x.o,
           CASE WHEN f.o IS NOT NULL THEN 'stored'
                WHEN e.o IS NOT NULL THEN 'duplicate'
                ELSE 'not_found' END,
           COALESCE(f.i, e.id), COALESCE(f.new_seq, e.seq), e.role, e.key_id, e.content,
           e.token_count, e.metadata::text,
           (extract(epoch FROM e.created_at) * 1000000)::bigint
    FROM items x
    LEFT JOIN fresh f ON f.o = x.o
    LEFT JOIN existing e ON e.o = x.o;
  END LOOP;
END
$$;
GRANT EXECUTE ON FUNCTION conversation.append_messages(jsonb) TO omniforge_app;

-- The same as append_messages for a single message, with plain parameters:
-- a lone append (any quiet moment) is the latency that users feel, and this
-- path costs about what a bare INSERT does. Same result columns.
CREATE FUNCTION conversation.append_message(p_tenant text, p_user text, p_conversation uuid,
                                            p_id uuid, p_role smallint, p_key_id integer,
                                            p_content bytea, p_token_count integer,
                                            p_metadata jsonb, p_idempotency_key text,
                                            p_created_us bigint)
RETURNS TABLE (ord integer, outcome text, id uuid, seq bigint, role smallint, key_id integer,
               content bytea, token_count integer, metadata text, created_us bigint)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  v_seq bigint;
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant, true);
  SELECT cv.last_seq INTO v_seq FROM conversation.conversations cv
   WHERE cv.tenant_id = p_tenant AND cv.id = p_conversation AND cv.user_id = p_user
   FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 0, 'not_found'::text, NULL::uuid, NULL::bigint, NULL::smallint,
                        NULL::integer, NULL::bytea, NULL::integer, NULL::text, NULL::bigint;
    RETURN;
  END IF;
  IF p_idempotency_key IS NOT NULL THEN
    -- Under the lock, so a concurrent writer of the same key has committed.
    RETURN QUERY
    SELECT 0, 'duplicate'::text, m.id, m.seq, m.role, m.key_id, m.content, m.token_count,
           m.metadata::text, (extract(epoch FROM m.created_at) * 1000000)::bigint
    FROM conversation.messages m
    WHERE m.tenant_id = p_tenant AND m.conversation_id = p_conversation
      AND m.idempotency_key = p_idempotency_key;
    IF FOUND THEN RETURN; END IF;
  END IF;
  INSERT INTO conversation.messages (tenant_id, conversation_id, seq, id, role, key_id, content,
                                     token_count, metadata, idempotency_key, created_at)
  VALUES (p_tenant, p_conversation, v_seq + 1, p_id, p_role, p_key_id, p_content, p_token_count,
          p_metadata, p_idempotency_key,
          'epoch'::timestamptz + p_created_us * interval '1 microsecond');
  UPDATE conversation.conversations cv
     SET last_seq = v_seq + 1,
         updated_at = GREATEST(cv.updated_at,
                               'epoch'::timestamptz + p_created_us * interval '1 microsecond')
   WHERE cv.tenant_id = p_tenant AND cv.id = p_conversation;
  RETURN QUERY SELECT 0, 'stored'::text, p_id, v_seq + 1, NULL::smallint, NULL::integer,
                      NULL::bytea, NULL::integer, NULL::text, NULL::bigint;
END
$$;
GRANT EXECUTE ON FUNCTION conversation.append_message(text, text, uuid, uuid, smallint, integer,
                                                      bytea, integer, jsonb, text, bigint)
  TO omniforge_app;

-- One page of a conversation's messages, newest first, in one round trip:
-- sets the tenant for row-level security, checks that the conversation is
-- the user's (no rows at all when it is not), then returns up to p_limit
-- messages with seq < p_before_seq (0: no bound). A conversation without
-- messages yields one row of NULL message columns. Every row carries the
-- conversation's kind. The seq bound is a plain range (no OR), so even the
-- cached generic plan reads the last entries of the primary key backwards
-- instead of sorting a long conversation.
CREATE FUNCTION conversation.message_page(p_tenant text, p_user text, p_conversation uuid,
                                          p_before_seq bigint, p_limit integer)
RETURNS TABLE (id text, seq bigint, role smallint, key_id integer, content bytea,
               token_count integer, metadata text, created_us bigint, kind smallint)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  v_below bigint := CASE WHEN p_before_seq = 0 THEN 9223372036854775807 ELSE p_before_seq END;
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant, true);
  RETURN QUERY
  SELECT msg.id::text, msg.seq, msg.role, msg.key_id, msg.content, msg.token_count,
         msg.metadata::text, (extract(epoch FROM msg.created_at) * 1000000)::bigint, cv.kind
  FROM conversation.conversations cv
  LEFT JOIN LATERAL (
    SELECT * FROM conversation.messages m
    WHERE m.tenant_id = p_tenant AND m.conversation_id = cv.id AND m.seq < v_below
    ORDER BY m.seq DESC LIMIT p_limit
  ) msg ON true
  WHERE cv.tenant_id = p_tenant AND cv.id = p_conversation AND cv.user_id = p_user;
END
$$;
GRANT EXECUTE ON FUNCTION conversation.message_page(text, text, uuid, bigint, integer)
  TO omniforge_app;
