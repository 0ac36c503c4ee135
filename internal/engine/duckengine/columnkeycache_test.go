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
	"github.com/queryflux/queryflux/internal/testlong"
)

// TestColumnKeysCacheFollowsDDL: a MySQL client's SELECT of one table gets the column keys the
// catalog holds at that moment, though the engine keeps them between statements
// (columnkeycache.go), whatever DDL and writes ran meanwhile: on a pooled connection, or in a
// session's transaction, committed or rolled back, with pooled SELECTs reading around the open
// transaction; writes of the table, upserts, and deletes of a parent row whose key's ON DELETE
// CASCADE reaches t (run as DDL underneath: t hidden or created again). The oracle is the
// catalog read afresh on a connection of its own.
func TestColumnKeysCacheFollowsDDL(t *testing.T) {
	testlong.RapidChecks(t, 25, 100)
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
		mustRun(rt, e, "DROP TABLE IF EXISTS p")
		mustRun(rt, e, "CREATE TABLE p (id INTEGER PRIMARY KEY)")
		mustRun(rt, e, "INSERT INTO p VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9), (10)")
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
			proto := query.ProtocolPostgres
			switch rapid.IntRange(0, 16).Draw(rt, "action") {
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
			case 9:
				ddl = "DROP TABLE t; CREATE TABLE t (a INTEGER REFERENCES p (id) ON DELETE CASCADE, b VARCHAR, c INTEGER UNIQUE)"
			case 10:
				ddl = fmt.Sprintf("INSERT INTO t VALUES (%d, 'x', %d)", step, step)
			case 11:
				ddl = fmt.Sprintf("UPDATE t SET b = 'y', c = c + 100 WHERE a = %d", rapid.IntRange(1, 10).Draw(rt, "row"))
			case 12:
				ddl = fmt.Sprintf("DELETE FROM p WHERE id = %d", rapid.IntRange(1, 10).Draw(rt, "row"))
			case 13:
				ddl = fmt.Sprintf("INSERT INTO t (a, b, c) VALUES (%d, 'z', %d) ON DUPLICATE KEY UPDATE b = 'w'", step, rapid.IntRange(1, 3).Draw(rt, "c"))
				proto = query.ProtocolMySQL
			case 14:
				ddl = fmt.Sprintf("DELETE FROM t WHERE a = %d", rapid.IntRange(1, 10).Draw(rt, "row"))
			case 15:
				ddl = "DROP TABLE t; CREATE TABLE t (a INTEGER PRIMARY KEY AUTO_INCREMENT, b VARCHAR, c INTEGER)"
				proto = query.ProtocolMySQL
			case 16:
				ddl = fmt.Sprintf("INSERT INTO t (b, c) VALUES ('v', %d)", step)
				proto = query.ProtocolMySQL
			}
			if !rapid.Bool().Draw(rt, "in a transaction") {
				for _, s := range splitStatements(ddl) {
					runAs(e, s, proto) // an ALTER DuckDB refuses changes nothing
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
			runIn(rt, sess, "BEGIN", proto)
			for _, s := range splitStatements(ddl) {
				runIn(rt, sess, s, proto)
			}
			checkKeys(rt, e, cols) // read from outside the open transaction
			if rapid.Bool().Draw(rt, "commit") {
				runIn(rt, sess, "COMMIT", proto)
			} else {
				runIn(rt, sess, "ROLLBACK", proto)
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
	wantAI, wantOK, err := readAI(ctx, conn, "", "t")
	if err != nil {
		rt.Fatal(err)
	}
	release(conn, true)
	conn, err = e.conn(ctx)
	if err != nil {
		rt.Fatal(err)
	}
	gotAI, gotOK := cachedAI(withColumnKeysCache(ctx, &e.keys), conn, "", "t")
	release(conn, true)
	if gotOK != wantOK || gotAI.name != wantAI.name || gotAI.seq != wantAI.seq || !slices.Equal(gotAI.columns, wantAI.columns) {
		rt.Fatalf("t's AUTO_INCREMENT column kept as %+v (%v); the catalog says %+v (%v)", gotAI, gotOK, wantAI, wantOK)
	}
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

func runIgnoringError(e *Engine, sql string) error { return runAs(e, sql, "") }

func runAs(e *Engine, sql, proto string) error {
	rows, err := e.Execute(context.Background(), &query.Request{SQL: sql, Protocol: proto})
	if err != nil {
		return err
	}
	return drainAll(rows)
}

func runIn(rt *rapid.T, s *session, sql, proto string) {
	rows, err := s.Execute(context.Background(), &query.Request{SQL: sql, Protocol: proto})
	if err == nil {
		err = drainAll(rows)
	}
	if err != nil && s.status == 'E' {
		runIn(rt, s, "ROLLBACK", proto) // a statement DuckDB refused: the transaction is over
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

// TestWritesKeepTheColumnKeys: a write that DuckDB runs as a write leaves every table's keys
// and AUTO_INCREMENT column cached, so a client that alternates INSERT and SELECT reads the
// catalog once; a write that
// runs as DDL underneath (a multi-table UPDATE's temporary table) and DDL itself still count.
func TestWritesKeepTheColumnKeys(t *testing.T) {
	qe, err := Open(engine.Spec{Name: "duck", Kind: Kind, Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	defer qe.Close()
	e := qe.(*Engine)
	my, pg := query.ProtocolMySQL, query.ProtocolPostgres
	exec := func(sql, proto string) {
		t.Helper()
		rows, err := e.Execute(context.Background(), &query.Request{SQL: sql, Protocol: proto})
		if err == nil {
			err = drainAll(rows)
		}
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec("CREATE TABLE t (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, n INTEGER UNIQUE)", my)
	exec("CREATE TABLE u (id INTEGER PRIMARY KEY AUTO_INCREMENT, v VARCHAR(10))", my)
	exec("SELECT id, name, n FROM t", my)
	exec("INSERT INTO u (v) VALUES ('w')", my)
	exec("INSERT INTO t VALUES (0, 'z', 0)", my)
	exec("INSERT INTO t VALUES (-1, 'y', -1)", pg) // a PostgreSQL INSERT reads t's columns once (pginsertdefaults.go)
	reads := e.keys.reads.Load()
	for _, w := range []struct{ sql, proto string }{
		{"INSERT INTO t VALUES (1, 'a', 10)", my},
		{"INSERT INTO t VALUES (2, 'b', 20), (3, 'c', 30)", pg},
		{"INSERT INTO u (v) VALUES ('x')", my}, // AUTO_INCREMENT: LAST_INSERT_ID kept
		{"INSERT INTO t VALUES (1, 'a2', 10) ON DUPLICATE KEY UPDATE name = VALUES(name)", my},
		{"REPLACE INTO t VALUES (2, 'b2', 20)", my},
		{"UPDATE t SET n = n + 1 WHERE id = 3", my},
		{"  /* a tag */ delete from t where id = 3", my},
		{"WITH k AS (SELECT 4 AS id) INSERT INTO t SELECT id, 'd', 40 FROM k", pg},
		{"SELECT id, name, n FROM t", my},
	} {
		gen := e.keys.gen.Load()
		exec(w.sql, w.proto)
		if got := e.keys.gen.Load(); got != gen {
			t.Errorf("%s (%s) counted as a catalog change (generation %d -> %d)", w.sql, w.proto, gen, got)
		}
	}
	if got := e.keys.reads.Load(); got != reads {
		t.Errorf("the writes and SELECTs read the catalog %d times; want 0 (every answer kept)", got-reads)
	}
	for _, ddl := range []string{
		"CREATE INDEX tn ON t (name)",
		"UPDATE t JOIN u ON t.id = u.id SET t.name = u.v",
		"explain analyze select 1",
		"SELECT 1; CREATE TABLE x (a INTEGER)",
	} {
		gen := e.keys.gen.Load()
		if rows, err := e.Execute(context.Background(), &query.Request{SQL: ddl, Protocol: my}); err == nil {
			_ = drainAll(rows)
		}
		if e.keys.gen.Load() == gen {
			t.Errorf("%s did not count as a catalog change", ddl)
		}
	}
}

// TestCatalogTextsSorted: which texts DuckDB gets count as catalog changes (keepsCatalog) and
// which end a transaction (endsTransaction).
func TestCatalogTextsSorted(t *testing.T) {
	for sql, keeps := range map[string]bool{ //determinism:ok each case stands alone
		"SELECT 1":                                   true,
		"  -- c\n insert into t values (1)":          true,
		"UPDATE t SET a = 1;":                        true,
		"delete from t where a = ';'":                false, // a ';' anywhere counts
		"SET VARIABLE x = 1":                         true,
		"SET search_path = 'main'":                   false,
		"reset variable x":                           true,
		"EXPLAIN ANALYZE CREATE TABLE x AS SELECT 1": false,
		"CREATE INDEX i ON t (a)":                    false,
		"ALTER TABLE t RENAME TO u":                  false,
		"COMMIT":                                     false,
		"CHECKPOINT":                                 false,
		"PRAGMA foo":                                 false,
		"CALL f()":                                   false,
		"":                                           false,
		"(SELECT 1)":                                 false,
		"SELECT 1; DROP TABLE t":                     false,
	} {
		if got := keepsCatalog(sql); got != keeps {
			t.Errorf("keepsCatalog(%q) = %v, want %v", sql, got, keeps)
		}
	}
	for sql, ends := range map[string]bool{ //determinism:ok each case stands alone
		"COMMIT": true, "end": true, "Rollback": true, "ABORT": true, "rollback to sp": false,
		"COMMIT; DROP TABLE t": false, "BEGIN": false, "SELECT 1": false,
	} {
		if got := endsTransaction(sql); got != ends {
			t.Errorf("endsTransaction(%q) = %v, want %v", sql, got, ends)
		}
	}
}
