-- The automation dispatcher claims unprocessed outbox rows tenant by tenant (tenant_id = $1 … order by id
-- for update skip locked: routed to one shard on Citus). This index serves that claim directly; the
-- tenants with work are found through outbox_unprocessed (0001). The outbox is kept short by retention
-- (docs/retention.md), so building it takes a moment.
create index outbox_unprocessed_tenant on outbox (tenant_id, id) where processed_at is null;
