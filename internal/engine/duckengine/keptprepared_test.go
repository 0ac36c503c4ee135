package duckengine

import (
	"context"
	"strings"
	"testing"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/query"
)

// A query's run takes the statement its prepare kept on the connection instead of planning it
// again, never one kept for another text, nor one kept before the connection ran anything but a
// SELECT: a SET VARIABLE in between is read (DuckDB reads getvariable when it binds, and binds a
// prepared statement again only for a catalog change), and so is an ADD COLUMN.
func TestAQueryRunsTheStatementItsPrepareKept(t *testing.T) {
	qe := openMemory(t)
	ctx := context.Background()
	conn, err := qe.(*Engine).conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release(conn, false)
	kept := func() string {
		var text string
		_ = conn.Raw(func(dc any) error {
			if wc, ok := dc.(*watchedConn); ok && wc.kept.st != nil {
				text = wc.kept.sqlText
			}
			return nil
		})
		return text
	}
	run := func(prepared, ran string) (cells []string) {
		t.Helper()
		if _, err := prepare(conn, prepared); err != nil {
			t.Fatal(err)
		}
		if got := kept(); got != prepared {
			t.Fatalf("after preparing %q the connection keeps %q", prepared, got)
		}
		rows, ok, err := streamSelect(ctx, conn, ran, nil, duckdb.STATEMENT_TYPE_SELECT, nil, nil, nil, nil, func() {})
		if !ok || err != nil {
			t.Fatalf("%s: streamed %v, %v", ran, ok, err)
		}
		defer rows.Close()
		b, err := rows.Next(ctx)
		if err != nil {
			t.Fatalf("%s: %v", ran, err)
		}
		for i := range int(b.NumCols()) {
			cells = append(cells, b.Schema().Field(i).Name+"="+b.Column(i).ValueStr(0))
		}
		return cells
	}
	if got := run("SELECT 41 + 1 AS x", "SELECT 41 + 1 AS x"); len(got) != 1 || got[0] != "x=42" {
		t.Errorf("the kept statement answered %v, want [x=42]", got)
	}
	if got := kept(); got != "" {
		t.Errorf("the run of the kept text left it kept (%q): it planned the text again", got)
	}
	if _, err := prepare(conn, "SELECT 3 AS x"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT 4").Scan(new(int)); err != nil {
		t.Fatal(err)
	}
	if got := kept(); got != "SELECT 3 AS x" {
		t.Errorf("a SELECT run in between left %q kept, want SELECT 3 AS x", got)
	}
	if got := run("SELECT 1 AS x", "SELECT 2 AS x"); len(got) != 1 || got[0] != "x=2" {
		t.Errorf("SELECT 2 answered %v after SELECT 1 was kept, want [x=2]", got)
	}
	if _, err := conn.ExecContext(ctx, "SET VARIABLE kept_v = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := prepare(conn, "SELECT getvariable('kept_v') AS v"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "SET VARIABLE kept_v = 2"); err != nil {
		t.Fatal(err)
	}
	vrows, ok, err := streamSelect(ctx, conn, "SELECT getvariable('kept_v') AS v", nil, duckdb.STATEMENT_TYPE_SELECT, nil, nil, nil, nil, func() {})
	if !ok || err != nil {
		t.Fatalf("streamed %v, %v", ok, err)
	}
	if b, err := vrows.Next(ctx); err != nil {
		t.Fatal(err)
	} else if got := b.Column(0).ValueStr(0); got != "2" {
		t.Errorf("getvariable after SET VARIABLE kept_v = 2 answered %s, want 2", got)
	}
	vrows.Close()
	if _, err := conn.ExecContext(ctx, "CREATE TABLE kept_t (a INTEGER)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "INSERT INTO kept_t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if _, err := prepare(conn, "SELECT * FROM kept_t"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "ALTER TABLE kept_t ADD COLUMN b INTEGER DEFAULT 7"); err != nil {
		t.Fatal(err)
	}
	rows, ok, err := streamSelect(ctx, conn, "SELECT * FROM kept_t", nil, duckdb.STATEMENT_TYPE_SELECT, nil, nil, nil, nil, func() {})
	if !ok || err != nil {
		t.Fatalf("streamed %v, %v", ok, err)
	}
	defer rows.Close()
	if got := rows.Schema().NumFields(); got != 2 {
		t.Errorf("SELECT * after ADD COLUMN read %d columns, want 2 (%v)", got, rows.Schema())
	}
}

// A write or DDL runs as its statement() kept it (no second planning), answering the tag and
// rows the usual run answers, and a RETURNING's rows still go the usual way; what ran on the
// connection between the keep and the run is read: a SET VARIABLE the write reads, a column
// added to the table it writes.
func TestAWriteRunsTheStatementItsPrepareKept(t *testing.T) {
	qe := openMemory(t)
	e := qe.(*Engine)
	ctx := context.Background()
	exec := func(sql string, args ...any) string {
		t.Helper()
		rows, err := e.Execute(ctx, &query.Request{SQL: sql, Args: args, Protocol: query.ProtocolPostgres})
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		defer rows.Close()
		var cells []string
		for {
			b, err := rows.Next(ctx)
			if err != nil {
				break
			}
			for r := range int(b.NumRows()) {
				for c := range int(b.NumCols()) {
					cells = append(cells, b.Column(c).ValueStr(r))
				}
			}
		}
		if len(cells) > 0 {
			return strings.Join(cells, ",")
		}
		return rows.Tag()
	}
	for _, c := range []struct{ sql, want string }{
		{"CREATE TABLE kw (a INTEGER, b VARCHAR)", "CREATE TABLE"}, // the engine's own (pgddl.go)
		{"CREATE VIEW kw_view AS SELECT a FROM kw", "CREATE VIEW"},
		{"CREATE INDEX kw_b ON kw (b)", "CREATE INDEX"},
		{"DROP VIEW kw_view", "DROP VIEW"},
		{"INSERT INTO kw VALUES (1, 'x'), (2, 'y'), (3, 'z')", "INSERT 0 3"},
		{"UPDATE kw SET b = b || '!' WHERE a >= 2", "UPDATE 2"},
		{"DELETE FROM kw WHERE a = 3", "DELETE 1"},
		{"INSERT INTO kw VALUES (4, 'w') RETURNING a * 10", "40"},
		{"SELECT string_agg(a || b, ' ' ORDER BY a) FROM kw", "1x 2y! 4w"},
	} {
		before := keptRuns.Load()
		if got := exec(c.sql); got != c.want {
			t.Errorf("%s answered %q, want %q", c.sql, got, c.want)
		}
		kept := keptRuns.Load() - before
		if wantKept := int64(1); strings.Contains(c.sql, "RETURNING") || strings.HasPrefix(c.sql, "SELECT") || strings.HasPrefix(c.sql, "CREATE TABLE") {
			if kept != 0 {
				t.Errorf("%s ran as a kept write", c.sql)
			}
		} else if kept != wantKept {
			t.Errorf("%s planned again: %d kept runs, want %d", c.sql, kept, wantKept)
		}
	}

	conn, err := e.conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release(conn, false)
	runWrite := func(sqlText string, between ...string) {
		t.Helper()
		p, err := prepare(conn, sqlText)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range between {
			if _, err := conn.ExecContext(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := run(ctx, conn, &query.Request{SQL: sqlText, Protocol: query.ProtocolPostgres}, p, func() {})
		if err != nil {
			t.Fatalf("%s: %v", sqlText, err)
		}
		rows.Close()
	}
	if _, err := conn.ExecContext(ctx, "SET VARIABLE kw_v = 5"); err != nil {
		t.Fatal(err)
	}
	runWrite("INSERT INTO kw VALUES (getvariable('kw_v'), 'v')", "SET VARIABLE kw_v = 6")
	runWrite("INSERT INTO kw SELECT * FROM kw WHERE a = 1", "ALTER TABLE kw ADD COLUMN c INTEGER DEFAULT 9")
	var got string
	if err := conn.QueryRowContext(ctx, "SELECT string_agg(a || b || c, ' ' ORDER BY a, b) FROM kw").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "1x9 1x9 2y!9 4w9 6v9"; got != want {
		t.Errorf("the table holds %q, want %q (a SET VARIABLE or ADD COLUMN between the keep and the run not read)", got, want)
	}
}

// BenchmarkKeptWrites: a client's writes (an INSERT with parameters, an UPDATE and a DELETE by
// key) through Execute, each run as its statement() kept it; cpu-us/op is the process's CPU per
// write (a count that holds under load).
func BenchmarkKeptWrites(b *testing.B) {
	qe := openMemory(b)
	ctx := context.Background()
	exec := func(sql string, args ...any) {
		rows, err := qe.Execute(ctx, &query.Request{SQL: sql, Args: args, Protocol: query.ProtocolPostgres})
		if err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
		rows.Close()
	}
	exec("CREATE TABLE kb (id INTEGER PRIMARY KEY, name VARCHAR, n INTEGER)")
	b.ReportAllocs()
	b.ResetTimer()
	start := processCPU()
	for i := range b.N {
		switch i % 3 {
		case 0:
			exec("INSERT INTO kb (id, name, n) VALUES ($1, $2, $3)", int64(i), "row", int64(i))
		case 1:
			exec("UPDATE kb SET n = n + 1, name = $2 WHERE id = $1", int64(i-1), "updated")
		default:
			exec("DELETE FROM kb WHERE id = $1 AND n > $2", int64(i-2), int64(-1))
		}
	}
	b.ReportMetric(float64((processCPU()-start).Microseconds())/float64(b.N), "cpu-us/op")
}
