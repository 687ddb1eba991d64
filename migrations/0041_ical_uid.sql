-- Calendar import (docs/calendar-import.md): the UID of the iCalendar VEVENT an event or a series was imported from,
-- so that importing the same file again updates what the first import made instead of making it twice. A single
-- VEVENT is an event (events.ical_uid); a recurring one is a series (event_series.ical_uid), whose occurrences carry
-- none. A UID names at most one event and one series of a tenant (deleted ones included: a later import reports them
-- rather than bringing them back).
--
-- Written for PostgreSQL, PGlite and a Citus cluster alike: a nullable column without a constraint, and unique indexes
-- that lead with the distribution column (tenant_id), which a cluster takes on a distributed table as it is (no
-- variant under migrations/citus/).
alter table events add column ical_uid text;
alter table event_series add column ical_uid text;
create unique index events_ical_uid on events (tenant_id, ical_uid) where ical_uid is not null;
create unique index event_series_ical_uid on event_series (tenant_id, ical_uid) where ical_uid is not null;
