-- Foreign keys of series_id on the rows a series holds for all its occurrences: event managers,
-- milestones, attachments and links (0005, 0006 promised them; attendees got theirs in 0007).
-- The decisions are written here.
--
-- Each key leads with tenant_id and references the primary key (tenant_id, id) of event_series, so
-- a row can only name a series of its own tenant.
--
-- ON DELETE CASCADE: the service never deletes a series row (DELETE …/series sets is_deleted and
-- keeps the row, and every row above with it), so the action only matters to a hand-made delete:
-- then the series' own rows go with it, as the rows of a hard-deleted event go with it
-- (event_id keys, 0006) and as series_windows does (0007).
--
-- Rows written before this migration whose series_id names no series of their tenant (orphans)
-- would make the keys fail. They are cleaned, never refused, so the migration runs on any data:
-- * a row that also names an event (event_id set) keeps its event and loses the dangling series_id:
--   it already counted only through its event, since no event carries a series that does not exist
--   (events.series_id has had its key since 0007);
-- * a row held by the missing series alone (event_id null) is deleted: nothing reaches it (lists and
--   writes go through a series of a visible event).
-- The counts are logged as NOTICEs.
--
-- The tables force row-level security, which binds their owner too unless it is a superuser: for
-- the cleanup the owner is exempted (no force) and bound again at once, in this transaction.

alter table event_managers no force row level security;
alter table event_milestones no force row level security;
alter table event_attachments no force row level security;
alter table event_links no force row level security;

do $$
declare
  n bigint;
begin
  -- event managers: series managers carry event_id (the anchor) as well
  update event_managers m set series_id = null, updated_at = now()
  where m.series_id is not null and m.event_id is not null
    and not exists (select 1 from event_series s where s.tenant_id = m.tenant_id and s.id = m.series_id);
  get diagnostics n = row_count;
  if n > 0 then raise notice 'event_managers: % row(s) lost a series_id naming no series', n; end if;
  delete from event_managers m
  where m.series_id is not null and m.event_id is null
    and not exists (select 1 from event_series s where s.tenant_id = m.tenant_id and s.id = m.series_id);
  get diagnostics n = row_count;
  if n > 0 then raise notice 'event_managers: % row(s) of no series deleted', n; end if;

  update event_milestones m set series_id = null, updated_at = now()
  where m.series_id is not null and m.base_event_id is not null
    and not exists (select 1 from event_series s where s.tenant_id = m.tenant_id and s.id = m.series_id);
  get diagnostics n = row_count;
  if n > 0 then raise notice 'event_milestones: % row(s) lost a series_id naming no series', n; end if;
  delete from event_milestones m
  where m.series_id is not null and m.base_event_id is null
    and not exists (select 1 from event_series s where s.tenant_id = m.tenant_id and s.id = m.series_id);
  get diagnostics n = row_count;
  if n > 0 then raise notice 'event_milestones: % row(s) of no series deleted', n; end if;

  update event_attachments a set series_id = null
  where a.series_id is not null and a.event_id is not null
    and not exists (select 1 from event_series s where s.tenant_id = a.tenant_id and s.id = a.series_id);
  get diagnostics n = row_count;
  if n > 0 then raise notice 'event_attachments: % row(s) lost a series_id naming no series', n; end if;
  delete from event_attachments a
  where a.series_id is not null and a.event_id is null
    and not exists (select 1 from event_series s where s.tenant_id = a.tenant_id and s.id = a.series_id);
  get diagnostics n = row_count;
  if n > 0 then raise notice 'event_attachments: % row(s) of no series deleted', n; end if;

  -- links keeping their event_id are already unique by (event_id, target_id) (event_links_event)
  update event_links l set series_id = null
  where l.series_id is not null and l.event_id is not null
    and not exists (select 1 from event_series s where s.tenant_id = l.tenant_id and s.id = l.series_id);
  get diagnostics n = row_count;
  if n > 0 then raise notice 'event_links: % row(s) lost a series_id naming no series', n; end if;
  delete from event_links l
  where l.series_id is not null and l.event_id is null
    and not exists (select 1 from event_series s where s.tenant_id = l.tenant_id and s.id = l.series_id);
  get diagnostics n = row_count;
  if n > 0 then raise notice 'event_links: % row(s) of no series deleted', n; end if;
end
$$;

alter table event_managers force row level security;
alter table event_milestones force row level security;
alter table event_attachments force row level security;
alter table event_links force row level security;

-- each key has an index leading with (tenant_id, series_id) for the cascade: event_managers_series
-- (0005), event_milestones_series, event_attachments_series, event_links_series_target (0006)
alter table event_managers add constraint event_managers_series_fk
  foreign key (tenant_id, series_id) references event_series (tenant_id, id) on delete cascade;
alter table event_milestones add constraint event_milestones_series_fk
  foreign key (tenant_id, series_id) references event_series (tenant_id, id) on delete cascade;
alter table event_attachments add constraint event_attachments_series_fk
  foreign key (tenant_id, series_id) references event_series (tenant_id, id) on delete cascade;
alter table event_links add constraint event_links_series_fk
  foreign key (tenant_id, series_id) references event_series (tenant_id, id) on delete cascade;
