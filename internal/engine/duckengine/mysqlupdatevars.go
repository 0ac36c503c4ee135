package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A MySQL client's `UPDATE t SET c = (@v := expr) [, ...] [WHERE ...]` (a counter table's
// `SET n = (@next := n + 1) WHERE name = 'orders'`, then `SELECT @next`): MariaDB sets c and,
// row by row, @v to expr's value, @v keeping the last row's; no row matched leaves @v as it
// was. DuckDB's UPDATE cannot assign a variable, so before the UPDATE (in its transaction)
// @v is set to expr of the last row the WHERE matches (the last in DuckDB's storage order,
// rowid: the one a single-row UPDATE changes; of several, MariaDB's last is the last it reads),
// and the UPDATE runs without `@v :=`. An assignment that is not the whole of a SET item's
// value, or whose expression reads a variable the statement assigns (a running count,
// `SET pos = (@r := @r + 1)`), is still refused (mysqlassignelse.go).

// setVariable is one `col = (@v := expr)` of an UPDATE's SET.
type setVariable struct {
	column, name string
}

// updateVariables reads sqlText (a MySQL client's) as an UPDATE whose assignments of user
// variables are each the whole value of a SET item: those pairs, and the text without `@v :=`
// (ok false for any other statement, or an assignment elsewhere).
func updateVariables(sqlText string) (sets []setVariable, stripped string, ok bool) {
	if !strings.Contains(sqlText, ":=") || !sqltok.FirstKeywordIs(sqlText, sqltok.MySQL, "update") {
		return nil, sqlText, false
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	as := assignments(toks)
	if len(as) == 0 {
		return nil, sqlText, false
	}
	var b strings.Builder
	done := 0
	for _, a := range as {
		column, ok := wholeSetValue(toks, a)
		if !ok {
			return nil, sqlText, false
		}
		sets = append(sets, setVariable{column: column, name: a.name})
		at := toks[a.at].Pos + len(toks[a.at].Text) - 1 // the "@" (the tokenizer may join "=@")
		b.WriteString(sqlText[done:at])
		done = toks[a.at+2].Pos + len(":=")
	}
	b.WriteString(sqlText[done:])
	for _, s := range sets { // a running count reads its own variable
		if strings.Contains(strings.ToLower(b.String()), "@"+strings.ToLower(s.name)) {
			return nil, sqlText, false
		}
	}
	return sets, b.String(), true
}

// wholeSetValue reports whether the assignment a is the whole value of its SET item (`col =
// @v := expr` or `col = (@v := expr)`), and the item's column.
func wholeSetValue(toks []sqltok.Token, a varAssignment) (column string, ok bool) {
	if a.place != "an UPDATE's SET" {
		return "", false
	}
	at, open := a.at, -1 // the item's "=" is toks[at] ("=@") or before it
	if toks[at].Text == "@" {
		at--
		if at >= 0 && toks[at].Text == "(" {
			open, at = at, at-1
		}
	}
	if at < 1 || strings.TrimSuffix(toks[at].Text, "@") != "=" || toks[at-1].Kind != sqltok.Word && toks[at-1].Kind != sqltok.QuotedIdent {
		return "", false
	}
	column = unquoteIdent(toks[at-1])
	// The item ends at a comma or WHERE / ORDER / LIMIT at its depth, or the end.
	depth, end := 0, len(toks)
	for i := a.at + 3; i < len(toks); i++ {
		switch t := toks[i]; {
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		}
		if depth < 0 || depth == 0 && (toks[i].Text == "," || toks[i].Text == ";" || toks[i].IsWord("where", "order", "limit")) {
			end = i
			break
		}
	}
	if open < 0 {
		return column, depth >= 0 && end < len(toks) && toks[end].Text != ")" || end == len(toks)
	}
	// (@v := expr): the ")" that closed it ends the item.
	return column, end < len(toks) && toks[end].Text == ")" && (end+1 == len(toks) || toks[end+1].Text == "," || toks[end+1].Text == ";" ||
		toks[end+1].IsWord("where", "order", "limit"))
}

// variableSets are the statements that set, before a MySQL client's UPDATE u (DuckDB's text,
// its assignments of variables left out), each variable it assigns to its column's new value
// as the last row its WHERE matches has it; a variable stays as it was when no row matches.
func variableSets(client *query.Request, u update) []string {
	sets, _, ok := updateVariables(client.SQL)
	if !ok {
		return nil
	}
	where := ""
	if u.where != "" {
		where = " WHERE " + u.where
	}
	var stmts []string
	for _, s := range sets {
		for _, a := range u.sets {
			if !strings.EqualFold(a.column, s.column) {
				continue
			}
			v := "qf_uv_" + strings.ToLower(s.name)
			stmts = append(stmts, "SET VARIABLE "+quoteIdent(v)+" = CASE WHEN EXISTS (SELECT 1 FROM "+u.target+where+") THEN (SELECT "+
				a.expr+" FROM "+u.target+where+" ORDER BY rowid DESC LIMIT 1) ELSE getvariable("+sqltok.StandardString(v)+") END")
		}
	}
	return stmts
}
