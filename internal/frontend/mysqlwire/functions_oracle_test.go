package mysqlwire

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/engine/duckengine"
	"github.com/queryflux/queryflux/internal/mytest"
	"github.com/queryflux/queryflux/internal/testlong"
)

// TestMySQLExpressionsLikeMariaDB: expressions a MySQL application selects answer through the
// proxy on the embedded DuckDB what MariaDB answers (go-sql-driver/mysql, text protocol): the
// value's text, or the same number where MariaDB writes a DECIMAL's scale (7/2 is 3.5000 there,
// 3.5 here; 42.8571 against 42.857142...), NULL where MariaDB's is.
func TestMySQLExpressionsLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	for _, expr := range []string{
		"7/2", "-7/2", "100 * 3 / 7", "7/0", "7 DIV 2", "7.5 / 2", "7 /-2",
		"concat('a', null)", "concat('a', 1, 'b')", "concat(concat('x', 'y'), 'z')", "concat_ws(',', 'a', null, 'b')",
		"length('é')", "octet_length('é')", "char_length('é')", "length(12345)",
		"mid('hello', 2, 2)", "locate('l', 'hello')", "locate('l', 'hello', 4)", "locate('z', 'hello')",
		"find_in_set('b', 'a,b,c')", "find_in_set('z', 'a,b,c')", "sha2('abc', 256)",
		"rand() < 1", "current_timestamp() is not null", "current_date() = curdate()",
		"null <=> null", "1 <=> null", "1 <=> 1", "1 + 1 <=> 2 and 1 = 1",
		"'Abc' like 'a%'", "'Abc' like binary 'a%'", "'abc' like binary 'a%'", "'Abc' regexp '^a'", "'Abc' regexp binary '^a'",
		"'Abc' not regexp binary '^a'", "'a' = 'A' collate utf8mb4_bin", "'a' = 'A' collate utf8mb4_general_ci", "'b' > 'A' collate utf8mb4_unicode_ci",
	} {
		var m, d sql.NullString
		if err := maria.QueryRow("select " + expr).Scan(&m); err != nil {
			t.Fatalf("MariaDB: %s: %v", expr, err)
		}
		if err := duck.QueryRow("select " + expr).Scan(&d); err != nil {
			t.Errorf("DuckDB: %s: %v", expr, err)
			continue
		}
		if m != d && !sameNumber(m, d) {
			t.Errorf("%s: MariaDB %v, DuckDB %v", expr, m, d)
		}
	}
}

// sameNumber reports whether a and b are both numbers that agree to MariaDB's four decimals of
// a division (div_precision_increment).
func sameNumber(a, b sql.NullString) bool {
	x, errA := strconv.ParseFloat(a.String, 64)
	y, errB := strconv.ParseFloat(b.String, 64)
	return a.Valid && b.Valid && errA == nil && errB == nil && math.Abs(x-y) < 1e-4
}

