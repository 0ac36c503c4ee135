package pgengine

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// MariaDB's BOOLEAN is a TINYINT(1), and its clients write a boolean as a number: PyMySQL,
// mysqlclient (Django's backend) and SQLAlchemy interpolate True as 1, so `INSERT ... VALUES
// (..., 1)`, `UPDATE t SET ok = 0`, `WHERE ok = 1`. PostgreSQL refuses an integer for a boolean
// column (1210 `column "ok" is of type boolean but expression is of type integer`, 1105
// `operator does not exist: boolean = integer`). In a statement of one table (an INSERT with
// or without its column list, an UPDATE or DELETE of one table, a SELECT oneTable reads), an integer
// literal that is a boolean column's value (a VALUES row's item in the column's place) or is
// compared with one (`c = 1`, `c <> 0`, `c != 1`, the column bare or qualified by the table or
// its alias; an assignment of SET or ON CONFLICT too) is written as the truth value MariaDB's
// TINYINT(1) holds for it: false for 0, true for any other in a VALUES row or an assignment;
// a comparison with a number other than 0 or 1 is left (MariaDB's answer is false, PostgreSQL's
// refusal stands).

// mysqlBoolLiterals is sqlText with the integer literals lookup's boolean columns take written
// as truth values; sqlText itself when it has none.
func mysqlBoolLiterals(sqlText string, lookup notNullLookup) string {
	// every literal written follows =, != or <> (its '>'), or is in a VALUES row's parentheses
	if lookup.booleans == nil || !strings.ContainsAny(sqlText, "01") || !strings.ContainsAny(sqlText, "=(>") {
		return sqlText
	}
	first := firstWord(sqlText)
	if first != "insert" && first != "update" && first != "delete" && first != "select" {
		return sqlText
	}
	if lookup.boolNames != nil && !lookup.boolNames().namedIn(sqlText) && (first != "insert" || columnsListed(sqlText)) {
		return sqlText // most statements, `WHERE id = 1` too: no tokens, no table's lookup
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Postgres)
	table, qualifiers, cols, values, ok := boolLiteralsTable(toks, first, lookup.schema)
	if !ok {
		return sqlText
	}
	bools := lookup.booleans(table)
	if len(bools) == 0 {
		return sqlText
	}
	if values > 0 && cols == nil && lookup.order != nil {
		cols = lookup.order(table) // an INSERT without its column list
	}
	truths := map[int]string{} // token index -> its truth value
	if values > 0 {
		valueRows(toks, values, func(item, at int) {
			if item < len(cols) && bools[cols[item]] && integerAt(toks, at) {
				truths[at] = truthOf(toks[at].Text)
			}
		})
	}
	for i := 0; i+2 < len(toks); i++ {
		from, to := columnAt(toks, i, qualifiers)
		if from < 0 || to+1 >= len(toks) || !bools[identName(toks[to-1])] || i > 0 && toks[i-1].Text == "." {
			continue
		}
		op, lit := toks[to].Text, to+1
		if op != "=" && op != "<>" && op != "!=" || !integerAt(toks, lit) {
			continue
		}
		assigned := op == "=" && assignment(toks, from)
		if v := toks[lit].Text; assigned || strings.Trim(v, "0") == "" || strings.TrimLeft(v, "0") == "1" {
			truths[lit] = truthOf(v)
		}
	}
	if len(truths) == 0 {
		return sqlText
	}
	var b strings.Builder
	at := writeEdited(&b, sqlText, toks, truths)
	b.WriteString(sqlText[at:])
	return b.String()
}

// writeEdited writes sqlText to b up to the end of its last edited token, each token of toks
// whose index edits holds written as its edit, and answers where the text not written starts.
func writeEdited(b *strings.Builder, sqlText string, toks []sqltok.Token, edits map[int]string) (at int) {
	for i, t := range toks {
		if v, ok := edits[i]; ok {
			b.WriteString(sqlText[at:t.Pos])
			b.WriteString(v)
			at = t.Pos + len(t.Text)
		}
	}
	return at
}

// columnNames are a database's column names as a statement's words are looked up in them:
// one scan of the statement whatever their number (a database of hundreds of boolean
// columns' names scanned it once per name).
type columnNames struct {
	// words are the names that are one unquoted word, of ASCII letters, digits, _ and $,
	// lower-cased: a statement names one in a word of its text in any case.
	words map[string]struct{}
	// others are the names a word of the text cannot be (a space, a quote or a letter beyond
	// ASCII in them), lower-cased; a statement may name one if it contains it in any case.
	others []string
	// quoted: a name has a quote in it, whose quoted text is not the name: every statement
	// may name it.
	quoted bool
}

