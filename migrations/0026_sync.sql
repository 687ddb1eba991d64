-- Incremental sync of the contacts list (issue #22; docs/integrations.md, "Incremental sync").
--
-- `changes` is an append-only log: statement-level triggers add one row per contact a statement inserted, updated
-- or deleted, with the contact's owner and organization at that point (who could see it), and the id of the
-- transaction that wrote it (`xid`). A sync token names the oldest transaction that was still running when it was
-- issued (the xmin of a snapshot): every change its reader may not have seen has `xid >=` that, whatever order the
-- writers committed in, which an identity sequence alone cannot promise (a writer holding seq 10 may commit after
-- one holding seq 11 was read). `seq` orders and pages a delta.
--
-- An update that moves a contact to another owner or organization also logs the old owner and organization, so a
-- caller who saw the contact before gets its tombstone. The retention job deletes rows older than the sync window.
--
-- On a Citus cluster the triggers are not created (triggers on distributed tables are refused): the service sees
-- that (pg_trigger) and issues no sync token there; a token sent answers 410.

create table changes (
  tenant_id text not null,
  seq bigint generated always as identity,
  kind text not null,
  key text not null,
  owner_id text,
  org_id text,
  deleted boolean not null,
  xid xid8 not null default pg_current_xact_id(),
  at timestamptz not null default now(),
  primary key (tenant_id, seq)
);
create index changes_since on changes (tenant_id, kind, xid);
create index changes_at on changes (at);
alter table changes enable row level security;
alter table changes force row level security;
create policy tenant_isolation on changes
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

-- a plpgsql branch is planned when it first runs: each names only the transition tables its statement kind has
create function contacts_log_changes() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'INSERT' then
    insert into changes (tenant_id, kind, key, owner_id, org_id, deleted)
    select tenant_id, 'contact', id::text, owner_id, org_id, false from new_rows;
  elsif tg_op = 'DELETE' then
    insert into changes (tenant_id, kind, key, owner_id, org_id, deleted)
    select tenant_id, 'contact', id::text, owner_id, org_id, true from old_rows;
  else
    insert into changes (tenant_id, kind, key, owner_id, org_id, deleted)
    select tenant_id, 'contact', id::text, owner_id, org_id, false from new_rows
    union all
    select o.tenant_id, 'contact', o.id::text, o.owner_id, o.org_id, true
    from old_rows o join new_rows n on n.tenant_id = o.tenant_id and n.id = o.id
    where n.owner_id is distinct from o.owner_id or n.org_id is distinct from o.org_id;
  end if;
  return null;
end
$fn$;

do $$
begin
  if exists (select from pg_extension where extname = 'citus') then
    raise notice 'Citus: contact changes are not logged by triggers; the contacts list issues no sync token';
    return;
  end if;
  create trigger contacts_changes_insert after insert on contacts
    referencing new table as new_rows for each statement execute function contacts_log_changes();
  create trigger contacts_changes_update after update on contacts
    referencing old table as old_rows new table as new_rows for each statement execute function contacts_log_changes();
  create trigger contacts_changes_delete after delete on contacts
    referencing old table as old_rows for each statement execute function contacts_log_changes();
end
$$;