// mariaAndDuck opens a new MariaDB database and the proxy on an embedded in-memory DuckDB, as
// the oracle tests compare them.
func mariaAndDuck(t *testing.T) (maria, duck *sql.DB) {
	maria, _ = newMariaDB(t)
	eng, err := duckengine.Open(engine.Spec{Name: "duck", Kind: "duckdb", Endpoint: ":memory:"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return maria, openDB(t, serveCore(t, "duck", eng, coreSetup{}).addr, testUser, "", "duck", "")
}

// newMariaDB is a connection pool to a new database of the MariaDB oracle, and its name.
func newMariaDB(t *testing.T) (*sql.DB, string) {
	t.Helper()
	dsn, name := mytest.NewDatabase(t)
	maria, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { maria.Close() })
	return maria, name
}

// TestMySQLDateAndStringFunctionsLikeMariaDB: MySQL's functions of a date (of its text too,
// where DuckDB could not choose between its overloads), FIELD, ELT, INSERT, CONV, OCT, HEX and
// BIN answer through the proxy on DuckDB MariaDB's value and column type (go-sql-driver's
// type name: INT where DuckDB's part of a date was a BIGINT). DAYOFWEEK, WEEKDAY and WEEK
// count as MySQL does, not as DuckDB's functions of the same names.
func TestMySQLDateAndStringFunctionsLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	execBoth(t, maria, duck, "create table days (id int primary key, d date, dt datetime, s varchar(30))",
		"insert into days values (1, '2024-03-04', '2024-03-04 10:11:12', '2024-03-09 23:59:58'), (2, '2023-01-01', '2024-12-31 00:00:00', 'not a date')")
	for i, expr := range []string{
		"year('2024-03-04')", "month('2024-03-04')", "day('2024-03-04')", "dayofmonth('2024-03-04')", "dayofyear('2024-03-04')",
		"quarter('2024-08-04')", "date('2024-03-04 10:00')", "date_format('2024-03-04', '%Y')", "date_format('2024-03-04 10:11:12', '%H:%i')",
		"dayofweek('2024-03-04')", "weekday('2024-03-04')", "dayname('2024-03-04')", "monthname('2024-03-04')",
		"last_day('2024-02-04')", "hour('2024-03-04 10:11:12')", "minute('2024-03-04 10:11:12')", "second('10:11:12')",
		"week('2024-01-01')", "week('2024-01-07')", "week('2024-12-31', 0)", "week('2024-01-01', 3)", "week('2024-12-31', 5)",
		"year(null)", "year('not a date')", "from_unixtime(1709547072)", "from_unixtime(0, '%Y-%m-%d %H:%i')", "from_unixtime(null)",
		"year(d)", "month(dt)", "dayofweek(d)", "weekday(d)", "week(d)", "dayofweek(dt)", "hour(dt)", "year(s)", "dayofweek(s)", "date_format(s, '%d.%m.%Y')",
		"field('b', 'a', 'b', 'c')", "field('B', 'a', 'b')", "field('z', 'a', 'b')", "field(2, 1, 2, 3)", "field(null, 1)",
		"elt(2, 'a', 'b', 'c')", "elt(4, 'a', 'b', 'c')", "elt(0, 'a')",
		"insert('Quadratic', 3, 4, 'What')", "insert('Quadratic', -1, 4, 'What')", "insert('Quadratic', 3, 100, 'What')", "insert('Quadratic', 3, -1, 'What')",
		"oct(12)", "oct(-1)", "bin(12)", "bin(-1)", "hex(255)", "hex(-1)", "hex(3.7)", "hex('abc')", "hex(null)",
		"conv('a', 16, 2)", "conv(255, 10, 16)", "conv('-17', 10, 16)", "conv('-17', 10, -16)", "conv('zz', 36, 10)", "conv('12x', 10, 2)",
		"conv('', 10, 2)", "conv(10, 1, 2)", "conv('99999999999999999999999', 10, 16)",
	} {
		if !testlong.Sample(i, 3) {
			continue
		}
		q := "select " + expr + " from days order by id"
		m, d := typedValues(t, maria, q), typedValues(t, duck, q)
		if m != d {
			t.Errorf("%s:\n MariaDB %s\n DuckDB  %s", expr, m, d)
		}
	}
}

