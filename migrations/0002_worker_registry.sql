-- +goose Up
-- The control plane's worker registry: one row per worker name. The session token is never
-- stored, only its SHA-256 (token_hash), cleared when the token is revoked.
CREATE TABLE IF NOT EXISTS worker_registry (
    name           text PRIMARY KEY,
    version        text NOT NULL DEFAULT '',
    labels         jsonb NOT NULL DEFAULT '{}'::jsonb,
    frontends      jsonb NOT NULL DEFAULT '[]'::jsonb,
    token_hash     text NOT NULL DEFAULT '',
    registered_at  timestamptz,
    state          text NOT NULL CHECK (state IN ('healthy', 'stale', 'evicted')),
    state_since    timestamptz,
    last_seen      timestamptz,
    last_heartbeat timestamptz,
    heartbeat      jsonb,
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE IF EXISTS worker_registry;
