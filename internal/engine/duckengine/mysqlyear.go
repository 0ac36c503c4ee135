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

// noteYear marks the engine as maybe having a YEAR (or a VARCHAR(n) or CHAR(n)) column when
// client's statement, one the engine runs as its own DDL, may declare one.
func (e *Engine) noteYear(client *query.Request) {
	if isMySQL(client) && !e.yearMaybe.Load() && containsFold(client.SQL, "year") {
		e.yearMaybe.Store(true)
	}
	if !e.charMaybe.Load() && containsFold(client.SQL, "char") { // a PostgreSQL client's table too
		e.charMaybe.Store(true)
	}
}

// noteDeclaredYears marks the engine as maybe having a YEAR (or a VARCHAR(n) or CHAR(n))
// column when db's declared catalog holds one (or cannot be read).
func (e *Engine) noteDeclaredYears(db *sql.DB) {
	var n int
	if db.QueryRow("SELECT count(*) FROM "+declaredSchema+".columns WHERE type_oid = 21 AND typmod = "+strconv.Itoa(yearFour)).Scan(&n) != nil || n > 0 {
		e.yearMaybe.Store(true)
	}
	if db.QueryRow("SELECT count(*) FROM "+declaredSchema+".columns WHERE type_oid IN (1042, 1043) AND typmod > 4").Scan(&n) != nil || n > 0 {
		e.charMaybe.Store(true)
	}
}

// yearMacroSQL: qf_mysql_year_value(v, col, tbl, r) is the YEAR MariaDB stores for the value v
// written to column col of table tbl (`db`.`t`) at row r, or MariaDB's error in strict mode: a
// number or string of one or two digits is a year of 2000-2069 or 1970-1999, the number 0 is 0
// (0000) and the string '0' or '00' 2000; 1901-2155 is itself (a fraction rounded); anything
// else is 1264 (out of range), text that is no number 1366.
const yearMacroSQL = `CREATE MACRO {c}.main.qf_mysql_year_value(v, col, tbl, r) AS CASE
	WHEN v IS NULL THEN NULL
	WHEN TRY_CAST(v AS DOUBLE) IS NULL THEN error('qfpg 22007 Incorrect integer value: ''' || CAST(v AS VARCHAR) || ''' for column ' || tbl ||
		'.` + "`" + `' || col || '` + "`" + ` at row ' || r || ' (MySQL error 1366)')
	WHEN round(TRY_CAST(v AS DOUBLE)) = 0 THEN CASE WHEN typeof(v) = 'VARCHAR' AND length(trim(CAST(v AS VARCHAR))) <= 2 THEN 2000 ELSE 0 END
	WHEN round(TRY_CAST(v AS DOUBLE)) BETWEEN 1 AND 69 THEN 2000 + round(TRY_CAST(v AS DOUBLE))
	WHEN round(TRY_CAST(v AS DOUBLE)) BETWEEN 70 AND 99 THEN 1900 + round(TRY_CAST(v AS DOUBLE))
	WHEN round(TRY_CAST(v AS DOUBLE)) BETWEEN 1901 AND 2155 THEN round(TRY_CAST(v AS DOUBLE))
	ELSE error('qfpg 22003 Out of range value for column ''' || col || ''' at row ' || r || ' (MySQL error 1264)') END::USMALLINT`

// yearValues is q (a MySQL client's INSERT, REPLACE or single-table UPDATE, as compatRequest
// wrote it) with each value it gives a YEAR column (a literal, a parameter, an expression; in
// VALUES, in SET, in ON DUPLICATE KEY UPDATE) read as MariaDB reads it (qf_mysql_year_value),
// and each value it gives a VARCHAR(n) or CHAR(n) column fitted as MariaDB fits it
// (qf_mysql_char_value, mysqlcharlen.go; INSERT ... SELECT's rows too).
func (e *Engine) yearValues(ctx context.Context, conn *sql.Conn, client, q *query.Request) *query.Request {
	if !e.yearMaybe.Load() && !e.charMaybe.Load() || !isMySQL(client) || !sqltok.FirstKeywordIs(client.SQL, sqltok.MySQL, "insert", "replace", "update") {
		return q
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.MySQL)
	if len(toks) == 0 {
		return q
	}
	update := toks[0].IsWord("update")
	var db, table string
	var ok bool
	if update {
		db, table, ok = updateTarget(toks)
	} else {
		db, table, ok = insertTarget(toks)
	}
	if !ok {
		return q
	}
	db, table = dequoted(db), dequoted(table)
	var typed []pgTypedColumn
	if e.charMaybe.Load() {
		typed = cachedPgTypes(ctx, conn, db, "main", table)
	}
	var cols, years []string
	if e.yearMaybe.Load() {
		cols, years = yearColumns(ctx, conn, db, table)
	}
	if len(years) == 0 && !slices.ContainsFunc(typed, func(c pgTypedColumn) bool { return charLength(c.typ) > 0 }) {
		return q
	}
	if cols == nil {
		cols = make([]string, len(typed))
		for i, c := range typed {
			cols[i] = c.name
		}
	}
	isYear := func(name string) (string, bool) {
		i := slices.IndexFunc(years, func(y string) bool { return strings.EqualFold(y, name) })
		if i < 0 {
			return "", false
		}
		return years[i], true
	}
	lengthOf := func(name string) (string, int) {
		i := slices.IndexFunc(typed, func(c pgTypedColumn) bool { return strings.EqualFold(c.name, name) })
		if i < 0 {
			return "", 0
		}
		return typed[i].name, charLength(typed[i].typ)
	}
	tbl := "'`" + strings.ReplaceAll(table, "'", "''") + "`'"
	if db != "" {
		tbl = "'`" + strings.ReplaceAll(db, "'", "''") + "`.`" + strings.ReplaceAll(table, "'", "''") + "`'"
	} else {
		tbl = "'`' || current_database() || '`.' || " + tbl
	}
	strict := strictExpr(client)
	var edits []yearEdit
	// wrapping is what a value given column col at row (a number counted from 1, or an
	// expression) is put between; "" when the column takes it as it is
	wrapping := func(col, row string) (pre, post string) {
		if y, ok := isYear(col); ok {
			return "qf_mysql_year_value(", ", " + sqltok.StandardString(y) + ", " + tbl + ", " + row + ")"
		}
		if name, n := lengthOf(col); n > 0 {
			return "qf_mysql_char_value(", ", " + sqltok.StandardString(name) + ", " + strconv.Itoa(n) + ", " + row + ", " + strict + ")"
		}
		return "", ""
	}
	wrap := func(expr []sqltok.Token, col string, row string) {
		if len(expr) == 0 || len(expr) == 1 && expr[0].IsWord("null", "default") {
			return
		}
		if pre, post := wrapping(col, row); pre != "" {
			end := expr[len(expr)-1].Pos + len(expr[len(expr)-1].Text)
			edits = append(edits, yearEdit{expr[0].Pos, pre}, yearEdit{end, post})
		}
	}
	if !update {
		if v, ok := readValues(valuesOnly(toks), aiColumn{columns: cols}); ok {
			for r, row := range v.rows {
				for j, d := range row {
					name := ""
					if v.columns == nil {
						name = cols[j]
					} else {
						name = valuesColumnName(v.columns[j])
					}
					wrap(d, name, strconv.Itoa(r+1))
				}
			}
		} else {
			edits = append(edits, insertSelectValues(toks, cols, wrapping)...)
		}
	}
	for _, a := range setAssignments(toks) {
		wrap(a.expr, a.col, "1")
	}
	if len(edits) == 0 {
		return q
	}
	slices.SortStableFunc(edits, func(a, b yearEdit) int { return a.at - b.at })
	var b strings.Builder
	at := 0
	for _, ed := range edits {
		b.WriteString(q.SQL[at:ed.at])
		b.WriteString(ed.text)
		at = ed.at
	}
	b.WriteString(q.SQL[at:])
	c := *q
	c.SQL = b.String()
	return &c
}

