// Package pghistory is the Postgres history.Store: the query_records table created by
// migrations/0004_history.sql. An Insert is one statement per chunk of records: the columns go
// as arrays and come back as rows through unnest, with ON CONFLICT (query_id) DO NOTHING, so a
// retried batch stores nothing twice and a 1000-record batch costs one round trip.
//
// determinism: outside the simulator (Postgres store via pgx)
package pghistory

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queryflux/queryflux/internal/history"
)

// Store is a history.Store on a pgx pool.
type Store struct {
	pool *pgxpool.Pool
}

var _ history.Store = (*Store)(nil)

// chunkRecordsMax bounds one INSERT, so parameter arrays stay a few MB at most.
const chunkRecordsMax = 2000

// New returns a Store on pool. The schema must exist (migrations.Up).
func New(pool *pgxpool.Pool) *Store {
	if pool == nil {
		panic("pghistory: New: pool is nil")
	}
	return &Store{pool: pool}
}

const insertSQL = `
INSERT INTO query_records (query_id, worker, user_name, protocol, group_name, cluster, sql_text,
    sql_digest, status, error_code, error_text, queue_ms, exec_ms, row_count, byte_count, cache_hit,
    routing_trace, started_at, ended_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
    $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::int8[], $13::int8[],
    $14::int8[], $15::int8[], $16::bool[], $17::jsonb[], $18::timestamptz[], $19::timestamptz[])
ON CONFLICT (query_id) DO NOTHING`

// foreignSQL lists, in the order given, the ids of ($1 ids, $2 workers) pairs that the table
// holds under another worker.
const foreignSQL = `
SELECT b.id FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS b(id, worker, n)
JOIN query_records r ON r.query_id = b.id AND r.worker <> b.worker
ORDER BY b.n`

