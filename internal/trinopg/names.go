package trinopg

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Trino names a select item that is neither a column nor aliased _colN, N its place in the
// select list from 0 (`select 1, a, a + 1 from t` is _col0, a, _col2); PostgreSQL names it
// after its function or ?column?. namedItems gives each such item of a query's outermost
// SELECT its Trino name as an alias.

// expressionWords are words that alone are an expression, not a column: Trino's reserved
// words so read, and the literals true, false and null.
var expressionWords = map[string]bool{"current_catalog": true, "current_date": true, "current_path": true,
	"current_schema": true, "current_time": true, "current_timestamp": true, "current_user": true,
	"localtime": true, "localtimestamp": true, "true": true, "false": true, "null": true}

// namedItems is sqlText with ` AS _colN` after each select item that is an expression without
// an alias, in a SELECT or WITH query's outermost select list, and those insertions; sqlText
// itself when none is.
func namedItems(sqlText string) (string, []edit) {
	if !sqltok.FirstKeywordIs(sqlText, sqltok.Trino, "select", "with") {
		return sqlText, nil
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Trino)
	var b strings.Builder
	var edits []edit
	at := 0
	places, lasts := UnnamedItems(toks)
	for k, n := range places {
		last := toks[lasts[k]]
		end := last.Pos + len(last.Text)
		b.WriteString(sqlText[at:end])
		alias := " AS _col" + strconv.Itoa(n)
		b.WriteString(alias)
		edits = append(edits, edit{at: end, new: len(alias)})
		at = end
	}
	if at == 0 {
		return sqlText, nil
	}
	b.WriteString(sqlText[at:])
	return b.String(), edits
}

// UnnamedItems are the places (from 0) in toks' outermost select list of the items Trino names
// _colN, expressions without an alias, and the index of each one's last token (where an alias
// goes). The caller checks that toks are a SELECT or WITH query.
func UnnamedItems(toks []sqltok.Token) (places, lasts []int) {
	for n, item := range selectItems(toks) {
		if item.lo < item.hi && unnamed(toks[item.lo:item.hi]) {
			places, lasts = append(places, n), append(lasts, item.hi-1)
		}
	}
	return places, lasts
}

// ItemBounds are the first and past-the-last token index in toks of each item of toks' outermost
// select list (its alias included); nil when there is none. The caller checks that toks are a
// SELECT or WITH query.
func ItemBounds(toks []sqltok.Token) (los, his []int) {
	for _, item := range selectItems(toks) {
		los, his = append(los, item.lo), append(his, item.hi)
	}
	return los, his
}

// selectItems are the items of toks' first select list outside parentheses (after any WITH);
// nil when there is none.
func selectItems(toks []sqltok.Token) []span {
	depth, i := 0, 0
	for ; i < len(toks) && (depth > 0 || !isWord(toks[i], "select")); i++ {
		depth += parenStep(toks[i])
	}
	i++
	if i < len(toks) && (isWord(toks[i], "distinct") || isWord(toks[i], "all")) {
		i++
	}
	var items []span
	start := i
	for depth = 0; i <= len(toks); i++ {
		if i < len(toks) && (depth > 0 || !endsList(toks[i]) && toks[i].Text != "," || toks[i-1].Text == ".") { // t.offset is a name
			depth += parenStep(toks[i])
			continue
		}
		items = append(items, span{start, i})
		if i == len(toks) || toks[i].Text != "," {
			return items
		}
		start = i + 1
	}
	return items
}

// endsList reports whether t, outside parentheses, ends a select list.
func endsList(t sqltok.Token) bool {
	if t.Kind == sqltok.Punct {
		return t.Text == ";" || t.Text == ")"
	}
	return t.Kind == sqltok.Word && listEnds[strings.ToLower(t.Text)]
}

var listEnds = map[string]bool{"from": true, "where": true, "group": true, "having": true, "order": true,
	"limit": true, "union": true, "except": true, "intersect": true, "window": true, "offset": true, "fetch": true, "into": true}

