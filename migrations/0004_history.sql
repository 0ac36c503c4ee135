-- +goose Up
-- The fleet's query history: one row per finished query, written by the control plane's ingest
-- of worker batches. query_id is the proxy's query id; a retried batch inserts with
-- ON CONFLICT (query_id) DO NOTHING, so each query is stored once. sql_text holds only what the
-- worker's redaction policy let through.
CREATE TABLE IF NOT EXISTS query_records (
    query_id      text COLLATE "C" PRIMARY KEY, -- byte order, as the cursor compares in Go
    worker        text NOT NULL,
    user_name     text NOT NULL DEFAULT '',
    protocol      text NOT NULL DEFAULT '',
    group_name    text NOT NULL DEFAULT '',
    cluster       text NOT NULL DEFAULT '',
    sql_text      text NOT NULL DEFAULT '',
    sql_digest    text NOT NULL DEFAULT '',
    status        text NOT NULL CHECK (status IN ('succeeded', 'failed', 'cancelled', 'rejected')),
    error_code    text NOT NULL DEFAULT '',
    error_text    text NOT NULL DEFAULT '',
    queue_ms      bigint NOT NULL DEFAULT 0,
    exec_ms       bigint NOT NULL DEFAULT 0,
    row_count     bigint NOT NULL DEFAULT 0,
    byte_count    bigint NOT NULL DEFAULT 0,
    cache_hit     boolean NOT NULL DEFAULT false,
    routing_trace jsonb,
    started_at    timestamptz NOT NULL,
    ended_at      timestamptz NOT NULL,
    ingested_at   timestamptz NOT NULL DEFAULT now()
);
-- Newest first, and the cursor (started_at, query_id) of GET /admin/queries.
CREATE INDEX IF NOT EXISTS query_records_started ON query_records (started_at DESC, query_id DESC);
CREATE INDEX IF NOT EXISTS query_records_worker ON query_records (worker, started_at DESC);
CREATE INDEX IF NOT EXISTS query_records_user ON query_records (user_name, started_at DESC);

-- +goose Down
DROP TABLE IF EXISTS query_records;
