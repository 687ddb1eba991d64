-- Calendar feed tokens (docs/integrations.md, "Calendar feeds"): a secret in a feed's address lets a calendar app
-- read a space's feed or a user's personal feed without a bearer token. Only the SHA-256 (hex) of a token is kept,
-- as for invite tokens (src/platform/invite-tokens.ts): a database read cannot subscribe to anyone's calendar.
--
-- A feed request names no tenant: its token is looked up by hash on the system login (withSystem, which passes
-- row-level security), then everything else is read in the token's tenant as its user. `token_hash` is unique
-- across tenants for that lookup; on Citus it is unique per shard key too (tenant_id leads the index).

create table feed_tokens (
  tenant_id text not null,
  id bigint generated always as identity,
  user_id text not null,
  scope text not null check (scope in ('space', 'personal')),
  space_id bigint,
  -- the organization of the creator's token when the token was made (feeds see organization events through it)
  org_id text,
  token_hash text not null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz,
  primary key (tenant_id, id),
  unique (tenant_id, token_hash),
  foreign key (tenant_id, space_id) references spaces (tenant_id, id) on delete cascade,
  check ((scope = 'space') = (space_id is not null))
);
-- the feed lookup (every tenant, by hash) and a user's own tokens
create index feed_tokens_hash on feed_tokens (token_hash);
create index feed_tokens_user on feed_tokens (tenant_id, user_id, id);

alter table feed_tokens enable row level security;
alter table feed_tokens force row level security;
create policy tenant_isolation on feed_tokens
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));
