package duckengine

import (
	"context"
	"regexp"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// A column's DEFAULT CURRENT_TIMESTAMP in a MySQL client's transaction run again. DuckDB
// computes a DEFAULT in the INSERT, from its transaction's start: the same INSERT run again in
// another DuckDB transaction (a refused statement's undo, ROLLBACK TO, a conflict's wait:
// mysqlstmtundo.go) gave the row a later time than the one its client had read back, and one
// other than the NOW() the same transaction wrote (mysqlnowpin.go). So an INSERT ... VALUES in
// a transaction names such a column it leaves out, with its DEFAULT computed from the
// transaction's time: the text run again writes the same value, and NOW() and the DEFAULT
// agree, as MariaDB's do within a statement.

// timeDefault is a column whose DEFAULT is the current time, and that DEFAULT as DuckDB keeps it.
type timeDefault struct{ column, dflt string }

// nowVariable is the variable mysqlNow reads, as DuckDB writes it in a column's DEFAULT.
var nowVariable = regexp.MustCompile(`(?i)getvariable\('qf_now'\)`)

// isTimeDefault reports whether a column's DEFAULT (DuckDB's text) is the current time: a
// MySQL client's table's (mysqlNow), or DuckDB's own.
func isTimeDefault(dflt string) bool {
	return nowVariable.MatchString(dflt) || strings.EqualFold(strings.TrimSpace(dflt), "current_timestamp")
}

// pinTimeDefaults is q (an INSERT or REPLACE ... VALUES of a MySQL client's, as DuckDB runs
// it) with the columns of col's table whose DEFAULT is the current time that it leaves out
// given that DEFAULT at the transaction's time, when it runs in a transaction.
func pinTimeDefaults(ctx context.Context, q *query.Request, col aiColumn) *query.Request {
	if len(col.timeDefaults) == 0 {
		return q
	}
	now, ok := transactionNow(ctx)
	if !ok {
		return q
	}
	v, ok := readValues(sqltok.SignificantTokens(q.SQL, sqltok.Generic), col)
	if !ok || v.columns == nil { // every column given, a DEFAULT in place
		return q
	}
	var names, values strings.Builder
	for _, d := range col.timeDefaults {
		named := false
		for _, t := range v.columns {
			named = named || strings.EqualFold(unquoteIdent(t), d.column)
		}
		if named {
			continue
		}
		at := "CAST(" + sqltok.StandardString(now+"+00") + " AS TIMESTAMPTZ)"
		value := nowVariable.ReplaceAllLiteralString(d.dflt, at)
		if !nowVariable.MatchString(d.dflt) {
			value = at
		}
		names.WriteString(", " + quoteIdent(d.column))
		values.WriteString(", " + value)
	}
	if names.Len() == 0 {
		return q
	}
	var b strings.Builder
	b.WriteString(q.SQL[:v.closeCols.Pos])
	b.WriteString(names.String())
	at := v.closeCols.Pos
	for _, end := range v.closeRows {
		b.WriteString(q.SQL[at:end.Pos])
		b.WriteString(values.String())
		at = end.Pos
	}
	b.WriteString(q.SQL[at:])
	c := *q
	c.SQL = b.String()
	return &c
}
