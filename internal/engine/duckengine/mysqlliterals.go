package duckengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Two strings compared (SELECT 'a' = 'A', WHERE 'abc' < 'ABD'): MariaDB compares them in the
// connection's collation, utf8mb4_general_ci, without regard to case (1 for 'a' = 'A'), where
// DuckDB compares bytes (0). A MySQL client's comparison of two plain string literals is
// written with COLLATE NOCASE on the left one. Columns carry their own collation (mysqlddl.go);
// a _binary or BINARY string, or one with a COLLATE of its own, is left as written.

// comparisonOps are the comparison operators a literal comparison is read for.
var comparisonOps = map[string]bool{"=": true, "<>": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true}

// comparesTwoStrings reports whether toks[i] is a comparison operator between two plain
// string literals, neither bytewise nor given a collation.
func comparesTwoStrings(toks []sqltok.Token, i int) bool {
	if toks[i].Kind != sqltok.Operator || !comparisonOps[toks[i].Text] {
		return false
	}
	left := prevSignificant(toks, i)
	right := nextSignificant(toks, i+1)
	if left < 0 || right >= len(toks) || !plainStringLiteral(toks[left]) || !plainStringLiteral(toks[right]) {
		return false
	}
	if before := prevSignificant(toks, left); before >= 0 && (toks[before].IsWord("_binary", "binary", "collate") || toks[before].Kind == sqltok.Word && strings.HasPrefix(toks[before].Text, "_")) {
		return false // _binary'a', BINARY 'a', _utf8mb4'a'
	}
	if prevSignificant(toks, right) != i {
		return false
	}
	after := nextSignificant(toks, right+1)
	return after >= len(toks) || !toks[after].IsWord("collate")
}

// plainStringLiteral: a '...' or "..." string (not X'..', B'..', N'..').
func plainStringLiteral(t sqltok.Token) bool {
	return t.Kind == sqltok.String && !t.Unterminated && len(t.Text) >= 2 && (t.Text[0] == '\'' || t.Text[0] == '"')
}

// mayCompareStrings reports cheaply whether sqlText may compare two string literals: a quote,
// then (blanks between) a comparison operator's first character.
func mayCompareStrings(sqlText string) bool {
	for i := strings.IndexByte(sqlText, '\''); i >= 0 && i+1 < len(sqlText); {
		j := i + 1
		for j < len(sqlText) && sqlText[j] == ' ' {
			j++
		}
		if j < len(sqlText) && (sqlText[j] == '=' || sqlText[j] == '<' || sqlText[j] == '>' || sqlText[j] == '!') {
			return true
		}
		next := strings.IndexByte(sqlText[i+1:], '\'')
		if next < 0 {
			return false
		}
		i += 1 + next
	}
	return false
}
