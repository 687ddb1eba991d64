-- Event collaboration: attendees, milestones, linked documents, attachments and cross-reference links
-- of events (event managers live in event_managers, 0005). Decisions: docs/event-collaboration.md.
--
-- Rows carry event_id (one occurrence) and/or series_id (every occurrence of a series). The series
-- module adds the foreign keys of series_id to its table.

create table attendees (
  tenant_id text not null,
  id bigint generated always as identity,
  event_id bigint,
  series_id bigint,
  contact_id uuid not null,
  org_id text,
  status text not null default 'invited'
    check (status in ('invited', 'confirmed', 'declined', 'tentative', 'checked_in')),
  notes text,
  is_checked_in boolean not null default false,
  checked_in_at timestamptz,
  invited_at timestamptz not null default now(),
  responded_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, id),
  unique (tenant_id, event_id, contact_id),
  foreign key (tenant_id, event_id) references events (tenant_id, id) on delete cascade,
  foreign key (tenant_id, contact_id) references contacts (tenant_id, id) on delete cascade,
  check (event_id is not null or series_id is not null)
);
-- counts by status per event and per series are read by the analytics endpoints
create index attendees_event_status on attendees (tenant_id, event_id, status) where event_id is not null;
create index attendees_series_status on attendees (tenant_id, series_id, status) where series_id is not null;
create unique index attendees_series_contact on attendees (tenant_id, series_id, contact_id)
  where event_id is null and series_id is not null;
create index attendees_contact on attendees (tenant_id, contact_id);

create table event_milestones (
  tenant_id text not null,
  id bigint generated always as identity,
  base_event_id bigint,
  series_id bigint,
  milestone_event_id bigint not null,
  org_id text,
  sequence integer not null default 0,
  status text not null default 'planned'
    check (status in ('planned', 'ready', 'active', 'completed', 'skipped')),
  status_mode text not null default 'derived' check (status_mode in ('derived', 'manual')),
  status_updated_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (tenant_id, id),
  foreign key (tenant_id, base_event_id) references events (tenant_id, id) on delete cascade,
  foreign key (tenant_id, milestone_event_id) references events (tenant_id, id) on delete cascade,
  check (base_event_id is not null or series_id is not null),
  check (base_event_id is null or base_event_id <> milestone_event_id)
);
create unique index event_milestones_base on event_milestones (tenant_id, base_event_id, milestone_event_id)
  where base_event_id is not null;
create index event_milestones_order on event_milestones (tenant_id, base_event_id, sequence, id)
  where base_event_id is not null;
create index event_milestones_milestone on event_milestones (tenant_id, milestone_event_id);
create index event_milestones_series on event_milestones (tenant_id, series_id) where series_id is not null;

create table event_documents (
  tenant_id text not null,
  id bigint generated always as identity,
  event_id bigint not null,
  document_id text not null,
  org_id text,
  created_by text,
  created_at timestamptz not null default now(),
  primary key (tenant_id, id),
  unique (tenant_id, event_id, document_id),
  foreign key (tenant_id, event_id) references events (tenant_id, id) on delete cascade
);

create table event_attachments (
  tenant_id text not null,
  id bigint generated always as identity,
  event_id bigint,
  series_id bigint,
  org_id text,
  kind text not null,
  ref text not null,
  metadata jsonb not null default '{}',
  created_by text,
  created_at timestamptz not null default now(),
  primary key (tenant_id, id),
  foreign key (tenant_id, event_id) references events (tenant_id, id) on delete cascade,
  check (event_id is not null or series_id is not null)
);
create index event_attachments_event on event_attachments (tenant_id, event_id, kind, id) where event_id is not null;
create index event_attachments_series on event_attachments (tenant_id, series_id) where series_id is not null;

-- Cross-reference links: event_id (source occurrence) or series_id (every occurrence) → target_id.
create table event_links (
  tenant_id text not null,
  id bigint generated always as identity,
  event_id bigint,
  series_id bigint,
  target_id bigint not null,
  org_id text,
  created_by text,
  created_at timestamptz not null default now(),
  primary key (tenant_id, id),
  foreign key (tenant_id, event_id) references events (tenant_id, id) on delete cascade,
  foreign key (tenant_id, target_id) references events (tenant_id, id) on delete cascade,
  check (event_id is not null or series_id is not null),
  check (event_id is null or event_id <> target_id)
);
create unique index event_links_event on event_links (tenant_id, event_id, target_id) where event_id is not null;
create unique index event_links_series on event_links (tenant_id, series_id, target_id)
  where event_id is null and series_id is not null;
create index event_links_series_target on event_links (tenant_id, series_id, target_id) where series_id is not null;
create index event_links_target on event_links (tenant_id, target_id);

alter table attendees enable row level security;
alter table attendees force row level security;
create policy tenant_isolation on attendees
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table event_milestones enable row level security;
alter table event_milestones force row level security;
create policy tenant_isolation on event_milestones
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table event_documents enable row level security;
alter table event_documents force row level security;
create policy tenant_isolation on event_documents
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table event_attachments enable row level security;
alter table event_attachments force row level security;
create policy tenant_isolation on event_attachments
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table event_links enable row level security;
alter table event_links force row level security;
create policy tenant_isolation on event_links
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));
