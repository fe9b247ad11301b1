-- Appends, as of this version:
--
-- A turn writes three rows instead of four: the user's message, the
-- conversation's activity time and the reply. seq is the newest message's
-- seq plus one, read from the messages' primary key under the
-- conversation's row lock, so appending no longer updates the conversation
-- row to count; and updated_at moves with the messages that start a turn
-- (role user, or planner in an agent dialogue), not with the replies that
-- follow them within seconds. last_seq is no longer maintained: it stays only
-- for instances of the previous release while a rolling update replaces
-- them; message counts are read from the messages.
--
-- A group-commit batch comes as parallel arrays, one per column, instead of
-- a JSON document (append_message_batch): the server unnests them instead of
-- parsing JSON three times and decoding base64, and the caller builds a few
-- array literals instead of a JSON tree. Element n of every array is the
-- n-th message; results carry n (1-based) as ord. The caller's user id, the
-- sealed content, the creation time in microseconds; idempotency keys unique
-- per conversation within one call; one row per message with outcome
-- 'stored' (and the assigned seq), 'duplicate' (the stored message for that
-- key) or 'not_found' (no such conversation of that user).

CREATE OR REPLACE FUNCTION conversation.append_message(p_tenant text, p_user text,
                                                       p_conversation uuid, p_id uuid,
                                                       p_role smallint, p_key_id integer,
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
  -- Appends to one conversation take turns on this lock; the statements
  -- after it see every message committed before it was granted.
  PERFORM 1 FROM conversation.conversations cv
   WHERE cv.tenant_id = p_tenant AND cv.id = p_conversation AND cv.user_id = p_user
   FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 0, 'not_found'::text, NULL::uuid, NULL::bigint, NULL::smallint,
                        NULL::integer, NULL::bytea, NULL::integer, NULL::text, NULL::bigint;
    RETURN;
  END IF;
  IF p_idempotency_key IS NOT NULL THEN
    RETURN QUERY
    SELECT 0, 'duplicate'::text, m.id, m.seq, m.role, m.key_id, m.content, m.token_count,
           m.metadata::text, (extract(epoch FROM m.created_at) * 1000000)::bigint
    FROM conversation.messages m
    WHERE m.tenant_id = p_tenant AND m.conversation_id = p_conversation
      AND m.idempotency_key = p_idempotency_key;
    IF FOUND THEN RETURN; END IF;
  END IF;
  -- The newest seq: one step into the messages' primary key from its end
  -- (written as ORDER BY ... LIMIT 1 so the plan never reads them all).
  v_seq := COALESCE((SELECT m.seq FROM conversation.messages m
                      WHERE m.tenant_id = p_tenant AND m.conversation_id = p_conversation
                      ORDER BY m.seq DESC LIMIT 1), 0) + 1;
  INSERT INTO conversation.messages (tenant_id, conversation_id, seq, id, role, key_id, content,
                                     token_count, metadata, idempotency_key, created_at)
  VALUES (p_tenant, p_conversation, v_seq, p_id, p_role, p_key_id, p_content, p_token_count,
          p_metadata, p_idempotency_key,
          'epoch'::timestamptz + p_created_us * interval '1 microsecond');
  IF p_role IN (1, 5) THEN  -- user, planner: a turn starts
    UPDATE conversation.conversations cv
       SET updated_at = GREATEST(cv.updated_at,
                                 'epoch'::timestamptz + p_created_us * interval '1 microsecond')
     WHERE cv.tenant_id = p_tenant AND cv.id = p_conversation;
  END IF;
  RETURN QUERY SELECT 0, 'stored'::text, p_id, v_seq, NULL::smallint, NULL::integer,
                      NULL::bytea, NULL::integer, NULL::text, NULL::bigint;
END
$$;

CREATE FUNCTION conversation.append_message_batch(
    p_tenant text[], p_user text[], p_conversation uuid[], p_id uuid[], p_role smallint[],
    p_key_id integer[], p_content bytea[], p_token_count integer[], p_metadata jsonb[],
    p_idempotency_key text[], p_created_us bigint[])
RETURNS TABLE (ord integer, outcome text, id uuid, seq bigint, role smallint, key_id integer,
               content bytea, token_count integer, metadata text, created_us bigint)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  v_tenant text;
BEGIN
  FOR v_tenant IN SELECT DISTINCT t FROM unnest(p_tenant) AS t ORDER BY 1
  LOOP
    PERFORM set_config('app.tenant_id', v_tenant, true);
    -- Lock first, in id order (no deadlocks between concurrent batches);
    -- the statement below then runs on a fresh snapshot, so it sees every
    -- message a concurrent writer committed before we got the lock.
    PERFORM 1 FROM conversation.conversations cv
      WHERE cv.tenant_id = v_tenant
        AND cv.id IN (SELECT x.c FROM unnest(p_tenant, p_conversation) AS x(tenant, c)
                      WHERE x.tenant = v_tenant)
      ORDER BY cv.id FOR NO KEY UPDATE;
    RETURN QUERY
    WITH items AS (
      SELECT x.* FROM unnest(p_tenant, p_user, p_conversation, p_id, p_role, p_key_id, p_content,
                             p_token_count, p_metadata, p_idempotency_key, p_created_us)
                      WITH ORDINALITY AS x(tenant, u, c, i, r, k, b, t, m, ik, at, o)
      WHERE x.tenant = v_tenant
    ), owned AS (
      SELECT x.*, newest.seq AS newest FROM items x
      JOIN conversation.conversations cv
        ON cv.tenant_id = v_tenant AND cv.id = x.c AND cv.user_id = x.u
      CROSS JOIN LATERAL (SELECT COALESCE((SELECT m.seq FROM conversation.messages m
                                           WHERE m.tenant_id = v_tenant AND m.conversation_id = x.c
                                           ORDER BY m.seq DESC LIMIT 1), 0) AS seq) newest
    ), existing AS (
      SELECT x.o, msg.* FROM owned x
      JOIN conversation.messages msg
        ON msg.tenant_id = v_tenant AND msg.conversation_id = x.c AND msg.idempotency_key = x.ik
    ), fresh AS (
      SELECT x.*, x.newest + row_number() OVER (PARTITION BY x.c ORDER BY x.o) AS new_seq
      FROM owned x WHERE NOT EXISTS (SELECT 1 FROM existing e WHERE e.o = x.o)
    ), inserted AS (
      INSERT INTO conversation.messages (tenant_id, conversation_id, seq, id, role, key_id,
        content, token_count, metadata, idempotency_key, created_at)
      SELECT v_tenant, f.c, f.new_seq, f.i, f.r, f.k, f.b, f.t, f.m, f.ik,
             'epoch'::timestamptz + f.at * interval '1 microsecond'
      FROM fresh f
      RETURNING 1
    ), bumped AS (
      UPDATE conversation.conversations cv
      SET updated_at = GREATEST(cv.updated_at,
                                'epoch'::timestamptz + s.max_at * interval '1 microsecond')
      FROM (SELECT f.c, max(f.at) AS max_at FROM fresh f WHERE f.r IN (1, 5) GROUP BY f.c) s
      WHERE cv.tenant_id = v_tenant AND cv.id = s.c
      RETURNING 1
    )
    SELECT x.o::integer,
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
REVOKE ALL ON FUNCTION conversation.append_message_batch(text[], text[], uuid[], uuid[],
    smallint[], integer[], bytea[], integer[], jsonb[], text[], bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION conversation.append_message_batch(text[], text[], uuid[], uuid[],
    smallint[], integer[], bytea[], integer[], jsonb[], text[], bigint[]) TO omniforge_app;

-- The previous release's batch call, answered by the array version so that
-- both assign seq the same way while they run side by side.
CREATE OR REPLACE FUNCTION conversation.append_messages(p_items jsonb)
RETURNS TABLE (ord integer, outcome text, id uuid, seq bigint, role smallint, key_id integer,
               content bytea, token_count integer, metadata text, created_us bigint)
LANGUAGE sql
AS $$
  WITH x AS (
    SELECT * FROM jsonb_to_recordset(p_items) AS x(o integer, tenant text, u text, c uuid,
      i uuid, r smallint, k integer, b text, t integer, m jsonb, ik text, at bigint)
  ), a AS (
    SELECT array_agg(x.o ORDER BY x.o) AS o, array_agg(x.tenant ORDER BY x.o) AS tenant,
           array_agg(x.u ORDER BY x.o) AS u, array_agg(x.c ORDER BY x.o) AS c,
           array_agg(x.i ORDER BY x.o) AS i, array_agg(x.r ORDER BY x.o) AS r,
           array_agg(x.k ORDER BY x.o) AS k, array_agg(decode(x.b, 'base64') ORDER BY x.o) AS b,
           array_agg(x.t ORDER BY x.o) AS t, array_agg(x.m ORDER BY x.o) AS m,
           array_agg(x.ik ORDER BY x.o) AS ik, array_agg(x.at ORDER BY x.o) AS at
    FROM x
  )
  SELECT a.o[r.ord], r.outcome, r.id, r.seq, r.role, r.key_id, r.content, r.token_count,
         r.metadata, r.created_us
  FROM a, conversation.append_message_batch(a.tenant, a.u, a.c, a.i, a.r, a.k, a.b, a.t, a.m,
                                            a.ik, a.at) AS r
$$;
