-- +goose Up
-- The waiting record of retry-mode fairness (internal/capacity WaitRecord): which workers were
-- denied a cluster lately, kept next to the lease table so that every control-plane replica
-- reads and writes the same one. A retry-mode acquire is denied while the free slots are no
-- more than the waiting workers ranked ahead of it (fewer leases held, then waiting longer).
-- Times are the table's clock (capacity_now). Rows older than the contention window are
-- deleted by the next denial of the cluster, and a cluster holds at most p_max rows, so the
-- table stays as small as the set of workers denied within the last second.
CREATE TABLE capacity_waiters (
    cluster   text        NOT NULL,
    holder    text        NOT NULL,
    denied_at timestamptz NOT NULL, -- last denial
    since     timestamptz NOT NULL, -- first denial of the current wait
    waiting   boolean     NOT NULL, -- denied since its last grant
    PRIMARY KEY (cluster, holder)
);

-- capacity_wait_denied records a denial of p_holder: a wait starts at the table's clock unless
-- one is going on (waiting, denied within p_window_ms); denials p_forget_ms old or older are
-- forgotten; a new holder is not recorded while the cluster has p_max rows.
-- +goose StatementBegin
CREATE FUNCTION capacity_wait_denied(p_cluster text, p_holder text, p_now timestamptz,
                                     p_window_ms bigint, p_forget_ms bigint, p_max integer)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    t timestamptz := capacity_now(p_now);
BEGIN
    DELETE FROM capacity_waiters
        WHERE cluster = p_cluster AND denied_at <= t - p_forget_ms * interval '1 millisecond';
    INSERT INTO capacity_waiters AS w (cluster, holder, denied_at, since, waiting)
        SELECT p_cluster, p_holder, t, t, true
        WHERE (SELECT count(*) FROM capacity_waiters WHERE cluster = p_cluster) < p_max
           OR EXISTS (SELECT 1 FROM capacity_waiters WHERE cluster = p_cluster AND holder = p_holder)
    ON CONFLICT (cluster, holder) DO UPDATE SET
        since = CASE WHEN w.waiting AND w.denied_at > t - p_window_ms * interval '1 millisecond'
                     THEN w.since ELSE t END,
        waiting = true,
        denied_at = t;
END $$;
-- +goose StatementEnd

-- capacity_contention returns, for one cluster, every holder that holds leases or was denied
-- within p_forget_ms: its leases, when its current wait began, whether it is waiting (denied
-- since its last grant, the last time within p_window_ms) and whether it was denied at all.
-- +goose StatementBegin
CREATE FUNCTION capacity_contention(p_cluster text, p_now timestamptz, p_window_ms bigint, p_forget_ms bigint)
RETURNS TABLE (holder text, held integer, since timestamptz, waiting boolean, denied boolean)
LANGUAGE sql AS $$
    WITH n AS (SELECT capacity_now(p_now) AS t),
    l AS (SELECT c.holder, count(*)::integer AS held FROM capacity_leases c
          WHERE c.cluster = p_cluster GROUP BY c.holder),
    w AS (SELECT x.holder, x.since, x.waiting AND x.denied_at > n.t - p_window_ms * interval '1 millisecond' AS waiting
          FROM capacity_waiters x, n
          WHERE x.cluster = p_cluster AND x.denied_at > n.t - p_forget_ms * interval '1 millisecond')
    SELECT coalesce(l.holder, w.holder), coalesce(l.held, 0), w.since, coalesce(w.waiting, false), w.holder IS NOT NULL
    FROM l FULL JOIN w ON l.holder = w.holder
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS capacity_contention(text, timestamptz, bigint, bigint);
DROP FUNCTION IF EXISTS capacity_wait_denied(text, text, timestamptz, bigint, bigint, integer);
DROP TABLE IF EXISTS capacity_waiters;
