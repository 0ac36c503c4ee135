-- +goose Up
-- The control plane's configuration when it lives in Postgres (internal/config/pgconfig), edited
-- through the admin API. Only the shared sections live here (the node-local `queryflux` section
-- stays in each node's YAML). A snapshot is read from all these tables in one REPEATABLE READ
-- transaction, so it never mixes two edits. Every change notifies channel queryflux_config.
--
-- Cluster credentials are stored in their own columns (and, for variants, inside `variants`)
-- because the admin API must be able to write them but never read them back.
CREATE TABLE config_clusters (
    name                text PRIMARY KEY,
    position            integer NOT NULL DEFAULT 0,
    engine              text NOT NULL,
    endpoint            text NOT NULL DEFAULT '',
    database            text NOT NULL DEFAULT '',
    cred_user           text NOT NULL DEFAULT '',
    cred_password       text NOT NULL DEFAULT '',
    cred_token          text NOT NULL DEFAULT '',
    max_running_queries integer NOT NULL CHECK (max_running_queries >= 0),
    enabled             boolean NOT NULL DEFAULT true,
    labels              jsonb NOT NULL DEFAULT '{}'::jsonb,
    options             jsonb NOT NULL DEFAULT '{}'::jsonb,
    variants            jsonb NOT NULL DEFAULT '{}'::jsonb,
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- spec is the group as config.ClusterGroup's JSON (without the name).
CREATE TABLE config_cluster_groups (
    name       text PRIMARY KEY,
    position   integer NOT NULL DEFAULT 0,
    spec       jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Routers are ordered; spec is config.Router's JSON.
CREATE TABLE config_routers (
    position   integer PRIMARY KEY,
    spec       jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The remaining shared sections, one row each: routingFallback, translation, settings, historyPolicy.
CREATE TABLE config_sections (
    section    text PRIMARY KEY CHECK (section IN ('routingFallback', 'translation', 'settings', 'historyPolicy')),
    value      jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- +goose StatementBegin
CREATE FUNCTION config_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('queryflux_config', TG_TABLE_NAME);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER config_clusters_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON config_clusters
    FOR EACH STATEMENT EXECUTE FUNCTION config_notify();
CREATE TRIGGER config_cluster_groups_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON config_cluster_groups
    FOR EACH STATEMENT EXECUTE FUNCTION config_notify();
CREATE TRIGGER config_routers_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON config_routers
    FOR EACH STATEMENT EXECUTE FUNCTION config_notify();
CREATE TRIGGER config_sections_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON config_sections
    FOR EACH STATEMENT EXECUTE FUNCTION config_notify();

-- +goose Down
DROP TABLE IF EXISTS config_sections;
DROP TABLE IF EXISTS config_routers;
DROP TABLE IF EXISTS config_cluster_groups;
DROP TABLE IF EXISTS config_clusters;
DROP FUNCTION IF EXISTS config_notify();
