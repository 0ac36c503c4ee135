package trinodecl

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// BooleanItems reports, for each select item of sqlText's outermost SELECT, whether Trino types
// it boolean by its form: a comparison, a predicate (IS, IN, LIKE, BETWEEN, EXISTS), a logical
// operator, true or false, a call of a boolean function, a CASE whose every branch is one of these. An engine without a
// boolean type (MariaDB: 1 = 1 is an integer 1) answers such an item as an integer; the Trino
// frontend announces it boolean. nil when no item is boolean, and for a select list with a *.
func BooleanItems(sqlText string) []bool {
	return eachItem(sqlText, isBoolean)
}

// isBoolean reports whether an expression, without its alias, is boolean by its form.
func isBoolean(toks []sqltok.Token) bool {
	n := len(toks)
	switch {
	case n == 0:
		return false
	case n == 1:
		return isWord(toks[0], "true") || isWord(toks[0], "false")
	case toks[0].Text == "(" && closes(toks, 0) == n-1:
		return isBoolean(toks[1 : n-1])
	case isWord(toks[0], "not") || isWord(toks[0], "exists") && toks[1].Text == "(":
		return true
	case isWord(toks[0], "case") && caseEnd(toks, 0) == n-1:
		return booleanBranches(toks)
	case toks[0].Kind == sqltok.Word && booleanFunctions[strings.ToLower(toks[0].Text)] && toks[1].Text == "(" && closes(toks, 1) == n-1:
		return true
	}
	depth := 0
	for i := 0; i < n; i++ {
		t := toks[i]
		switch {
		case isWord(t, "case"):
			if end := caseEnd(toks, i); end > i {
				i = end
				continue
			}
			return false
		case depth == 0 && (t.Kind == sqltok.Operator && comparisons[t.Text] || t.Kind == sqltok.Word && predicateWords[strings.ToLower(t.Text)]):
			return true
		}
		depth += sqltok.ParenStep(t)
	}
	return false
}

// comparisons are the operators whose value is boolean.
var comparisons = map[string]bool{"=": true, "<>": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true}

// booleanFunctions are Trino's functions whose value is boolean.
var booleanFunctions = map[string]bool{"regexp_like": true, "contains": true, "starts_with": true, "is_nan": true,
	"is_finite": true, "is_infinite": true, "json_exists": true}

// predicateWords are the words that, outside parentheses, make an expression a predicate.
var predicateWords = map[string]bool{"and": true, "or": true, "not": true, "is": true, "in": true, "like": true,
	"between": true}

// caseEnd is the index of the END closing the CASE at toks[i]; -1 when none does.
func caseEnd(toks []sqltok.Token, i int) int {
	depth := 0
	for k := i; k < len(toks); k++ {
		switch {
		case isWord(toks[k], "case"):
			depth++
		case isWord(toks[k], "end"):
			if depth--; depth == 0 {
				return k
			}
		}
	}
	return -1
}

// booleanBranches reports whether every THEN and ELSE value of the CASE ... END toks is boolean
// (NULL aside: a CASE's NULL branch takes the others' type).
func booleanBranches(toks []sqltok.Token) bool {
	depth, parens, start, some := 0, 0, -1, false
	branch := func(end int) bool {
		if start < 0 {
			return true
		}
		b := toks[start:end]
		if len(b) == 1 && isWord(b[0], "null") {
			return true
		}
		some = true
		return isBoolean(b)
	}
	for k, t := range toks {
		if parens == 0 && isWord(t, "case") {
			depth++
		}
		if parens == 0 && depth == 1 && (isWord(t, "when") || isWord(t, "else") || isWord(t, "then") || isWord(t, "end")) {
			if !branch(k) {
				return false
			}
			start = -1
			if isWord(t, "then") || isWord(t, "else") {
				start = k + 1
			}
		}
		if parens == 0 && isWord(t, "end") {
			depth--
		}
		parens += sqltok.ParenStep(t)
	}
	return some
}
