package duckengine

import (
	"regexp"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// String literals a PostgreSQL client writes that mean something else, or nothing, to DuckDB:
//   - a timestamp with a blank before its offset, '2026-01-02 03:04:05.000 +00:00' (Sequelize's
//     literal of a date, in a bulk INSERT and a WHERE): PostgreSQL reads the offset, DuckDB a
//     time zone named "+00:00" that it does not know. It is written without the blank, the
//     same instant to both. (A text column given such a literal would keep it without the blank.)
//   - 'public' compared with a schema's name (table_schema = 'public', Sequelize's describeTable
//     and its table listing): PostgreSQL's default schema, which DuckDB calls main. It reads as
//     main unless the client's database has a schema named public (qf_schema_name).

// offsetTimestamp is a timestamp literal's text with a blank before a numeric offset.
var offsetTimestamp = regexp.MustCompile(`^'(\d{4}-\d\d-\d\d[ T]\d\d:\d\d(?::\d\d(?:\.\d+)?)?) ([+-]\d\d(?::?\d\d)?)'$`)

// holdsOffsetTimestamp reports cheaply whether sqlText may hold such a literal: a digit, a
// blank and a sign before two digits.
func holdsOffsetTimestamp(sqlText string) bool {
	for i := 1; i+3 < len(sqlText); i++ {
		if sqlText[i] == ' ' && (sqlText[i+1] == '+' || sqlText[i+1] == '-') && isDigit(sqlText[i-1]) &&
			isDigit(sqlText[i+2]) && isDigit(sqlText[i+3]) {
			return true
		}
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// literal writes the string literal t as DuckDB reads what PostgreSQL reads in it; false when
// it is to be written as it is.
func (w *compatWriter) literal(t sqltok.Token) bool {
	if w.offsets {
		if m := offsetTimestamp.FindStringSubmatch(t.Text); m != nil {
			w.emit("'" + m[1] + m[2] + "'")
			return true
		}
	}
	if t.Text == "'public'" && w.comparesSchemaName() {
		w.emit(compatPrefix + "qf_schema_name('public')")
		return true
	}
	return false
}

// comparesSchemaName reports whether the literal at w.i is compared (=, <>, IN) with a column
// holding a schema's name: table_schema, schemaname, nspname, c.table_schema, ...
func (w *compatWriter) comparesSchemaName() bool {
	op := w.prevSig(w.i)
	switch w.word(op) {
	case "=", "<>", "!=":
	default:
		return false
	}
	col := strings.Trim(w.word(w.prevSig(op)), `"`)
	return strings.HasSuffix(col, "schema") || col == "schemaname" || col == "nspname" || col == "schema_name"
}

// qfSchemaNameSQL: a schema's name as the client's database holds it, PostgreSQL's public being
// DuckDB's main where the database has no public schema.
const qfSchemaNameSQL = `CREATE MACRO {c}.main.qf_schema_name(s) AS CASE WHEN s = 'public' AND NOT EXISTS (SELECT 1
	FROM duckdb_schemas() WHERE database_name = current_database() AND schema_name = 'public') THEN 'main' ELSE s END`
