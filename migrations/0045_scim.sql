-- SCIM 2.0 provisioning of a tenant's directory (docs/scim.md). A SCIM User is the identity module's `users` row (its
-- id is the token's sub); what SCIM knows beside the profile, the client's own id for the user (externalId), is kept
-- here. Groups are the directory's own, each optionally carrying a tenant role its members hold (scim_groups.role, or
-- a display name equal to a role name); members are users of the same tenant.

create table scim_users (
  tenant_id text not null,
  user_id text not null,
  external_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, user_id),
  foreign key (tenant_id, user_id) references users (tenant_id, id) on delete cascade
);
create index scim_users_external_id on scim_users (tenant_id, external_id);
-- `userName eq "…"` (case-insensitive, as RFC 7643 defines userName)
create index users_lower_username on users (tenant_id, lower(username));

create table scim_groups (
  tenant_id text not null,
  id bigint generated always as identity,
  display_name text not null check (char_length(display_name) between 1 and 256),
  external_id text,
  -- the tenant role the group's members hold (null: none, unless display_name names a role)
  role text check (role in ('admin', 'member', 'viewer')),
  revision integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, id)
);
create unique index scim_groups_display_name on scim_groups (tenant_id, lower(display_name));
create index scim_groups_external_id on scim_groups (tenant_id, external_id);

create table scim_group_members (
  tenant_id text not null,
  group_id bigint not null,
  user_id text not null,
  created_at timestamptz not null default now(),
  primary key (tenant_id, group_id, user_id),
  foreign key (tenant_id, group_id) references scim_groups (tenant_id, id) on delete cascade,
  foreign key (tenant_id, user_id) references users (tenant_id, id) on delete cascade
);
-- the roles of a user's groups (the user gate, every few seconds per user)
create index scim_group_members_user on scim_group_members (tenant_id, user_id);

alter table scim_users enable row level security;
alter table scim_users force row level security;
create policy tenant_isolation on scim_users
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table scim_groups enable row level security;
alter table scim_groups force row level security;
create policy tenant_isolation on scim_groups
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table scim_group_members enable row level security;
alter table scim_group_members force row level security;
create policy tenant_isolation on scim_group_members
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));
