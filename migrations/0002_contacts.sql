-- Contacts: owned by a user, shared with an organization (org_id) or personal (org_id null).

create table contacts (
  tenant_id text not null,
  id uuid not null default gen_random_uuid(),
  org_id text,
  owner_id text not null,
  is_favorite boolean not null default false,
  first_name text,
  middle_name text,
  last_name text,
  nickname text,
  email text,
  phone_primary text,
  phone_secondary text,
  phone_work text,
  company text,
  job_title text,
  address_line1 text,
  address_line2 text,
  city text,
  state_province text,
  postal_code text,
  country text,
  website text,
  avatar_url text,
  notes text,
  linked_user_id text,
  tags text[] not null default '{}',
  revision integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- one lower-cased text for search over name, e-mail and company, indexed by trigrams
  search_text text generated always as (lower(
    coalesce(first_name, '') || ' ' || coalesce(middle_name, '') || ' ' || coalesce(last_name, '') || ' ' ||
    coalesce(nickname, '') || ' ' || coalesce(email, '') || ' ' || coalesce(company, ''))) stored,
  primary key (tenant_id, id)
);

create index contacts_owner on contacts (tenant_id, owner_id, created_at desc);
create index contacts_org on contacts (tenant_id, org_id, created_at desc) where org_id is not null;
create index contacts_email on contacts (tenant_id, lower(email)) where email is not null;
create index contacts_search_trgm on contacts using gin (search_text gin_trgm_ops);

alter table contacts enable row level security;
alter table contacts force row level security;
create policy tenant_isolation on contacts
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));
