-- +goose Up
-- Every configuration stored through the admin API or `queryflux config import`, kept so an
-- operator can see what changed when (GET /admin/config/history, `queryflux config history`)
-- and go back (`queryflux config rollback REV`). config is the stored form of
-- internal/config/pgconfig (its secrets sealed as in config_clusters, or references); revision
-- is the worker snapshot revision it was served under. Edits lock this table first, so they
-- take turns instead of failing on serialization races.
CREATE TABLE config_revisions (
    id         bigserial PRIMARY KEY,
    revision   text NOT NULL,
    config     jsonb NOT NULL,
    note       text NOT NULL DEFAULT '',
    clusters   integer NOT NULL DEFAULT 0,
    groups     integer NOT NULL DEFAULT 0,
    users      integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX config_revisions_revision ON config_revisions (revision);

-- +goose Down
DROP TABLE IF EXISTS config_revisions;
