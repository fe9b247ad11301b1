-- What users and models wrote is sealed in this schema too (agents,
-- skills, projects, tasks, templates, documents, runs, the record of each
-- tool call's result): each tenant's data keys, wrapped by
-- the executor's own master key (its encryption settings), live here, like
-- the other services' (libs/seal/key_ring.h). A sealed value is text of the
-- form `ofs1:<key id>:<base64>`; a jsonb column keeps its shape with each
-- string in it sealed, so SQL still reads it by key.
CREATE TABLE platform.tenant_keys (
  tenant_id     text        NOT NULL,
  key_id        integer     NOT NULL CHECK (key_id > 0),
  master_key_id text        NOT NULL,
  wrapped_key   bytea       NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, key_id)
);

-- Keys are added, never changed or removed by the service.
GRANT SELECT, INSERT ON platform.tenant_keys TO omniforge_app;

ALTER TABLE platform.tenant_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE platform.tenant_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON platform.tenant_keys TO omniforge_app
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

-- The master key's re-wrap (`omniforge-executor rewrap-keys`, as the owner)
-- reads and rewrites every tenant's keys: the owner's cross-tenant switch,
-- which a service's role gains nothing by setting.
DO $$
BEGIN
  EXECUTE format(
    'CREATE POLICY cross_tenant ON platform.tenant_keys TO %I'
    ' USING (current_setting(''omniforge.cross_tenant'', true) = ''on'')'
    ' WITH CHECK (current_setting(''omniforge.cross_tenant'', true) = ''on'')',
    (SELECT pg_get_userbyid(relowner) FROM pg_class
      WHERE oid = 'platform.tenant_keys'::regclass));
END
$$;
