package sqltok

import "strings"

// MySQLItemName is the name MySQL gives a select item without an alias, text the item as
// written (SelectItems, MySQL rules). An item that is a column or a literal is named by it
// (MariaDB's parser gives those items their own names): a column by its name as written,
// unquoted (`t.V` is V); a string by its value (_utf8mb4'x' is x); a number
// as written; TRUE, FALSE and NULL in capitals; parentheses and unary pluses around it do not
// count ((id) is id, +1 is 1). Any other item is named by its text as written ((1+1), - 1,
// COUNT(*)), clients look columns up by that name.
func MySQLItemName(text string) string {
	toks := SignificantTokens(text, MySQL)
	for len(toks) > 1 {
		switch {
		case toks[0].Kind == Operator && toks[0].Text == "+":
			toks = toks[1:]
			continue
		case toks[0].Text == "(" && closes(toks):
			toks = toks[1 : len(toks)-1]
			continue
		}
		break
	}
	if name, ok := plainItemName(toks); ok {
		return name
	}
	return text
}

// closes reports whether toks' last token closes the parenthesis its first opens.
func closes(toks []Token) bool {
	depth := 0
	for i, t := range toks {
		if depth += ParenStep(t); depth == 0 {
			return i == len(toks)-1
		}
	}
	return false
}

// plainItemName is the name of an item that is a column or a literal; false for others.
func plainItemName(toks []Token) (string, bool) {
	switch len(toks) {
	case 0:
		return "", false
	case 1:
		t := toks[0]
		switch {
		case t.Unterminated:
			return "", false
		case t.Kind == Number:
			return t.Text, true
		case t.Kind == String && (t.Text[0] == '\'' || t.Text[0] == '"'):
			return MySQLStringValue(t.Text), true
		case t.Kind == String && t.Text[0]|0x20 == 'n' && len(t.Text) >= 3 && t.Text[1] == '\'':
			return MySQLStringValue(t.Text[1:]), true
		case t.Kind == Word && (strings.EqualFold(t.Text, "true") || strings.EqualFold(t.Text, "false") || strings.EqualFold(t.Text, "null")):
			return strings.ToUpper(t.Text), true
		case t.Kind == Word || t.Kind == QuotedIdent:
			return MySQLIdent(t), true
		}
	case 2: // _utf8mb4'x': a string with its character set
		if t := toks[1]; toks[0].Kind == Word && strings.HasPrefix(toks[0].Text, "_") && t.Kind == String && !t.Unterminated && t.Text[0] == '\'' {
			return MySQLStringValue(t.Text), true
		}
	}
	// db.t.c, t.c: a column by its own name
	if len(toks)%2 == 0 {
		return "", false
	}
	for i, t := range toks {
		if i%2 == 1 && t.Text != "." || i%2 == 0 && t.Kind != Word && t.Kind != QuotedIdent || t.Unterminated {
			return "", false
		}
	}
	return MySQLIdent(toks[len(toks)-1]), true
}

// MySQLIdent is a name as MySQL reads it: a `quoted` one without its backquotes (“ is `), a
// word as written.
func MySQLIdent(t Token) string {
	if t.Kind == QuotedIdent && len(t.Text) >= 2 && t.Text[0] == '`' {
		return strings.ReplaceAll(t.Text[1:len(t.Text)-1], "``", "`")
	}
	return t.Text
}

// MySQLSelectItems is SelectItems with MySQL's words (and DuckDB's QUALIFY, which a MySQL
// client's statement on DuckDB may hold).
func MySQLSelectItems(text string, toks []Token) []string {
	return SelectItems(text, toks, MySQLSelectModifiers, mysqlListEnds)
}

// MySQLSelectModifiers may follow SELECT before its first item.
var MySQLSelectModifiers = map[string]bool{"distinct": true, "all": true, "distinctrow": true, "high_priority": true,
	"straight_join": true, "sql_small_result": true, "sql_big_result": true, "sql_buffer_result": true,
	"sql_no_cache": true, "sql_cache": true, "sql_calc_found_rows": true}

// mysqlListEnds are the words that end a select list outside parentheses.
var mysqlListEnds = map[string]bool{"from": true, "where": true, "group": true, "having": true, "order": true,
	"limit": true, "union": true, "except": true, "intersect": true, "into": true, "window": true,
	"qualify": true, "for": true, "lock": true}

// IsCountItem reports a select item COUNT(...) [[AS] alias], its significant tokens.
func IsCountItem(item []Token) bool {
	if len(item) < 3 || item[0].Kind != Word || !strings.EqualFold(item[0].Text, "count") || item[1].Text != "(" {
		return false
	}
	depth, end := 0, 1
	for ; end < len(item); end++ {
		if depth += ParenStep(item[end]); depth == 0 {
			break
		}
	}
	if end >= len(item) {
		return false
	}
	rest := item[end+1:]
	switch {
	case len(rest) == 0:
		return true
	case len(rest) == 2 && rest[0].Kind == Word && strings.EqualFold(rest[0].Text, "as"):
		return true
	}
	return len(rest) == 1 && (rest[0].Kind == Word || rest[0].Kind == QuotedIdent)
}
