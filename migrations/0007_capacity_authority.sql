-- +goose Up
-- The control plane is the authority on capacity leases (internal/capacity/pgcapacity).
--   * One clock for the whole table: every expiry is stamped and compared with the database's
--     clock (capacity_now), so no control-plane replica's wall clock (a step, or skew between
--     replicas) can shorten a lease. p_now is only set by tests that drive time themselves.
--   * A revoked lease (expired, of an evicted worker, or revoked by an operator) can no longer
--     be renewed; it keeps its slot until the control plane has fenced its work on the engine
--     and releases it.
--   * Renewals and releases may name the holder the lease must be held by: a worker can
--     neither renew nor free another worker's lease.
ALTER TABLE capacity_leases
    ADD COLUMN revoked boolean NOT NULL DEFAULT false,
    ADD COLUMN ttl_ms  bigint  NOT NULL DEFAULT 0;

-- +goose StatementBegin
CREATE FUNCTION capacity_now(p_now timestamptz) RETURNS timestamptz LANGUAGE sql VOLATILE AS $$
    SELECT coalesce(p_now, clock_timestamp())
$$;
-- +goose StatementEnd

DROP FUNCTION capacity_apply(text[], text[], bigint[], text[], text[], integer[], timestamptz[]);
DROP FUNCTION capacity_release_where(timestamptz, text);

-- capacity_apply runs one batch in one transaction: first it frees the leases named by
-- (p_ids, p_gens) pairs, each only if held by its p_rel_holders entry ('' for any holder),
-- then it grants, in order, each acquire (p_clusters, p_holders, p_caps, p_ttls in
-- milliseconds) whose cap allows it, expiring at stamped + ttl. p_lock lists every cluster the
-- batch touches. It returns the leases the releases named as they were before (named_*: id,
-- generation, holder; the caller tells from them, in batch order, which ref freed a lease and
-- which claimed another holder's), one generation per acquire (0 for a denial) and the clock
-- reading the grants were stamped with. Lock order, here and in capacity_revoke: counter rows sorted by cluster, then lease
-- rows; so concurrent batches never deadlock.
-- +goose StatementBegin
CREATE FUNCTION capacity_apply(p_lock text[], p_ids text[], p_gens bigint[], p_rel_holders text[],
                               p_clusters text[], p_holders text[], p_caps integer[], p_ttls bigint[],
                               p_now timestamptz,
                               OUT named_ids text[], OUT named_gens bigint[], OUT named_holders text[],
                               OUT granted bigint[], OUT stamped timestamptz)
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
    new_ttls bigint[] := '{}';
BEGIN
    granted := array_fill(0::bigint, ARRAY[coalesce(array_length(p_clusters, 1), 0)]);
    INSERT INTO capacity_clusters (cluster, running, generation)
        SELECT DISTINCT c, 0, 0 FROM unnest(p_clusters) AS c ORDER BY 1
        ON CONFLICT (cluster) DO NOTHING;
    PERFORM 1 FROM capacity_clusters WHERE cluster = ANY (p_lock) ORDER BY cluster FOR UPDATE;
    stamped := capacity_now(p_now);
    SELECT coalesce(array_agg(l.id), '{}'), coalesce(array_agg(l.generation), '{}'), coalesce(array_agg(l.holder), '{}')
        INTO named_ids, named_gens, named_holders
        FROM capacity_leases l WHERE (l.id, l.generation) IN (SELECT * FROM unnest(p_ids, p_gens));
    WITH d AS (
        DELETE FROM capacity_leases l USING unnest(p_ids, p_gens, p_rel_holders) AS r (id, gen, holder)
            WHERE l.id = r.id AND l.generation = r.gen AND (r.holder = '' OR l.holder = r.holder)
            RETURNING l.id, l.cluster
    ), agg AS (
        SELECT cluster, count(*)::integer AS n FROM d GROUP BY cluster
    )
    UPDATE capacity_clusters c SET running = c.running - agg.n FROM agg WHERE c.cluster = agg.cluster;
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
            new_ttls[n] := p_ttls[i];
        END IF;
    END LOOP;
    INSERT INTO capacity_leases (id, cluster, generation, holder, expires_at, ttl_ms)
        SELECT c || '#' || g, c, g, h, stamped + t * interval '1 millisecond', t
        FROM unnest(new_clusters, new_gens, new_holders, new_ttls) AS x (c, g, h, t);
    UPDATE capacity_clusters c SET running = u.r, generation = u.g
        FROM unnest(cl, run, gen) AS u (cluster, r, g) WHERE c.cluster = u.cluster;
END $$;
-- +goose StatementEnd

-- capacity_revoke marks as revoked, and returns, every lease that expired by the table's clock
-- (p_expired), that p_holder holds, or that (p_ids, p_gens) names.
-- +goose StatementBegin
CREATE FUNCTION capacity_revoke(p_now timestamptz, p_expired boolean, p_holder text, p_ids text[], p_gens bigint[])
RETURNS SETOF capacity_leases LANGUAGE plpgsql AS $$
DECLARE
    t timestamptz;
BEGIN
    PERFORM 1 FROM capacity_clusters c
        WHERE EXISTS (SELECT 1 FROM capacity_leases l WHERE l.cluster = c.cluster)
        ORDER BY c.cluster FOR UPDATE;
    t := capacity_now(p_now);
    RETURN QUERY
    UPDATE capacity_leases l SET revoked = true
        WHERE (p_expired AND l.expires_at <= t) OR l.holder = p_holder
              OR (l.id, l.generation) IN (SELECT * FROM unnest(p_ids, p_gens))
        RETURNING l.*;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS capacity_revoke(timestamptz, boolean, text, text[], bigint[]);
DROP FUNCTION IF EXISTS capacity_apply(text[], text[], bigint[], text[], text[], text[], integer[], bigint[], timestamptz);
DROP FUNCTION IF EXISTS capacity_now(timestamptz);
ALTER TABLE capacity_leases DROP COLUMN IF EXISTS revoked, DROP COLUMN IF EXISTS ttl_ms;
