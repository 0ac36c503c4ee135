-- +goose Up
-- One lease per named acquire (internal/capacity, AcquireRequest.RequestID). With 0014 a retried
-- acquire that reached the control plane while its first sending was still being decided was
-- looked up by name before the first had committed, found nothing and was granted a second
-- lease under the same name: two slots for one acquire, the older one held to its term. Now
-- capacity_apply decides a name under its cluster's row lock: a name whose lease is live
-- (unrevoked, unexpired) is answered that lease, renewed from now, and takes no other slot; a
-- name whose lease is revoked or expired gives that name up (the lease keeps its slot until
-- swept) and is granted anew. Two acquires of one batch under one name get one lease.
-- The unique index holds it for any other writer, and makes the name's lookup an index scan.

-- Leases of the earlier release granted twice under one name: the newest keeps the name.
UPDATE capacity_leases l SET request = NULL
    WHERE request IS NOT NULL AND EXISTS (
        SELECT 1 FROM capacity_leases o
        WHERE o.cluster = l.cluster AND o.holder = l.holder AND o.request = l.request
              AND o.generation > l.generation);

CREATE UNIQUE INDEX capacity_leases_request ON capacity_leases (cluster, holder, request)
    WHERE request IS NOT NULL;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION capacity_apply(p_lock text[], p_ids text[], p_gens bigint[], p_rel_holders text[],
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
    j integer;
    n integer := 0;
    held record;
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
    <<acquires>>
    FOR i IN 1 .. array_length(p_clusters, 1) LOOP
        IF coalesce(p_requests[i], '') <> '' THEN
            -- Granted earlier in this batch under the same name: that lease.
            FOR j IN 1 .. n LOOP
                IF new_requests[j] = p_requests[i] AND new_clusters[j] = p_clusters[i] AND new_holders[j] = p_holders[i] THEN
                    granted[i] := new_gens[j];
                    new_ttls[j] := greatest(new_ttls[j], p_ttls[i]);
                    CONTINUE acquires;
                END IF;
            END LOOP;
            -- Granted before (the cluster's row is locked: no grant of it is undecided).
            SELECT l.id, l.generation, l.revoked, l.expires_at INTO held FROM capacity_leases l
                WHERE l.cluster = p_clusters[i] AND l.holder = p_holders[i] AND l.request = p_requests[i];
            IF FOUND THEN
                IF NOT held.revoked AND held.expires_at > stamped THEN
                    UPDATE capacity_leases
                        SET expires_at = greatest(expires_at, stamped + p_ttls[i] * interval '1 millisecond'), ttl_ms = p_ttls[i]
                        WHERE id = held.id AND generation = held.generation;
                    granted[i] := held.generation;
                    CONTINUE acquires;
                END IF;
                -- Revoked or expired: it keeps its slot until swept, not the name.
                UPDATE capacity_leases SET request = NULL WHERE id = held.id AND generation = held.generation;
            END IF;
        END IF;
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
            new_requests[n] := coalesce(p_requests[i], '');
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
-- capacity_apply stays as it is (0014's Down drops it); without the index it still decides names.
DROP INDEX IF EXISTS capacity_leases_request;
