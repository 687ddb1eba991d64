-- Series feeds and the personal feed of attended events (docs/integrations.md, "Calendar feeds (RFC 5545)").
--
-- A feed token of scope `series` reads one series (`GET /api/v1/series/{id}/calendar.ics?token=…`) as its user sees
-- its occurrences. `user_claims.verified_email` is the e-mail address the user's latest token carried with
-- `email_verified: true` (recorded by the user gate beside the organization and roles): the personal feed shows the
-- events whose attendee contact has that address.

alter table feed_tokens add column series_id bigint;
alter table feed_tokens drop constraint feed_tokens_scope_check;
alter table feed_tokens add constraint feed_tokens_scope_check check (scope in ('space', 'personal', 'series'));
alter table feed_tokens add constraint feed_tokens_series_check check ((scope = 'series') = (series_id is not null));
alter table feed_tokens add constraint feed_tokens_series_fkey
  foreign key (tenant_id, series_id) references event_series (tenant_id, id) on delete cascade;

alter table user_claims add column verified_email text;
