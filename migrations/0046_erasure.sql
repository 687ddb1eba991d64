-- Erasure of a contact (GDPR article 17; docs/privacy.md).
--
-- * An attendance outlives the person it was: the row stays for the event's counts and capacity, anonymous, with
--   contact_id null and no personal column (notes, answers, language, calendar digest, check-in token). Its foreign
--   key to contacts does not apply to a null contact (MATCH SIMPLE), and the unique keys treat nulls as distinct, so
--   several anonymous rows may share an event.
-- * `erasures` records that a contact was erased, by whom and how many rows each place held: no personal value,
--   only ids and counts. A second erase of the same id answers from it, and nothing is written again.

alter table attendees alter column contact_id drop not null;

create table erasures (
  tenant_id text not null,
  id bigint generated always as identity,
  contact_id uuid not null,
  erased_at timestamptz not null default now(),
  erased_by text not null,
  counts jsonb not null default '{}',
  primary key (tenant_id, id),
  unique (tenant_id, contact_id)
);

alter table erasures enable row level security;
alter table erasures force row level security;
create policy tenant_isolation on erasures
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));
