-- The group-commit batch as parallel arrays, one per column, instead of a
-- JSON document: the server unnests them instead of parsing JSON three
-- times and decoding base64, and the caller builds a few array literals
-- instead of a JSON tree. Element n of every array is the n-th message;
-- results carry n (1-based) as ord. Otherwise as append_messages: the
-- caller's user id, the sealed content, the creation time in microseconds;
-- idempotency keys unique per conversation within one call; one row per
-- message with outcome 'stored' (and the assigned seq), 'duplicate' (the
-- stored message for that key) or 'not_found' (no such conversation of that
-- user). append_messages stays for instances of the previous release while a
-- rolling update replaces them.
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
      ORDER BY cv.id FOR UPDATE;
    RETURN QUERY
    WITH items AS (
      SELECT x.* FROM unnest(p_tenant, p_user, p_conversation, p_id, p_role, p_key_id, p_content,
                             p_token_count, p_metadata, p_idempotency_key, p_created_us)
                      WITH ORDINALITY AS x(tenant, u, c, i, r, k, b, t, m, ik, at, o)
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
      SELECT v_tenant, f.c, f.new_seq, f.i, f.r, f.k, f.b, f.t, f.m, f.ik,
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
