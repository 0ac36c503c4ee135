package duckengine

import (
	"context"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// A Describe of a SELECT plans it once: the columns are read off the statement its prepare
// kept, not from a DESCRIBE that binds and plans it again; and they are the columns DESCRIBE
// names, type by type, or DESCRIBE answers (a type it names otherwise).
func TestDescribePlansASelectOnce(t *testing.T) {
	qe := openMemory(t)
	e := qe.(*Engine)
	ctx := context.Background()
	conn, err := e.conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release(conn, false)
	if _, err := conn.ExecContext(ctx, `CREATE TABLE t (i INTEGER, b BIGINT, d DECIMAL(18,3), v VARCHAR, ts TIMESTAMP,
		tz TIMESTAMPTZ, u UUID, x BLOB, f DOUBLE, iv INTERVAL, dt DATE, j JSON, l INTEGER[], h HUGEINT, s SMALLINT, bo BOOLEAN)`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sql  string
		kept bool // the kept statement names every column
	}{
		{"SELECT i, b, d, v, ts, tz, u, x, f, iv, dt, h, s, bo FROM t", true},
		{"SELECT i + 1 AS n, count(*) AS c, sum(d) AS total FROM t GROUP BY i", true},
		{"SELECT v FROM t WHERE i = $1", true},
		{"SELECT 1.5::DECIMAL(4,1) AS x, 'a' AS y, now() AS z", true},
		{"SELECT j FROM t", false},
		{"SELECT i, v, j FROM t", false},
		{"SELECT i, l FROM t", false},
		{"SELECT l FROM t", false},
		{"SELECT $1 AS p", false},
	} {
		p, err := prepare(conn, c.sql)
		if err != nil {
			t.Fatalf("%s: %v", c.sql, err)
		}
		kept := keptSchema(conn, p.sqlText, nil)
		described := resultSchema(ctx, conn, p.sqlText, len(p.params), nil)
		if (kept != nil) != c.kept {
			t.Errorf("%s: read off the kept statement: %v, want %v", c.sql, kept != nil, c.kept)
		}
		if kept != nil && !kept.Equal(described) {
			t.Errorf("%s: kept statement's columns\n%v\nDESCRIBE's\n%v", c.sql, kept, described)
		}
	}
	before := describePlans.Load()
	d, err := e.Describe(ctx, &query.Request{SQL: "SELECT i, v FROM t WHERE b > $1", Protocol: query.ProtocolPostgres})
	if err != nil {
		t.Fatal(err)
	}
	if n := describePlans.Load() - before; n != 0 || d.Schema == nil || d.Schema.NumFields() != 2 {
		t.Errorf("Describe planned the SELECT %d more times (want 0), columns %v", n, d.Schema)
	}
}
