-- Public event pages (docs/guests.md, "The public page"): every published public event has a page of its own with
-- the registration form, which an organiser may embed on their own site. Which sites may frame the page is the
-- choice of the managers of the event's public spaces: each space keeps a list of origins (`https://example.org`,
-- or `http://localhost:3000` while developing), and the page's `Content-Security-Policy: frame-ancestors` is the
-- union of the lists of the event's public spaces ('none' when they are all empty, the default).
--
-- Written for PostgreSQL, PGlite and a Citus cluster alike: the column is added without an inline constraint, and the
-- constraint in a statement of its own (Citus refuses both on a distributed table otherwise).
alter table spaces add column embed_origins text[] not null default '{}';
alter table spaces add constraint spaces_embed_origins_check check (cardinality(embed_origins) <= 20);
