-- Incremental sync of the events list and of an event's attendees (issue #22; docs/integrations.md,
-- "Incremental sync"), on the log of changes of 0026.
--
-- Events: one row per event (never a draft clone: lists do not show them) a statement inserted, updated or
-- deleted, and one per event whose spaces a statement changed, with what decided who could see the event then:
-- its creator (`owner_id`), organization, visibility, spaces and series (`parent`, `series:<id>`). An update
-- that changes any of those also logs the old values, so a caller who saw the event before gets its tombstone.
-- The copies of the event's columns that 0019 keeps in `event_spaces` are updates of that table: not logged (the
-- event's own update is).
--
-- What an event's body shows of other tables (the titles of its spaces, its series' title) logs the event too.
--
-- Attendees: one row per attendee, `parent` naming the list it is in (`event:<id>` for an occurrence's own
-- attendee, `series:<id>` for one of every occurrence of a series), the old list too when it moves.
--
-- On a Citus cluster the triggers are not created (as 0026): the lists issue no sync token there.

alter table changes add column parent text;
alter table changes add column visibility integer;
alter table changes add column spaces bigint[];
create index changes_parent on changes (tenant_id, kind, parent, xid) where parent is not null;

-- the events (of `tenants` and `ids`, pairwise) as they are now, logged as changed
create function log_event_changes(tenants text[], ids bigint[]) returns void language sql as $fn$
  insert into changes (tenant_id, kind, key, owner_id, org_id, deleted, parent, visibility, spaces)
  select e.tenant_id, 'event', e.id::text, e.creator_id, e.org_id, false, 'series:' || e.series_id, e.visibility,
    array(select es.space_id from event_spaces es where es.tenant_id = e.tenant_id and es.event_id = e.id)
  from (select distinct tenant_id, id from unnest(tenants, ids) as k(tenant_id, id)) k
  join events e on e.tenant_id = k.tenant_id and e.id = k.id
  where e.published_id is null
$fn$;

-- events gone, or as they were before an update that changed who sees them (`was`: their spaces then)
create function log_event_audiences(was events[], deleted boolean) returns void language sql as $fn$
  insert into changes (tenant_id, kind, key, owner_id, org_id, deleted, parent, visibility, spaces)
  select o.tenant_id, 'event', o.id::text, o.creator_id, o.org_id, deleted, 'series:' || o.series_id, o.visibility,
    array(select es.space_id from event_spaces es where es.tenant_id = o.tenant_id and es.event_id = o.id)
  from unnest(was) o
  where o.published_id is null
$fn$;

create function events_log_changes() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'DELETE' then
    perform log_event_audiences(array(select o::events from old_rows o), true);
    return null;
  end if;
  perform log_event_changes(array(select tenant_id from new_rows), array(select id from new_rows));
  if tg_op = 'UPDATE' then
    perform log_event_audiences(array(
      select o::events from old_rows o join new_rows n on n.tenant_id = o.tenant_id and n.id = o.id
      where n.creator_id is distinct from o.creator_id or n.org_id is distinct from o.org_id
        or n.visibility is distinct from o.visibility or n.series_id is distinct from o.series_id
        or n.published_id is distinct from o.published_id), false);
  end if;
  return null;
end
$fn$;

-- a link added or removed: the event logged with its spaces now, and after a removal once more with the spaces it
-- left (members of those saw it, and get its tombstone); an event deleted with its links was logged by its delete
create function event_spaces_log_changes() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'INSERT' then
    perform log_event_changes(array(select tenant_id from new_rows), array(select event_id from new_rows));
    return null;
  end if;
  perform log_event_changes(array(select tenant_id from old_rows), array(select event_id from old_rows));
  insert into changes (tenant_id, kind, key, owner_id, org_id, deleted, parent, visibility, spaces)
  select e.tenant_id, 'event', e.id::text, e.creator_id, e.org_id, false, 'series:' || e.series_id, e.visibility,
    array_agg(l.space_id)
  from old_rows l join events e on e.tenant_id = l.tenant_id and e.id = l.event_id
  where e.published_id is null
  group by e.tenant_id, e.id;
  return null;
