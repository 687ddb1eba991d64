-- Spaces, their hierarchy, members, managers, linked contacts and activity log; the public page
-- directory. Events join spaces through event_spaces (0005_events.sql). See docs/spaces.md.

create table spaces (
  tenant_id text not null,
  id bigint generated always as identity,
  org_id text,
  creator_id text not null,
  title text not null,
  description text not null default '',
  timezone text not null default 'UTC',
  visibility integer not null default 20 check (visibility in (10, 20, 30, 40)),
  status text not null default 'draft' check (status in ('draft', 'published', 'archived')),
  position integer not null default 0,
  published_at timestamptz,
  version integer not null default 0,
  revision integer not null default 1,
  is_deleted boolean not null default false,
  -- pending changes of a published space (title, description, timezone, visibility, position);
  -- null = nothing pending. The columns above always hold the published form.
  draft jsonb,
  -- the public reference of the space page, assigned on the first publish as a public space
  public_handle text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, id)
);
create index spaces_list on spaces (tenant_id, created_at desc) where not is_deleted;

-- Multi-parent hierarchy: a space may sit under several parents; cycles are refused by the service.
create table space_parents (
  tenant_id text not null,
  space_id bigint not null,
  parent_id bigint not null,
  created_at timestamptz not null default now(),
  primary key (tenant_id, space_id, parent_id),
  foreign key (tenant_id, space_id) references spaces (tenant_id, id) on delete cascade,
  foreign key (tenant_id, parent_id) references spaces (tenant_id, id) on delete cascade,
  check (space_id <> parent_id)
);
create index space_parents_parent on space_parents (tenant_id, parent_id);

create table space_members (
  tenant_id text not null,
  space_id bigint not null,
  user_id text not null,
  role text not null default 'space_member' check (role in ('space_owner', 'space_admin', 'space_member', 'space_viewer')),
  is_active boolean not null default true,
  -- joined (again) at created_at; left at removed_at (member growth counts history)
  removed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, space_id, user_id),
  foreign key (tenant_id, space_id) references spaces (tenant_id, id) on delete cascade
);
create index space_members_user on space_members (tenant_id, user_id);

create table space_managers (
  tenant_id text not null,
  id bigint generated always as identity,
  space_id bigint not null,
  org_id text,
  user_id text,
  permissions text[] not null default '{}',
  role text,
  status text not null default 'active' check (status in ('pending', 'active', 'revoked')),
  invited_email text,
  invited_by text,
  invited_at timestamptz,
  invite_token_hash text,
  expires_at timestamptz,
  accepted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, id),
  foreign key (tenant_id, space_id) references spaces (tenant_id, id) on delete cascade
);
create unique index space_managers_user on space_managers (tenant_id, space_id, user_id) where user_id is not null and status <> 'revoked';
create index space_managers_by_user on space_managers (tenant_id, user_id) where status = 'active';

-- Contacts linked to a space (upstream /spaces/{id}/contacts).
create table space_contacts (
  tenant_id text not null,
  id bigint generated always as identity,
  space_id bigint not null,
  contact_id uuid not null,
  created_by text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, id),
  unique (tenant_id, space_id, contact_id),
  foreign key (tenant_id, space_id) references spaces (tenant_id, id) on delete cascade,
  foreign key (tenant_id, contact_id) references contacts (tenant_id, id) on delete cascade
);

-- What happened in a space, newest first (GET /spaces/{id}/activity). Written in the transaction
-- of the change; type is one of contact, event, member, announcement, material.
create table space_activity (
  tenant_id text not null,
  id bigint generated always as identity,
  space_id bigint not null,
  type text not null check (type in ('contact', 'event', 'member', 'announcement', 'material')),
  resource_id text not null,
  title text not null,
  message text not null,
  actor_id text,
  created_at timestamptz not null default now(),
  primary key (tenant_id, id),
  foreign key (tenant_id, space_id) references spaces (tenant_id, id) on delete cascade
);
create index space_activity_recent on space_activity (tenant_id, space_id, created_at desc, id desc);

-- The public page directory: NOT tenant-owned. It maps a public reference (handle, or the numeric
-- id, which is unique across tenants because ids come from one identity sequence) to the tenant of
-- a space that is published, public (visibility 40) and not deleted, and holds nothing else. A row
-- exists exactly while the space is public, so an anonymous request can find its tenant without
-- scanning tenants and learns nothing about private spaces (docs/spaces.md).
create table public_spaces (
  handle text primary key,
  space_id bigint not null unique,
  tenant_id text not null
);

alter table spaces enable row level security;
alter table spaces force row level security;
create policy tenant_isolation on spaces
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table space_parents enable row level security;
alter table space_parents force row level security;
create policy tenant_isolation on space_parents
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table space_members enable row level security;
alter table space_members force row level security;
create policy tenant_isolation on space_members
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table space_managers enable row level security;
alter table space_managers force row level security;
create policy tenant_isolation on space_managers
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table space_contacts enable row level security;
alter table space_contacts force row level security;
create policy tenant_isolation on space_contacts
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table space_activity enable row level security;
alter table space_activity force row level security;
create policy tenant_isolation on space_activity
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));
