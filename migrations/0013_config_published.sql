-- +goose Up
-- The configurations the control plane published last, newest (highest ordinal) first, as much
-- of each as the history intake's gate reads: cluster and group names with their selectors and
-- members, user names; no credentials or password hashes. A worker files its queries after they
-- end and may run an older revision for a while: these rows let the gate take its late records
-- of clusters since removed across a control-plane restart.
CREATE SEQUENCE config_published_ordinal;
CREATE TABLE config_published (
    revision     text PRIMARY KEY,
    ordinal      bigint NOT NULL DEFAULT nextval('config_published_ordinal'),
    gate         jsonb NOT NULL,
    published_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE config_published;
DROP SEQUENCE config_published_ordinal;
