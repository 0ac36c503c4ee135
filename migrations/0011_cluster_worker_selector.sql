-- +goose Up
-- A cluster's workerSelector (which workers may receive it), kept with the cluster so that a
-- configuration edited through the admin API filters each worker's snapshot as the same YAML does.
ALTER TABLE config_clusters ADD COLUMN worker_selector jsonb NOT NULL DEFAULT '{}'::jsonb;

-- +goose Down
ALTER TABLE config_clusters DROP COLUMN worker_selector;
