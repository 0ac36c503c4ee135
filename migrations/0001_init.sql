-- +goose Up
-- The schema's own marker; later migrations add the registry, leases, history and config tables.
CREATE TABLE IF NOT EXISTS queryflux_meta (key text PRIMARY KEY, value text NOT NULL);

-- +goose Down
DROP TABLE IF EXISTS queryflux_meta;
