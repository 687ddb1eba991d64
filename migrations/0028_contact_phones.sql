-- Phone numbers that match (issue #23; docs/contacts.md, "Phone numbers").
--
-- Each phone field keeps what was typed; beside it the service writes its E.164 form (libphonenumber-js, in the
-- application: null when the number is empty or invalid), and `invalid_phones`, the phone fields whose text is not
-- a valid number (kept as typed, not refused). A row written before this migration has `invalid_phones` null: its
-- numbers were never read, so a null E.164 form there says nothing about them; the first write through the
-- service reads them all (contacts.phones.ts, `withPhones`).
--
-- A generated column holds the digits of each number reversed (of the E.164 form, else of what was typed), indexed
-- with text_pattern_ops: one index serves both an exact number (equality on the reversed digits of its E.164 form)
-- and a suffix of a few digits (a prefix of the reversed digits, `like '5540%'`), without a scan. The three fields
-- are three indexes, which a search combines (a bitmap OR). Equality (texteq) is LEAKPROOF and LIKE (textlike) was
-- marked so by migration 0009, so the indexes answer under row-level security too.

alter table contacts add column phone_primary_e164 text;
alter table contacts add column phone_secondary_e164 text;
alter table contacts add column phone_work_e164 text;
alter table contacts add column invalid_phones text[];

alter table contacts add column phone_primary_rev text generated always as
  (nullif(reverse(regexp_replace(coalesce(phone_primary_e164, phone_primary, ''), '[^0-9]', '', 'g')), '')) stored;
alter table contacts add column phone_secondary_rev text generated always as
  (nullif(reverse(regexp_replace(coalesce(phone_secondary_e164, phone_secondary, ''), '[^0-9]', '', 'g')), '')) stored;
alter table contacts add column phone_work_rev text generated always as
  (nullif(reverse(regexp_replace(coalesce(phone_work_e164, phone_work, ''), '[^0-9]', '', 'g')), '')) stored;

create index contacts_phone_primary on contacts (tenant_id, phone_primary_rev text_pattern_ops)
  where phone_primary_rev is not null;
create index contacts_phone_secondary on contacts (tenant_id, phone_secondary_rev text_pattern_ops)
  where phone_secondary_rev is not null;
create index contacts_phone_work on contacts (tenant_id, phone_work_rev text_pattern_ops)
  where phone_work_rev is not null;

-- Contacts written before this migration have their numbers read by the worker (contacts.phones.ts,
-- readUnreadPhones, beside retention): this index finds them, and empties as they are read.
create index contacts_phones_unread on contacts (tenant_id) where invalid_phones is null;
