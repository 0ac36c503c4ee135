package trinomy

import (
	"slices"
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/internal/trinopg"
)

// Trino sorts NULLs last whatever the direction, unless a key says NULLS FIRST; MariaDB sorts
// them first in an ascending order and last in a descending one, and has no NULLS FIRST / LAST.
// A key MariaDB would sort otherwise is preceded by `key IS NULL` (DESC for NULLS FIRST), and a
// key's NULLS FIRST / LAST is taken out. In the outermost ORDER BY of a query that is not a
// UNION, INTERSECT or EXCEPT, a key that is a select item's position or alias is tested through
// that item's expression (MariaDB refuses an alias of an aggregate inside an expression, 1247);
// in a set operation's ORDER BY, a position is tested through its column's name (the first
// select list's alias, column name or _colN).

// sortNulls writes toks' sort keys so that MariaDB sorts their NULLs as Trino does. text, pre and
// post are the tokens' translations so far; gaps[i] is the text before toks[i].
// star names the column at a place (from 0) of a SELECT * ("" when not known).
func sortNulls(toks []sqltok.Token, text, pre, post, gaps []string, star func(n int) string) {
	keys := trinopg.SortKeys(toks)
	if len(keys) == 0 {
		return
	}
	setOp := topLevelWord(toks, "union", "intersect", "except")
	itemLos, itemHis := trinopg.ItemBounds(toks)
	for _, k := range keys {
		desc := k.Descending(toks)
		first, said := k.NullsFirst(toks)
		if said {
			text[k.Nulls], text[k.Nulls+1] = "", ""
		}
		if first == !desc { // MariaDB's own order
			continue
		}
		key := strings.TrimSpace(joined(k.Lo, k.Hi, text, pre, post, gaps))
		if len(itemLos) == 1 && toks[itemHis[0]-1].Text == "*" && k.Hi-k.Lo == 1 && toks[k.Lo].Kind == sqltok.Number && depthAt(toks, k.Lo) == 0 {
			// ORDER BY n of SELECT *: the table's nth column, by its name
			place, err := strconv.Atoi(toks[k.Lo].Text)
			name := ""
			if err == nil && !setOp {
				name = star(place - 1)
			}
			if name == "" {
				continue
			}
			key = backtick(name)
		} else if n := itemOf(toks, k.Lo, k.Hi, itemLos, itemHis); n >= 0 && depthAt(toks, k.Lo) == 0 {
			lo, hi := itemLos[n], expressionEnd(toks, itemLos[n], itemHis[n])
			switch {
			case toks[hi-1].Text == "*":
				continue // ORDER BY 1 of SELECT *: no expression to test
			case !setOp:
				key = strings.TrimSpace(joined(lo, hi, text, pre, post, gaps))
			case hi < itemHis[n]:
				key = text[itemHis[n]-1] // the set operation's column, by its alias
			case unnamedAt(toks, n):
				key = "_col" + strconv.Itoa(n)
			default:
				key = text[hi-1] // a column's name, its last part
			}
		}
		test := key + " IS NULL"
		if first {
			test += " DESC"
		}
		pre[k.Lo] = test + ", " + pre[k.Lo]
	}
}

// itemOf is the select item a sort key toks[lo:hi] names by its position (from 1) or alias, or -1.
func itemOf(toks []sqltok.Token, lo, hi int, los, his []int) int {
	if hi-lo != 1 {
		return -1
	}
	t := toks[lo]
	if t.Kind == sqltok.Number {
		n := 0
		for _, c := range t.Text {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
			if n > len(los) {
				return -1
			}
		}
		return n - 1
	}
	if t.Kind != sqltok.Word && t.Kind != sqltok.QuotedIdent {
		return -1
	}
	for n := range los {
		if end := expressionEnd(toks, los[n], his[n]); end < his[n] && sameName(toks[his[n]-1], t) {
			return n
		}
	}
	return -1
}

// expressionEnd is where the select item toks[lo:hi]'s expression ends: before its alias.
func expressionEnd(toks []sqltok.Token, lo, hi int) int {
	if hi-lo < 2 || !trinopg.Aliased(toks[lo:hi]) {
		return hi
	}
	if hi-lo > 2 && toks[hi-2].IsWord("as") {
		return hi - 2
	}
	return hi - 1
}

// sameName reports whether two name tokens name the same column, as Trino compares names
// (without regard to case, quoted or not).
func sameName(a, b sqltok.Token) bool { return strings.EqualFold(bareName(a), bareName(b)) }

func bareName(t sqltok.Token) string {
	if t.Kind == sqltok.QuotedIdent {
		return strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`)
	}
	return t.Text
}

// joined is toks[lo:hi] as translated so far, with the text between them.
func joined(lo, hi int, text, pre, post, gaps []string) string {
	var b strings.Builder
	for i := lo; i < hi; i++ {
		if i > lo {
			b.WriteString(gaps[i])
		}
		b.WriteString(pre[i] + text[i] + post[i])
	}
	return b.String()
}

// depthAt is how many parentheses are open at toks[i].
func depthAt(toks []sqltok.Token, i int) int {
	depth := 0
	for _, t := range toks[:i] {
		switch t.Text {
		case "(":
			depth++
		case ")":
			depth--
		}
	}
	return depth
}

// topLevelWord reports whether one of words is a word of toks outside parentheses.
func topLevelWord(toks []sqltok.Token, words ...string) bool {
	depth := 0
	for _, t := range toks {
		switch {
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		case depth == 0 && t.IsWord(words...):
			return true
		}
	}
	return false
}

// unnamedAt reports whether the select item at place n is one Trino names _colN.
func unnamedAt(toks []sqltok.Token, n int) bool {
	places, _ := trinopg.UnnamedItems(toks)
	return slices.Contains(places, n)
}
