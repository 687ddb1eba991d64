-- Spaces, their members and managers. Events join spaces through event_spaces (0005_events.sql).

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
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, id)
);
create index spaces_list on spaces (tenant_id, created_at desc) where not is_deleted;

create table space_members (
  tenant_id text not null,
  space_id bigint not null,
  user_id text not null,
  role text not null default 'space_member' check (role in ('space_owner', 'space_admin', 'space_member', 'space_viewer')),
  is_active boolean not null default true,
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

alter table spaces enable row level security;
alter table spaces force row level security;
create policy tenant_isolation on spaces
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
