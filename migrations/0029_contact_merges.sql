-- Merging contacts (issue #23; docs/contacts.md, "Merge"): `POST /api/v1/contacts/{id}/merge` moves everything that
-- refers to the absorbed contacts to the one kept, deletes the absorbed ones, and leaves a redirect for each.
--
-- contact_redirects: an absorbed contact's id → the contact it is now, written in the merge's transaction, so that
-- links and syncs that still name the old id find the new one (GET answers 308). Always one hop: a merge into C of
-- a contact B that had absorbed A rewrites A → B to A → C. A redirect goes with the contact it points to (a deleted
-- target leaves nothing to redirect to: its absorbed ids answer 404 like any unknown id). `from_id` refers to no
-- row: that contact is gone.
--
-- The two indexes let a merge find the rows that name a contact without reading the tenant's whole table (each
-- answers under row-level security: uuid and text equality are LEAKPROOF). space_contacts_contact also serves the
-- cascade of a contact's delete, which read every link of the tenant.

create table contact_redirects (
  tenant_id text not null,
  from_id uuid not null,
  to_id uuid not null,
  merged_at timestamptz not null default now(),
  merged_by text not null,
  primary key (tenant_id, from_id),
  foreign key (tenant_id, to_id) references contacts (tenant_id, id) on delete cascade,
  check (from_id <> to_id)
);
create index contact_redirects_to on contact_redirects (tenant_id, to_id);

alter table contact_redirects enable row level security;
alter table contact_redirects force row level security;
create policy tenant_isolation on contact_redirects
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

create index space_contacts_contact on space_contacts (tenant_id, contact_id);
create index space_activity_contact on space_activity (tenant_id, resource_id) where type = 'contact';
