-- Users of a tenant as the identity provider describes them (profiles), kept by the IdP webhook
-- (docs/identity.md). id is the provider's user id (the token's sub); tenant_id is the provider's
-- resource owner (the ZITADEL organization). There is no tenants table: a tenant exists from the
-- first row that names it.

create table users (
  tenant_id text not null,
  id text not null,
  email text,
  display_name text,
  first_name text,
  last_name text,
  username text,
  avatar_url text,
  state text not null default 'active' check (state in ('active', 'inactive', 'removed')),
  -- sequence of the last provider event applied to this user; older deliveries change nothing
  idp_sequence bigint,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  removed_at timestamptz,
  primary key (tenant_id, id)
);
create index users_email on users (tenant_id, lower(email));

-- Every webhook delivery seen, identified as the provider identifies it (instance, aggregate,
-- sequence): a repeated delivery is answered without being applied again. Only the envelope is
-- kept, never the event payload.
create table idp_deliveries (
  tenant_id text not null,
  instance_id text not null,
  aggregate_id text not null,
  sequence bigint not null,
  event_type text not null,
  outcome text not null check (outcome in ('applied', 'stale', 'ignored')),
  received_at timestamptz not null default now(),
  primary key (tenant_id, instance_id, aggregate_id, sequence)
);
create index idp_deliveries_received on idp_deliveries (received_at);

alter table users enable row level security;
alter table users force row level security;
create policy tenant_isolation on users
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table idp_deliveries enable row level security;
alter table idp_deliveries force row level security;
create policy tenant_isolation on idp_deliveries
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));
