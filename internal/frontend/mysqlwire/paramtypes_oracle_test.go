package mysqlwire

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
)

// paramPositions are statements whose placeholders stand where PostgreSQL cannot type them from
// their context alone (a variadic function's argument, an operand of + or IS NULL, a LIKE
// pattern, an IN list, a select item), each with the parameters a client binds.
var paramPositions = []struct {
	sql  string
	args []any
}{
	{"select concat(v, ?) from pp order by id", []any{"x"}},
	{"select concat('%', ?, '%')", []any{"b"}},
	{"select concat(?, 'x'), concat('a', null, ?)", []any{nil, "b"}},
	{"select id from pp where v like concat('%', ?, '%') order by id", []any{"a"}},
	{"select ? + 1", []any{2}},
	{"select ? + 1", []any{"2"}},
	{"select ? + 1", []any{2.5}},
	{"select coalesce(?, n) from pp order by id", []any{nil}},
	{"select coalesce(?, n) from pp order by id", []any{5}},
	{"select ? is null", []any{nil}},
	{"select ? is null", []any{"x"}},
	{"select id from pp where v like ? order by id", []any{"a%"}},
	{"select id from pp where id in (?, ?) order by id", []any{1, 2}},
	{"select ?", []any{"x"}},
	{"select ?", []any{7}},
	{"select length(?)", []any{"abc"}},
	{"select upper(?)", []any{"abc"}},
	{"select ? = ?", []any{1, 1}},
	{"select if(? > 1, 'y', 'n')", []any{2}},
	{"select n * ? from pp order by id", []any{2}},
	{"select id from pp where n > ? order by id", []any{"15"}},
}

// paramUnlike are the answers known to differ from MariaDB's, by target and statement, with
// their causes (RESULTS.md, session 39).
var paramUnlike = map[string]string{
	"DuckDB select ? + 1 [2]":                   "1054: DuckDB binds the parameter as a string literal (duckengine)",
	"PostgreSQL select ? + 1 [2.5]":             "PostgreSQL types the parameter integer from `+ 1`: 3",
	"PostgreSQL select if(? > 1, 'y', 'n') [2]": "1305: PostgreSQL has no IF()",
}

// paramAnswer is what go-sql-driver (a server-side prepared statement) reads: the rows' text,
// or the error's number.
func paramAnswer(d *sql.DB, q string, args []any) string {
	rows, err := d.Query(q, args...)
	if err != nil {
		var me *gomysql.MySQLError
		if errors.As(err, &me) {
			return fmt.Sprintf("error %d", me.Number)
		}
		return "error " + err.Error()
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "scan " + err.Error()
		}
		for _, v := range vals {
			if v.Valid {
				out = append(out, v.String)
			} else {
				out = append(out, "NULL")
			}
		}
	}
	if err := rows.Err(); err != nil {
		var me *gomysql.MySQLError
		if errors.As(err, &me) {
			return fmt.Sprintf("error %d", me.Number)
		}
		return "error " + err.Error()
	}
	return strings.Join(out, ",")
}

// TestParameterPositionsAsMariaDB: prepared statements' parameters where PostgreSQL cannot type
// them from the statement (concat(v, ?), ? + 1, coalesce(?, col), ? IS NULL, LIKE ?, IN (?, ?))
// answer what MariaDB answers, with the client's values, on every engine.
func TestParameterPositionsAsMariaDB(t *testing.T) {
	ddl := []string{"create table pp (id int primary key, v varchar(20), n int)", "insert into pp values (1, 'a', 10), (2, null, 20)"}
	maria := coreServer(t, coreSetup{})
	for _, q := range ddl {
		if _, err := maria.direct.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{}
	for _, p := range paramPositions {
		want[fmt.Sprintf("%s %v", p.sql, p.args)] = paramAnswer(maria.direct, p.sql, p.args)
	}
	duck, arrow, pg := unrelayedTargets(t, ddl, []string{"create table pp (id int primary key, v varchar(20), n int)",
		"insert into pp values (1, 'a', 10), (2, null, 20)"})
	for name, tg := range map[string]struct{ addr, db string }{ //determinism:ok each target is compared alone
		"relayed": {maria.addr, maria.dbName}, "Arrow": {arrow.addr, arrow.dbName}, "DuckDB": {duck.addr, "duck"},
		"PostgreSQL": {pg.addr, "public"},
	} {
		d := openDB(t, tg.addr, testUser, "", tg.db, "")
		for _, p := range paramPositions {
			key := fmt.Sprintf("%s %v", p.sql, p.args)
			if _, known := paramUnlike[name+" "+key]; known {
				continue
			}
			if got := paramAnswer(d, p.sql, p.args); got != want[key] {
				t.Errorf("%s: %s %v:\n proxy   %s\n MariaDB %s", name, p.sql, p.args, got, want[key])
			}
		}
	}
}
