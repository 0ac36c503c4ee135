package trinohttp

import (
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/trinodb/trino-go-client/trino"
)

// trinoColumnNames are statements on the embedded DuckDB and the column names Trino gives their
// results: an item that is neither a column nor aliased is _colN, N its position among the
// result's columns (LogicalPlanner's output names), a VALUES list's columns included (DuckDB
// names them col0, ...), and so is CURRENT_DATE and its kind unquoted (Trino's reserved words,
// a column to DuckDB's parse); a quoted "current_date" is a column.
var trinoColumnNames = map[string]string{
	"values 1, 2":                                                           "_col0",
	"VALUES (1, 'a'), (2, 'b')":                                             "_col0|_col1",
	"select * from (values (1, 2)) t":                                       "_col0|_col1",
	"select *, 3 from (values (1, 2))":                                      "_col0|_col1|_col2",
	"select * from (values (1, 2)) t(a, b)":                                 "a|b",
	"select 1, x, x + 1 as y, count(*) from (values 1) t(x) group by x":     "_col0|x|y|_col3",
	"select current_date, current_timestamp, localtimestamp, current_user":  "_col0|_col1|_col2|_col3",
	`select "current_date", current_date from (values 1) t("current_date")`: "current_date|_col1",
}

// TestTrinoColumnNamesOnDuckDB: both Trino clients see Trino's column names (trinoColumnNames).
func TestTrinoColumnNamesOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var steps []npmStep
	for sql := range trinoColumnNames {
		rows, err := db.Query(sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		cols, err := rows.Columns()
		rows.Close()
		if got, want := strings.Join(cols, "|"), trinoColumnNames[sql]; err != nil || got != want {
			t.Errorf("trino-go-client: %s: columns %s (%v), want %s", sql, got, err, want)
		}
		steps = append(steps, npmStep{Name: sql, SQL: sql})
	}
	for sql, o := range runNPM(t, ts.addr, "alice", steps...) {
		if o.OK == nil || strings.Join(o.OK.Names, "|") != trinoColumnNames[sql] {
			t.Errorf("npm trino-client: %s: %+v %+v, want columns %s", sql, o.OK, o.Error, trinoColumnNames[sql])
		}
	}
}

// TestTrinoElementAtOnDuckDB: element_at(array, 0) fails as Trino's does (SQL array indices
// start at 1: INVALID_FUNCTION_ARGUMENT, where DuckDB answers NULL); past either end of an array,
// and for a key a map has not, it is NULL; a negative index counts from the end. Through
// trino-go-client and the npm trino-client.
func TestTrinoElementAtOnDuckDB(t *testing.T) {
	ts := startServer(t, duckBackend(t), Options{})
	const answers = `select element_at(array[1, 2], 1), element_at(array[1, 2], 3), element_at(array[1, 2], -1),
		element_at(array[1, 2], -3), element_at(map(array['a'], array[1]), 'b'), element_at(map(array[0], array['zero']), 0)`
	const zero = "select element_at(array[1, 2], x - 1) from (values 1) t(x)"
	db := openTrino(t, trino.Config{ServerURI: "http://alice@" + ts.addr})
	var first, past, last, before, missing sql.NullInt64
	var zeroKey string
	if err := db.QueryRow(answers).Scan(&first, &past, &last, &before, &missing, &zeroKey); err != nil {
		t.Fatal(err)
	}
	if first.Int64 != 1 || past.Valid || last.Int64 != 2 || before.Valid || missing.Valid || zeroKey != "zero" {
		t.Errorf("element_at: %v %v %v %v %v %q; want 1 NULL 2 NULL NULL zero", first, past, last, before, missing, zeroKey)
	}
	var v any
	err := db.QueryRow(zero).Scan(&v)
	var te *trino.ErrTrino
	if !errors.As(err, &te) || te.ErrorName != "INVALID_FUNCTION_ARGUMENT" || te.ErrorType != "USER_ERROR" ||
		!strings.Contains(te.Message, "SQL array indices start at 1") {
		t.Errorf("element_at(array, 0): %v, %v; want INVALID_FUNCTION_ARGUMENT: SQL array indices start at 1", v, err)
	}
	got := runNPM(t, ts.addr, "alice", npmStep{Name: "answers", SQL: answers}, npmStep{Name: "zero", SQL: zero})
	if o := got["answers"]; o.OK == nil || jsonText(t, o.OK.Rows) != `[[1,null,2,null,null,"zero"]]` {
		t.Errorf("npm element_at: %+v %+v", o.OK, o.Error)
	}
	if e := got["zero"].Error; e == nil || e.ErrorName != "INVALID_FUNCTION_ARGUMENT" || e.ErrorCode != 7 || !strings.Contains(e.Message, "SQL array indices start at 1") {
		t.Errorf("npm element_at(array, 0): %+v", e)
	}
}
