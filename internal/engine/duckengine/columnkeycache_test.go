package duckengine

import (
	"context"
	"fmt"
	"io"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
)

// TestColumnKeysCacheFollowsDDL: a MySQL client's SELECT of one table gets the column keys the
// catalog holds at that moment, though the engine keeps them between statements
// (columnkeycache.go), whatever DDL ran meanwhile: on a pooled connection, or in a session's
// transaction, committed or rolled back, with pooled SELECTs reading around the open
// transaction. The oracle is the catalog read afresh on a connection of its own.
func TestColumnKeysCacheFollowsDDL(t *testing.T) {
	qe, err := Open(engine.Spec{Name: "duck", Kind: Kind, Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	defer qe.Close()
	e := qe.(*Engine)
	ctx := context.Background()
	cols := []string{"a", "b", "c"}
	rapid.Check(t, func(rt *rapid.T) {
		mustRun(rt, e, "DROP TABLE IF EXISTS t")
		mustRun(rt, e, "CREATE TABLE t (a INTEGER, b VARCHAR, c INTEGER)")
		var sess *session
		defer func() {
			if sess != nil {
				_ = sess.Close()
			}
		}()
		for step := range rapid.IntRange(1, 10).Draw(rt, "steps") {
			col := rapid.SampledFrom(cols).Draw(rt, "col")
			var ddl string
			switch rapid.IntRange(0, 8).Draw(rt, "action") {
			case 0, 1, 2:
				checkKeys(rt, e, cols)
				continue
			case 3:
				ddl = fmt.Sprintf("CREATE INDEX i%d ON t (%s)", step, col)
			case 4:
				ddl = fmt.Sprintf("CREATE UNIQUE INDEX u%d ON t (%s)", step, col)
			case 5:
				ddl = fmt.Sprintf("ALTER TABLE t ALTER COLUMN %s SET NOT NULL", col)
			case 6:
				ddl = fmt.Sprintf("ALTER TABLE t ALTER COLUMN %s DROP NOT NULL", col)
			case 7:
				ddl = "DROP TABLE t; CREATE TABLE t (a INTEGER, b VARCHAR, c INTEGER, PRIMARY KEY (" + col + "))"
			case 8:
				ddl = "DROP TABLE t; CREATE TABLE t (a INTEGER, b VARCHAR NOT NULL, c INTEGER UNIQUE)"
			}
			if !rapid.Bool().Draw(rt, "in a transaction") {
				for _, s := range splitStatements(ddl) {
					runIgnoringError(e, s) // an ALTER DuckDB refuses changes nothing
				}
				continue
			}
			if sess == nil {
				s, err := e.OpenSession(ctx, &query.Request{})
				if err != nil {
					rt.Fatal(err)
				}
				sess = s.(*session)
			}
			runIn(rt, sess, "BEGIN")
			for _, s := range splitStatements(ddl) {
				runIn(rt, sess, s)
			}
			checkKeys(rt, e, cols) // read from outside the open transaction
			if rapid.Bool().Draw(rt, "commit") {
				runIn(rt, sess, "COMMIT")
			} else {
				runIn(rt, sess, "ROLLBACK")
			}
		}
		checkKeys(rt, e, cols)
	})
}

// checkKeys compares the keys a MySQL client's SELECT gets with the catalog's, read afresh.
func checkKeys(rt *rapid.T, e *Engine, cols []string) {
	ctx := context.Background()
	conn, err := e.conn(ctx)
	if err != nil {
		rt.Fatal(err)
	}
	var want []string
	for _, c := range tableColumnKeys(ctx, conn, "", "t") {
		want = append(want, engine.WithOrigin(c.key, engine.ColumnOrigin{DB: c.db, Table: "t", OrgTable: c.table, Column: c.name}))
	}
	release(conn, true)
	rows, err := e.Execute(ctx, &query.Request{SQL: "SELECT a, b, c FROM t", Protocol: query.ProtocolMySQL})
	if err != nil {
		rt.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for _, f := range rows.Schema().Fields() {
		v, _ := f.Metadata.GetValue(engine.MetaColumnKey)
		got = append(got, v)
	}
	for {
		if _, err := rows.Next(ctx); err == io.EOF {
			break
		} else if err != nil {
			rt.Fatal(err)
		}
	}
	if !slices.Equal(got, want) {
		rt.Fatalf("SELECT %v got the keys %q; the catalog says %q", cols, got, want)
	}
}

func splitStatements(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != ';' {
			i++
		}
		out = append(out, s[:i])
		s = s[min(i+2, len(s)):]
	}
	return out
}

func mustRun(rt *rapid.T, e *Engine, sql string) {
	if err := runIgnoringError(e, sql); err != nil {
		rt.Fatalf("%s: %v", sql, err)
	}
}

func runIgnoringError(e *Engine, sql string) error {
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sql})
	if err != nil {
		return err
	}
	return drainAll(rows)
}

func runIn(rt *rapid.T, s *session, sql string) {
	rows, err := s.Execute(context.Background(), &query.Request{SQL: sql})
	if err == nil {
		err = drainAll(rows)
	}
	if err != nil && s.status == 'E' {
		runIn(rt, s, "ROLLBACK") // a DDL DuckDB refused: the transaction is over
	}
}

func drainAll(rows query.Rows) error {
	defer rows.Close()
	for {
		if _, err := rows.Next(context.Background()); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}
