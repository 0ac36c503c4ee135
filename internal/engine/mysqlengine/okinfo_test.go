package mysqlengine

import (
	"context"
	"io"
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// TestOKInfoOnTheArrowPath: a MySQL client's statement without rows on the Arrow path (Execute,
// by text and prepared, and in a pinned session) has its OK packet's warning count and info
// after its command tag (MySQLTag), as MariaDB sent them: go-mysql's client skips the info.
func TestOKInfoOnTheArrowPath(t *testing.T) {
	e, _ := openTestEngine(t)
	exec(t, e, "CREATE TABLE oi (id INT PRIMARY KEY, v INT, s VARCHAR(2))")
	exec(t, e, "INSERT INTO oi VALUES (1, 1, 'a'), (2, 2, 'b')")
	ctx := context.Background()
	session, err := e.OpenSession(ctx, &query.Request{})
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	for _, tc := range []struct {
		sql  string
		args []any
		want string
	}{
		{"UPDATE oi SET v = v + 1 WHERE id <= 2", nil, "UPDATE 2\n0\n0\nRows matched: 2  Changed: 2  Warnings: 0"},
		{"UPDATE oi SET v = ? WHERE id = ?", []any{4, 2}, "UPDATE 0\n0\n0\nRows matched: 1  Changed: 0  Warnings: 0"},
		{"INSERT IGNORE INTO oi VALUES (2, 0, 'x'), (3, 0, 'toolong')", nil, "INSERT 0 1\n2\n0\nRecords: 2  Duplicates: 1  Warnings: 2"},
		{"DELETE FROM oi WHERE id = ?", []any{3}, "DELETE 1"},
	} {
		for _, via := range []string{"Execute", "session"} {
			execute := e.Execute
			if via == "session" {
				execute = session.Execute
			}
			rows, err := execute(ctx, &query.Request{SQL: tc.sql, Args: tc.args, Protocol: query.ProtocolMySQL})
			if err != nil {
				t.Fatalf("%s: %v", tc.sql, err)
			}
			for err == nil {
				_, err = rows.Next(ctx)
			}
			if err != io.EOF {
				t.Fatalf("%s: %v", tc.sql, err)
			}
			if got := rows.Tag(); got != tc.want {
				t.Errorf("%s (%s, args %v): tag %q, want %q", tc.sql, via, tc.args, got, tc.want)
			}
			rows.Close()
			if via == "Execute" && tc.sql[0] != 'U' { // once: the row is gone, or there
				break
			}
		}
	}
}