// unnamed reports whether an item is an expression without an alias: not a column (a, t.a,
// "A"), not a * (t.*), not aliased.
func unnamed(toks []sqltok.Token) bool {
	n := len(toks)
	if toks[n-1].Text == "*" || toks[n-1].Kind == sqltok.Operator || Aliased(toks) { // an unfinished item is PostgreSQL's error as written
		return false
	}
	for i, t := range toks { // a name's parts, dotted
		if i%2 == 1 && t.Text != "." || i%2 == 0 && t.Kind != sqltok.QuotedIdent && t.Kind != sqltok.Word {
			return true
		}
	}
	return n%2 == 0 || n == 1 && toks[0].Kind == sqltok.Word && expressionWords[strings.ToLower(toks[0].Text)]
}

// Aliased reports whether an item ends in an alias: AS name, or a name after an expression's
// end (`count(*) n`, `a b`, `1 x`; not an interval's unit, not `x is null`).
func Aliased(toks []sqltok.Token) bool {
	n := len(toks)
	if n < 2 {
		return false
	}
	last, before := toks[n-1], toks[n-2]
	name := last.Kind == sqltok.QuotedIdent || last.Kind == sqltok.Word && !notAlias[strings.ToLower(last.Text)]
	if !name {
		return false
	}
	switch before.Kind {
	case sqltok.Word:
		return isWord(before, "as") || !operatorWords[strings.ToLower(before.Text)]
	case sqltok.Punct:
		return before.Text == ")" || before.Text == "]"
	case sqltok.Number, sqltok.QuotedIdent, sqltok.String:
		return true
	}
	return false
}

// notAlias are words that end an expression rather than name it.
var notAlias = map[string]bool{"null": true, "true": true, "false": true, "year": true, "month": true, "day": true,
	"hour": true, "minute": true, "second": true, "end": true, "unknown": true, "zone": true}

// operatorWords are words after which a name is an operand, not an alias.
var operatorWords = map[string]bool{"is": true, "not": true, "and": true, "or": true, "like": true, "between": true,
	"in": true, "then": true, "else": true, "when": true, "case": true, "distinct": true, "escape": true, "to": true,
	"interval": true, "date": true, "time": true, "timestamp": true, "array": true, "at": true}

// valuesNamed is a VALUES statement as a query of it whose columns are named _col0, _col1 ...
// as Trino names them (PostgreSQL's are column1 ...), a row written without parentheses (Trino's
// `values 1, 2`) in them; sqlText itself for another statement.
func valuesNamed(sqlText string) (string, []edit) {
	if !sqltok.FirstKeywordIs(sqlText, sqltok.Trino, "values") {
		return sqlText, nil
	}
	r := &rewriter{src: sqlText, toks: sqltok.SignificantTokens(sqlText, sqltok.Trino)}
	end := len(r.toks)
	for i, depth := 1, 0; i < len(r.toks); i++ {
		if t := r.toks[i]; depth == 0 && (t.Text == ";" || t.Kind == sqltok.Word && listEnds[strings.ToLower(t.Text)]) {
			end = i
			break
		}
		depth += parenStep(r.toks[i])
	}
	rows := r.args(span{1, end})
	if len(rows) == 0 {
		return sqlText, nil
	}
	texts := make([]string, len(rows))
	columns := 1
	for i, row := range rows {
		texts[i] = r.text(row)
		if r.toks[row.lo].Text != "(" || r.closes(row.lo) != row.hi-1 {
			texts[i] = "(" + texts[i] + ")"
		} else if i == 0 {
			columns = len(r.args(span{row.lo + 1, row.hi - 1}))
		}
	}
	names := make([]string, columns)
	for i := range names {
		names[i] = "_col" + strconv.Itoa(i)
	}
	last := r.toks[rows[len(rows)-1].hi-1]
	rest := sqlText[last.Pos+len(last.Text):]
	out := "SELECT * FROM (VALUES " + strings.Join(texts, ", ") + ") AS _values(" + strings.Join(names, ", ") + ")" + rest
	return out, []edit{{at: 0, old: len(sqlText) - len(rest), new: len(out) - len(rest)}}
}
