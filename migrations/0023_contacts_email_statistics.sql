-- Statistics of contacts' lower-cased e-mails (docs/contacts.md, "Throughput").
--
-- The upsert and the CSV import find a batch's matches with `lower(email) in (…500 addresses…)`. The only index on
-- that expression is partial (contacts_email, `where email is not null`), and PostgreSQL keeps no statistics of a
-- partial index's expressions: the planner guessed that most of the tenant matched and read every contact of the
-- caller's scope (450 000 rows in the largest benchmark tenant, 0.3 – 0.6 s a batch) instead of the index (2.4 ms).
-- Statistics on the expression give it the real number of distinct addresses. On Citus they are not created (the
-- shards keep their own statistics); the batches read there as before.

do $$
begin
  if exists (select from pg_extension where extname = 'citus') then
    raise notice 'Citus: no extended statistics on lower(contacts.email)';
    return;
  end if;
  create statistics contacts_lower_email on (lower(email)) from contacts;
end
$$;

analyze contacts;
