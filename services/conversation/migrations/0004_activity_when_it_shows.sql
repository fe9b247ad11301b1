-- A conversation's activity time, as of this version:
--
-- updated_at orders a user's conversations (and the agent dialogues under
-- one parent) newest first. A message that starts a turn (role user, or
-- planner in an agent dialogue) used to write it every time: one more row
-- per turn, and an update that moves index entries. Now it is written only
-- when a reader would see the difference:
--   * another conversation of the same list is above this one (so the turn
--     moves it to the top), or
--   * the stored time is more than 10 minutes older than the message.
-- A user talking on in their most recent conversation therefore writes no
-- conversation row per turn, and the list's order stays exact: while a
-- conversation is on top no other one of its list was moved above it, so no
-- other one's time lies between its stored and its real activity.
--
-- The stored time is never more than 10 minutes behind the newest message
-- that started a turn. Readers show the newest of the two (the service's
-- update_time); the retention purge adds the 10 minutes to its idle time, so
-- it never deletes a conversation that had a turn within its retention.

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
  v_parent uuid;
  v_updated timestamptz;
  v_at timestamptz := 'epoch'::timestamptz + p_created_us * interval '1 microsecond';
BEGIN
  PERFORM set_config('app.tenant_id', p_tenant, true);
  -- Appends to one conversation take turns on this lock; the statements
  -- after it see every message committed before it was granted.
  SELECT cv.parent_id, cv.updated_at INTO v_parent, v_updated FROM conversation.conversations cv
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
  IF p_role IN (1, 5) AND v_at > v_updated THEN  -- user, planner: a turn starts
    -- Written when it shows: the stored time is 10 minutes behind, or
    -- another conversation of the list is above this one (or level with it).
    UPDATE conversation.conversations cv
       SET updated_at = v_at
     WHERE cv.tenant_id = p_tenant AND cv.id = p_conversation
       AND (v_updated < v_at - interval '10 minutes'
            OR EXISTS (SELECT 1 FROM conversation.conversations o
                        WHERE o.tenant_id = p_tenant AND o.user_id = p_user
                          AND o.parent_id IS NULL AND v_parent IS NULL
                          AND o.updated_at >= v_updated AND o.id <> p_conversation)
            OR EXISTS (SELECT 1 FROM conversation.conversations o
                        WHERE o.tenant_id = p_tenant AND o.user_id = p_user
                          AND o.parent_id = v_parent
                          AND o.updated_at >= v_updated AND o.id <> p_conversation));
  END IF;
  RETURN QUERY SELECT 0, 'stored'::text, p_id, v_seq, NULL::smallint, NULL::integer,
                      NULL::bytea, NULL::integer, NULL::text, NULL::bigint;
END
$$;

CREATE OR REPLACE FUNCTION conversation.append_message_batch(
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
      SET updated_at = s.max_at
      FROM (SELECT f.c, max('epoch'::timestamptz + f.at * interval '1 microsecond') AS max_at
            FROM fresh f WHERE f.r IN (1, 5) GROUP BY f.c) s
      WHERE cv.tenant_id = v_tenant AND cv.id = s.c AND s.max_at > cv.updated_at
        -- Written when it shows: the stored time is 10 minutes behind, or
        -- another conversation of the list is above this one (or level with it).
        AND (cv.updated_at < s.max_at - interval '10 minutes'
             OR EXISTS (SELECT 1 FROM conversation.conversations o
                         WHERE o.tenant_id = v_tenant AND o.user_id = cv.user_id
                           AND o.parent_id IS NULL AND cv.parent_id IS NULL
                           AND o.updated_at >= cv.updated_at AND o.id <> cv.id)
             OR EXISTS (SELECT 1 FROM conversation.conversations o
                         WHERE o.tenant_id = v_tenant AND o.user_id = cv.user_id
                           AND o.parent_id = cv.parent_id
                           AND o.updated_at >= cv.updated_at AND o.id <> cv.id))
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

-- The retention purge, with the stored activity time's 10 minutes of lag
-- added to the idle time (see the top of this file).
CREATE OR REPLACE FUNCTION conversation.purge_idle(p_default_days integer, p_tenant_days jsonb,
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
      AND c.updated_at < p_now - interval '10 minutes' - make_interval(
            days => COALESCE((p_tenant_days ->> c.tenant_id)::integer, p_default_days))
    ORDER BY c.updated_at
    LIMIT p_limit
  ), deleted AS (
    -- The idle test is repeated here: if an append revived a conversation
    -- after `doomed` was read, the delete waits for its row lock and then
    -- re-checks this condition on the newest version, which keeps it (a
    -- conversation this old always has its time moved by a new turn).
    DELETE FROM conversation.conversations c
    USING doomed d
    WHERE c.tenant_id = d.tenant_id AND c.id = d.id
      AND c.updated_at < p_now - interval '10 minutes' - make_interval(
            days => COALESCE((p_tenant_days ->> c.tenant_id)::integer, p_default_days))
    RETURNING 1
  )
  SELECT count(*) FROM deleted
$$;
