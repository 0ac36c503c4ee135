package pgengine_test

import (
	"strings"
	"testing"

	"github.com/queryflux/queryflux/internal/engine/enginetest"
	"github.com/queryflux/queryflux/internal/query"
)

// TestMySQLIntegerParamsOfBooleanColumns: a MySQL client's integer parameters where a
// PostgreSQL boolean goes (mysql2 sends true and false as TINY 1 and 0) are truth values, in
// a VALUES row, an assignment and a comparison, as MariaDB's TINYINT(1) takes them (before:
// pgx could not encode them, 1105 to the client); mysqlwire's
// TestMySQL2BooleanParamsOnPostgreSQLAsOnMariaDB runs them through mysql2.
func TestMySQLIntegerParamsOfBooleanColumns(t *testing.T) {
	e := open(t)
	for _, c := range []struct {
		stmt string
		args []any
		want string
	}{
		{"CREATE TABLE bp (id INT, ok BOOLEAN)", nil, ""},
		{"INSERT INTO bp VALUES (?, ?), (?, ?)", []any{int64(1), int64(1), int64(2), int64(0)}, ""},
		{"UPDATE bp SET ok = ? WHERE id = ?", []any{int64(1), int64(2)}, ""},
		{"SELECT id FROM bp WHERE ok = ? ORDER BY id", []any{int64(1)}, "1|2"},
		{"SELECT count(*) FROM bp WHERE ok <> ?", []any{int64(1)}, "0"},
	} {
		_, rows, err := enginetest.TextRows(e, &query.Request{SQL: c.stmt, Args: c.args, Protocol: query.ProtocolMySQL})
		if err != nil {
			t.Fatalf("%s %v: %v", c.stmt, c.args, err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, strings.Join(r, ","))
		}
		if g := strings.Join(got, "|"); g != c.want {
			t.Errorf("%s %v: %q, want %q", c.stmt, c.args, g, c.want)
		}
	}
}
