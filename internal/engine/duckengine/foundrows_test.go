package duckengine

import (
	"fmt"
	"testing"
)

// TestFoundRowsCount: the count of a SELECT SQL_CALC_FOUND_ROWS is the statement without the
// modifier and without its top-level LIMIT (a subquery's stays), less that LIMIT's parameters.
func TestFoundRowsCount(t *testing.T) {
	for _, c := range []struct {
		in, want string
		args     []any
		wantArgs string
	}{
		{"SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 0, 10", "SELECT count(*) FROM (SELECT  * FROM t ) AS qf_counted", nil, "[]"},
		{"select sql_calc_found_rows a from t where b = ? and c in (select c from u limit 1) order by a limit ?, ? for update;",
			"SELECT count(*) FROM (select  a from t where b = ? and c in (select c from u limit 1) order by a for update) AS qf_counted",
			[]any{1, 2, 3}, "[1]"},
		{"SELECT SQL_CALC_FOUND_ROWS a FROM t WHERE b > ? LIMIT ? OFFSET ?", "SELECT count(*) FROM (SELECT  a FROM t WHERE b > ? ) AS qf_counted",
			[]any{"x", 5, 10}, "[x]"},
		{"SELECT a FROM t LIMIT 1", "", nil, "[]"},
		{"UPDATE t SET a = 'sql_calc_found_rows'", "", nil, "[]"},
	} {
		got, args, _ := foundRowsCount(c.in, c.args)
		if got != c.want || fmt.Sprint(args) != c.wantArgs {
			t.Errorf("%s:\n %q %v\nwant\n %q %s", c.in, got, args, c.want, c.wantArgs)
		}
	}
}
