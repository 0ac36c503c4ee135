package duckengine

import (
	"context"
	"io"
	"strings"

	"github.com/queryflux/queryflux/internal/engine/mysqlengine"
	"github.com/queryflux/queryflux/internal/query"
)

// MariaDB's INSERT IGNORE turns a row's errors into warnings: NULL given a NOT NULL column
// stores the column type's implicit default ('' for text, 0 for a number, 00:00:00 for a time)
// with warning 1048, and a row a UNIQUE key finds in the table is left out with warning 1062
// (the first key that finds it, the primary key first). DuckDB's INSERT OR IGNORE refuses the
// NULL, and leaves the duplicate out without a word. So a MySQL client's INSERT IGNORE runs a
// row at a time (mysqlignorerows.go), each row's NULLs replaced and its warnings written.

// ignoreTable is what an INSERT IGNORE needs of its table: its NOT NULL columns' implicit
// defaults (a column whose type has none MariaDB's DuckDB can store is left out), its keys and
// which of them is the primary key.
type ignoreTable struct {
	defaults map[string]string // by lower-case column name
	keys     [][]string
	primary  bool // keys[0] is the primary key
}

// readIgnoreTable reads u's table for ignoreRows; aiName, the AUTO_INCREMENT column, generates
// where NULL is given.
func (s *session) readIgnoreTable(ctx context.Context, u *rowUpsert, aiName string) ignoreTable {
	t := ignoreTable{defaults: map[string]string{}, keys: keyedColumns(ctx, s.conn, u.db, u.table)}
	rows, err := s.conn.QueryContext(ctx, "SELECT column_name, data_type FROM duckdb_columns() WHERE "+inSchema("database_name", "schema_name", u.db)+
		" AND lower(table_name) = lower(?) AND NOT is_nullable", u.table)
	if err == nil {
		for rows.Next() {
			var name, typ string
			if rows.Scan(&name, &typ) == nil && !strings.EqualFold(name, aiName) {
				if d, ok := implicitDefault(typ); ok {
					t.defaults[strings.ToLower(name)] = d
				}
			}
		}
		rows.Close()
	}
	var n int
	if len(t.keys) > 0 && s.conn.QueryRowContext(ctx, "SELECT count(*) FROM duckdb_constraints() WHERE "+inSchema("database_name", "schema_name", u.db)+
		" AND lower(table_name) = lower(?) AND constraint_type = 'PRIMARY KEY'", u.table).Scan(&n) == nil {
		t.primary = n > 0
	}
	return t
}

// implicitDefault is MySQL's implicit default of a column of DuckDB type typ, as SQL.
func implicitDefault(typ string) (string, bool) {
	switch typ := strings.ToUpper(typ); {
	case typ == "VARCHAR" || typ == "BLOB":
		return "''", true
	case typ == "TIME":
		return "'00:00:00'", true
	case typ == "BOOLEAN":
		return "false", true
	case strings.HasSuffix(typ, "INT") || typ == "TINYINT" || typ == "SMALLINT" || typ == "INTEGER" || typ == "BIGINT" || typ == "HUGEINT" ||
		typ == "FLOAT" || typ == "DOUBLE" || strings.HasPrefix(typ, "DECIMAL"):
		return "0", true
	}
	return "", false // a date's 0000-00-00 DuckDB cannot store: the NULL is refused
}

// withDefaults is row with each NULL (written, or a parameter's) given a NOT NULL column of t
// replaced by its implicit default, and a warning 1048 for each.
func (t *ignoreTable) withDefaults(u *rowUpsert, row []sqlPart) ([]sqlPart, []mysqlengine.Warning) {
	var out []sqlPart
	var notes []mysqlengine.Warning
	for j, col := range u.columns {
		d, ok := t.defaults[strings.ToLower(col)]
		if !ok || !isNullPart(row[j]) {
			continue
		}
		if out == nil {
			out = append([]sqlPart(nil), row...)
		}
		out[j] = sqlPart{text: d}
		notes = append(notes, mysqlengine.Warning{Level: "Warning", Code: 1048, Message: "Column '" + col + "' cannot be null"})
	}
	if out == nil {
		return row, nil
	}
	return out, notes
}

// isNullPart reports whether p is NULL as written, or a parameter bound to NULL.
func isNullPart(p sqlPart) bool {
	text := strings.TrimSpace(p.text)
	return strings.EqualFold(text, "null") || text == "?" && len(p.args) == 1 && p.args[0] == nil
}

// duplicateWarning is warning 1062 for row, which inserted nothing: the first key of t that
// finds a row of the table, and that row's values of it (MariaDB's "Duplicate entry"); ok is
// false when no key finds one.
func (s *session) duplicateWarning(ctx context.Context, client *query.Request, u *rowUpsert, row []sqlPart, t *ignoreTable, aiName string) (mysqlengine.Warning, bool) {
	conds, condKeys := u.keyConds(row, t.keys, aiName)
	for i, cols := range conds {
		var st stmtText
		st.add("SELECT concat_ws('-'")
		for _, c := range cols {
			st.add(", ", mysqlIdent(c))
		}
		st.add(") FROM ", u.tableText, " WHERE ")
		u.keyMatch(&st, row, cols)
		rows, err := s.sub(ctx, client, st.add(" LIMIT 1").b.String(), st.args...)
		if err != nil {
			return mysqlengine.Warning{}, false
		}
		b, err := rows.Next(ctx)
		found := err == nil && b.NumRows() > 0
		entry := ""
		if found {
			entry = b.Column(0).ValueStr(0)
		}
		rows.Close()
		if err != nil && err != io.EOF || !found {
			continue
		}
		return mysqlengine.Warning{Level: "Warning", Code: 1062, Message: "Duplicate entry '" + entry + "' for key '" + t.keyName(condKeys[i]) + "'"}, true
	}
	return mysqlengine.Warning{}, false
}

// keyName is the name MariaDB gives key, one of t's: PRIMARY, else its first column's (the
// name of a key declared without one).
func (t *ignoreTable) keyName(key []string) string {
	if t.primary && len(t.keys) > 0 && strings.Join(t.keys[0], "\x00") == strings.Join(key, "\x00") {
		return "PRIMARY"
	}
	return key[0]
}