// newColumnNames is names as a columnNames.
func newColumnNames(names []string) *columnNames {
	c := &columnNames{words: make(map[string]struct{}, len(names))}
	for _, name := range names {
		switch {
		case strings.ContainsAny(name, "\"`"):
			c.quoted = true
		case name != "" && isASCIIWord(name):
			c.words[strings.ToLower(name)] = struct{}{}
		default:
			c.others = append(c.others, strings.ToLower(name))
		}
	}
	return c
}

// namedIn reports whether sqlText may name one of c's names: a word of it is one, in any case,
// or it contains one that is not a word.
func (c *columnNames) namedIn(sqlText string) bool {
	if c == nil || c.quoted {
		return c != nil
	}
	var buf [64]byte
	for i := 0; i < len(sqlText); {
		if !wordByte(sqlText[i]) {
			i++
			continue
		}
		j := i
		for j < len(sqlText) && wordByte(sqlText[j]) {
			j++
		}
		if w := sqlText[i:j]; len(w) <= len(buf) {
			lower := buf[:len(w)]
			for k := range len(w) {
				lower[k] = w[k]
				if 'A' <= w[k] && w[k] <= 'Z' {
					lower[k] += 'a' - 'A'
				}
			}
			if _, ok := c.words[string(lower)]; ok { // the conversion in a lookup does not allocate
				return true
			}
		} else if _, ok := c.words[strings.ToLower(w)]; ok {
			return true
		}
		i = j
	}
	for _, name := range c.others {
		if sqltok.ContainsFold(sqlText, name) {
			return true
		}
	}
	return false
}

// isASCIIWord reports whether name is made of ASCII letters, digits, _ and $ only.
func isASCIIWord(name string) bool {
	for k := range len(name) {
		if c := name[k]; c >= 0x80 || !wordByte(c) {
			return false
		}
	}
	return true
}

// columnsListed reports whether an INSERT's text has its column list: a ")" before its first
// VALUES (an INSERT without one names no column it gives a value of).
func columnsListed(sqlText string) bool {
	for i := 0; i+6 <= len(sqlText); i++ {
		if sqlText[i]|0x20 == 'v' && strings.EqualFold(sqlText[i:i+6], "values") && (i == 0 || !wordByte(sqlText[i-1])) {
			return strings.HasSuffix(strings.TrimRight(sqlText[:i], " \t\r\n"), ")")
		}
	}
	return true
}

// firstWord is sqlText's first word, lower-cased ("" when it starts otherwise).
func firstWord(sqlText string) string {
	s := strings.TrimLeft(sqlText, " \t\r\n(")
	n := 0
	for n < len(s) && n < 7 && s[n]|0x20 >= 'a' && s[n]|0x20 <= 'z' {
		n++
	}
	if n < len(s) && s[n]|0x20 >= 'a' && s[n]|0x20 <= 'z' {
		return ""
	}
	for _, w := range [...]string{"select", "insert", "update", "delete"} { // without lower-casing a copy
		if strings.EqualFold(s[:n], w) {
			return w
		}
	}
	return strings.ToLower(s[:n])
}

// boolLiteralsTable reads the one table of the statement toks (its first word first): the
// table's name as the cache keys it, the names its columns may be qualified with, an INSERT's
// column list (nil when it has none) and the index of its VALUES keyword (0 for other
// statements).
func boolLiteralsTable(toks []sqltok.Token, first, schema string) (table string, qualifiers, cols []string, values int, ok bool) {
	if first == "select" {
		table, qualifiers, ok = oneTable(toks, schema, true)
		return table, qualifiers, nil, 0, ok
	}
	i := 1
	switch first {
	case "insert":
		for i < len(toks) && toks[i].IsWord("low_priority", "delayed", "high_priority", "ignore") {
			i++
		}
		if i < len(toks) && toks[i].IsWord("into") {
			i++
		}
	case "delete":
		if i >= len(toks) || !toks[i].IsWord("from") {
			return "", nil, nil, 0, false
		}
		i++
	case "update":
		for i < len(toks) && toks[i].IsWord("low_priority", "ignore", "only") {
			i++
		}
	}
	name, at := tableNameAt(toks, i)
	if name == nil {
		return "", nil, nil, 0, false
	}
	table = qualifiedName(name, schema)
	qualifiers = []string{identName(name[len(name)-1])}
	i = at
	if first == "insert" {
		if i < len(toks) && toks[i].IsWord("values", "value") {
			return table, qualifiers, nil, i, table != "" // no column list: cols nil
		}
		if i >= len(toks) || toks[i].Text != "(" {
			return "", nil, nil, 0, false
		}
		for i++; i < len(toks) && toks[i].Text != ")"; i++ {
			switch {
			case toks[i].Kind == sqltok.Word || toks[i].Kind == sqltok.QuotedIdent:
				cols = append(cols, identName(toks[i]))
			case toks[i].Text != ",":
				return "", nil, nil, 0, false
			}
		}
		if i+1 >= len(toks) || !toks[i+1].IsWord("values", "value") {
			return "", nil, nil, 0, false
		}
		return table, qualifiers, cols, i + 1, table != ""
	}
	if i < len(toks) && toks[i].IsWord("as") {
		i++
	}
	if i < len(toks) && (toks[i].Kind == sqltok.QuotedIdent || toks[i].Kind == sqltok.Word && !toks[i].IsWord("set", "where", "using", "order", "limit", "returning")) {
		qualifiers = []string{identName(toks[i])}
	}
	for _, t := range toks[i:] {
		if t.IsWord("from") && first == "update" || t.IsWord("join", "using") {
			return "", nil, nil, 0, false // another table
		}
	}
	return table, qualifiers, nil, 0, table != ""
}

