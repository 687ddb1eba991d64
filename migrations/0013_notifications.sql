-- Notification status values: pending, sent, failed (retries used up, or refused for good by the
-- mail server), undeliverable (no address to send to: never retried; the reason in last_error).
-- The admin list (GET /api/v1/notifications) reads one tenant's rows by status, newest first.
create index notification_outbox_tenant_status on notification_outbox (tenant_id, status, id);