// execBoth runs stmts on MariaDB and on DuckDB.
func execBoth(t *testing.T, maria, duck *sql.DB, stmts ...string) {
	t.Helper()
	for _, db := range []*sql.DB{maria, duck} {
		for _, s := range stmts {
			if _, err := db.Exec(s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
}

// typedValues is q's column type (go-sql-driver's name of it) and every row's value, as text.
func typedValues(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		return "error " + err.Error()
	}
	return rowsText(t, rows)
}

// rowsText is rows' column types (go-sql-driver's names of them) and every row's value, as text.
func rowsText(t *testing.T, rows *sql.Rows) string {
	t.Helper()
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range types {
		out = append(out, c.DatabaseTypeName())
	}
	for rows.Next() {
		vals := make([]sql.NullString, len(types))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			if !v.Valid {
				out = append(out, "NULL")
				continue
			}
			out = append(out, strconv.Quote(v.String))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// TestMySQLDatetimesLikeMariaDB: a DATETIME column created by a MySQL client, DATE_ADD of it,
// CAST AS DATETIME and NOW() come through the text protocol and the binary protocol (a
// prepared statement) with MariaDB's fractional digits: none for DATETIME, n for DATETIME(n)
// (DuckDB's TIMESTAMP has six). NOW()'s are compared by their shape, every digit a 9.
func TestMySQLDatetimesLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	execBoth(t, maria, duck, "create table stamps (id int primary key, a datetime not null, b datetime(3), c datetime(6), d timestamp null)",
		"insert into stamps values (1, '2024-03-04 10:11:12', '2024-03-04 10:11:12.125', '2024-03-04 10:11:12', '2024-03-04 10:11:12')")
	digits := regexp.MustCompile(`[0-9]`)
	for _, q := range []string{
		"select a, b, c from stamps where id = ?",
		"select date_add(a, interval 1 hour), date_sub(a, interval 1 day), adddate(b, interval 1 minute) from stamps where id = ?",
		"select cast('2024-03-04 10:11:12' as datetime), cast('2024-03-04 10:11:12.5' as datetime(3)), ? as n",
		"select now(), current_timestamp, current_timestamp(), localtimestamp, sysdate(), utc_timestamp(), now(3), now(6), ? as n",
	} {
		for _, binary := range []bool{false, true} {
			args, text := []any{1}, q
			if !binary { // go-sql-driver prepares a statement only for one with parameters
				args, text = nil, strings.Replace(q, "?", "1", 1)
			}
			m, d := typedValues(t, maria, text, args...), typedValues(t, duck, text, args...)
			if strings.Contains(q, "now()") {
				m, d = digits.ReplaceAllString(m, "9"), digits.ReplaceAllString(d, "9")
			}
			if m != d {
				t.Errorf("%s (binary %v):\n MariaDB %s\n DuckDB  %s", q, binary, m, d)
			}
		}
	}
	// A TIMESTAMP column's values are DATETIME's (MariaDB's type is TIMESTAMP).
	var m, d string
	if err := maria.QueryRow("select d from stamps").Scan(&m); err != nil {
		t.Fatal(err)
	}
	if err := duck.QueryRow("select d from stamps").Scan(&d); err != nil || d != m {
		t.Errorf("a TIMESTAMP column: DuckDB %q (%v), MariaDB %q", d, err, m)
	}
}

// TestMySQLFoundRowsLikeMariaDB: SELECT SQL_CALC_FOUND_ROWS ... LIMIT and then FOUND_ROWS(), as
// WordPress-era paginators page, answer through the proxy on DuckDB what MariaDB answers: the
// page's rows and the count without the LIMIT, with the LIMIT's numbers as parameters of a
// prepared statement too, and inside a transaction (its own rows counted). FOUND_ROWS() after a
// SELECT without the modifier is MariaDB's count of that SELECT's rows, and DuckDB's error
// 1235 (not kept there); a connection's count is its own.
func TestMySQLFoundRowsLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	execBoth(t, maria, duck, "create table pages (id int primary key, tag varchar(10))",
		"insert into pages select seq, case when seq % 3 = 0 then 'x' else 'y' end from (select 1 seq union select 2 union select 3 "+
			"union select 4 union select 5 union select 6 union select 7 union select 8 union select 9 union select 10 union select 11 "+
			"union select 12 union select 13 union select 14 union select 15 union select 16 union select 17) s")
	ctx := context.Background()
	conns := map[string]*sql.Conn{}
	for name, db := range map[string]*sql.DB{"MariaDB": maria, "DuckDB": duck} {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[name] = c
	}
	steps := []struct {
		sql  string
		args []any
	}{
		{"select sql_calc_found_rows id from pages where tag = 'y' order by id limit 2, 3", nil},
		{"select found_rows()", nil},
		{"SELECT SQL_CALC_FOUND_ROWS SQL_NO_CACHE id, tag FROM pages WHERE id > ? ORDER BY id DESC LIMIT ?, ?", []any{4, 1, 2}},
		{"SELECT FOUND_ROWS()", nil},
		{"select sql_calc_found_rows id from pages where id > ? order by id limit ? offset ?", []any{15, 5, 1}},
		{"select found_rows() + 0 as n, 'x' as y", nil},
		{"select sql_calc_found_rows tag, count(*) from pages group by tag order by tag limit 1", nil},
		{"select found_rows()", nil},
		{"begin", nil},
		{"insert into pages values (100, 'y'), (101, 'y')", nil},
		{"select sql_calc_found_rows id from pages where tag = 'y' order by id limit 1", nil},
		{"select found_rows()", nil},
		{"rollback", nil},
		{"select sql_calc_found_rows id from pages where tag = 'y' order by id limit 1", nil},
		{"select found_rows()", nil},
	}
	for _, s := range steps {
		m, d := connValues(t, conns["MariaDB"], s.sql, s.args...), connValues(t, conns["DuckDB"], s.sql, s.args...)
		if m != d {
			t.Errorf("%s %v:\n MariaDB %s\n DuckDB  %s", s.sql, s.args, m, d)
		}
	}
	// Another connection has no count; a SELECT without the modifier forgets this one's.
	if got := connValues(t, conns["DuckDB"], "select id from pages where id < 3 order by id"); got != `BIGINT "1" "2"` && got != `INT "1" "2"` {
		t.Fatalf("select: %s", got)
	}
	for _, db := range []*sql.DB{duck, nil} {
		var err error
		if db != nil {
			err = db.QueryRow("select found_rows()").Scan(new(int64))
		} else {
			err = conns["DuckDB"].QueryRowContext(ctx, "select found_rows()").Scan(new(int64))
		}
		var me *gomysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1235 || string(me.SQLState[:]) != "42000" {
			t.Errorf("found_rows() without a count: %v, want error 1235 (42000)", err)
		}
	}
}

// connValues is typedValues on one connection.
func connValues(t *testing.T, c *sql.Conn, q string, args ...any) string {
	t.Helper()
	if !strings.HasPrefix(strings.ToLower(q), "select") {
		if _, err := c.ExecContext(context.Background(), q, args...); err != nil {
			return "error " + err.Error()
		}
		return "ok"
	}
	rows, err := c.QueryContext(context.Background(), q, args...)
	if err != nil {
		return "error " + err.Error()
	}
	return rowsText(t, rows)
}

// TestMySQLKeyColumnUsageLikeMariaDB: information_schema.key_column_usage, where Django's
// introspection and Sequelize's sync read a table's foreign keys, answers through the proxy
// on DuckDB MariaDB's rows (each database's name written DB): the primary key as PRIMARY, a
// unique key by its first column, a foreign key as <table>_ibfk_<n> with what it references.
func TestMySQLKeyColumnUsageLikeMariaDB(t *testing.T) {
	maria, duck := mariaAndDuck(t)
	execBoth(t, maria, duck, "create table parent (id int primary key, a int, b int, code varchar(10) unique, unique key (a, b))",
		"create table child (id int primary key, code varchar(10) unique, parent_id int, pa int, pb int, foreign key (parent_id) references parent (id), "+
			"foreign key (pa, pb) references parent (a, b))")
	for _, q := range []string{
		// Django's get_relations
		"SELECT column_name, referenced_column_name, referenced_table_name FROM information_schema.key_column_usage " +
			"WHERE table_name = 'child' AND table_schema = DATABASE() AND referenced_table_name IS NOT NULL AND referenced_column_name IS NOT NULL ORDER BY column_name",
		// Sequelize's getForeignKeyReferencesForTable
		"SELECT CONSTRAINT_NAME as constraint_name,CONSTRAINT_NAME as constraintName,CONSTRAINT_SCHEMA as constraintSchema," +
			"TABLE_NAME as tableName,TABLE_SCHEMA as tableSchema,COLUMN_NAME as columnName,REFERENCED_TABLE_SCHEMA as referencedTableSchema," +
			"REFERENCED_TABLE_NAME as referencedTableName,REFERENCED_COLUMN_NAME as referencedColumnName FROM INFORMATION_SCHEMA.KEY_COLUMN_USAGE " +
			"where TABLE_NAME = 'child' AND CONSTRAINT_NAME!='PRIMARY' AND CONSTRAINT_SCHEMA=DATABASE() AND REFERENCED_TABLE_NAME IS NOT NULL ORDER BY columnName",
		"select constraint_catalog, constraint_schema, constraint_name, table_catalog, table_schema, table_name, column_name, ordinal_position, " +
			"position_in_unique_constraint, referenced_table_schema, referenced_table_name, referenced_column_name " +
			"from information_schema.key_column_usage where table_schema = database() order by table_name, lower(constraint_name), ordinal_position",
	} {
		var results [2]string
		for i, db := range []*sql.DB{maria, duck} {
			var name string
			if err := db.QueryRow("select database()").Scan(&name); err != nil {
				t.Fatal(err)
			}
			results[i] = strings.ReplaceAll(typedValues(t, db, q), strconv.Quote(name), `"DB"`)
		}
		if results[0] != results[1] {
			t.Errorf("%s:\n MariaDB %s\n DuckDB  %s", q, results[0], results[1])
		}
	}
}
