package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func proxyURL(addr, user string) string {
	return fmt.Sprintf("postgres://%s@%s/demo?sslmode=disable", user, addr)
}

// typeQueries cover every mapped type, NULLs, and a result spanning several batches.
var typeQueries = []struct {
	sql  string
	args []any
}{
	{sql: `select 1::int2 a, 2::int4 b, 3::int8 c, 1.5::float4 d, 2.25::float8 e,
		12.345::numeric(10,3) f, 1.5::numeric g, 'hi'::text h, 'v'::varchar(5) i, true j, false j2,
		'2024-02-29'::date k, '13:14:15.123456'::time l, '2024-02-29 13:14:15.5'::timestamp m,
		'2024-02-29 13:14:15.5+02'::timestamptz n, '\xdeadbeef'::bytea o, '{"a": [1, 2]}'::json p,
		'{"b": 2}'::jsonb q, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid r, null::int4 s, null t,
		'1 day 02:00'::interval u, array[1,2,null]::int4[] v, 'x'::name w, 'abc'::bpchar(5) x,
		'NaN'::float8 y, '-Infinity'::float4 z, 123456789012345678901234567890.123::numeric big`},
	{sql: `select g, g::text || 'x' s, g * 1.5 f, (g % 7 = 0) b, case when g % 3 = 0 then null else g end n,
		'2000-01-01'::date + g d, '1999-12-31 23:00:00+00'::timestamptz + g * interval '1 minute' ts
		from generate_series(1, 3000) g`},
	{sql: `select $1::int4 + 1 a, $2::text b, $3::timestamptz c, $4::numeric d, $5::bool e, $6::bytea f, $7::date g, $8::uuid h, $9::int8 i`,
		args: []any{41, "t'ext", time.Date(2024, 3, 1, 12, 0, 0, 123000, time.UTC), "3.14159", true, []byte{0, 1, 2}, time.Date(2023, 1, 2, 0, 0, 0, 0, time.UTC), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", nil}},
	{sql: `select 'empty' where false`},
}

// normalize turns decoded values into comparable strings (instants in UTC, numerics by value).
func normalize(v any) string {
	switch x := v.(type) {
	case time.Time:
		return "time:" + x.UTC().Format(time.RFC3339Nano)
	case pgtype.Numeric:
		b, _ := x.MarshalJSON()
		return "numeric:" + string(b)
	}
	return fmt.Sprintf("%T:%#v", v, v)
}

func collect(t *testing.T, c *pgx.Conn, mode pgx.QueryExecMode, sql string, args []any) (cols []string, rows [][]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := c.Query(ctx, sql, append([]any{mode}, args...)...)
	if err != nil {
		t.Fatalf("query %q: %v", sql, err)
	}
	defer r.Close()
	for _, fd := range r.FieldDescriptions() {
		cols = append(cols, fmt.Sprintf("%s:%d:%d", fd.Name, fd.DataTypeOID, fd.TypeModifier))
	}
	for r.Next() {
		vals, err := r.Values()
		if err != nil {
			t.Fatalf("values: %v", err)
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = normalize(v)
		}
		rows = append(rows, row)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("query %q: %v", sql, err)
	}
	return cols, rows
}

// TestPGXSameAsDirect runs every type query through pgx directly on PostgreSQL and through the
// frontend, in each protocol mode, and requires the same columns, types and values.
func TestPGXSameAsDirect(t *testing.T) {
	addr, url, _ := pgBackend(t)
	direct := connect(t, url)
	proxied := connect(t, proxyURL(addr, "alice"))
	modes := map[string]pgx.QueryExecMode{
		"extended-cache-statement": pgx.QueryExecModeCacheStatement,
		"extended-exec":            pgx.QueryExecModeExec,
		"simple":                   pgx.QueryExecModeSimpleProtocol,
	}
	for name, mode := range modes {
		for i, q := range typeQueries {
			t.Run(fmt.Sprintf("%s/%d", name, i), func(t *testing.T) {
				wantCols, wantRows := collect(t, direct, mode, q.sql, q.args)
				gotCols, gotRows := collect(t, proxied, mode, q.sql, q.args)
				if len(gotRows) > 0 {
					t.Logf("first row via frontend: %v", gotRows[0])
				}
				if fmt.Sprint(gotCols) != fmt.Sprint(wantCols) {
					t.Fatalf("columns differ\n got %v\nwant %v", gotCols, wantCols)
				}
				if len(gotRows) != len(wantRows) {
					t.Fatalf("got %d rows, want %d", len(gotRows), len(wantRows))
				}
				for r := range wantRows {
					for c := range wantRows[r] {
						if gotRows[r][c] != wantRows[r][c] {
							t.Fatalf("row %d column %s: got %s, want %s", r, wantCols[c], gotRows[r][c], wantRows[r][c])
						}
					}
				}
			})
		}
	}
}

func TestPGXCommandTagsAndErrors(t *testing.T) {
	addr, _, _ := pgBackend(t)
	c := connect(t, proxyURL(addr, "alice"))
	ctx := context.Background()
	steps := []struct{ sql, tag string }{
		{"create table items(id int primary key, name text)", "CREATE TABLE"},
		{"insert into items values (1, 'a'), (2, 'b')", "INSERT 0 2"},
		{"update items set name = 'c' where id = 2", "UPDATE 1"},
		{"delete from items where id = 1", "DELETE 1"},
	}
	for _, s := range steps {
		tag, err := c.Exec(ctx, s.sql)
		if err != nil {
			t.Fatalf("%s: %v", s.sql, err)
		}
		if tag.String() != s.tag {
			t.Fatalf("%s: tag %q, want %q", s.sql, tag, s.tag)
		}
	}
	_, err := c.Exec(ctx, "insert into items values (2, 'dup')")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" || pe.ConstraintName != "items_pkey" {
		t.Fatalf("duplicate key: got %v, want 23505 on items_pkey", err)
	}
	// The session survives errors.
	var n int
	if err := c.QueryRow(ctx, "select count(*) from items").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after error: n=%d err=%v", n, err)
	}
}

