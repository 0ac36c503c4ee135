package mysqlwire

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
)

// argStatement is a statement and the arguments database/sql passes with it.
type argStatement struct {
	sql  string
	args []any
}

// argAnswers runs stmts with their arguments on one connection of d: each one's rows' bytes,
// its affected rows, or its error's number.
func argAnswers(t *testing.T, d *sql.DB, stmts []argStatement) []string {
	t.Helper()
	ctx := context.Background()
	c, err := d.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []string
	for _, s := range stmts {
		var answer string
		if strings.HasPrefix(s.sql, "SELECT") {
			answer, err = rowsAnswer(c.QueryContext(ctx, s.sql, s.args...))
		} else {
			var r sql.Result
			if r, err = c.ExecContext(ctx, s.sql, s.args...); err == nil {
				n, _ := r.RowsAffected()
				answer = fmt.Sprintf("%d affected", n)
			}
		}
		var me *gomysql.MySQLError
		switch {
		case errors.As(err, &me):
			answer = fmt.Sprintf("error %d", me.Number)
		case err != nil:
			answer = err.Error()
		}
		out = append(out, s.sql+": "+answer)
	}
	return out
}

func rowsAnswer(rows *sql.Rows, err error) (string, error) {
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var all []string
	for rows.Next() {
		cols, _ := rows.Columns()
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		all = append(all, fmt.Sprintf("%q", vals))
	}
	return strings.Join(all, " "), rows.Err()
}

// TestGoSQLDriverInterpolateParamsAsMariaDB: go-sql-driver with interpolateParams=true writes
// the arguments into the statement's text itself (one COM_QUERY, no prepare), escaping them by
// the connection's status (NO_BACKSLASH_ESCAPES) and its character set: quotes, backslashes,
// NUL and non-UTF-8 bytes, the largest unsigned and smallest signed BIGINT, floats, a
// time.Time with microseconds, NULL, json.RawMessage, in an INSERT, a WHERE and a select list,
// with autocommit off and a rolled back update between; in utf8mb4 and latin1. Read back as
// MariaDB answers them, on the relay and the Arrow path.
func TestGoSQLDriverInterpolateParamsAsMariaDB(t *testing.T) {
	at := time.Date(2024, 2, 29, 23, 59, 58, 123456000, time.UTC)
	tricky := "it's \\ \"q\" \x00 %_ é"
	stmts := []argStatement{
		{"INSERT INTO ip VALUES (?, ?, ?, ?, ?, ?)", []any{uint64(math.MaxUint64), tricky, []byte{0, '\'', '\\', 0xff, '"'}, at, 1.5e300, nil}},
		{"INSERT INTO ip VALUES (?, ?, ?, ?, ?, ?)", []any{int64(1), "", []byte{}, at.Add(-time.Hour), -0.25, int64(math.MinInt64)}},
		{"SELECT id, s, HEX(b), d, f, n FROM ip ORDER BY id", nil},
		{"SELECT id FROM ip WHERE s = ? AND b = ?", []any{tricky, []byte{0, '\'', '\\', 0xff, '"'}}},
		{"SELECT id FROM ip WHERE id = ?", []any{uint64(math.MaxUint64)}},
		{"SELECT ?, ?, ?, ?, ?, ?", []any{int64(math.MinInt64), uint64(math.MaxUint64), true, nil, json.RawMessage(`{"a": [1, "x'y"]}`), at}},
		{"SELECT s LIKE ? FROM ip WHERE id = ?", []any{"it\\'s%", int64(1)}},
		{"SET autocommit = 0", nil},
		{"UPDATE ip SET s = ? WHERE id = ?", []any{"rolled back", int64(1)}},
		{"ROLLBACK", nil},
		{"SELECT s FROM ip WHERE id = ?", []any{int64(1)}},
	}
	for _, noPassthrough := range []bool{false, true} {
		f := coreServer(t, coreSetup{noPassthrough: noPassthrough})
		cfg, err := gomysql.ParseDSN(f.dsn)
		if err != nil {
			t.Fatal(err)
		}
		for _, charset := range []string{"utf8mb4", "latin1"} {
			reset := func() {
				for _, q := range []string{"DROP TABLE IF EXISTS ip", "CREATE TABLE ip (id BIGINT UNSIGNED PRIMARY KEY, s VARCHAR(50), b VARBINARY(20), d DATETIME(6), f DOUBLE, n BIGINT NULL) CHARACTER SET utf8mb4 ENGINE=InnoDB"} {
					if _, err := f.direct.Exec(q); err != nil {
						t.Fatal(err)
					}
				}
			}
			params := "interpolateParams=true&parseTime=true&charset=" + charset
			// Each client's connection closed after its run: its transaction ends (a table it read
			// with autocommit off stays locked against the next DROP until then).
			run := func(addr, user, password string) []string {
				reset()
				d := openDB(t, addr, user, password, f.dbName, params)
				defer d.Close()
				return argAnswers(t, d, stmts)
			}
			want := run(cfg.Addr, cfg.User, cfg.Passwd)
			got := run(f.addr, testUser, "")
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("passthrough %v, %s, step %d:\n proxy   %s\n MariaDB %s", !noPassthrough, charset, i, got[i], want[i])
				}
			}
		}
	}
}
