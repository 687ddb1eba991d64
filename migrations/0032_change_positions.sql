-- The log of changes with a position that holds on every kind of database, a Citus cluster included (issue #34;
-- docs/integrations.md, "Incremental sync").
--
-- Before: statement triggers with transition tables logged changes, and a token named the xmin of a snapshot (a
-- transaction id). Citus refuses transition tables in a trigger on a shard, and a transaction id is one node's
-- alone, so the cluster had no sync. Now:
--
-- * Row triggers log each change (one row of `changes` per row changed, with the same columns as before). On a
--   Citus cluster they run on the shard, and every statement in them names the row's tenant, so it stays on the
--   tenant's worker.
-- * `pos` is the change's position in its tenant's log: one number per writing transaction, taken from the tenant's
--   row of `change_positions` by a deferred trigger at commit, the last lock the transaction takes (so it cannot
--   deadlock with the locks taken before it). The row stays locked until commit, so positions are given in commit
--   order: whoever reads the tenant's position n has every change of position <= n committed. A token is that n; a
--   delta reads `pos > n`, each change once.
-- * `seq` stays the row's key; `xid` goes.

-- on a Citus cluster, triggers on distributed tables (run on their shards) are created and dropped with
-- citus.enable_unsafe_triggers: every statement in them names the row's tenant, so it stays on its worker
do $$
begin
  if exists (select from pg_extension where extname = 'citus') then
    perform set_config('citus.enable_unsafe_triggers', 'on', true);
  end if;
end
$$;

drop trigger if exists contacts_changes_insert on contacts;
drop trigger if exists contacts_changes_update on contacts;
drop trigger if exists contacts_changes_delete on contacts;
drop trigger if exists events_changes_insert on events;
drop trigger if exists events_changes_update on events;
drop trigger if exists events_changes_delete on events;
drop trigger if exists event_spaces_changes_insert on event_spaces;
drop trigger if exists event_spaces_changes_delete on event_spaces;
drop trigger if exists spaces_event_changes_update on spaces;
drop trigger if exists event_series_event_changes_update on event_series;
drop trigger if exists attendees_changes_insert on attendees;
drop trigger if exists attendees_changes_update on attendees;
drop trigger if exists attendees_changes_delete on attendees;
drop function if exists contacts_log_changes();
drop function if exists events_log_changes();
drop function if exists event_spaces_log_changes();
drop function if exists spaces_log_event_changes();
drop function if exists event_series_log_event_changes();
drop function if exists attendees_log_changes();
drop function if exists log_event_changes(text[], bigint[]);
drop function if exists log_event_audiences(events[], boolean);

alter table changes add column pos bigint;
update changes set pos = seq where pos is null;
drop index if exists changes_since;
drop index if exists changes_parent;
alter table changes drop column xid;
create index changes_since on changes (tenant_id, kind, pos);
create index changes_parent on changes (tenant_id, kind, parent, pos) where parent is not null;
-- the rows of a transaction that has not taken its position yet (only its own are visible to it)
create index changes_unplaced on changes (tenant_id) where pos is null;

create table change_positions (
  tenant_id text primary key,
  pos bigint not null
);
insert into change_positions (tenant_id, pos)
select tenant_id, max(pos) from changes group by tenant_id;
alter table change_positions enable row level security;
alter table change_positions force row level security;
create policy tenant_isolation on change_positions
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

-- at commit, once per tenant and transaction: the tenant's next position, given to the transaction's changes
create function changes_take_position() returns trigger language plpgsql as $fn$
declare
  done text := 'app.change_position_' || md5(new.tenant_id);
  taken bigint;
begin
  if current_setting(done, true) = 'taken' then
    return null;
  end if;
  insert into change_positions as p (tenant_id, pos) values (new.tenant_id, 1)
    on conflict (tenant_id) do update set pos = p.pos + 1
    returning p.pos into taken;
  update changes set pos = taken where tenant_id = new.tenant_id and pos is null;
  perform set_config(done, 'taken', true);
  return null;
end
$fn$;

-- the spaces an event is linked to
create function event_space_ids(t text, event bigint) returns bigint[] language plpgsql stable as $fn$
declare
  ids bigint[];
begin
  select array_agg(es.space_id order by es.space_id) into ids from event_spaces es
  where es.tenant_id = t and es.event_id = event;
  return coalesce(ids, '{}');
end
$fn$;

-- an event as it is now (never a draft clone: lists do not show them), with its spaces; `spaces` given: those
create function log_event(t text, event bigint, spaces bigint[] default null) returns void language plpgsql as $fn$
declare
  e events;
  linked bigint[] := spaces;
