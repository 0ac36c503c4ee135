package pgengine

import (
	"maps"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/query"
)

// TestMySQLNamesOfPostgreSQLColumns: a MySQL client's columns on PostgreSQL are named as MariaDB
// names them, from the client's text and PostgreSQL's (folded) names.
func TestMySQLNamesOfPostgreSQLColumns(t *testing.T) {
	for _, c := range []struct {
		sql       string
		pg, mysql []string
	}{
		{"SELECT COUNT(*), COUNT(*) AS C, count(d) cd FROM gs", []string{"count", "c", "cd"}, []string{"COUNT(*)", "C", "cd"}},
		{"SELECT ID, g.V, (id), g.v AS `My Col`, v \"s\" FROM gs g", []string{"id", "v", "id", "My Col", "s"}, []string{"ID", "V", "id", "My Col", "s"}},
		{"SELECT CASE WHEN id = 1 THEN 'a' END, 1 + 1, 'abc', TRUE, NULL FROM gs", []string{"case", "?column?", "?column?", "bool", "?column?"},
			[]string{"CASE WHEN id = 1 THEN 'a' END", "1 + 1", "abc", "TRUE", "NULL"}},
		{"SELECT * FROM gs", []string{"count"}, []string{"count"}},                    // a * keeps PostgreSQL's
		{"EXPLAIN SELECT 1", []string{"QUERY PLAN"}, []string{"QUERY PLAN"}},          // not a query's items
		{"SELECT concat(v, ?) FROM gs", []string{"concat"}, []string{"concat(v, ?)"}}, // as written, with its ?
	} {
		fields := make([]pgconn.FieldDescription, len(c.pg))
		for i, n := range c.pg {
			fields[i].Name = n
		}
		got := mysqlNames(&query.Request{SQL: c.sql, Protocol: query.ProtocolMySQL}, fields)
		for i, f := range got {
			if f.Name != c.mysql[i] {
				t.Errorf("%s #%d: %q, MariaDB %q", c.sql, i+1, f.Name, c.mysql[i])
			}
			if fields[i].Name != c.pg[i] {
				t.Errorf("%s: PostgreSQL's fields changed", c.sql)
			}
		}
	}
}

// TestFromAliases: the alias of each table the FROM list names once.
func TestFromAliases(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want map[string]string
	}{
		{"SELECT g.v FROM gs g WHERE g.id = 1", map[string]string{"gs": "g"}},
		{"SELECT 1 FROM public.gs AS G JOIN t ON (t.a = G.id) LEFT JOIN u x USING (a) ORDER BY 1", map[string]string{"gs": "G", "u": "x"}},
		{"SELECT 1 FROM gs a, gs b", nil}, // which one a column is: unknown
		{"SELECT 1 FROM `Gs` `the g`", map[string]string{"Gs": "the g"}},
		{"SELECT 1 FROM (SELECT 1) s", nil},
		{"SELECT 1 FROM gs WHERE id IN (SELECT id FROM gs x)", nil},
	} {
		got := fromAliases(&query.Request{SQL: c.sql, Protocol: query.ProtocolMySQL})
		if !maps.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.sql, got, c.want)
		}
	}
}
