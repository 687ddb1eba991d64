-- Unpublishing an event (docs/events.md, "Unpublish"): `POST /events/{id}/unpublish` takes a published event back to
-- draft. With `cancel_in_feeds: true` the calendar feeds that showed it keep it, as STATUS:CANCELLED, until it is
-- published again, instead of dropping it: the feeds read this column while the event is a draft
-- (src/modules/feeds/feeds.repository.ts). Every unpublish sets it to what its body asked; a publish clears it.
--
-- Written for PostgreSQL, PGlite and a Citus cluster alike: a column with a default and no constraint, which a
-- cluster adds to a distributed table as it is (no variant under migrations/citus/).
alter table events add column cancel_in_feeds boolean not null default false;

-- Unpublishing a space (docs/spaces.md, "Unpublish"): it keeps its row in the public directory, so its anonymous
-- calendar feed keeps answering its subscribers, with no event (they leave their calendars) or, with
-- `cancel_in_feeds`, with its public events as STATUS:CANCELLED; its public page answers 404 (drafts are not shown).
alter table spaces add column cancel_in_feeds boolean not null default false;