end
$fn$;

-- what an event shows of other tables (events.bodies.repository.ts, EVENT_JOINED_FIELDS): the titles of its
-- spaces that are not deleted, and its series' title
create function spaces_log_event_changes() returns trigger language plpgsql as $fn$
declare
  tenants text[];
  ids bigint[];
begin
  select array_agg(es.tenant_id), array_agg(es.event_id) into tenants, ids
  from old_rows o join new_rows n on n.tenant_id = o.tenant_id and n.id = o.id
  join event_spaces es on es.tenant_id = n.tenant_id and es.space_id = n.id
  where n.title is distinct from o.title or n.is_deleted is distinct from o.is_deleted;
  perform log_event_changes(tenants, ids);
  return null;
end
$fn$;

create function event_series_log_event_changes() returns trigger language plpgsql as $fn$
declare
  tenants text[];
  ids bigint[];
begin
  select array_agg(e.tenant_id), array_agg(e.id) into tenants, ids
  from old_rows o join new_rows n on n.tenant_id = o.tenant_id and n.id = o.id
  join events e on e.tenant_id = n.tenant_id and e.series_id = n.id
  where n.title is distinct from o.title;
  perform log_event_changes(tenants, ids);
  return null;
end
$fn$;

create function attendees_log_changes() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'INSERT' then
    insert into changes (tenant_id, kind, key, org_id, deleted, parent)
    select tenant_id, 'attendee', id::text, org_id, false,
      coalesce('event:' || event_id, 'series:' || series_id) from new_rows;
  elsif tg_op = 'DELETE' then
    insert into changes (tenant_id, kind, key, org_id, deleted, parent)
    select tenant_id, 'attendee', id::text, org_id, true,
      coalesce('event:' || event_id, 'series:' || series_id) from old_rows;
  else
    insert into changes (tenant_id, kind, key, org_id, deleted, parent)
    select tenant_id, 'attendee', id::text, org_id, false,
      coalesce('event:' || event_id, 'series:' || series_id) from new_rows
    union all
    select o.tenant_id, 'attendee', o.id::text, o.org_id, true,
      coalesce('event:' || o.event_id, 'series:' || o.series_id)
    from old_rows o join new_rows n on n.tenant_id = o.tenant_id and n.id = o.id
    where n.event_id is distinct from o.event_id or n.series_id is distinct from o.series_id;
  end if;
  return null;
end
$fn$;

do $$
begin
  if exists (select from pg_extension where extname = 'citus') then
    raise notice 'Citus: event and attendee changes are not logged by triggers; those lists issue no sync token';
    return;
  end if;
  create trigger events_changes_insert after insert on events
    referencing new table as new_rows for each statement execute function events_log_changes();
  create trigger events_changes_update after update on events
    referencing old table as old_rows new table as new_rows for each statement execute function events_log_changes();
  create trigger events_changes_delete after delete on events
    referencing old table as old_rows for each statement execute function events_log_changes();
  create trigger event_spaces_changes_insert after insert on event_spaces
    referencing new table as new_rows for each statement execute function event_spaces_log_changes();
  create trigger event_spaces_changes_delete after delete on event_spaces
    referencing old table as old_rows for each statement execute function event_spaces_log_changes();
  create trigger spaces_event_changes_update after update on spaces
    referencing old table as old_rows new table as new_rows for each statement execute function spaces_log_event_changes();
  create trigger event_series_event_changes_update after update on event_series
    referencing old table as old_rows new table as new_rows
    for each statement execute function event_series_log_event_changes();
  create trigger attendees_changes_insert after insert on attendees
    referencing new table as new_rows for each statement execute function attendees_log_changes();
  create trigger attendees_changes_update after update on attendees
    referencing old table as old_rows new table as new_rows for each statement execute function attendees_log_changes();
  create trigger attendees_changes_delete after delete on attendees
    referencing old table as old_rows for each statement execute function attendees_log_changes();
end
$$;
