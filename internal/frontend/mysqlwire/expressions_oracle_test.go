package mysqlwire

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	gomysql "github.com/go-sql-driver/mysql"
)

// exprDDL is the expression oracle's table in MySQL's DDL; exprPG in PostgreSQL's.
var (
	exprDDL = []string{
		"CREATE TABLE gx (id INT PRIMARY KEY, v VARCHAR(20) NOT NULL, t TEXT, d DECIMAL(10,3), f DOUBLE, n BIGINT, dt DATETIME)",
		"INSERT INTO gx VALUES (1, 'a', 'text', 1.5, 2.5, 7, '2024-01-02 03:04:05'), (2, 'b', NULL, NULL, NULL, NULL, NULL)",
	}
	exprPG = []string{
		"CREATE TABLE gx (id INT PRIMARY KEY, v VARCHAR(20) NOT NULL, t TEXT, d DECIMAL(10,3), f DOUBLE PRECISION, n BIGINT, dt TIMESTAMP(0))",
		"INSERT INTO gx VALUES (1, 'a', 'text', 1.5, 2.5, 7, '2024-01-02 03:04:05'), (2, 'b', NULL, NULL, NULL, NULL, NULL)",
	}
	// exprQueries' columns are compared attribute by attribute, but for the targets and
	// attributes known to differ (exprUnlike).
	exprQueries = []string{
		"SELECT id, v, t, d, f, n, dt FROM gx ORDER BY id",
		"SELECT COUNT(*), COUNT(t) AS ct, count( * ) FROM gx",
		"SELECT SUM(id) AS s, AVG(id) AS a, MIN(v) AS mi, MAX(id) AS ma FROM gx",
		"SELECT lower(v), upper(v) AS u, length(v) AS l, concat(v, 'x') AS c, coalesce(t, v) AS co FROM gx ORDER BY id",
		"SELECT id + 1 AS p, id * 2, id - 1 AS m, -id, f * 2 AS ff, d + 1 AS dd FROM gx ORDER BY id",
		"SELECT CASE WHEN id = 1 THEN 'one' ELSE 'other' END AS c, CASE id WHEN 1 THEN 10 ELSE 20 END FROM gx ORDER BY id",
		"SELECT 1, 'abc', 1.5, NULL, TRUE, -1, (1+1), 'it''s' FROM gx WHERE id = 1",
		"SELECT ID, g.V, (id), g.v AS Al FROM gx g WHERE id = 1",
		"SELECT abs(id) AS a, round(f) AS r, coalesce(n, 0) AS cn FROM gx ORDER BY id",
	}
)

// exprUnlike are the attributes of exprQueries' columns known to differ on a target ("type",
// "length", "decimals", "flags", "charset", "name"), by "<query> #<column>" and target
// (RESULTS.md, session 38). Causes: DuckDB keeps no VARCHAR length nor TEXT; an expression's
// type and display length are its engine's (MariaDB's 1 + 1 is a BIGINT 3 long, its
// 'abc' 12); an expression over NOT NULL columns, a literal, a CASE are NOT NULL on MariaDB
// only; by Arrow, a DOUBLE expression's length and decimals are not carried; PostgreSQL's
// NULL is a text, its SUM of an INT a BIGINT, its numeric expressions have no precision.
var exprUnlike = map[string]map[string]string{
	exprQueries[0] + " #2": {"DuckDB": "length"},
	exprQueries[0] + " #3": {"DuckDB": "type length flags"},
	exprQueries[2] + " #1": {"DuckDB": "length", "PostgreSQL": "length decimals"}, // SUM: a DECIMAL on both, PostgreSQL's without its scale
	exprQueries[2] + " #2": {"DuckDB": "length", "PostgreSQL": "length decimals"},
	exprQueries[2] + " #3": {"DuckDB": "length", "PostgreSQL": "length"},
	exprQueries[3] + " #1": {"DuckDB": "length", "PostgreSQL": "length"},
	exprQueries[3] + " #2": {"DuckDB": "length", "PostgreSQL": "length"},
	exprQueries[3] + " #3": {"DuckDB": "length flags", "PostgreSQL": "length flags"},
	exprQueries[3] + " #4": {"DuckDB": "length", "PostgreSQL": "length"},
	exprQueries[3] + " #5": {"Arrow": "flags", "DuckDB": "type length flags", "PostgreSQL": "type length flags"},
	exprQueries[4] + " #1": {"DuckDB": "type length flags", "PostgreSQL": "type length flags"},
	exprQueries[4] + " #2": {"DuckDB": "type length flags", "PostgreSQL": "type length flags"},
	exprQueries[4] + " #3": {"DuckDB": "type length flags", "PostgreSQL": "type length flags"},
	exprQueries[4] + " #4": {"DuckDB": "type length flags", "PostgreSQL": "type length flags"},
	exprQueries[4] + " #5": {"Arrow": "length", "DuckDB": "length", "PostgreSQL": "length"},
	exprQueries[4] + " #6": {"DuckDB": "length", "PostgreSQL": "length decimals"},
	exprQueries[5] + " #1": {"DuckDB": "length flags", "PostgreSQL": "length flags"},
	exprQueries[5] + " #2": {"DuckDB": "length flags", "PostgreSQL": "length flags"},
	exprQueries[6] + " #1": {"DuckDB": "length flags", "PostgreSQL": "length flags"},
	exprQueries[6] + " #2": {"DuckDB": "length flags", "PostgreSQL": "length flags"},
	exprQueries[6] + " #3": {"DuckDB": "flags", "PostgreSQL": "length decimals flags"},
	exprQueries[6] + " #4": {"DuckDB": "type length", "PostgreSQL": "type length decimals flags charset"},
	exprQueries[6] + " #5": {"DuckDB": "type length flags", "PostgreSQL": "type length flags"},
	exprQueries[6] + " #6": {"DuckDB": "length flags", "PostgreSQL": "length flags"},
	exprQueries[6] + " #7": {"DuckDB": "length flags", "PostgreSQL": "length flags"},
	exprQueries[6] + " #8": {"DuckDB": "length flags", "PostgreSQL": "length flags"},
	exprQueries[7] + " #2": {"DuckDB": "length"},
	exprQueries[7] + " #3": {"DuckDB": "flags"},
	exprQueries[7] + " #4": {"DuckDB": "length"},
	exprQueries[8] + " #1": {"DuckDB": "type flags", "PostgreSQL": "type flags"},
	exprQueries[8] + " #2": {"Arrow": "length decimals", "DuckDB": "length decimals", "PostgreSQL": "length decimals"},
	exprQueries[8] + " #3": {"DuckDB": "flags", "PostgreSQL": "flags"},
}

