-- API keys managed at runtime through the key admin API (KeyAdminService),
-- beside the key file: never a key, only its SHA-256, with the tenant (and,
-- for a user key, the user) it acts for. A rotated key keeps its id; the
-- hash of the secret it had before stays valid until previous_valid_until.
-- Every change is announced on channel omniforge_api_keys with the key's id
-- only, so every replica reads that key again within a second.
CREATE TABLE orchestration.api_keys (
  key_id               text        PRIMARY KEY CHECK (key_id ~ '^[0-9a-f]{12}$'),
  tenant_id            text        NOT NULL,
  user_id              text,
  kind                 text        NOT NULL CHECK (kind IN ('user', 'gateway')),
  key_hash             bytea       NOT NULL CHECK (length(key_hash) = 32),
  label                text        NOT NULL DEFAULT '',
  created_at           timestamptz NOT NULL DEFAULT now(),
  rotated_at           timestamptz NOT NULL DEFAULT now(),
  expires_at           timestamptz,
  revoked_at           timestamptz,
  previous_hash        bytea       CHECK (previous_hash IS NULL OR length(previous_hash) = 32),
  previous_valid_until timestamptz,
  CHECK ((kind = 'user') = (user_id IS NOT NULL))
);
CREATE INDEX api_keys_by_tenant ON orchestration.api_keys (tenant_id, created_at);

-- The service makes, rotates and revokes keys; it never deletes one (a
-- revoked key stays listed, so its id is never given out again).
GRANT SELECT, INSERT, UPDATE ON orchestration.api_keys TO omniforge_orchestrator;

ALTER TABLE orchestration.api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE orchestration.api_keys FORCE ROW LEVEL SECURITY;

-- The admin API works inside one tenant (app.tenant_id), as every store
-- does. Authentication cannot: a presented key names its id, not its
-- tenant. It reads through orchestration.api_keys_to_authenticate, which
-- runs as the owner with the owner's cross-tenant switch on and returns
-- only what authentication needs of the keys that are not revoked: the
-- service's role still cannot read or change another tenant's rows.
DO $$
DECLARE
  owner text := (SELECT pg_get_userbyid(relowner) FROM pg_class
                  WHERE oid = 'orchestration.api_keys'::regclass);
BEGIN
  EXECUTE format(
    'CREATE POLICY tenant_isolation ON orchestration.api_keys TO omniforge_orchestrator, %I'
    ' USING (tenant_id = current_setting(''app.tenant_id'', true))'
    ' WITH CHECK (tenant_id = current_setting(''app.tenant_id'', true))', owner);
  EXECUTE format(
    'CREATE POLICY cross_tenant ON orchestration.api_keys FOR SELECT TO %I'
    ' USING (current_setting(''omniforge.cross_tenant'', true) = ''on'')', owner);
END
$$;

-- The keys with ids `ids` (every key when null) that are not revoked. The
-- owner's cross-tenant switch is on only while the query runs.
CREATE FUNCTION orchestration.api_keys_to_authenticate(ids text[])
RETURNS TABLE (key_id text, tenant_id text, user_id text, kind text, key_hash bytea,
               expires_micros bigint, previous_hash bytea, previous_valid_until_micros bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  PERFORM set_config('omniforge.cross_tenant', 'on', true);
  RETURN QUERY
    SELECT k.key_id, k.tenant_id, k.user_id, k.kind, k.key_hash,
           (extract(epoch FROM k.expires_at) * 1000000)::bigint,
           k.previous_hash,
           (extract(epoch FROM k.previous_valid_until) * 1000000)::bigint
      FROM orchestration.api_keys k
     WHERE k.revoked_at IS NULL AND (ids IS NULL OR k.key_id = ANY (ids));
  PERFORM set_config('omniforge.cross_tenant', 'off', true);
END
$$;
REVOKE ALL ON FUNCTION orchestration.api_keys_to_authenticate(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION orchestration.api_keys_to_authenticate(text[]) TO omniforge_orchestrator;
