package duckengine_test

import (
	"strings"
	"testing"
)

// TestMySQLColumnKeysAndPrecisionAsMariaDB: information_schema.COLUMNS' COLUMN_KEY,
// NUMERIC_PRECISION and NUMERIC_SCALE, and SHOW COLUMNS' Key, of a MySQL client's tables as
// MariaDB 10.11 answered the same statements (2026-12-06): MUL for a foreign key's column and
// an index's first, UNI before MUL, integer precision in digits (DuckDB's own: bits).
func TestMySQLColumnKeysAndPrecisionAsMariaDB(t *testing.T) {
	e := open(t)
	for _, stmt := range []string{
		"create table p3 (id int primary key, code varchar(10) unique, amount decimal(10,2), f float, d double, b bigint, " +
			"s smallint, t tinyint, tu tinyint unsigned, bu bigint unsigned, n numeric(5), bo boolean, iu int unsigned)",
		"create table c3 (id int auto_increment primary key, pid int, name varchar(20), k int, key (k), key nm (name, k), " +
			"foreign key (pid) references p3 (id))",
		"create table pr (id int primary key, a int, b int, c int, d int, unique key (a), key (a, b), key (d), unique key (d, b), unique key (c, d))",
		"create table pu (id int primary key, a int, b int)",
		"alter table pu add unique key ua (a)",
		"create index ab on pu (a, b)",
	} {
		if _, _, err := mysqlRows(t, e, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, c := range []struct{ stmt, want string }{
		{"select table_name, column_name, column_key, numeric_precision, numeric_scale from information_schema.columns " +
			"where table_schema = database() and table_name <> 'pu' order by table_name, ordinal_position",
			"c3,id,PRI,10,0|c3,pid,MUL,10,0|c3,name,MUL,(null),(null)|c3,k,MUL,10,0|p3,id,PRI,10,0|p3,code,UNI,(null),(null)|" +
				"p3,amount,,10,2|p3,f,,12,(null)|p3,d,,22,(null)|p3,b,,19,0|p3,s,,5,0|p3,t,,3,0|p3,tu,,3,0|p3,bu,,20,0|p3,n,,5,0|" +
				"p3,bo,,3,0|p3,iu,,10,0|pr,id,PRI,10,0|pr,a,UNI,10,0|pr,b,,10,0|pr,c,MUL,10,0|pr,d,MUL,10,0"},
	} {
		_, rows, err := mysqlRows(t, e, c.stmt)
		if err != nil {
			t.Fatalf("%s: %v", c.stmt, err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, strings.Join(r, ","))
		}
		if g := strings.Join(got, "|"); g != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.stmt, g, c.want)
		}
	}
	for table, want := range map[string]string{"c3": "PRI,MUL,MUL,MUL", "pr": "PRI,UNI,,MUL,MUL", "pu": "PRI,UNI,"} {
		_, rows, err := mysqlRows(t, e, "show columns from "+table)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, r := range rows {
			keys = append(keys, r[3])
		}
		if got := strings.Join(keys, ","); got != want {
			t.Errorf("show columns from %s: Key %s, want %s", table, got, want)
		}
	}
}
