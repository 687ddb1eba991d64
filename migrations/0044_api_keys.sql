-- API keys for machines (docs/api-keys.md): a tenant's service accounts, each with a role and optional scopes, and
-- their keys, bearer credentials `cbk_<40 base62><6 base62 CRC32>`. Only the SHA-256 (hex) of a key is kept, as for
-- feed and invite tokens: a database read cannot act as a service account.
--
-- A request with a key names no tenant: the key is found by its lookup id (`prefix`, its first 16 characters, shown
-- in lists) on the system login (withSystem, which passes row-level security), its hash compared in constant time,
-- then everything else runs in the key's tenant. `prefix` is unique per tenant (Citus: unique keys lead with the
-- shard key) and indexed alone for that lookup; two tenants sharing one (2^71 values) only cost a second comparison.

create table service_accounts (
  tenant_id text not null,
  id bigint generated always as identity,
  name text not null check (char_length(name) between 1 and 200),
  role text not null check (role in ('admin', 'member', 'viewer')),
  -- the permissions the keys may use, within the role's; null: every permission of the role (never `scim`)
  scopes text[],
  created_by text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- a disabled account's keys are refused until it is enabled again
  disabled_at timestamptz,
  -- DELETE: the account is gone from the API and its keys are revoked; the row stays for the audit trail
  deleted_at timestamptz,
  primary key (tenant_id, id)
);
create unique index service_accounts_name on service_accounts (tenant_id, name) where deleted_at is null;
create index service_accounts_list on service_accounts (tenant_id, created_at desc, id desc) where deleted_at is null;

create table api_keys (
  tenant_id text not null,
  id bigint generated always as identity,
  service_account_id bigint not null,
  -- the lookup id: `cbk_` and the first 12 random characters of the key (not secret)
  prefix text not null,
  -- SHA-256 (hex) of the whole key; never the key
  secret_hash text not null,
  created_by text not null,
  created_at timestamptz not null default now(),
  -- a rotation moves the old key's expiry to the end of the overlap (when sooner)
  expires_at timestamptz not null,
  revoked_at timestamptz,
  -- written at most once a minute per key
  last_used_at timestamptz,
  last_used_address text,
  -- rotation: the key this one replaced, and the key that replaced this one
  rotated_from bigint,
  replaced_by bigint,
  primary key (tenant_id, id),
  unique (tenant_id, prefix),
  foreign key (tenant_id, service_account_id) references service_accounts (tenant_id, id) on delete cascade
);
-- the bearer lookup (every tenant, by lookup id) and the keys of an account, newest first
create index api_keys_prefix on api_keys (prefix);
create index api_keys_account on api_keys (tenant_id, service_account_id, created_at desc, id desc);

alter table service_accounts enable row level security;
alter table service_accounts force row level security;
create policy tenant_isolation on service_accounts
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table api_keys enable row level security;
alter table api_keys force row level security;
create policy tenant_isolation on api_keys
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));
