-- Before a replaced cover's object is deleted, the service checks that no event and no series of
-- the tenant still refers to its key (a published event and its draft clone, or older occurrences
-- of a series, may share one). These partial indexes make that check a lookup instead of a scan of
-- the tenant's events (docs/storage.md).
create index events_cover_key on events (tenant_id, cover_image_key) where cover_image_key is not null;
create index event_series_cover_key on event_series (tenant_id, cover_image_key) where cover_image_key is not null;