// Insert implements history.Store. A chunk that stored fewer records than it holds (a retry,
// or ids of another worker) is looked up once more for the ids held by another worker.
func (s *Store) Insert(ctx context.Context, recs []history.Record) (int, error) {
	inserted := 0
	var foreign []string
	for i := range recs {
		if err := history.KeyNUL(&recs[i]); err != nil || strings.IndexByte(recs[i].Worker, 0) >= 0 {
			// Dropped, the NUL would file the record under another id or name.
			return 0, fmt.Errorf("pghistory: insert: record %d (%q): %w", i, recs[i].QueryID, history.ErrKeyNUL)
		}
	}
	for start := 0; start < len(recs); start += chunkRecordsMax {
		chunk := recs[start:min(start+chunkRecordsMax, len(recs))]
		cols := columns(chunk)
		tag, err := s.pool.Exec(ctx, insertSQL, cols...)
		if err != nil {
			return inserted, fmt.Errorf("pghistory: insert: %w", err)
		}
		inserted += int(tag.RowsAffected())
		if int(tag.RowsAffected()) == len(chunk) {
			continue
		}
		rows, err := s.pool.Query(ctx, foreignSQL, cols[0], cols[1])
		if err != nil {
			return inserted, fmt.Errorf("pghistory: insert: %w", err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return inserted, fmt.Errorf("pghistory: insert: %w", err)
		}
		foreign = append(foreign, ids...)
	}
	if len(foreign) > 0 {
		return inserted, &history.ForeignError{IDs: foreign}
	}
	return inserted, nil
}

// columns turns records into the 19 column arrays of insertSQL.
func columns(recs []history.Record) []any {
	n := len(recs)
	var (
		id, worker, user, proto, group, cluster = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		sqlText, digest, status, code, errText  = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		queue, exec, rows, bytes                = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		cache                                   = make([]bool, n)
		trace                                   = make([]*string, n)
		started, ended                          = make([]time.Time, n), make([]time.Time, n)
	)
	for i, r := range recs {
		r = r.Canonical()
		// No key holds a NUL (Insert refuses it); free text's NULs are written as the uplink
		// and the ingest write them (history.EscapeTextNUL): one would fail the whole chunk.
		id[i], worker[i], user[i], proto[i], group[i], cluster[i] = r.QueryID, r.Worker, r.User, r.Protocol, r.Group, r.Cluster
		sqlText[i], digest[i], status[i], code[i], errText[i] = history.EscapeTextNUL(r.SQL), history.EscapeTextNUL(r.SQLDigest), string(r.Status), history.EscapeTextNUL(r.ErrorCode), history.EscapeTextNUL(r.Error)
		queue[i], exec[i], rows[i], bytes[i], cache[i] = r.QueueMs, r.ExecMs, r.Rows, r.Bytes, r.CacheHit
		if r.RoutingTrace != nil {
			data, err := json.Marshal(history.EscapeTraceNUL(r.RoutingTrace)) // jsonb refuses \u0000 too
			if err != nil {
				panic(fmt.Sprintf("pghistory: encoding a routing trace: %v", err)) // []string always encodes
			}
			t := string(data)
			trace[i] = &t
		}
		started[i], ended[i] = r.StartedAt, r.EndedAt
	}
	return []any{id, worker, user, proto, group, cluster, sqlText, digest, status, code, errText,
		queue, exec, rows, bytes, cache, trace, started, ended}
}

const selectSQL = `
SELECT query_id, worker, user_name, protocol, group_name, cluster, sql_text, sql_digest, status,
    error_code, error_text, queue_ms, exec_ms, row_count, byte_count, cache_hit, routing_trace,
    started_at, ended_at
FROM query_records`

// Query implements history.Store.
func (s *Store) Query(ctx context.Context, f history.Filter) (history.Page, error) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args))))
	}
	for _, c := range []struct{ col, v string }{{"worker", f.Worker}, {"user_name", f.User}, {"group_name", f.Group}, {"cluster", f.Cluster}, {"status", string(f.Status)}} {
		if c.v != "" {
			add(c.col+" = $?", c.v)
		}
	}
	if !f.Since.IsZero() {
		add("started_at >= $?", f.Since)
	}
	if !f.Until.IsZero() {
		add("started_at < $?", f.Until)
	}
	if f.Before != "" {
		cur, err := history.ParseCursor(f.Before)
		if err != nil {
			return history.Page{}, err
		}
		args = append(args, cur.StartedAt, cur.QueryID)
		where = append(where, fmt.Sprintf("(started_at, query_id) < ($%d, $%d)", len(args)-1, len(args)))
	}
	q := selectSQL
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := f.EffectiveLimit()
	q += fmt.Sprintf(" ORDER BY started_at DESC, query_id DESC LIMIT %d", limit+1)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return history.Page{}, fmt.Errorf("pghistory: query: %w", err)
	}
	recs, err := pgx.CollectRows(rows, scanRecord)
	if err != nil {
		return history.Page{}, fmt.Errorf("pghistory: query: %w", err)
	}
	page := history.Page{Records: recs}
	if len(recs) > limit {
		page.Records = recs[:limit]
		page.Next = history.CursorOf(page.Records[limit-1]).Encode()
	}
	if page.Records == nil {
		page.Records = []history.Record{}
	}
	return page, nil
}

func scanRecord(row pgx.CollectableRow) (history.Record, error) {
	var r history.Record
	var status string
	var trace []byte
	err := row.Scan(&r.QueryID, &r.Worker, &r.User, &r.Protocol, &r.Group, &r.Cluster, &r.SQL, &r.SQLDigest,
		&status, &r.ErrorCode, &r.Error, &r.QueueMs, &r.ExecMs, &r.Rows, &r.Bytes, &r.CacheHit, &trace,
		&r.StartedAt, &r.EndedAt)
	if err != nil {
		return r, err
	}
	r.Status = history.Status(status)
	if trace != nil {
		if err := json.Unmarshal(trace, &r.RoutingTrace); err != nil {
			return r, fmt.Errorf("routing_trace of %s: %w", r.QueryID, err)
		}
	}
	r.StartedAt, r.EndedAt = r.StartedAt.UTC(), r.EndedAt.UTC()
	return r.Canonical(), nil
}

var _ history.Pruner = (*Store)(nil)

// pruneChunkMax bounds one DELETE, so pruning a long backlog never holds locks for long.
const pruneChunkMax = 10_000

// Prune implements history.Pruner.
func (s *Store) Prune(ctx context.Context, cutoff time.Time) (int, error) {
	total := 0
	for {
		tag, err := s.pool.Exec(ctx, `DELETE FROM query_records WHERE query_id IN (
			SELECT query_id FROM query_records WHERE started_at < $1 LIMIT $2)`, cutoff, pruneChunkMax)
		if err != nil {
			return total, fmt.Errorf("pghistory: prune: %w", err)
		}
		total += int(tag.RowsAffected())
		if tag.RowsAffected() < pruneChunkMax {
			return total, nil
		}
	}
}
