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
) WITH (fillfactor = 50); -- room for HOT updates: every grant and release rewrites its row

CREATE TABLE capacity_leases (
    id         text PRIMARY KEY,
    cluster    text NOT NULL REFERENCES capacity_clusters (cluster),
    generation bigint NOT NULL,
    holder     text NOT NULL,
    expires_at timestamptz NOT NULL
);
-- id is "<cluster>#<generation>", unique by construction. The primary key is the only index,
-- which keeps grants cheap: the table holds at most the sum of the caps, so the sweep (every
-- few seconds) and eviction (rare) scan it.

CREATE TABLE capacity_sweep_locks (
    name       text PRIMARY KEY,
    owner      text NOT NULL,
    expires_at timestamptz NOT NULL
);

-- capacity_apply runs one batch in one transaction: first it frees the leases named by
-- (p_ids, p_gens) pairs, then it grants, in order, each acquire (p_clusters, p_holders, p_caps,
-- p_expires) whose cap allows it. p_lock lists every cluster the batch touches. It returns the
-- ids freed and one generation per acquire (0 for a denial). Lock order, here and in
-- capacity_release_where: counter rows sorted by cluster, then lease rows; so concurrent
-- batches never deadlock.
-- +goose StatementBegin
CREATE FUNCTION capacity_apply(p_lock text[], p_ids text[], p_gens bigint[],
                               p_clusters text[], p_holders text[], p_caps integer[], p_expires timestamptz[],
                               OUT released text[], OUT granted bigint[])
LANGUAGE plpgsql AS $$
DECLARE
    cl text[];
    run integer[];
    gen bigint[];
    k integer;
    n integer := 0;
    new_clusters text[] := '{}';
    new_gens bigint[] := '{}';
    new_holders text[] := '{}';
    new_expires timestamptz[] := '{}';
BEGIN
    granted := array_fill(0::bigint, ARRAY[coalesce(array_length(p_clusters, 1), 0)]);
    INSERT INTO capacity_clusters (cluster, running, generation)
        SELECT DISTINCT c, 0, 0 FROM unnest(p_clusters) AS c ORDER BY 1
        ON CONFLICT (cluster) DO NOTHING;
    PERFORM 1 FROM capacity_clusters WHERE cluster = ANY (p_lock) ORDER BY cluster FOR UPDATE;
    WITH d AS (
        DELETE FROM capacity_leases l USING unnest(p_ids, p_gens) AS r (id, gen)
            WHERE l.id = r.id AND l.generation = r.gen
            RETURNING l.id, l.cluster
    ), agg AS (
        SELECT cluster, count(*)::integer AS n FROM d GROUP BY cluster
    ), u AS (
        UPDATE capacity_clusters c SET running = c.running - agg.n FROM agg WHERE c.cluster = agg.cluster
    )
    SELECT coalesce(array_agg(id), '{}') INTO released FROM d;
    IF coalesce(array_length(p_clusters, 1), 0) = 0 THEN
        RETURN;
    END IF;
    SELECT array_agg(cluster), array_agg(running), array_agg(generation) INTO cl, run, gen
        FROM capacity_clusters WHERE cluster = ANY (p_clusters);
    FOR i IN 1 .. array_length(p_clusters, 1) LOOP
        k := array_position(cl, p_clusters[i]);
        IF run[k] < p_caps[i] THEN
            run[k] := run[k] + 1;
            gen[k] := gen[k] + 1;
            n := n + 1;
            granted[i] := gen[k];
            new_clusters[n] := p_clusters[i];
            new_gens[n] := gen[k];
            new_holders[n] := p_holders[i];
            new_expires[n] := p_expires[i];
        END IF;
    END LOOP;
    INSERT INTO capacity_leases (id, cluster, generation, holder, expires_at)
        SELECT c || '#' || g, c, g, h, e FROM unnest(new_clusters, new_gens, new_holders, new_expires) AS t (c, g, h, e);
    UPDATE capacity_clusters c SET running = u.r, generation = u.g
        FROM unnest(cl, run, gen) AS u (cluster, r, g) WHERE c.cluster = u.cluster;
END $$;
-- +goose StatementEnd

-- capacity_release_where frees every lease that expired by p_now (p_holder NULL) or that
-- p_holder holds (p_now NULL), and returns them. Lock order: counter rows sorted by cluster,
-- then lease rows.
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
DROP FUNCTION IF EXISTS capacity_apply(text[], text[], bigint[], text[], text[], integer[], timestamptz[]);
DROP TABLE IF EXISTS capacity_sweep_locks;
DROP TABLE IF EXISTS capacity_leases;
DROP TABLE IF EXISTS capacity_clusters;