// tableNameAt reads a table's name at toks[i] (name or schema.name) and the index after it.
func tableNameAt(toks []sqltok.Token, i int) ([]sqltok.Token, int) {
	isName := func(j int) bool {
		return j < len(toks) && (toks[j].Kind == sqltok.Word || toks[j].Kind == sqltok.QuotedIdent)
	}
	if !isName(i) {
		return nil, i
	}
	if i+2 < len(toks) && toks[i+1].Text == "." && isName(i+2) {
		return toks[i : i+3], i + 3
	}
	return toks[i : i+1], i + 1
}

// qualifiedName is a table's name as oneTable writes it for the cache.
func qualifiedName(name []sqltok.Token, schema string) string {
	if len(name) == 3 {
		return quoteIdent(identName(name[0])) + "." + quoteIdent(identName(name[2]))
	}
	if schema == "" {
		return quoteIdent(identName(name[0]))
	}
	return quoteIdent(schema) + "." + quoteIdent(identName(name[0]))
}

// valueRows calls f with each item's place in its row and the index of its token when the
// item is a single token, for each parenthesized row after toks[values] (VALUES).
func valueRows(toks []sqltok.Token, values int, f func(item, at int)) {
	i := values + 1
	for i < len(toks) && toks[i].Text == "(" {
		depth, item, start := 0, 0, i+1
		for j := i; j < len(toks); j++ {
			depth += sqltok.ParenStep(toks[j])
			if depth == 1 && (toks[j].Text == "," || toks[j].Text == ")") || depth == 0 {
				if j == start+1 {
					f(item, start)
				}
				item, start = item+1, j+1
			}
			if depth == 0 {
				i = j + 1
				break
			}
		}
		if depth != 0 || i >= len(toks) || toks[i].Text != "," {
			return
		}
		i++
	}
}

// integerAt reports whether toks[i] is an unsigned integer literal that stands alone: no
// operator after it (`ok = 1 + x` is left).
func integerAt(toks []sqltok.Token, i int) bool {
	if i >= len(toks) || toks[i].Kind != sqltok.Number || strings.Trim(toks[i].Text, "0123456789") != "" {
		return false
	}
	if i > 0 && (toks[i-1].Kind == sqltok.Operator && toks[i-1].Text != "=" && toks[i-1].Text != "<>" && toks[i-1].Text != "!=") {
		return false
	}
	return i+1 >= len(toks) || toks[i+1].Kind != sqltok.Operator && toks[i+1].Text != "." && toks[i+1].Text != "::"
}

// assignment reports whether the column at toks[from] is the target of an assignment: after
// SET (or ON CONFLICT's DO UPDATE SET), at the start of the list or after a comma, before any
// WHERE.
func assignment(toks []sqltok.Token, from int) bool {
	if from == 0 || toks[from-1].Text != "," && !toks[from-1].IsWord("set") {
		return false
	}
	depth := 0
	for j := from - 1; j >= 0; j-- {
		depth -= sqltok.ParenStep(toks[j])
		switch {
		case depth < 0:
			return false
		case depth > 0:
		case toks[j].IsWord("set"):
			return true
		case toks[j].IsWord("where", "select", "values", "from", "returning"):
			return false
		}
	}
	return false
}

// truthOf is the truth value MariaDB's TINYINT(1) holding the integer literal v is.
func truthOf(v string) string {
	if strings.Trim(v, "0") == "" {
		return "false"
	}
	return "true"
}
