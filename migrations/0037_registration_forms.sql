-- Registration questions (docs/guests.md, "Questions"): an organiser's form per event or per series, kept as
-- versions (a change of the form is a new version; earlier versions stay, so every answer keeps the questions it
-- answered), and each attendee's answers with the version they answered.

create table registration_forms (
  tenant_id text not null,
  id bigint generated always as identity,
  event_id bigint,
  series_id bigint,
  version integer not null,
  questions jsonb not null,
  created_by text not null,
  created_at timestamptz not null default now(),
  primary key (tenant_id, id),
  foreign key (tenant_id, event_id) references events (tenant_id, id) on delete cascade,
  foreign key (tenant_id, series_id) references event_series (tenant_id, id) on delete cascade
);
alter table registration_forms add constraint registration_forms_owner_check
  check ((event_id is null) <> (series_id is null));
alter table registration_forms add constraint registration_forms_version_check check (version >= 1);
create unique index registration_forms_event_version on registration_forms (tenant_id, event_id, version)
  where event_id is not null;
create unique index registration_forms_series_version on registration_forms (tenant_id, series_id, version)
  where series_id is not null;

alter table registration_forms enable row level security;
alter table registration_forms force row level security;
create policy tenant_isolation on registration_forms
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

-- An attendee's answers: by question id, as validated against the form version `answers_form_id`.
alter table attendees
  add column answers jsonb,
  add column answers_form_id bigint,
  add column answers_updated_at timestamptz;