// TestExpressionColumnsAsMariaDB: each result column of a table's columns, aggregates,
// functions, CASE, arithmetic and literals is described as MariaDB describes it (name, type,
// length, decimals, flags, character set), by text and prepared, on every target but where
// exprUnlike says an attribute is known to differ.
func TestExpressionColumnsAsMariaDB(t *testing.T) {
	maria := coreServer(t, coreSetup{})
	for _, q := range exprDDL {
		if _, err := maria.direct.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	cfg, err := gomysql.ParseDSN(maria.dsn)
	if err != nil {
		t.Fatal(err)
	}
	want := exprColumns(t, cfg.Addr, cfg.User, cfg.Passwd, maria.dbName)
	duck, arrow, pg := unrelayedTargets(t, exprDDL, exprPG)
	targets := []struct {
		name string
		f    *coreFixture
	}{{"relayed", maria}, {"Arrow", arrow}, {"DuckDB", duck}, {"PostgreSQL", pg}}
	for _, tg := range targets {
		got := exprColumns(t, tg.f.addr, testUser, "", tg.f.dbName)
		for k, w := range want {
			g := got[k]
			for attr, wv := range w { //determinism:ok each attribute is compared alone
				_, col, _ := strings.Cut(k, " ")
				known := slices.Contains(strings.Fields(exprUnlike[col][tg.name]), attr)
				if g[attr] != wv && !known {
					t.Errorf("%s: %s: %s %q, MariaDB %q", tg.name, k, attr, g[attr], wv)
				}
				if g[attr] == wv && known && tg.name != "relayed" {
					t.Logf("%s: %s: %s now MariaDB's (%q): exprUnlike may lose it", tg.name, k, attr, wv)
				}
			}
		}
	}
}

// exprColumns runs exprQueries by text and prepared: each column's attributes, keyed by
// "text|prepared <query> #<column>".
func exprColumns(t *testing.T, addr, user, password, db string) map[string]map[string]string {
	t.Helper()
	c, err := client.Connect(addr, user, password, db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := map[string]map[string]string{}
	describe := func(how, q string, r *mysql.Result) {
		for i, f := range r.Fields {
			out[fmt.Sprintf("%s %s #%d", how, q, i+1)] = map[string]string{
				"name": string(f.Name), "type": fmt.Sprint(f.Type), "length": fmt.Sprint(f.ColumnLength),
				"decimals": fmt.Sprint(f.Decimal), "flags": flagNames(f.Flag), "charset": fmt.Sprint(f.Charset),
			}
		}
	}
	for _, q := range exprQueries {
		r, err := c.Execute(q)
		if err != nil {
			t.Fatal(q, err)
		}
		describe("text", q, r)
		st, err := c.Prepare(q)
		if err != nil {
			t.Fatal(q, err)
		}
		r, err = st.Execute()
		if err != nil {
			t.Fatal(q, err)
		}
		describe("prepared", q, r)
		st.Close()
	}
	return out
}

// flagNames are a column definition's flags by name, as the mariadb CLI prints them.
func flagNames(flag uint16) string {
	var names []string
	for i, name := range []string{"NOT_NULL", "PRI_KEY", "UNIQUE_KEY", "MULTIPLE_KEY", "BLOB", "UNSIGNED", "ZEROFILL",
		"BINARY", "ENUM", "AUTO_INCREMENT", "TIMESTAMP", "SET", "NO_DEFAULT_VALUE", "ON_UPDATE_NOW", "PART_KEY", "NUM"} {
		if flag&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	return strings.Join(names, " ")
}