// valuesColumnName is the name a column-list token of a MySQL client's INSERT as DuckDB runs it
// (tokenized as MySQL's) gives: a backquoted name is double-quoted there, a string to MySQL's
// reading. Read as a string, an ORM's INSERT INTO `t` (`s`) VALUES (...) left its values
// unchecked by their column's length.
func valuesColumnName(t sqltok.Token) string {
	if t.Kind == sqltok.String && !t.Unterminated {
		return dequoted(t.Text)
	}
	return unquoteIdent(t)
}

// dequoted is name, read by identText from a MySQL client's statement as DuckDB runs it, without
// the double quotes a backquoted name has there.
func dequoted(name string) string {
	if len(name) >= 2 && name[0] == '"' && name[len(name)-1] == '"' {
		return strings.ReplaceAll(name[1:len(name)-1], `""`, `"`)
	}
	return name
}

// yearEdit is text inserted at a byte offset of a statement.
type yearEdit struct {
	at   int
	text string
}

// updateTarget is the table of a single-table UPDATE [LOW_PRIORITY] [IGNORE] [db.]t [[AS] alias] SET.
func updateTarget(toks []sqltok.Token) (db, table string, ok bool) {
	i := 1
	for i < len(toks) && toks[i].IsWord("low_priority", "ignore") {
		i++
	}
	if i >= len(toks) {
		return "", "", false
	}
	table = identText(toks[i])
	if i+2 < len(toks) && toks[i+1].Text == "." {
		db, table = table, identText(toks[i+2])
		i += 2
	}
	for j := i + 1; j < len(toks) && j <= i+3; j++ {
		if toks[j].IsWord("set") {
			return db, table, true
		}
		if toks[j].Text == "," || toks[j].IsWord("join") {
			return "", "", false
		}
	}
	return "", "", false
}

// setAssignment is one col = expr of a SET or an ON DUPLICATE KEY UPDATE (DO UPDATE SET) list.
type setAssignment struct {
	col  string
	expr []sqltok.Token
}

// setAssignments reads the assignments after SET and after ON DUPLICATE KEY UPDATE (or DuckDB's
// DO UPDATE SET) at the statement's top level.
func setAssignments(toks []sqltok.Token) []setAssignment {
	var out []setAssignment
	depth := 0
	for i := 0; i < len(toks); i++ {
		switch toks[i].Text {
		case "(":
			depth++
			continue
		case ")":
			depth--
			continue
		}
		if depth != 0 || !toks[i].IsWord("set") && !(toks[i].IsWord("update") && i >= 2 && toks[i-1].IsWord("key") && toks[i-2].IsWord("duplicate")) {
			continue
		}
		for i++; i < len(toks); {
			j := i
			for j < len(toks) && toks[j].Text != "=" {
				j++
			}
			if j >= len(toks) || j == i {
				return out
			}
			k, d := j+1, 0
			for ; k < len(toks); k++ {
				t := toks[k]
				if t.Text == "(" {
					d++
				} else if t.Text == ")" {
					if d == 0 {
						break
					}
					d--
				} else if d == 0 && (t.Text == "," || t.Text == ";" || t.IsWord("where", "order", "limit", "returning", "on")) {
					break
				}
			}
			out = append(out, setAssignment{col: valuesColumnName(toks[j-1]), expr: toks[j+1 : k]})
			if k >= len(toks) || toks[k].Text != "," {
				i = k - 1
				break
			}
			i = k + 1
		}
	}
	return out
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
