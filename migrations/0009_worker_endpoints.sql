-- +goose Up
-- Where each worker's frontends take requests forwarded by its peers (a Trino follow-up or a
-- Flight SQL ticket that reached a worker other than the one owning the query), by protocol.
ALTER TABLE worker_registry ADD COLUMN endpoints jsonb NOT NULL DEFAULT '{}'::jsonb;

-- +goose Down
ALTER TABLE worker_registry DROP COLUMN endpoints;
