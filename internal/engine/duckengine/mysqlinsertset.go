package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// insertSet is a MySQL client's INSERT [IGNORE] [INTO] t SET a = x, b = y [ON DUPLICATE KEY
// UPDATE ...] (and REPLACE ... SET), MySQL's other form of a one-row INSERT that PHP
// applications write, as INSERT ... (a, b) VALUES (x, y) ..., which DuckDB reads (its parser
// stopped at SET: 1064). Any other statement is sqlText.
func insertSet(sqlText string) string {
	if !containsFold(sqlText, "set") || !sqltok.FirstKeywordIs(sqlText, sqltok.MySQL, "insert", "replace") {
		return sqlText
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.MySQL)
	i := afterInsertModifiers(toks) + 1 // after the table
	if i+1 < len(toks) && toks[i].Text == "." {
		i += 2
	}
	if i >= len(toks) || !toks[i].IsWord("set") {
		return sqlText
	}
	var cols, exprs []string
	start, depth, end := i+1, 0, len(toks)
	for j := i + 1; j <= len(toks); j++ {
		atEnd := j == len(toks) || depth == 0 && (toks[j].Text == ";" || toks[j].IsWord("on") && j+1 < len(toks) && toks[j+1].IsWord("duplicate"))
		if j < len(toks) && !atEnd {
			switch toks[j].Text {
			case "(":
				depth++
			case ")":
				depth--
			}
		}
		if !atEnd && (depth != 0 || toks[j].Text != ",") {
			continue
		}
		item := toks[start:j]
		if len(item) < 3 || item[1].Text != "=" || item[0].Kind != sqltok.Word && item[0].Kind != sqltok.QuotedIdent {
			return sqlText
		}
		last := item[len(item)-1]
		cols, exprs = append(cols, item[0].Text), append(exprs, sqlText[item[2].Pos:last.Pos+len(last.Text)])
		start = j + 1
		if atEnd {
			end = j
			break
		}
	}
	rest := ""
	if end < len(toks) {
		rest = " " + sqlText[toks[end].Pos:]
	}
	return sqlText[:toks[i].Pos] + "(" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(exprs, ", ") + ")" + rest
}