func TestNotConfiguredAnswers57P03(t *testing.T) {
	e, _ := pgEngine(t)
	b := &oneEngine{e: e}
	b.notReady.Store(true)
	addr := startServer(t, b, pgwireTrustAll())
	c := connect(t, proxyURL(addr, "alice"))
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
		_, err := c.Exec(context.Background(), "select 1", mode)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57P03" {
			t.Fatalf("mode %v: got %v, want SQLSTATE 57P03", mode, err)
		}
	}
	if b.requests.Load() != 0 {
		t.Fatalf("backend got %d requests while not ready", b.requests.Load())
	}
	b.notReady.Store(false)
	if _, err := c.Exec(context.Background(), "select 1"); err != nil {
		t.Fatalf("once ready: %v", err)
	}
}

// TestCancelReachesEngine cancels pg_sleep(30) from the client and requires the query to be
// gone from the engine's pg_stat_activity.
func TestCancelReachesEngine(t *testing.T) {
	addr, url, _ := pgBackend(t)
	c := connect(t, proxyURL(addr, "alice"))
	admin := connect(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := c.Exec(ctx, "select pg_sleep(30) /* qf-cancel-test */")
		done <- err
	}()
	waitFor(t, 10*time.Second, func() bool { return countSleeping(t, admin) == 1 })
	cancel()
	err := <-done
	if err == nil {
		t.Fatal("cancelled query succeeded")
	}
	waitFor(t, 10*time.Second, func() bool { return countSleeping(t, admin) == 0 })
	if time.Since(start) > 20*time.Second {
		t.Fatalf("cancel took %v", time.Since(start))
	}
}

