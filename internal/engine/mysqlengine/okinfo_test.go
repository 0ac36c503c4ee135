package mysqlengine

import (
	"context"
	"fmt"
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
			// The warnings read for SHOW WARNINGS follow (WithWarnings): TestWarningsOnTheArrowPath.
			if got, _, _ := SplitWarnings(rows.Tag()); got != tc.want {
				t.Errorf("%s (%s, args %v): tag %q, want %q", tc.sql, via, tc.args, got, tc.want)
			}
			rows.Close()
			if via == "Execute" && tc.sql[0] != 'U' { // once: the row is gone, or there
				break
			}
		}
	}
}

// TestWarningsOnTheArrowPath: a MySQL client's statement on the Arrow path (Execute, by text
// and prepared, and in a pinned session) that MariaDB answered with warnings has its warning
// count and SHOW WARNINGS after its command tag (WithWarnings), read from its own connection:
// an INSERT IGNORE's OK, and a SELECT's rows' end, whose count go-mysql drops on a
// CLIENT_DEPRECATE_EOF connection. A statement without warnings carries none.
func TestWarningsOnTheArrowPath(t *testing.T) {
	e, _ := openTestEngine(t)
	exec(t, e, "CREATE TABLE ow (id INT PRIMARY KEY, s VARCHAR(2))")
	exec(t, e, "INSERT INTO ow VALUES (1, 'a')")
	ctx := context.Background()
	session, err := e.OpenSession(ctx, &query.Request{})
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	for _, tc := range []struct {
		sql   string
		args  []any
		count uint16
		codes []uint16
	}{
		{"INSERT IGNORE INTO ow VALUES (1, 'x'), (2, 'toolong')", nil, 2, []uint16{1062, 1265}},
		{"SELECT 1/0, 'x' + 1", nil, 2, []uint16{1365, 1292}},
		{"SELECT ? / 0", []any{1}, 1, []uint16{1365}},
		{"SELECT id FROM ow", nil, 0, nil},
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
			_, count, ws := SplitWarnings(rows.Tag())
			var codes []uint16
			for _, w := range ws {
				codes = append(codes, w.Code)
			}
			if count != tc.count || fmt.Sprint(codes) != fmt.Sprint(tc.codes) {
				t.Errorf("%s (%s): %d warnings %v, want %d %v (tag %q)", tc.sql, via, count, codes, tc.count, tc.codes, rows.Tag())
			}
			rows.Close()
			exec(t, e, "DELETE FROM ow WHERE id = 2")
		}
	}
}