begin
  select * into e from events where tenant_id = t and id = event;
  if not found or e.published_id is not null then
    return;
  end if;
  -- each statement names the tenant, and a value, not a subquery, goes into the INSERT (Citus refuses those)
  if linked is null then
    linked := event_space_ids(t, event);
  end if;
  insert into changes (tenant_id, kind, key, owner_id, org_id, deleted, parent, visibility, spaces)
  values (t, 'event', e.id::text, e.creator_id, e.org_id, false, 'series:' || e.series_id, e.visibility, linked);
end
$fn$;

create function contacts_log_change() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'DELETE' or (tg_op = 'UPDATE' and (new.owner_id is distinct from old.owner_id
      or new.org_id is distinct from old.org_id)) then
    insert into changes (tenant_id, kind, key, owner_id, org_id, deleted)
    values (old.tenant_id, 'contact', old.id::text, old.owner_id, old.org_id, true);
  end if;
  if tg_op <> 'DELETE' then
    insert into changes (tenant_id, kind, key, owner_id, org_id, deleted)
    values (new.tenant_id, 'contact', new.id::text, new.owner_id, new.org_id, false);
  end if;
  return null;
end
$fn$;

-- an event: as it is now; gone, or before an update that changed who sees it, also as it was (its spaces now)
create function events_log_change() returns trigger language plpgsql as $fn$
declare
  linked bigint[];
begin
  if (tg_op = 'DELETE' or (tg_op = 'UPDATE' and (new.creator_id is distinct from old.creator_id
      or new.org_id is distinct from old.org_id or new.visibility is distinct from old.visibility
      or new.series_id is distinct from old.series_id or new.published_id is distinct from old.published_id)))
      and old.published_id is null then
    linked := event_space_ids(old.tenant_id, old.id);
    insert into changes (tenant_id, kind, key, owner_id, org_id, deleted, parent, visibility, spaces)
    values (old.tenant_id, 'event', old.id::text, old.creator_id, old.org_id, tg_op = 'DELETE',
      'series:' || old.series_id, old.visibility, linked);
  end if;
  if tg_op <> 'DELETE' then
    perform log_event(new.tenant_id, new.id);
  end if;
  return null;
end
$fn$;

-- a link added or removed: the event with its spaces now, and after a removal once more with the space it left
-- (its members saw it, and get its tombstone)
create function event_spaces_log_change() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'INSERT' then
    perform log_event(new.tenant_id, new.event_id);
  else
    perform log_event(old.tenant_id, old.event_id);
    perform log_event(old.tenant_id, old.event_id, array[old.space_id]);
  end if;
  return null;
end
$fn$;

-- what an event shows of other tables (events.bodies.repository.ts, EVENT_JOINED_FIELDS): the titles of its
-- spaces that are not deleted, and its series' title
create function spaces_log_event_change() returns trigger language plpgsql as $fn$
declare
  link record;
begin
  if new.title is distinct from old.title or new.is_deleted is distinct from old.is_deleted then
    for link in select es.event_id from event_spaces es where es.tenant_id = new.tenant_id and es.space_id = new.id loop
      perform log_event(new.tenant_id, link.event_id);
    end loop;
  end if;
  return null;
end
$fn$;

create function event_series_log_event_change() returns trigger language plpgsql as $fn$
declare
  occurrence record;
begin
  if new.title is distinct from old.title then
    for occurrence in select e.id from events e where e.tenant_id = new.tenant_id and e.series_id = new.id loop
      perform log_event(new.tenant_id, occurrence.id);
    end loop;
  end if;
  return null;
end
$fn$;

-- an attendee, by the list it is in (`event:<id>`, `series:<id>`), and by the list it left when it moves
create function attendees_log_change() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'DELETE' or (tg_op = 'UPDATE' and (new.event_id is distinct from old.event_id
      or new.series_id is distinct from old.series_id)) then
    insert into changes (tenant_id, kind, key, org_id, deleted, parent)
    values (old.tenant_id, 'attendee', old.id::text, old.org_id, true,
      coalesce('event:' || old.event_id, 'series:' || old.series_id));
  end if;
  if tg_op <> 'DELETE' then
    insert into changes (tenant_id, kind, key, org_id, deleted, parent)
    values (new.tenant_id, 'attendee', new.id::text, new.org_id, false,
      coalesce('event:' || new.event_id, 'series:' || new.series_id));
  end if;
  return null;
end
$fn$;

create constraint trigger changes_position after insert on changes
  deferrable initially deferred for each row execute function changes_take_position();
create trigger contacts_changes after insert or update or delete on contacts
  for each row execute function contacts_log_change();
create trigger events_changes after insert or update or delete on events
  for each row execute function events_log_change();
create trigger event_spaces_changes after insert or delete on event_spaces
  for each row execute function event_spaces_log_change();
create trigger spaces_event_changes after update on spaces
  for each row execute function spaces_log_event_change();
create trigger event_series_event_changes after update on event_series
  for each row execute function event_series_log_event_change();
create trigger attendees_changes after insert or update or delete on attendees
  for each row execute function attendees_log_change();
