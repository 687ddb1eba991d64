-- Retention (docs/retention.md): the job deletes rows nobody needs any more in batches, oldest
-- first, each batch found through an index so that it never reads the rows it keeps.
--
-- processed domain events by processing time (the unprocessed rows have their own index, 0001)
create index outbox_processed on outbox (processed_at) where processed_at is not null;
-- notifications that are done (sent, failed, undeliverable) by creation time
create index notification_outbox_done on notification_outbox (created_at) where status <> 'pending';
-- executions by creation time: the job walks them in (created_at, id) order. No status in the
-- index, so that status changes (queued, running, succeeded) stay heap-only updates.
create index automation_executions_created on automation_executions (created_at, id);
-- idempotency_keys (expires_at) and idp_deliveries (received_at) have theirs since 0001 and 0003.
