-- Migration 0022 as a Citus cluster runs it on tables already distributed (src/platform/db/migrate.ts, "variants"):
-- Citus refuses ADD COLUMN with a constraint, and ADD CONSTRAINT beside other subcommands, on a distributed table,
-- so the columns come first and each constraint after in a statement of its own, under the name PostgreSQL gives an
-- inline one. The schema is the same as the main file's.

-- Event operations (docs/event-collaboration.md, "Registration, waitlist and check-in"): capacity, waitlist and
-- approval of registrations, cancellation, audited check-in and check-out, check-in tokens, no-shows.
--
-- Attendee statuses gain 'pending' (waiting for a manager's approval), 'waitlisted' (confirmed past capacity,
-- with a position) and 'no_show' (confirmed, the event ended, never checked in). The existing values keep
-- their meaning.

-- registration settings of an event; an occurrence follows its series' settings while registration_inherited
alter table events
  add column capacity integer,
  add column waitlist_enabled boolean not null default false,
  add column requires_approval boolean not null default false,
  add column registration_inherited boolean not null default true,
  add column cancelled_at timestamptz,
  add column cancelled_by text,
  add column cancellation_reason text;
alter table events add constraint events_capacity_check check (capacity >= 1);

alter table event_series
  add column capacity integer,
  add column waitlist_enabled boolean not null default false,
  add column requires_approval boolean not null default false;
alter table event_series add constraint event_series_capacity_check check (capacity >= 1);

alter table attendees drop constraint attendees_status_check;
alter table attendees add constraint attendees_status_check check (status in (
  'invited', 'confirmed', 'declined', 'tentative', 'checked_in', 'pending', 'waitlisted', 'no_show'
));
alter table attendees
  add column waitlist_position integer,
  add column approved_at timestamptz,
  add column approved_by text,
  add column checked_in_by text,
  add column check_in_method text,
  -- the status an attendee had when checked in: what undoing the check-in returns to
  add column status_before_check_in text,
  add column checked_out_at timestamptz,
  add column checked_out_by text,
  -- SHA-256 (hex) of the attendee's check-in token; the plain token is shown once, when issued
  add column check_in_token_hash text,
  add column check_in_token_issued_at timestamptz,
  add column check_in_token_revoked_at timestamptz;
alter table attendees add constraint attendees_check_in_method_check check (check_in_method in ('manual', 'scan', 'api'));
alter table attendees
  add constraint attendees_waitlist_position check ((status = 'waitlisted') = (waitlist_position is not null));
alter table attendees add constraint attendees_waitlist_position_positive check (waitlist_position >= 1);
-- no two attendees of an event share a waitlist position (checked at commit, so a promotion may renumber
-- the waitlist in one statement)
alter table attendees
  add constraint attendees_waitlist_unique unique (tenant_id, event_id, waitlist_position) deferrable initially deferred;

create unique index attendees_check_in_token on attendees (tenant_id, check_in_token_hash)
  where check_in_token_hash is not null;