func countSleeping(t *testing.T, admin *pgx.Conn) int {
	var n int
	err := admin.QueryRow(context.Background(),
		`select count(*) from pg_stat_activity where query like '%qf-cancel-test%' and state = 'active' and pid <> pg_backend_pid()`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var _ = net.Listen

// TestAbandonedStreamIsCancelled: a client that cancels while a huge result streams stops the
// query on the engine, not only at the frontend.
func TestAbandonedStreamIsCancelled(t *testing.T) {
	addr, url, _ := pgBackend(t)
	c := connect(t, proxyURL(addr, "alice"))
	admin := connect(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	rows, err := c.Query(ctx, "select g, repeat('x', 100) from generate_series(1, 5000000) g /* qf-cancel-test */")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10 && rows.Next(); i++ {
	}
	if countSleeping(t, admin) != 1 {
		t.Fatal("the streaming query is not running on the engine")
	}
	start := time.Now()
	cancel()
	rows.Close()
	waitFor(t, 10*time.Second, func() bool { return countSleeping(t, admin) == 0 })
	t.Logf("engine query gone %v after the client cancelled", time.Since(start))
}

// TestTransactionsArePinned: with a backend that can open sessions, a transaction's statements
// share one engine connection: uncommitted rows are invisible elsewhere, rollback undoes them,
// a failed statement fails the transaction, and ReadyForQuery reports the status.
func TestTransactionsArePinned(t *testing.T) {
	addr, url, _ := pgBackend(t)
	c := connect(t, proxyURL(addr, "alice"))
	direct := connect(t, url)
	ctx := context.Background()
	count := func(conn *pgx.Conn) int {
		var n int
		if err := conn.QueryRow(ctx, "select count(*) from acct").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := c.Exec(ctx, "create table acct(id int primary key)"); err != nil {
		t.Fatal(err)
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "insert into acct values (1), (2)"); err != nil {
		t.Fatal(err)
	}
	if st := c.PgConn().TxStatus(); st != 'T' {
		t.Fatalf("status in transaction %q, want T", st)
	}
	var inside int
	if err := tx.QueryRow(ctx, "select count(*) from acct").Scan(&inside); err != nil || inside != 2 {
		t.Fatalf("inside the transaction: %d %v", inside, err)
	}
	if n := count(direct); n != 0 {
		t.Fatalf("uncommitted rows visible elsewhere: %d", n)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(direct); n != 0 || c.PgConn().TxStatus() != 'I' {
		t.Fatalf("after rollback: %d rows, status %q", n, c.PgConn().TxStatus())
	}

	// A failed statement fails the transaction until ROLLBACK.
	if _, err := c.Exec(ctx, "begin", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "insert into acct values (1), (1)"); err == nil {
		t.Fatal("duplicate insert succeeded")
	}
	if st := c.PgConn().TxStatus(); st != 'E' {
		t.Fatalf("status after an error %q, want E", st)
	}
	_, err = c.Exec(ctx, "select 1")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "25P02" {
		t.Fatalf("statement in a failed transaction: %v, want 25P02", err)
	}
	if _, err := c.Exec(ctx, "rollback", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}

	// A BEGIN behind a driver's comment pins the connection as BEGIN does: the insert stays
	// invisible elsewhere until the rollback undoes it.
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		if _, err := c.Exec(ctx, "/* app=billing */ BEGIN", mode); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, "insert into acct values (5)", mode); err != nil {
			t.Fatal(err)
		}
		if n := count(direct); n != 0 || c.PgConn().TxStatus() != 'T' {
			t.Fatalf("after /* app=billing */ BEGIN (%v): %d rows visible elsewhere, status %q", mode, n, c.PgConn().TxStatus())
		}
		if _, err := c.Exec(ctx, "rollback", mode); err != nil {
			t.Fatal(err)
		}
		if n := count(direct); n != 0 {
			t.Fatalf("after rollback (%v): %d rows", mode, n)
		}
	}

	// Commit in one simple-protocol message.
	if _, err := c.Exec(ctx, "begin; insert into acct values (7); commit", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	if n := count(direct); n != 1 || c.PgConn().TxStatus() != 'I' {
		t.Fatalf("after commit: %d rows, status %q", n, c.PgConn().TxStatus())
	}
}
