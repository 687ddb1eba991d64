-- Events: the events themselves (with drafts, templates and the series columns), their activity rows,
-- their membership in spaces and their managers. Decisions: docs/events.md.

-- keywords joined for the search text (array_to_string is only stable, a generated column needs immutable)
create function event_keywords_text(text[]) returns text
  language sql immutable parallel safe
  as $$ select coalesce(array_to_string($1, ' '), '') $$;

create table events (
  tenant_id text not null,
  id bigint generated always as identity,
  org_id text,
  creator_id text not null,
  title text not null,
  description text,
  address text,
  latitude double precision check (latitude between -90 and 90),
  longitude double precision check (longitude between -180 and 180),
  start_dt timestamptz,
  end_dt timestamptz,
  timezone text not null default 'UTC',
  keywords text[] not null default '{}',
  metadata jsonb not null default '{}',
  visibility integer not null default 20 check (visibility in (10, 20, 30, 40)),
  status text not null default 'draft' check (status in ('draft', 'published', 'archived')),
  template text not null default 'generic',
  template_version integer not null default 1,
  state text,
  priority integer not null default 0,
  -- series (the series module adds the foreign key to its table)
  series_id bigint,
  series_index integer,
  title_override text,
  description_override text,
  metadata_override jsonb,
  -- milestone parent; on a draft clone: the published row it was cloned from
  parent_event_id bigint,
  published_id bigint,
  published_at timestamptz,
  created_dt timestamptz not null default now(),
  is_locked boolean not null default false,
  is_deleted boolean not null default false,
  cover_image_key text,
  -- version counts publishes; revision counts every write (the ETag)
  version integer not null default 0,
  revision integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  search_text text generated always as (lower(
    coalesce(title, '') || ' ' || coalesce(description, '') || ' ' || coalesce(address, '') || ' ' ||
    event_keywords_text(keywords))) stored,
  primary key (tenant_id, id),
  foreign key (tenant_id, parent_event_id) references events (tenant_id, id),
  foreign key (tenant_id, published_id) references events (tenant_id, id) on delete cascade,
  check (end_dt is null or start_dt is null or end_dt >= start_dt)
);

-- Lists never show draft clones or deleted rows: every list index is partial on both.
create index events_list_created on events (tenant_id, created_at desc, id desc) where not is_deleted and published_id is null;
create index events_list_start on events (tenant_id, start_dt, id) where not is_deleted and published_id is null;
create index events_list_template on events (tenant_id, template, created_at desc) where not is_deleted and published_id is null;
create index events_creator on events (tenant_id, creator_id) where not is_deleted;
create index events_series on events (tenant_id, series_id, series_index) where series_id is not null;
create index events_parent on events (tenant_id, parent_event_id) where parent_event_id is not null;
-- at most one draft clone per published row
create unique index events_draft_clone on events (tenant_id, published_id) where published_id is not null;
create index events_search_trgm on events using gin (search_text gin_trgm_ops);

create table event_activity (
  tenant_id text not null,
  id bigint generated always as identity,
  event_id bigint not null,
  org_id text,
  actor_id text,
  kind text not null,
  payload jsonb not null default '{}',
  at timestamptz not null default now(),
  primary key (tenant_id, id),
  foreign key (tenant_id, event_id) references events (tenant_id, id) on delete cascade
);
create index event_activity_event on event_activity (tenant_id, event_id, at desc, id desc);

create table event_spaces (
  tenant_id text not null,
  id bigint generated always as identity,
  event_id bigint not null,
  space_id bigint not null,
  org_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, id),
  unique (tenant_id, event_id, space_id),
  foreign key (tenant_id, event_id) references events (tenant_id, id) on delete cascade,
  foreign key (tenant_id, space_id) references spaces (tenant_id, id) on delete cascade
);
create index event_spaces_space on event_spaces (tenant_id, space_id, event_id);

-- Managers of one event (event_id) or of every occurrence of a series (series_id).
create table event_managers (
  tenant_id text not null,
  id bigint generated always as identity,
  event_id bigint,
  series_id bigint,
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
  foreign key (tenant_id, event_id) references events (tenant_id, id) on delete cascade,
  check (event_id is not null or series_id is not null)
);
create unique index event_managers_event_user on event_managers (tenant_id, event_id, user_id)
  where event_id is not null and user_id is not null and status <> 'revoked';
create index event_managers_by_user on event_managers (tenant_id, user_id) where status = 'active';
create index event_managers_event on event_managers (tenant_id, event_id);
create index event_managers_series on event_managers (tenant_id, series_id) where series_id is not null;
create unique index event_managers_token on event_managers (tenant_id, invite_token_hash) where invite_token_hash is not null;

alter table events enable row level security;
alter table events force row level security;
create policy tenant_isolation on events
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table event_activity enable row level security;
alter table event_activity force row level security;
create policy tenant_isolation on event_activity
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table event_spaces enable row level security;
alter table event_spaces force row level security;
create policy tenant_isolation on event_spaces
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table event_managers enable row level security;
alter table event_managers force row level security;
create policy tenant_isolation on event_managers
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));
