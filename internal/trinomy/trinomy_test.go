package trinomy

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestLexical(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`select 1`, `select 1`},
		{`select "Id", "a""b" from "T"`, "select `Id`, `a\"b` from `T`"},
		{`select 'a\b', 'it''s'`, `select 'a\\b', 'it''s'`},
		{`select 'a' || 'b' || 'c' as x`, `select CONCAT('a' , 'b' , 'c') as x`},
		{`select a || b + 1 = 'x1' from t`, `select CONCAT(a , b + 1) = 'x1' from t`},
		{`select (a || b) || -c, f(x || 'y') from t`, `select CONCAT((CONCAT(a , b)) , -c), f(CONCAT(x , 'y')) from t`},
		{`select case when a then 'x' end || t.name[1] /* c */ from t`, `select CONCAT(case when a then 'x' end , t.name[1]) /* c */ from t`},
		{`select date '2024-01-02' || 'x'`, `select CONCAT(date '2024-01-02' , 'x')`},
		{`select 'a' || `, `select 'a' || `}, // unfinished: MariaDB's error as written
		{`select date_add('day', 1, d), date_diff('month', a, b) from t`, `select TIMESTAMPADD(DAY, 1, d), TIMESTAMPDIFF(MONTH, a, b) from t`},
		{`select date_add('millisecond', n + 1, d), date_diff('millisecond', a, b)`,
			`select TIMESTAMPADD(MICROSECOND, 1000 * (n + 1), d), TIMESTAMPDIFF(MICROSECOND, a, b) DIV 1000`},
		{`select date_add(d, interval 1 day)`, `select date_add(d, interval 1 day)`},
		{`select a from t order by a offset 2 limit 3`, `select a from t order by a offset 2 ROWS FETCH FIRST 3 ROWS ONLY`},
		{`select a from t offset ? rows limit ?`, `select a from t offset ? rows FETCH FIRST ? ROWS ONLY`},
		{`select a from t offset 1`, `select a from t offset 1 ROWS`},
		{`select a from t offset 1 row fetch next 2 rows only`, `select a from t offset 1 row fetch next 2 rows only`},
		{`select a from t offset 1 limit all`, `select a from t offset 1 ROWS  `},
		{`select a from t limit all`, `select a from t  `},
		{`select t.offset from t union all select 1 limit 1`, `select t.offset from t union all select 1 limit 1`},
		{`select a from t limit 2`, `select a from t limit 2`},
	} {
		if got := lexical(c.in); got != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

// A chain of operands joined by || is one CONCAT of them all, each operand's text kept, for
// any count of operands and any arithmetic among them.
func TestConcatChains(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		operands := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "'x'", "1 + 2", "f(b, c)", "(d)", "t.e", "-3 * g"}), 2, 6).Draw(t, "operands")
		in := "select " + strings.Join(operands, " || ") + " from t"
		want := "select CONCAT(" + strings.Join(operands, " , ") + ") from t"
		if got := lexical(in); got != want {
			t.Fatalf("%s\n got %s\nwant %s", in, got, want)
		}
	})
}

func TestShow(t *testing.T) {
	s := Session{Catalog: "maria", Schema: "shop"}
	for _, c := range []struct{ in, has string }{
		{"show catalogs", "SELECT 'maria' AS `Catalog`"},
		{"show schemas from maria like 'sh%'", "FROM information_schema.schemata) AS s WHERE `Schema` LIKE BINARY 'sh%'"},
		{"show tables", "table_schema = 'shop'"},
		{`show tables from maria."Other"`, "table_schema = 'Other'"},
		{"describe Orders", "table_schema = 'shop' AND table_name = 'orders' AND NOT EXISTS (SELECT 1 FROM `shop`.`orders` WHERE 1 = 0)"},
		{`show columns from "a` + "`" + `B"`, "AND NOT EXISTS (SELECT 1 FROM `shop`.`a``B` WHERE 1 = 0)"},
		{"show columns from x.y like 'a\\%' escape '\\'", "table_schema = 'x' AND table_name = 'y' AND NOT EXISTS (SELECT 1 FROM `x`.`y` WHERE 1 = 0)) AS s WHERE `Column` LIKE BINARY 'a\\\\%' ESCAPE '\\\\'"},
	} {
		got, ok := showSQL(c.in, s)
		if !ok || !strings.Contains(got, c.has) {
			t.Errorf("%s: %v %s\nwant it to hold %s", c.in, ok, got, c.has)
		}
	}
	if _, ok := showSQL("show variables like 'x'", s); ok {
		t.Error("MariaDB's SHOW VARIABLES was taken for Trino's")
	}
}
