package duckengine

import (
	"context"
	"testing"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/engine"
)

// A query's run takes the statement its prepare kept on the connection instead of planning it
// again, never one kept for another text, nor one kept before the connection ran anything but a
// SELECT: a SET VARIABLE in between is read (DuckDB reads getvariable when it binds, and binds a
// prepared statement again only for a catalog change), and so is an ADD COLUMN.
func TestAQueryRunsTheStatementItsPrepareKept(t *testing.T) {
	qe, err := Open(engine.Spec{Name: "duck", Kind: Kind, Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = qe.Close() })
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
