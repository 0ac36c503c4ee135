package duckengine

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// MariaDB's YEAR and YEAR(4) columns, which DuckDB has no type for (a CREATE TABLE naming one
// was 1105, "Type with name year does not exist"): a USMALLINT (mysqlddl.go), declared year(4)
// (mysqldeclared.go), so that SHOW COLUMNS, SHOW CREATE TABLE and information_schema.COLUMNS
// say year(4) (DATA_TYPE year, no NUMERIC_PRECISION) as MariaDB does. A value given in a
// MySQL client's INSERT ... VALUES as a literal of one or two digits is MariaDB's year of it:
// 1 to 69 are 2001 to 2069, 70 to 99 are 1970 to 1999, the number 0 is 0 (0000) and the
// string '0' or '00' is 2000; four digits are the year.

// yearColumn is the condition that column c (qf_pg_columns') is a YEAR.
const yearColumn = `(c.pg_type_oid = 21 AND c.pg_typmod = 4 AND c.data_type = 'USMALLINT')`

// noteYear marks the engine as maybe having a YEAR column when client's statement, one the
// engine runs as its own DDL, may declare one.
func (e *Engine) noteYear(client *query.Request) {
	if isMySQL(client) && !e.yearMaybe.Load() && containsFold(client.SQL, "year") {
		e.yearMaybe.Store(true)
	}
}

// noteDeclaredYears marks the engine as maybe having a YEAR column when db's declared catalog
// holds one (or cannot be read).
func (e *Engine) noteDeclaredYears(db *sql.DB) {
	var n int
	if db.QueryRow("SELECT count(*) FROM "+declaredSchema+".columns WHERE type_oid = 21 AND typmod = "+strconv.Itoa(yearFour)).Scan(&n) != nil || n > 0 {
		e.yearMaybe.Store(true)
	}
}

// yearValues is q (a MySQL client's INSERT or REPLACE, as compatRequest wrote it) with the
// one- and two-digit literals it gives YEAR columns written as the years MariaDB reads them.
func (e *Engine) yearValues(ctx context.Context, conn *sql.Conn, client, q *query.Request) *query.Request {
	if !e.yearMaybe.Load() || !isMySQL(client) || !sqltok.FirstKeywordIs(client.SQL, sqltok.MySQL, "insert", "replace") {
		return q
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.MySQL)
	db, table, ok := insertTarget(toks)
	if !ok {
		return q
	}
	cols, years := yearColumns(ctx, conn, db, table)
	if len(years) == 0 {
		return q
	}
	v, ok := readValues(toks, aiColumn{columns: cols})
	if !ok {
		return q
	}
	var slots []int
	for j := range len(v.rows[0]) {
		name := ""
		if v.columns == nil {
			name = cols[j]
		} else {
			name = unquoteIdent(v.columns[j])
		}
		if slices.ContainsFunc(years, func(y string) bool { return strings.EqualFold(y, name) }) {
			slots = append(slots, j)
		}
	}
	type edit struct {
		at, end int
		text    string
	}
	var edits []edit
	for _, row := range v.rows {
		for _, j := range slots {
			if len(row[j]) != 1 {
				continue
			}
			if y, ok := twoDigitYear(row[j][0]); ok {
				edits = append(edits, edit{row[j][0].Pos, row[j][0].Pos + len(row[j][0].Text), strconv.Itoa(y)})
			}
		}
	}
	if len(edits) == 0 {
		return q
	}
	text := q.SQL
	for i := len(edits) - 1; i >= 0; i-- {
		text = text[:edits[i].at] + edits[i].text + text[edits[i].end:]
	}
	c := *q
	c.SQL = text
	return &c
}

// twoDigitYear is the year MariaDB reads a YEAR column's value t as, when t is a literal of
// one or two digits (a number, or a string of them).
func twoDigitYear(t sqltok.Token) (int, bool) {
	s, str := t.Text, false
	if t.Kind == sqltok.String && len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		s, str = s[1:len(s)-1], true
	} else if t.Kind != sqltok.Number {
		return 0, false
	}
	if len(s) == 0 || len(s) > 2 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, _ := strconv.Atoi(s)
	switch {
	case n == 0 && !str:
		return 0, false // the number 0 is 0000, as written
	case n < 70:
		return 2000 + n, true
	}
	return 1900 + n, true
}

// yearColumns are table's columns in order, and those of them that are YEAR columns.
func yearColumns(ctx context.Context, conn *sql.Conn, db, table string) (cols, years []string) {
	rows, err := conn.QueryContext(ctx, "SELECT c.column_name, c.data_type = 'USMALLINT' AND EXISTS (SELECT 1 FROM "+declaredSchema+
		".columns d WHERE d.schema_name = c.schema_name AND d.table_name = c.table_name AND d.column_name = c.column_name "+
		"AND d.type_oid = 21 AND d.typmod = "+strconv.Itoa(yearFour)+") FROM duckdb_columns() c WHERE "+
		inSchema("c.database_name", "c.schema_name", db)+" AND lower(c.table_name) = lower(?) ORDER BY c.column_index", table)
	if err != nil {
		return nil, nil
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var year bool
		if rows.Scan(&name, &year) != nil {
			return nil, nil
		}
		cols = append(cols, name)
		if year {
			years = append(years, name)
		}
	}
	if rows.Err() != nil {
		return nil, nil
	}
	return cols, years
}
