package mysqlwire

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"pgregory.net/rapid"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// TestUpsertRowsLikeMariaDB: random INSERT ... ON DUPLICATE KEY UPDATE and REPLACE statements
// (rows new, updated to new values, updated to the values they had; VALUES(col), expressions
// of the row's own columns; inside a transaction or not) report from the proxy on the embedded
// DuckDB the affected rows MariaDB reports, with and without CLIENT_FOUND_ROWS, and leave the
// same rows. Before: DuckDB counted every row 1 (MariaDB: 2 for a row updated or replaced, 0
// for one left as it was, 1 with CLIENT_FOUND_ROWS); a REPLACE by a row's own values counted 2
// (MariaDB: 1, the row updated in place by the table's only key), and of two rows with one key
// DuckDB kept the first.
func TestUpsertRowsLikeMariaDB(t *testing.T) {
	testlong.RapidChecks(t, 25, 100)
	dsn, _ := mytest.NewDatabase(t)
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	addr := serveCore(t, "duck", eng, coreSetup{}).addr
	dbs := map[string]*sql.DB{}
	for _, found := range []bool{false, true} {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ClientFoundRows = found
		maria, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { maria.Close() })
		suffix := fmt.Sprintf(" found=%v", found)
		dbs["MariaDB"+suffix] = maria
		dbs["DuckDB"+suffix] = openDB(t, addr, testUser, "", "duck", "clientFoundRows="+strconv.FormatBool(found))
	}
	ctx := context.Background()
	tables := 0
	rapid.Check(t, func(rt *rapid.T) {
		found := rapid.Bool().Draw(rt, "found")
		suffix := fmt.Sprintf(" found=%v", found)
		conns, table, _, closeConns := checkTable(rt, ctx, dbs["MariaDB"+suffix], dbs["DuckDB"+suffix], &tables, "up",
			"CREATE TABLE %s (k INT NOT NULL, v INT, w VARCHAR(10), PRIMARY KEY (k))")
		defer closeConns()
		inTx := rapid.Bool().Draw(rt, "transaction")
		if inTx {
			for _, c := range conns {
				if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
					rt.Fatal(err)
				}
			}
		}
		var history []string
		for range rapid.IntRange(1, 6).Draw(rt, "statements") {
			replace := rapid.IntRange(0, 4).Draw(rt, "replace") == 0
			keys := rapid.SliceOfNDistinct(rapid.IntRange(1, 5), 1, 4, rapid.ID[int])
			if replace {
				keys = rapid.SliceOfN(rapid.IntRange(1, 5), 1, 4) // one key twice: the last row stays
			}
			var rows []string
			for _, k := range keys.Draw(rt, "keys") {
				v := rapid.IntRange(0, 2).Draw(rt, "v")
				rows = append(rows, fmt.Sprintf("(%d, %d, 'w%d')", k, v, v%2))
			}
			verb := "INSERT INTO"
			update := rapid.SampledFrom([]string{
				"v = VALUES(v)", "v = VALUES(v), w = VALUES(w)", "v = v", "v = v + 1", "w = 'same'", "w = VALUES(w), v = 7",
				"v = VALUES(v) + v + 1",
			}).Draw(rt, "update")
			tail := " ON DUPLICATE KEY UPDATE " + update
			if replace {
				verb, tail = "REPLACE INTO", ""
			}
			text := verb + " " + table + " (k, v, w) VALUES " + strings.Join(rows, ", ") + tail
			var got []string
			for _, name := range []string{"MariaDB", "DuckDB"} {
				c := conns[name]
				res, err := c.ExecContext(ctx, text)
				if err != nil {
					rt.Fatalf("%s: %s: %v", name, text, err)
				}
				n, _ := res.RowsAffected()
				contents, err := tableRows(ctx, c, table)
				if err != nil {
					rt.Fatalf("%s: %v", name, err)
				}
				got = append(got, fmt.Sprintf("%d rows affected, table %s", n, contents))
			}
			if got[0] != got[1] {
				rt.Fatalf("found rows %v, in a transaction %v\n%s\n%s:\nMariaDB: %s\nDuckDB:  %s", found, inTx, strings.Join(history, "\n"), text, got[0], got[1])
			}
			history = append(history, text+": "+got[0])
		}
		if inTx {
			for _, c := range conns {
				if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
					rt.Fatal(err)
				}
			}
		}
	})
}

// tableRows is table's (k, v, w) rows in key order.
func tableRows(ctx context.Context, c *sql.Conn, table string) (string, error) {
	rows, err := c.QueryContext(ctx, "SELECT k, v, w FROM "+table+" ORDER BY k")
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var k, v sql.NullInt64
		var w sql.NullString
		if err := rows.Scan(&k, &v, &w); err != nil {
			return "", err
		}
		out = append(out, fmt.Sprintf("%d|%d|%s", k.Int64, v.Int64, w.String))
	}
	return strings.Join(out, ";"), rows.Err()
}
