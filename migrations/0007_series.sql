-- Recurring series: the rule and the master fields of a series; its occurrences are rows of `events`
-- (series_id, series_index). Decisions (time zones, month ends, window, bounds): docs/series.md.

create table event_series (
  tenant_id text not null,
  id bigint generated always as identity,
  org_id text,
  creator_id text not null,
  title text not null,
  description text,
  address text,
  latitude double precision check (latitude between -90 and 90),
  longitude double precision check (longitude between -180 and 180),
  -- the anchor's start and end: time of day and length of every occurrence
  start_dt timestamptz not null,
  end_dt timestamptz not null,
  timezone text not null default 'UTC',
  keywords text[] not null default '{}',
  metadata jsonb not null default '{}',
  visibility integer not null default 20 check (visibility in (10, 20, 30, 40)),
  status text not null default 'draft' check (status in ('draft', 'published', 'archived')),
  template text not null default 'generic',
  template_version integer not null default 1,
  cover_image_key text,
  freq text not null check (freq in ('daily', 'weekly', 'monthly', 'custom')),
  interval integer not null default 1 check (interval between 1 and 366),
  repeat_days integer[],
  ends_on text not null default 'never' check (ends_on in ('never', 'on_date', 'after_n')),
  end_count integer check (end_count between 1 and 500),
  end_date timestamptz,
  -- PostgreSQL interval text, e.g. 01:30:00
  duration text not null,
  -- starts of occurrences removed one by one: the rule does not bring them back
  exdates timestamptz[] not null default '{}',
  -- ends_on = never: occurrences exist up to here; a background job moves it forward
  window_end timestamptz,
  published_id bigint,
  published_at timestamptz,
  is_deleted boolean not null default false,
  series_manager_id text,
  series_manager_status text check (series_manager_status in ('pending', 'active', 'revoked')),
  series_manager_invited_by text,
  series_manager_invited_email text,
  series_manager_invited_at timestamptz,
  series_manager_accepted_at timestamptz,
  series_manager_expires_at timestamptz,
  -- version counts publishes; revision counts every write (the ETag)
  version integer not null default 0,
  revision integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, id),
  check (end_dt >= start_dt),
  check (ends_on <> 'after_n' or end_count is not null),
  check (ends_on <> 'on_date' or end_date is not null)
);
create index event_series_creator on event_series (tenant_id, creator_id) where not is_deleted;

-- The rolling windows to extend: NOT tenant-owned (like the public page directory), so the
-- background job can find due series of every tenant; it then works inside each tenant's scope.
create table series_windows (
  tenant_id text not null,
  series_id bigint not null,
  window_end timestamptz not null,
  primary key (tenant_id, series_id),
  foreign key (tenant_id, series_id) references event_series (tenant_id, id) on delete cascade
);
create index series_windows_due on series_windows (window_end);

alter table events add foreign key (tenant_id, series_id) references event_series (tenant_id, id);

-- series-level attendees (0006_event_collab.sql) attend every occurrence
alter table attendees add foreign key (tenant_id, series_id) references event_series (tenant_id, id);

alter table event_series enable row level security;
alter table event_series force row level security;
create policy tenant_isolation on event_series
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));
