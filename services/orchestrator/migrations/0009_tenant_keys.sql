-- What users and models wrote is sealed in this schema too (flows and their
-- context boxes, plans and their steps, approval summaries, error-log
-- messages): each tenant's data keys, wrapped by the orchestrator's master
-- key (its encryption settings), live here, like the conversation
-- service's own (libs/seal/key_ring.h). A sealed value is text of the form
-- `ofs1:<key id>:<base64>`; a jsonb column holds it as a JSON string.
CREATE TABLE orchestration.tenant_keys (
  tenant_id     text        NOT NULL,
  key_id        integer     NOT NULL CHECK (key_id > 0),
  master_key_id text        NOT NULL,
  wrapped_key   bytea       NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, key_id)
);

-- Keys are added, never changed or removed by the service.
GRANT SELECT, INSERT ON orchestration.tenant_keys TO omniforge_app;

ALTER TABLE orchestration.tenant_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE orchestration.tenant_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON orchestration.tenant_keys TO omniforge_app
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

-- The master key's re-wrap (`omniforge-orchestrator rewrap-keys`, as the
-- owner) reads and rewrites every tenant's keys: the owner's cross-tenant
-- switch, which a service's role gains nothing by setting.
DO $$
BEGIN
  EXECUTE format(
    'CREATE POLICY cross_tenant ON orchestration.tenant_keys TO %I'
    ' USING (current_setting(''omniforge.cross_tenant'', true) = ''on'')'
    ' WITH CHECK (current_setting(''omniforge.cross_tenant'', true) = ''on'')',
    (SELECT pg_get_userbyid(relowner) FROM pg_class
      WHERE oid = 'orchestration.tenant_keys'::regclass));
END
$$;
