-- The tenant audit log (docs/audit.md): who changed what, when, from where. One row per change, written in the
-- transaction of the change; append-only for the application role (the migration runner revokes UPDATE and DELETE
-- from collab_app on these tables after every run). A row is sealed into its tenant's hash chain after it commits
-- (seq, prev_hash, hash), by the background sealer or before the log is read; only the system login seals and prunes.
--
-- fields holds the names of the changed fields with values only where they are not personal data: other values are
-- keyed hashes (HMAC-SHA-256), never the value itself.

create table audit_log (
  tenant_id text not null,
  id bigint generated always as identity,
  at timestamptz not null default now(),
  actor_type text not null,
  actor_id text,
  via text,
  request_id text,
  address text,
  action text not null,
  resource_type text not null,
  resource_id text,
  contact_id text,
  fields jsonb not null default '{}',
  seq bigint,
  prev_hash text,
  hash text,
  primary key (tenant_id, id)
);
alter table audit_log add constraint audit_log_actor_type_check check (actor_type in (
  'user', 'api_key', 'guest', 'anonymous', 'identity_provider', 'automation', 'scim', 'system'
));
create unique index audit_log_seq on audit_log (tenant_id, seq);
create index audit_log_unsealed on audit_log (tenant_id, id) where seq is null;
create index audit_log_at on audit_log (tenant_id, at);
create index audit_log_resource on audit_log (tenant_id, resource_type, resource_id);
create index audit_log_actor on audit_log (tenant_id, actor_id);
create index audit_log_contact on audit_log (tenant_id, contact_id) where contact_id is not null;

-- The head of each tenant's chain: the last sealed position and its hash, and where retention cut the chain's start
-- (the hash of the last pruned entry, which the first kept entry names as its prev_hash).
create table audit_heads (
  tenant_id text not null,
  seq bigint not null default 0,
  hash text not null default '',
  pruned_seq bigint not null default 0,
  pruned_hash text not null default '',
  primary key (tenant_id)
);

alter table audit_log enable row level security;
alter table audit_log force row level security;
create policy tenant_isolation on audit_log
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));

alter table audit_heads enable row level security;
alter table audit_heads force row level security;
create policy tenant_isolation on audit_heads
  using (tenant_id = nullif(current_setting('app.tenant_id', true), ''))
  with check (tenant_id = nullif(current_setting('app.tenant_id', true), ''));
