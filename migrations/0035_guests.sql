-- Guests take part themselves (docs/guests.md): an invited attendee answers from a link in a mail, a stranger
-- registers from the public side and confirms by mail (double opt-in), every guest manages their place through a
-- link of their own, and every mail to a guest is in their language.
--
-- Written for PostgreSQL, PGlite and a Citus cluster alike: columns are added without inline constraints, and each
-- constraint is added in a statement of its own (Citus refuses both on a distributed table otherwise).

-- Public registration, per event and per series (an occurrence follows its series' settings while
-- registration_inherited, as capacity, waitlist and approval do). Closing: null = when the event starts.
alter table events
  add column public_registration boolean not null default false,
  add column registration_opens_at timestamptz,
  add column registration_closes_at timestamptz,
  add column registration_limit_per_email integer not null default 3,
  add column double_opt_in boolean not null default true;
alter table events add constraint events_registration_limit_per_email_check
  check (registration_limit_per_email between 1 and 20);

alter table event_series
  add column public_registration boolean not null default false,
  add column registration_opens_at timestamptz,
  add column registration_closes_at timestamptz,
  add column registration_limit_per_email integer not null default 3,
  add column double_opt_in boolean not null default true;
alter table event_series add constraint event_series_registration_limit_per_email_check
  check (registration_limit_per_email between 1 and 20);

-- The public registration route finds an event's tenant by its id alone (ids come from one identity sequence).
create index events_by_id on events (id);

-- The language a contact reads (a BCP 47 tag the service has texts for; null: the tenant's, else the deployment's).
alter table contacts add column locale text;
alter table contacts add constraint contacts_locale_check check (locale ~ '^[a-z]{2}$');

-- A new attendee status: registered from the public side, the mailed confirmation link not followed yet. Holds no
-- seat and no place on the waitlist.
alter table attendees drop constraint attendees_status_check;
alter table attendees add constraint attendees_status_check check (status in (
  'invited', 'confirmed', 'declined', 'tentative', 'checked_in', 'pending', 'waitlisted', 'no_show',
  'awaiting_confirmation'
));

-- What the organiser sees of the guest's side of an attendee:
--   source: how the attendee came ('organiser': added by a member; 'registration': the public form)
--   invitation_sent_at: when an invitation mail was last queued
--   guest_responded_at: when the guest last answered through their own link
--   locale: the language of this guest's registration (the contact's is never changed by anonymous input)
--   updates_unsubscribed_at: the guest asked for no more update mails (confirmations of their own acts still go)
--   calendar_sequence: the SEQUENCE of the calendar entry last mailed (grows with each change, RFC 5546)
--   calendar_digest: a digest of the event (title, time, zone, place) as the guest's last mail showed it
--   registrations: public registrations made for this attendee (the limit per e-mail counts them)
alter table attendees
  add column source text not null default 'organiser',
  add column invitation_sent_at timestamptz,
  add column guest_responded_at timestamptz,
  add column locale text,
  add column updates_unsubscribed_at timestamptz,
  add column calendar_sequence integer not null default 0,
  add column calendar_digest text,
  add column registrations integer not null default 0;
alter table attendees add constraint attendees_source_check check (source in ('organiser', 'registration'));
alter table attendees add constraint attendees_locale_check check (locale ~ '^[a-z]{2}$');

-- A guest's links: a random token mailed to the guest, only its SHA-256 (hex) kept. `manage` opens the guest's own
-- page (answer, cancel, calendar file); `confirm` is the double opt-in of a public registration. A link dies when
-- revoked (a rotation revokes every live link of the attendee), at `expires_at`, or a week after the event ends.
-- A request with a link names no tenant: the token is looked up by hash on the system login, as feed tokens are.
create table guest_tokens (
  tenant_id text not null,
  id bigint generated always as identity,
  attendee_id bigint not null,
  purpose text not null,
  token_hash text not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz,
  last_used_at timestamptz,
  primary key (tenant_id, id),
  unique (tenant_id, token_hash),
  foreign key (tenant_id, attendee_id) references attendees (tenant_id, id) on delete cascade
);
alter table guest_tokens add constraint guest_tokens_purpose_check check (purpose in ('manage', 'confirm'));
create index guest_tokens_hash on guest_tokens (token_hash);
create index guest_tokens_attendee on guest_tokens (tenant_id, attendee_id) where revoked_at is null;

alter table guest_tokens enable row level security;
alter table guest_tokens force row level security;
create policy tenant_isolation on guest_tokens
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

-- A tenant's guest settings: the language of its guests' texts when a guest's own is unknown.
create table guest_settings (
  tenant_id text not null,
  default_locale text,
  updated_at timestamptz not null default now(),
  primary key (tenant_id)
);
alter table guest_settings add constraint guest_settings_locale_check check (default_locale ~ '^[a-z]{2}$');

alter table guest_settings enable row level security;
alter table guest_settings force row level security;
create policy tenant_isolation on guest_settings
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));
