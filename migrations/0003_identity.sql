-- Users of a tenant as the identity provider describes them (profiles), kept by the IdP webhook.
-- id is the provider's user id (the token's sub).

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
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  removed_at timestamptz,
  primary key (tenant_id, id)
);
create index users_email on users (tenant_id, lower(email));

alter table users enable row level security;
alter table users force row level security;
create policy tenant_isolation on users
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));
