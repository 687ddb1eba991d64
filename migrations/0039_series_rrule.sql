-- RFC 5545 recurrence rules for series (docs/series.md, "RFC 5545 rules"): a series' rule is either the seed's
-- fields (freq daily, weekly, monthly, custom) or an RRULE text (freq 'rrule'), which then decides the dates; the
-- other rule columns mirror its INTERVAL, COUNT and UNTIL. rdates: dates added to the rule's (RDATE).

alter table event_series add column rrule text;
alter table event_series add column rdates timestamptz[] not null default '{}';
alter table event_series drop constraint event_series_freq_check;
alter table event_series add constraint event_series_freq_check
  check (freq in ('daily', 'weekly', 'monthly', 'custom', 'rrule'));
alter table event_series add constraint event_series_rrule_check check ((freq = 'rrule') = (rrule is not null));
