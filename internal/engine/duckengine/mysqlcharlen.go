package duckengine

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's VARCHAR(n) and CHAR(n) columns, which DuckDB keeps as VARCHAR without a
// length (their lengths are in the declared catalog, mysqldeclared.go), take a value as
// MariaDB's do: one of at most n characters as it is; one longer only by trailing spaces cut
// to n (MariaDB's note 1265 for a VARCHAR, nothing for a CHAR); one longer by anything else, in
// strict mode (STRICT_TRANS_TABLES or STRICT_ALL_TABLES in sql_mode, MariaDB's default),
// refused with 1406 `Data too long for column 'c' at row n`, and otherwise (a sql_mode without
// them, INSERT IGNORE, UPDATE IGNORE) cut to n. Every value an INSERT / REPLACE VALUES, INSERT
// SET, single-table UPDATE SET or ON DUPLICATE KEY UPDATE gives such a column, and every row of
// an INSERT ... SELECT, goes through qf_mysql_char_value (yearValues, mysqlyear.go), so the
// row MariaDB names is known: a VALUES row's place, an INSERT ... SELECT's row in the order
// selected, 1 for an UPDATE (MariaDB's count there).

// charMacroSQL: qf_mysql_char_value(v, col, n, r, strict) is the text MariaDB stores for the
// value v written to column col of n characters at row r, or its 1406.
const charMacroSQL = `CREATE MACRO {c}.main.qf_mysql_char_value(v, col, n, r, strict) AS CASE
	WHEN v IS NULL THEN NULL
	WHEN character_length(CAST(v AS VARCHAR)) <= n THEN CAST(v AS VARCHAR)
	WHEN NOT strict OR character_length(rtrim(CAST(v AS VARCHAR), ' ')) <= n THEN left(CAST(v AS VARCHAR), n)
	ELSE error('qfpg 22001 Data too long for column ''' || col || ''' at row ' || r || ' (MySQL error 1406)') END`

// charLength is the length of a VARCHAR(n) or CHAR(n) column's declared type, 0 for any other.
func charLength(t pgColumnType) int {
	if t.oid != 1043 && t.oid != 1042 || t.typmod <= 4 {
		return 0
	}
	return int(t.typmod) - 4
}

// strictExpr is DuckDB's test of whether client's statement runs in strict mode: false for
// INSERT IGNORE and UPDATE IGNORE (MariaDB's IGNORE makes its errors warnings), else whether
// the session's sql_mode has STRICT_TRANS_TABLES or STRICT_ALL_TABLES (every DuckDB table is
// transactional).
func strictExpr(client *query.Request) string {
	toks := sqltok.SignificantTokens(client.SQL, sqltok.MySQL)
	for i := 1; i < len(toks) && i < 4 && toks[i].Kind == sqltok.Word; i++ {
		if toks[i].IsWord("ignore") {
			return "false"
		}
	}
	return "regexp_matches(" + sessionVarRef("sql_mode") + ", 'STRICT_(TRANS|ALL)_TABLES')"
}

// valuesOnly is an INSERT's tokens up to its ON CONFLICT / ON DUPLICATE KEY UPDATE, so that
// readValues reads an upsert's rows too.
func valuesOnly(toks []sqltok.Token) []sqltok.Token {
	depth := 0
	for i, t := range toks {
		switch {
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		case depth == 0 && t.IsWord("on") && i+1 < len(toks) && toks[i+1].IsWord("conflict", "duplicate"):
			return toks[:i]
		}
	}
	return toks
}

// insertSelectValues are the edits that pass each row of an INSERT [INTO] t [(cols)] SELECT
// (WITH ..., a parenthesized SELECT) to the columns' wrapping (yearValues' wrapping: "" for a
// column taking its value as it is): the SELECT becomes `SELECT w1(qf_s.c1, row), qf_s.c2, ...
// FROM (SELECT *, row_number() OVER () AS qf_row FROM (SELECT ...) AS qf_s0(c1, c2, ...)) AS
// qf_s`. None when no column is wrapped or the statement is not such an INSERT. cols are the
// table's columns in order.
func insertSelectValues(toks []sqltok.Token, cols []string, wrapping func(col, row string) (string, string)) []yearEdit {
	i := afterInsertModifiers(toks) + 1
	if i+1 < len(toks) && toks[i].Text == "." {
		i += 2
	}
	target := cols
	if i < len(toks) && toks[i].Text == "(" && i+1 < len(toks) && !toks[i+1].IsWord("select", "with") {
		defs, end := definitions(toks, i)
		if end < 0 {
			return nil
		}
		target = make([]string, len(defs))
		for j, d := range defs {
			if len(d) != 1 {
				return nil
			}
			target[j] = valuesColumnName(d[0])
		}
		i = end + 1
	}
	if i >= len(toks) || !toks[i].IsWord("select", "with") && toks[i].Text != "(" || len(target) == 0 {
		return nil
	}
	start := toks[i].Pos
	last := len(valuesOnly(toks)) - 1
	for j := i; j <= last; j++ {
		if toks[j].IsWord("returning") {
			return nil
		}
	}
	if last >= i && toks[last].Text == ";" {
		last--
	}
	if last < i {
		return nil
	}
	end := toks[last].Pos + len(toks[last].Text)
	var list, names strings.Builder
	wrapped := false
	for j, col := range target {
		if j > 0 {
			list.WriteString(", ")
			names.WriteString(", ")
		}
		name := "qf_c" + strconv.Itoa(j+1)
		names.WriteString(name)
		pre, post := wrapping(col, "qf_s.qf_row")
		wrapped = wrapped || pre != ""
		list.WriteString(pre + "qf_s." + name + post)
	}
	if !wrapped {
		return nil
	}
	return []yearEdit{
		{start, "SELECT " + list.String() + " FROM (SELECT *, row_number() OVER () AS qf_row FROM ("},
		{end, ") AS qf_s0(" + names.String() + ")) AS qf_s"},
	}
}
