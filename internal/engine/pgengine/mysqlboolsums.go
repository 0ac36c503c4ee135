package pgengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// MariaDB's BOOLEAN is a TINYINT(1): SUM, AVG, MIN and MAX of a BOOLEAN column are a number's
// (SUM a DECIMAL, AVG 0.5000), where PostgreSQL has no sum(boolean) (1305 before). A statement
// that reads one table (oneTable, mysqlnotnull.go's reading, its catalog cache; a client in no
// database the table its search_path finds) has each of
// these calls of a boolean column, the column its whole argument (DISTINCT before it too),
// sum its value as an integer; and the scale AVG is rounded to (the frontend's
// scale(CAST((c) AS numeric))) read of the integer too. A boolean inside another expression
// (sum(ok = true), a comparison the frontend sums as an integer already) is left as it is.

// boolAggregates are the calls whose boolean argument is summed as an integer.
var boolAggregates = map[string]bool{"sum": true, "avg": true, "min": true, "max": true, "scale": true}

// mysqlBoolAggregates is sqlText with its aggregates of a boolean column of lookup's table
// summing the column as an integer; sqlText itself when it has none.
func mysqlBoolAggregates(sqlText string, lookup notNullLookup) string {
	if lookup.booleans == nil || !mayCallOf(sqlText, func(name string) bool { return boolAggregates[name] && name != "scale" }) {
		return sqlText
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	table, qualifiers, ok := oneTable(toks, lookup.schema, true)
	if !ok {
		return sqlText
	}
	var bools map[string]bool
	var b strings.Builder
	at := 0
	for i := 0; i+3 < len(toks); i++ {
		if toks[i].Kind != sqltok.Word || !boolAggregates[strings.ToLower(toks[i].Text)] || toks[i+1].Text != "(" || i > 0 && toks[i-1].Text == "." {
			continue
		}
		from, to := boolArgument(toks, i+2, qualifiers)
		if from < 0 {
			continue
		}
		if bools == nil {
			if bools = lookup.booleans(table); len(bools) == 0 {
				return sqlText
			}
		}
		if !bools[identName(toks[to-1])] {
			continue
		}
		end := toks[to-1].Pos + len(toks[to-1].Text)
		b.WriteString(sqlText[at:toks[from].Pos])
		b.WriteString("CAST(" + sqlText[toks[from].Pos:end] + " AS integer)")
		at = end
	}
	if at == 0 {
		return sqlText
	}
	b.WriteString(sqlText[at:])
	return b.String()
}

// boolArgument finds the column that is the whole argument of the call whose tokens start at
// toks[i] (after its "("): [DISTINCT] c, [DISTINCT] q.c with q one of qualifiers, or the
// frontend's CAST((c) AS numeric) of scale(). It is toks[from:to]; from < 0 when the argument is
// anything else.
func boolArgument(toks []sqltok.Token, i int, qualifiers []string) (from, to int) {
	if i < len(toks) && toks[i].IsWord("distinct") {
		i++
	}
	if i+5 < len(toks) && toks[i].IsWord("cast") && toks[i+1].Text == "(" && toks[i+2].Text == "(" {
		from, to := columnAt(toks, i+3, qualifiers)
		if from >= 0 && to+3 < len(toks) && toks[to].Text == ")" && toks[to+1].IsWord("as") && toks[to+2].IsWord("numeric") && toks[to+3].Text == ")" {
			return from, to
		}
		return -1, -1
	}
	from, to = columnAt(toks, i, qualifiers)
	if from < 0 || to >= len(toks) || toks[to].Text != ")" {
		return -1, -1
	}
	return from, to
}

// columnAt reads a column reference at toks[i]: c, or q.c with q one of qualifiers.
func columnAt(toks []sqltok.Token, i int, qualifiers []string) (from, to int) {
	name := func(t sqltok.Token) bool { return t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent }
	switch {
	case i+2 < len(toks) && name(toks[i]) && toks[i+1].Text == "." && name(toks[i+2]):
		for _, q := range qualifiers {
			if identName(toks[i]) == q {
				return i, i + 3
			}
		}
	case i < len(toks) && name(toks[i]) && !toks[i].IsWord("distinct", "all", "case", "cast", "not", "null", "true", "false"):
		return i, i + 1
	}
	return -1, -1
}
