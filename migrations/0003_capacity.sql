-- +goose Up
-- Capacity leases (internal/capacity/pgcapacity). capacity_clusters.running always equals the
-- number of capacity_leases rows of the cluster: every function below changes both in one
-- transaction. Acquire updates the counter row with "WHERE running < cap", so the row lock
-- serializes grants per cluster and the cap can never be exceeded, whatever the concurrency.
-- generation only grows (the fencing token); it is never reset, not even when running is 0.
CREATE TABLE capacity_clusters (
    cluster    text PRIMARY KEY,
    running    integer NOT NULL CHECK (running >= 0),
    generation bigint  NOT NULL CHECK (generation >= 0)
);

CREATE TABLE capacity_leases (
    id         text PRIMARY KEY,
    cluster    text NOT NULL REFERENCES capacity_clusters (cluster),
    generation bigint NOT NULL,
    holder     text NOT NULL,
    expires_at timestamptz NOT NULL,
    UNIQUE (cluster, generation)
);
CREATE INDEX capacity_leases_expires_at ON capacity_leases (expires_at);
CREATE INDEX capacity_leases_holder ON capacity_leases (holder);

CREATE TABLE capacity_sweep_locks (
    name       text PRIMARY KEY,
    owner      text NOT NULL,
    expires_at timestamptz NOT NULL
);

-- capacity_acquire grants, in order, each request of one cluster whose cap allows it.
-- It returns one generation per request, 0 for a denial. Lock order: the one counter row.
-- +goose StatementBegin
CREATE FUNCTION capacity_acquire(p_cluster text, p_holders text[], p_caps integer[], p_expires timestamptz[])
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    gens bigint[] := '{}';
    g bigint;
BEGIN
    INSERT INTO capacity_clusters (cluster, running, generation) VALUES (p_cluster, 0, 0)
        ON CONFLICT (cluster) DO NOTHING;
    FOR i IN 1 .. coalesce(array_length(p_holders, 1), 0) LOOP
        UPDATE capacity_clusters SET running = running + 1, generation = generation + 1
            WHERE cluster = p_cluster AND running < p_caps[i]
            RETURNING generation INTO g;
        IF FOUND THEN
            INSERT INTO capacity_leases (id, cluster, generation, holder, expires_at)
                VALUES (p_cluster || '#' || g, p_cluster, g, p_holders[i], p_expires[i]);
            gens := gens || g;
        ELSE
            gens := gens || 0::bigint;
        END IF;
    END LOOP;
    RETURN gens;
END $$;
-- +goose StatementEnd

-- capacity_release frees the leases named by (id, generation) pairs and returns their ids.
-- Lock order: counter rows sorted by cluster, then lease rows.
-- +goose StatementBegin
CREATE FUNCTION capacity_release(p_ids text[], p_gens bigint[])
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
    released text[];
BEGIN
    PERFORM 1 FROM capacity_clusters
        WHERE cluster IN (SELECT l.cluster FROM capacity_leases l
                          JOIN unnest(p_ids, p_gens) AS r (id, gen) ON l.id = r.id AND l.generation = r.gen)
        ORDER BY cluster FOR UPDATE;
    WITH d AS (
        DELETE FROM capacity_leases l USING unnest(p_ids, p_gens) AS r (id, gen)
            WHERE l.id = r.id AND l.generation = r.gen
            RETURNING l.id, l.cluster
    ), agg AS (
        SELECT cluster, count(*)::integer AS n FROM d GROUP BY cluster
    ), u AS (
        UPDATE capacity_clusters c SET running = c.running - agg.n FROM agg WHERE c.cluster = agg.cluster
    )
    SELECT array_agg(id) INTO released FROM d;
    RETURN coalesce(released, '{}');
END $$;
-- +goose StatementEnd

-- capacity_release_where frees every lease that expired by p_now (p_holder NULL) or that
-- p_holder holds (p_now NULL), and returns them. Same lock order as capacity_release.
-- +goose StatementBegin
CREATE FUNCTION capacity_release_where(p_now timestamptz, p_holder text)
RETURNS SETOF capacity_leases LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM capacity_clusters c
        WHERE EXISTS (SELECT 1 FROM capacity_leases l WHERE l.cluster = c.cluster
                      AND (l.expires_at <= p_now OR l.holder = p_holder))
        ORDER BY c.cluster FOR UPDATE;
    RETURN QUERY
    WITH d AS (
        DELETE FROM capacity_leases l WHERE l.expires_at <= p_now OR l.holder = p_holder
            RETURNING l.*
    ), agg AS (
        SELECT d.cluster, count(*)::integer AS n FROM d GROUP BY d.cluster
    ), u AS (
        UPDATE capacity_clusters c SET running = c.running - agg.n FROM agg WHERE c.cluster = agg.cluster
    )
    SELECT * FROM d;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS capacity_release_where(timestamptz, text);
DROP FUNCTION IF EXISTS capacity_release(text[], bigint[]);
DROP FUNCTION IF EXISTS capacity_acquire(text, text[], integer[], timestamptz[]);
DROP TABLE IF EXISTS capacity_sweep_locks;
DROP TABLE IF EXISTS capacity_leases;
DROP TABLE IF EXISTS capacity_clusters;
