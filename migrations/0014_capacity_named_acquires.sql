-- +goose Up
-- Named acquires (internal/capacity, AcquireRequest.RequestID): a worker names each acquire, and
-- the lease granted to it keeps that name (request), so that an acquire whose answer was lost
-- is answered, when asked again, with the lease it was granted (renewed) instead of another
-- slot, or that lease is freed when the worker gives the acquire up. NULL: an unnamed acquire
-- (a worker of an earlier release). No index: the name is looked up only for a lost answer, and
-- the table holds at most the sum of the caps.
ALTER TABLE capacity_leases ADD COLUMN request text;

-- capacity_apply as in 0007, and each acquire's name (p_requests, '' for none) kept with its
-- lease. The nine-argument function stays for control planes of the earlier release.
-- +goose StatementBegin
CREATE FUNCTION capacity_apply(p_lock text[], p_ids text[], p_gens bigint[], p_rel_holders text[],
                               p_clusters text[], p_holders text[], p_caps integer[], p_ttls bigint[],
                               p_now timestamptz, p_requests text[],
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
    new_requests text[] := '{}';
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
            new_requests[n] := p_requests[i];
        END IF;
    END LOOP;
    INSERT INTO capacity_leases (id, cluster, generation, holder, expires_at, ttl_ms, request)
        SELECT c || '#' || g, c, g, h, stamped + t * interval '1 millisecond', t, nullif(r, '')
        FROM unnest(new_clusters, new_gens, new_holders, new_ttls, new_requests) AS x (c, g, h, t, r);
    UPDATE capacity_clusters c SET running = u.r, generation = u.g
        FROM unnest(cl, run, gen) AS u (cluster, r, g) WHERE c.cluster = u.cluster;
END $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS capacity_apply(text[], text[], bigint[], text[], text[], text[], integer[], bigint[], timestamptz, text[]);
ALTER TABLE capacity_leases DROP COLUMN IF EXISTS request;
