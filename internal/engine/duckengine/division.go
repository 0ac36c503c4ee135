package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// PostgreSQL and Trino divide integers as integers (7/2 is 3, -7/2 is -3); MySQL, and DuckDB
// itself (what a Flight SQL client speaks here), divide exactly (3.5). DuckDB's
// integer_division is one setting for the whole database, which lock_configuration then keeps,
// so the engine opens with it on (settingIntegerDivision), as PostgreSQL's and Trino's clients
// need, and a MySQL or Flight SQL client's a / b runs as a * 1e0 / b: * and / bind alike, from
// the left, so the dividend is the same, a DOUBLE, and DuckDB divides it exactly as it did.
//
// With the setting on DuckDB divides by zero to NULL (MySQL's answer; PostgreSQL and Trino
// raise an error) and divides no INTERVAL: docs/duckdb.md says so.
const settingIntegerDivision = "integer_division"

// exactDivision is the operator / of toks (dialect d's) written "* 1e0 /"; sqlText itself
// when it divides nothing.
func exactDivision(sqlText string, d sqltok.Dialect) string {
	if !strings.Contains(sqlText, "/") {
		return sqlText
	}
	toks := sqltok.Tokenize(sqlText, d)
	var b strings.Builder
	changed := false
	for _, t := range toks {
		if isDivision(t) {
			b.WriteString(exactDivisionOperator + t.Text[1:])
			changed = true
			continue
		}
		b.WriteString(t.Text)
	}
	if !changed {
		return sqlText
	}
	return b.String()
}

const exactDivisionOperator = "* 1e0 /"

// isDivision reports whether t is the operator /, or / with the signs of its right operand
// (7 /-2 is read as one operator token "/-").
func isDivision(t sqltok.Token) bool {
	return t.Kind == sqltok.Operator && strings.HasPrefix(t.Text, "/") && strings.Trim(t.Text[1:], "+-") == ""
}
