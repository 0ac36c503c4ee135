package mysqlwire

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
)

// sessionAnswers runs stmts on one connection of d and writes what each answers: its rows'
// bytes, or its error's number.
func sessionAnswers(t *testing.T, d *sql.DB, stmts []string) []string {
	t.Helper()
	ctx := context.Background()
	c, err := d.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []string
	for _, q := range stmts {
		rows, err := c.QueryContext(ctx, q)
		var all []string
		for err == nil && rows.Next() {
			cols, _ := rows.Columns()
			vals := make([]sql.RawBytes, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err = rows.Scan(ptrs...); err == nil {
				all = append(all, fmt.Sprintf("%q", vals))
			}
		}
		if err == nil {
			err = rows.Err()
			rows.Close()
		}
		var me *gomysql.MySQLError
		switch {
		case errors.As(err, &me):
			out = append(out, fmt.Sprintf("%s: error %d", q, me.Number))
		case err != nil:
			out = append(out, fmt.Sprintf("%s: %v", q, err))
		default:
			out = append(out, q+": "+strings.Join(all, " "))
		}
	}
	return out
}

// TestCharacterSetVariablesAsMariaDB: SET character_set_client (or _results, _connection,
// collation_connection) alone is taken as MariaDB takes it: a latin1 literal read as latin1
// and stored as é, results in latin1 after character_set_results = latin1, the variables as
// MariaDB reports them, ucs2 and an unknown set refused as MariaDB refuses them, SET NAMES
// setting all three again; on the relay and the Arrow path. Before, each was refused (1235).
func TestCharacterSetVariablesAsMariaDB(t *testing.T) {
	vars := "SELECT @@character_set_client, @@character_set_connection, @@character_set_results, @@collation_connection"
	stmts := []string{
		"SET character_set_client = latin1", vars,
		"INSERT INTO csv VALUES (1, 'h\xe9llo')", "SELECT v, HEX(v) FROM csv",
		"SET character_set_client = ucs2", "SET character_set_client = nosuch", vars,
		"SET character_set_results = latin1", "SELECT v, HEX(v) FROM csv", vars,
		"SET character_set_connection = latin1, collation_connection = latin1_bin", vars,
		"SET character_set_client = utf8mb4", "INSERT INTO csv VALUES (2, 'h\xc3\xa9llo')", "SELECT v, HEX(v) FROM csv ORDER BY id",
		"SET NAMES utf8mb4", vars, "SELECT v FROM csv ORDER BY id",
	}
	for _, noPassthrough := range []bool{false, true} {
		f := coreServer(t, coreSetup{noPassthrough: noPassthrough})
		if _, err := f.direct.Exec("CREATE TABLE csv (id INT PRIMARY KEY, v VARCHAR(20)) CHARACTER SET utf8mb4"); err != nil {
			t.Fatal(err)
		}
		want := sessionAnswers(t, f.direct, stmts)
		if _, err := f.direct.Exec("DELETE FROM csv"); err != nil {
			t.Fatal(err)
		}
		got := sessionAnswers(t, openDB(t, f.addr, testUser, "", f.dbName, ""), stmts)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("passthrough %v, step %d:\n proxy   %s\n MariaDB %s", !noPassthrough, i, got[i], want[i])
			}
		}
	}
}
