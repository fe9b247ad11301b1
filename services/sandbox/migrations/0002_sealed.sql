-- What users and models wrote in the sandbox is sealed at rest, like in the
-- services (libs/seal/key_ring.h): contacts' names, emails, phones and
-- organizations, the busy blocks' emails, events' titles and attendees,
-- messages' senders, recipients, subjects and bodies. Each tenant's data
-- keys, wrapped by the sandbox's own master key (its encryption settings),
-- live here. A sealed text column holds `ofs1:<key id>:<base64>`; a sealed
-- jsonb column a JSON string of that form. Rows written before this
-- migration hold plain text: they still read, and the server seals its
-- tenant's at start.
CREATE TABLE sandbox.tenant_keys (
  tenant_id     text        NOT NULL,
  key_id        integer     NOT NULL CHECK (key_id > 0),
  master_key_id text        NOT NULL,
  wrapped_key   bytea       NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, key_id)
);

-- Keys are added, never changed or removed by the server.
GRANT SELECT, INSERT ON sandbox.tenant_keys TO omniforge_sandbox;

ALTER TABLE sandbox.tenant_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE sandbox.tenant_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON sandbox.tenant_keys TO omniforge_sandbox, CURRENT_USER
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

-- The master key's re-wrap (`omniforge-sandbox-mcp rewrap-keys`, as the
-- owner) reads and rewrites every tenant's keys: the owner's cross-tenant
-- switch, which the server's role gains nothing by setting.
DO $$
BEGIN
  EXECUTE format(
    'CREATE POLICY cross_tenant ON sandbox.tenant_keys TO %I'
    ' USING (current_setting(''omniforge.cross_tenant'', true) = ''on'')'
    ' WITH CHECK (current_setting(''omniforge.cross_tenant'', true) = ''on'')',
    (SELECT pg_get_userbyid(relowner) FROM pg_class
      WHERE oid = 'sandbox.tenant_keys'::regclass));
END
$$;

-- A sealed email differs at every write (a fresh nonce), so the database
-- can no longer compare emails: the server checks a new contact's email
-- against the tenant's contacts under the lock of the tenant's row, and
-- finds busy blocks by time, then by email once opened.
ALTER TABLE sandbox.contacts DROP CONSTRAINT IF EXISTS contacts_tenant_id_email_key;
DROP INDEX IF EXISTS sandbox.busy_blocks_by_email;
CREATE INDEX busy_blocks_by_start ON sandbox.busy_blocks (tenant_id, starts_at);
