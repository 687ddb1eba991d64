-- The reader of an outbound webhook subscription (issue #35; docs/security.md, "What leaves the service"): a
-- subscription hands its receiver only what its creator may be told of, as the outbound rule decides for them now
-- (policy/disclosure.ts). Like an automation rule's creator (0011), the subscription keeps the roles and the
-- organization its creator's token carried when they created it; grants, memberships and visibility are read at
-- each delivery. Subscriptions from before were created by tenant admins (the only ones who may): `admin`, no
-- organization.
alter table webhook_subscriptions add column created_by_roles text[] not null default '{admin}';
alter table webhook_subscriptions add column created_by_org text;

-- The organization and roles each user's token last carried (the user gate records them, identity.user-gate.ts): a
-- reader the service acts for without a request — a calendar feed token's user — reads as the user is now, not as
-- when the token was made (a user who moved to another organization no longer sees the first one's events there).
create table user_claims (
  tenant_id text not null,
  user_id text not null,
  org_id text,
  roles text[] not null default '{}',
  seen_at timestamptz not null default now(),
  primary key (tenant_id, user_id)
);
alter table user_claims enable row level security;
alter table user_claims force row level security;
create policy tenant_isolation on user_claims
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));
