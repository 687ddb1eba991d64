-- Likely duplicate contacts and a contact's timeline (issue #23; docs/contacts.md, "Duplicates" and "Timeline").
--
-- Duplicates are groups of contacts that share a key: the e-mail (lower-cased, trimmed), an E.164 number
-- (phone_*_e164 of migration 0028, across the three fields) or the full name with the company (normalised
-- below). A page of groups walks the key indexes below from the cursor, merged in key order: index-only scans whose
-- entries carry what the caller's visibility needs (owner_id, org_id), grouped as they stream, so a page stops after
-- its groups, and page 500 starts where page 499 ended (contacts.duplicates.repository.ts).
--
-- The keys are stored generated columns, not expression indexes: under row-level security PostgreSQL lets an
-- index answer only LEAKPROOF conditions (0009, 0023), and btrim and regexp_replace are not, so the cursor's
-- `key > $1` on an expression would be checked row by row from the tenant's first key. On a column it is a
-- plain text comparison (text_gt is LEAKPROOF) and an index range, without a superuser.
--
-- The name key: first and last name (middle name and nickname left out: one copy often has them and the other
-- not), and the company, each lower-cased with runs of white space and control characters made one space and
-- the ends trimmed; accents are kept (`unaccent` is not installed). Both parts non-empty, joined by U+001F,
-- which the normalisation leaves in neither part. A name without a company (or a company without a name) is no
-- key: "Anna Meier" alone is too weak a sign.
--
-- Index entries end in (created_at, id): a group's first contacts, oldest first, are read from the same index
-- without reading every contact of a large group.

alter table contacts add column email_key text generated always as (nullif(lower(btrim(email)), '')) stored;

alter table contacts add column name_company_key text generated always as (
  case
    when btrim(regexp_replace(coalesce(first_name, '') || ' ' || coalesce(last_name, ''), '[[:space:][:cntrl:]]+', ' ', 'g')) <> ''
      and btrim(regexp_replace(coalesce(company, ''), '[[:space:][:cntrl:]]+', ' ', 'g')) <> ''
    then lower(btrim(regexp_replace(coalesce(first_name, '') || ' ' || coalesce(last_name, ''), '[[:space:][:cntrl:]]+', ' ', 'g')))
      || chr(31) || lower(btrim(regexp_replace(coalesce(company, ''), '[[:space:][:cntrl:]]+', ' ', 'g')))
  end
) stored;

create index contacts_dup_email on contacts (tenant_id, email_key, created_at, id) include (owner_id, org_id)
  where email_key is not null;
create index contacts_dup_name_company on contacts (tenant_id, name_company_key, created_at, id) include (owner_id, org_id)
  where name_company_key is not null;
-- a number a contact holds in two of its fields counts once: the secondary (work) field counts where it differs from
-- the fields before it, read from the same index entry
create index contacts_dup_phone_primary on contacts (tenant_id, phone_primary_e164, created_at, id)
  include (owner_id, org_id) where phone_primary_e164 is not null;
create index contacts_dup_phone_secondary on contacts (tenant_id, phone_secondary_e164, created_at, id)
  include (owner_id, org_id, phone_primary_e164) where phone_secondary_e164 is not null;
create index contacts_dup_phone_work on contacts (tenant_id, phone_work_e164, created_at, id)
  include (owner_id, org_id, phone_primary_e164, phone_secondary_e164) where phone_work_e164 is not null;

-- The timeline's automation runs: the runs whose trigger names the contact (`payload.contact_id`: attendee and
-- contact triggers, space contact triggers, a manual run's context). An expression index, as the payload is: a stored
-- column would have to be left out of every statement that copies executions whole. Under row-level security it
-- answers only if `->>` (jsonb_object_field_text) is LEAKPROOF, as `lower` in 0023: it raises no error that depends on
-- its arguments (a value that is no object, or has no such key, gives null), so it reveals nothing of the rows it is
-- applied to. It needs a superuser; without one, a notice, and the runs of a contact are read through the tenant's
-- executions until the DBA runs the statement (docs/tenancy.md).
do $$
begin
  if (select rolsuper from pg_roles where rolname = current_user) then
    alter function jsonb_object_field_text(jsonb, text) leakproof;
  else
    raise notice 'jsonb_object_field_text is not LEAKPROOF: the runs of a contact will not use their index under RLS; a superuser should run: alter function jsonb_object_field_text(jsonb, text) leakproof';
  end if;
end
$$;
create index automation_executions_contact on automation_executions (tenant_id, (trigger_payload ->> 'contact_id'))
  where (trigger_payload ->> 'contact_id') is not null;

-- The timeline's manager roles: every row of a user (event_managers_by_user holds the active ones only).
create index event_managers_user on event_managers (tenant_id, user_id) where user_id is not null;
