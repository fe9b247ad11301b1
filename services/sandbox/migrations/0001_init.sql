-- The sandbox email, calendar and contacts servers' state, per tenant:
-- contacts and their busy time, the tenant's events, its mailbox. tenant_id
-- leads every key. The servers log in as their own role, omniforge_sandbox,
-- which may use this schema and nothing else; row-level security (forced,
-- so the owner is bound too) keeps each tenant to its rows.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'omniforge_sandbox') THEN
    BEGIN
      CREATE ROLE omniforge_sandbox NOLOGIN NOSUPERUSER NOBYPASSRLS;
    EXCEPTION WHEN insufficient_privilege THEN
      RAISE EXCEPTION 'role omniforge_sandbox does not exist and % may not create it', current_user
        USING HINT = 'run deploy/postgres-roles.sql as a superuser first';
    END;
  END IF;
END
$$;

CREATE SCHEMA IF NOT EXISTS sandbox;
GRANT USAGE ON SCHEMA sandbox TO omniforge_sandbox;

-- A tenant's row exists once its seed was stored; bookings lock it, so two
-- bookings of one tenant are checked one after the other.
CREATE TABLE sandbox.tenants (
  tenant_id  text        NOT NULL PRIMARY KEY,
  seeded_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE sandbox.contacts (
  tenant_id    text NOT NULL,
  id           text NOT NULL,
  name         text NOT NULL,
  email        text NOT NULL,
  phone        text NOT NULL DEFAULT '',
  organization text NOT NULL DEFAULT '',
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, email)
);

-- The contacts' calendars as far as the sandbox knows them.
CREATE TABLE sandbox.busy_blocks (
  tenant_id text        NOT NULL,
  email     text        NOT NULL,
  starts_at timestamptz NOT NULL,
  ends_at   timestamptz NOT NULL,
  CHECK (ends_at > starts_at)
);
CREATE INDEX busy_blocks_by_email ON sandbox.busy_blocks (tenant_id, email, starts_at);

CREATE TABLE sandbox.events (
  tenant_id text        NOT NULL,
  id        text        NOT NULL,
  title     text        NOT NULL,
  starts_at timestamptz NOT NULL,
  ends_at   timestamptz NOT NULL,
  attendees jsonb       NOT NULL DEFAULT '[]'::jsonb,  -- email addresses
  PRIMARY KEY (tenant_id, id),
  CHECK (ends_at > starts_at)
);
CREATE INDEX events_by_start ON sandbox.events (tenant_id, starts_at);

-- folder: 0 draft, 1 sent, 2 inbox.
CREATE TABLE sandbox.messages (
  tenant_id  text        NOT NULL,
  id         text        NOT NULL,
  folder     smallint    NOT NULL,
  sender     text        NOT NULL,
  recipients jsonb       NOT NULL DEFAULT '[]'::jsonb,
  subject    text        NOT NULL,
  body       text        NOT NULL,
  created_at timestamptz NOT NULL,
  sent_at    timestamptz,
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX messages_by_folder ON sandbox.messages (tenant_id, folder, created_at DESC);

GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA sandbox TO omniforge_sandbox;

DO $$
DECLARE
  t regclass;
BEGIN
  FOREACH t IN ARRAY ARRAY['sandbox.tenants', 'sandbox.contacts', 'sandbox.busy_blocks',
                           'sandbox.events', 'sandbox.messages']::regclass[]
  LOOP
    EXECUTE format('ALTER TABLE %s ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format('ALTER TABLE %s FORCE ROW LEVEL SECURITY', t);
    EXECUTE format(
      'CREATE POLICY tenant_isolation ON %s TO omniforge_sandbox, CURRENT_USER'
      ' USING (tenant_id = current_setting(''app.tenant_id'', true))'
      ' WITH CHECK (tenant_id = current_setting(''app.tenant_id'', true))', t);
  END LOOP;
END
$$;
