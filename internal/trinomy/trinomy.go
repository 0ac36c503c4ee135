// Package trinomy writes a Trino client's statement as MariaDB runs it, as internal/trinopg
// does for PostgreSQL: Trino's SHOW and DESCRIBE as queries of MariaDB's information_schema with
// Trino's columns and type names (show.go), Trino's lexical rules in MariaDB's (a
// "double-quoted" name in backticks, a string's backslash a backslash, not an escape, `a || b`
// Trino's concatenation, MariaDB's OR, as CONCAT(a, b)), Trino's date_add and date_diff, and
// NULLs sorted where Trino sorts them (nulls.go). It reads and writes text only: no
// connection, no clock, no state but a bounded cache of translations.
package trinomy

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/boundedcache"
	"github.com/queryflux/queryflux/internal/sqltok"
	"github.com/queryflux/queryflux/internal/trinodecl"
	"github.com/queryflux/queryflux/internal/trinopg"
)

// cacheMax bounds the statements whose translation is kept (dropped whole when full),
// cachedSQLMax the length of one kept: a pool's repeated SELECT 1 is translated once.
const (
	cacheMax     = 512
	cachedSQLMax = 4096
)

var cache = boundedcache.New[string, Translation](cacheMax)

// Session is where a Trino client's unqualified names point: its catalog (any name: a MariaDB
// server is one catalog) and schema (a MariaDB database), "" for none.
type Session struct{ Catalog, Schema string }

// SQL is sqlText, a Trino client's statement, as MariaDB runs it; sqlText itself when nothing
// in it reads differently. A division of columns is MariaDB's: Translate tells which tables'
// columns would make it Trino's.
func SQL(sqlText string, s Session) string { return Translate(sqlText, s).SQL }

// Translate is sqlText as MariaDB runs it, and the tables whose column types the catalog is to
// tell (columns.go) for its divisions to be Trino's (then WithColumns writes it).
func Translate(sqlText string, s Session) Translation {
	if sqltok.FirstKeywordIs(sqlText, sqltok.Trino, "show", "describe", "desc") {
		if out, ok := showSQL(sqlText, s); ok {
			return Translation{SQL: out}
		}
		return Translation{SQL: sqlText}
	}
	if out, ok := cache.Get(sqlText); ok {
		return out
	}
	out := lexical(sqlText, nil)
	if what := arrayUse(sqlText); what != "" {
		out = Translation{SQL: notSupported("Trino's arrays (" + what + ") are not supported on a MariaDB engine")}
	}
	if len(sqlText) <= cachedSQLMax {
		cache.Put(sqlText, out)
	}
	return out
}

// WithColumns is sqlText as MariaDB runs it, its divisions of integer columns (by cols, the
// catalog's answer for Translate's Tables) Trino's integer division.
func WithColumns(sqlText string, s Session, cols Columns) string {
	if sqltok.FirstKeywordIs(sqlText, sqltok.Trino, "show", "describe", "desc") {
		return SQL(sqlText, s)
	}
	if what := arrayUse(sqlText); what != "" {
		return notSupported("Trino's arrays (" + what + ") are not supported on a MariaDB engine")
	}
	return lexical(sqlText, &cols).SQL
}

// arrayFunctions are Trino's functions of arrays (MariaDB has no arrays).
var arrayFunctions = map[string]bool{"split": true, "cardinality": true, "element_at": true, "contains": true, "array_join": true,
	"array_agg": true, "array_distinct": true, "array_max": true, "array_min": true, "array_position": true, "array_sort": true,
	"sequence": true, "transform": true, "filter": true, "reduce": true, "zip": true, "flatten": true, "slice": true, "unnest": true}

// arrayUse names the first array a Trino statement makes or reads (array[...], an array
// function's call, a cast to array(...)), "" for none.
func arrayUse(sqlText string) string {
	if !sqltok.ContainsFold(sqlText, "array") && strings.IndexByte(sqlText, '(') < 0 {
		return ""
	}
	toks := sqltok.SignificantTokens(sqlText, sqltok.Trino)
	for i := 0; i+1 < len(toks); i++ {
		t := toks[i]
		if t.Kind != sqltok.Word || i > 0 && (toks[i-1].Text == "." || toks[i-1].IsWord("into", "table", "from", "join", "update", "exists", "function")) {
			continue // a name's part, a table's name
		}
		name := strings.ToLower(t.Text)
		switch next := toks[i+1].Text; {
		case name == "array" && (next == "[" || next == "("):
			return name + next + "..." + map[string]string{"[": "]", "(": ")"}[next]
		case arrayFunctions[name] && next == "(" && !(name == "filter" && i > 0 && toks[i-1].Text == ")"): // not an aggregate's FILTER (WHERE ...)
			return name + "(...)"
		}
	}
	return ""
}

// notSupported is a MariaDB statement that fails with SQLSTATE 0A000 (Trino's NOT_SUPPORTED)
// and message.
func notSupported(message string) string {
	return "SIGNAL SQLSTATE '0A000' SET MYSQL_ERRNO = 1235, MESSAGE_TEXT = " + mariaString(message)
}

// lexical rewrites what MariaDB's default sql_mode reads otherwise than Trino: quoted names,
// backslashes in strings, and the || operator. The text between tokens (blanks, comments) is
// kept. cols are the catalog's column types (nil: not asked; then Tables names the tables to
// ask of, if a division has a column operand).
func lexical(sqlText string, cols *Columns) Translation {
	all := sqltok.Tokenize(sqlText, sqltok.Trino)
	var toks []sqltok.Token
	changed := false
	for _, t := range all {
		if t.Significant() {
			toks = append(toks, t)
			changed = changed || t.Kind == sqltok.QuotedIdent || t.Text == "||" ||
				t.Kind == sqltok.String && strings.Contains(t.Text, `\`) || t.IsWord("date_add") || t.IsWord("date_diff") ||
				t.IsWord("offset") || t.IsWord("all") || t.IsWord("cast") || t.Kind == sqltok.Word && numericLiteralTypes[strings.ToLower(t.Text)] != "" || t.IsWord("uuid") || t.IsWord("json") || t.IsWord("interval") || t.IsWord("row") || t.IsWord("order") || t.IsWord("table") ||
				t.Kind == sqltok.Word && isCallForm(t.Text)
		}
	}
	query := sqltok.FirstKeywordIs(sqlText, sqltok.Trino, "select", "with")
	var places, lasts []int
	if query {
		places, lasts = trinopg.UnnamedItems(toks)
	}
	var names *integerResolver
	var tables []Table
	if cols != nil {
		names = &integerResolver{toks: toks, columns: cols}
	} else if strings.Contains(sqlText, "/") || strings.Contains(sqlText, "*") {
		tables = tablesToAsk(toks)
	}
	divides := integerDivisions(toks, names)
	if !changed && len(places) == 0 && len(divides) == 0 {
		return Translation{SQL: sqlText, Tables: tables}
	}
	text := make([]string, len(toks))
	pre := make([]string, len(toks))
	post := make([]string, len(toks))
	for i, t := range toks {
		text[i] = t.Text
		switch {
		case t.Kind == sqltok.QuotedIdent:
			text[i] = backtick(strings.ReplaceAll(t.Text[1:len(t.Text)-1], `""`, `"`))
		case t.Kind == sqltok.String && strings.HasPrefix(t.Text, "'"):
			text[i] = strings.ReplaceAll(t.Text, `\`, `\\`)
		}
	}
	concats(toks, text, pre, post)
	dateUnits(toks, text, pre, post)
	offsetFirst(toks, text, post)
	castTypes(toks, text)
	columnTypes(toks, text)
	typedLiterals(toks, text, pre, post)
	if query {
		intervalItems(toks, text)
		rowItems(toks, text, pre, post)
	}
	for _, i := range divides {
		text[i] = "DIV"
	}
	if changed {
		gaps := gapsOf(sqlText, toks)
		calls(toks, text, pre, post, gaps)
		sortNulls(toks, text, pre, post, gaps, names.starColumn)
	}
	for k, n := range places { // Trino's name of an unaliased expression, MariaDB's its text
		post[lasts[k]] += " AS _col" + strconv.Itoa(n)
	}
	var b strings.Builder
	at := 0
	for i, t := range toks {
		b.WriteString(sqlText[at:t.Pos])
		b.WriteString(pre[i])
		b.WriteString(text[i])
		b.WriteString(post[i])
		at = t.Pos + len(t.Text)
	}
	b.WriteString(sqlText[at:])
	return Translation{SQL: b.String(), Tables: tables}
}

// concats writes each chain of operands joined by || as CONCAT(a, b, ...): || binds less
// tightly than arithmetic and more than comparison, so an operand is an arithmetic
// expression. A chain whose operands it cannot read is left as written.
func concats(toks []sqltok.Token, text, pre, post []string) {
	used := make([]bool, len(toks)) // a || already in a chain
	for i := range toks {
		j := operand(toks, i)
		if j < 0 || j >= len(toks) || toks[j].Text != "||" || used[j] {
			continue
		}
		ops, ends := []int{}, []int{}
		k := j
		for k < len(toks) && toks[k].Text == "||" {
			end := operand(toks, k+1)
			if end < 0 {
				break
			}
			ops, ends = append(ops, k), append(ends, end)
			k = end
		}
		if len(ops) == 0 {
			continue
		}
		pre[i] = "CONCAT(" + pre[i]
		for _, op := range ops {
			used[op] = true
			text[op] = ","
		}
		post[ends[len(ends)-1]-1] += ")"
	}
}

// dateUnits writes Trino's date_add('unit', n, x) and date_diff('unit', x, y), whose names
// MariaDB's DATE_ADD(x, INTERVAL n unit) and DATEDIFF take otherwise, as TIMESTAMPADD(unit, n,
// x) and TIMESTAMPDIFF(unit, x, y): whole units, toward zero, as Trino counts them. Trino's
// milliseconds are MariaDB's microseconds by 1000.
func dateUnits(toks []sqltok.Token, text, pre, post []string) {
	for i := 0; i+5 < len(toks); i++ {
		add, diff := toks[i].IsWord("date_add"), toks[i].IsWord("date_diff")
		if !add && !diff || toks[i+1].Text != "(" || toks[i+2].Kind != sqltok.String || toks[i+3].Text != "," {
			continue
		}
		unit := strings.ToUpper(strings.Trim(toks[i+2].Text, "'"))
		if !dateUnit[unit] {
			continue // MariaDB's error for it, or MariaDB's own DATE_ADD(x, INTERVAL ...)
		}
		end := closing(toks, i+1, "(", ")")
		if end < 0 {
			continue
		}
		milli := unit == "MILLISECOND"
		switch {
		case add && milli:
			n := operand(toks, i+4)
			if n < 0 || n >= len(toks) || toks[n].Text != "," {
				continue
			}
			pre[i+4], post[n-1] = "1000 * ("+pre[i+4], post[n-1]+")"
		case diff && milli:
			post[end-1] += " DIV 1000"
		}
		if milli {
			unit = "MICROSECOND"
		}
		text[i], text[i+2] = "TIMESTAMPADD", unit
		if diff {
			text[i] = "TIMESTAMPDIFF"
		}
	}
}

// offsetFirst writes Trino's row-count clauses, OFFSET n [ROW | ROWS] then LIMIT m or LIMIT
// ALL, as MariaDB reads them: OFFSET n ROWS [FETCH FIRST m ROWS ONLY] (MariaDB's OFFSET comes
// after its LIMIT, or takes ROWS and a FETCH), and LIMIT ALL as no limit. Trino's FETCH FIRST
// is MariaDB's too.
func offsetFirst(toks []sqltok.Token, text, post []string) {
	count := func(i int) bool {
		return i < len(toks) && (toks[i].Kind == sqltok.Number || toks[i].Kind == sqltok.Param)
	}
	for i := 0; i < len(toks); i++ {
		if toks[i].IsWord("limit") && i+1 < len(toks) && toks[i+1].IsWord("all") {
			text[i], text[i+1] = "", ""
			continue
		}
		if !toks[i].IsWord("offset") || !count(i+1) || i > 0 && toks[i-1].Text == "." {
			continue
		}
		j := i + 2
		if j < len(toks) && (toks[j].IsWord("rows") || toks[j].IsWord("row")) {
			j++
		} else {
			post[i+1] += " ROWS"
		}
		if j+1 < len(toks) && toks[j].IsWord("limit") && count(j+1) {
			text[j], post[j+1] = "FETCH FIRST", post[j+1]+" ROWS ONLY"
		}
	}
}

var dateUnit = map[string]bool{"MILLISECOND": true, "SECOND": true, "MINUTE": true, "HOUR": true, "DAY": true,
	"WEEK": true, "MONTH": true, "QUARTER": true, "YEAR": true}

// operand is the end (exclusive) of the arithmetic expression starting at toks[i], -1 when none
// starts there.
func operand(toks []sqltok.Token, i int) int {
	for {
		for i < len(toks) && (toks[i].Text == "-" || toks[i].Text == "+") { // unary
			i++
		}
		end := atom(toks, i)
		if end < 0 {
			return -1
		}
		for end < len(toks) && toks[end].Text == "[" { // a subscript
			if end = closing(toks, end, "[", "]"); end < 0 {
				return -1
			}
		}
		if end >= len(toks) || !arithmetic[toks[end].Text] {
			return end
		}
		i = end + 1
	}
}

var arithmetic = map[string]bool{"+": true, "-": true, "*": true, "/": true, "%": true}

// atom is the end of the value starting at toks[i]: a literal, a name, a call, a typed literal,
// a parenthesised expression or CASE ... END; -1 when none does.
func atom(toks []sqltok.Token, i int) int {
	if i >= len(toks) {
		return -1
	}
	t := toks[i]
	switch {
	case t.Kind == sqltok.String || t.Kind == sqltok.Number || t.Kind == sqltok.Param:
		return i + 1
	case t.Text == "(":
		return closing(toks, i, "(", ")")
	case t.IsWord("case"):
		depth := 0
		for k := i; k < len(toks); k++ {
			if toks[k].IsWord("case") {
				depth++
			} else if toks[k].IsWord("end") {
				if depth--; depth == 0 {
					return k + 1
				}
			}
		}
		return -1
	case t.Kind == sqltok.Word && notValue[strings.ToLower(t.Text)]:
		return -1
	case t.Kind == sqltok.Word && i+1 < len(toks) && toks[i+1].Text == "(": // a call
		return closing(toks, i+1, "(", ")")
	case t.Kind == sqltok.Word && i+1 < len(toks) && toks[i+1].Kind == sqltok.String: // date '...'
		return i + 2
	case t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent: // a name, maybe dotted
		for i+2 < len(toks) && toks[i+1].Text == "." && (toks[i+2].Kind == sqltok.Word || toks[i+2].Kind == sqltok.QuotedIdent) {
			i += 2
		}
		return i + 1
	}
	return -1
}

// closing is the index after the bracket closing the one at toks[i].
func closing(toks []sqltok.Token, i int, open, close string) int {
	depth := 0
	for k := i; k < len(toks); k++ {
		switch toks[k].Text {
		case open:
			depth++
		case close:
			if depth--; depth == 0 {
				return k + 1
			}
		}
	}
	return -1
}

// notValue are the words that start no value: clauses and operators.
var notValue = map[string]bool{"select": true, "from": true, "where": true, "and": true, "or": true, "not": true,
	"is": true, "as": true, "when": true, "then": true, "else": true, "end": true, "in": true, "like": true,
	"between": true, "on": true, "join": true, "group": true, "order": true, "by": true, "having": true,
	"limit": true, "offset": true, "union": true, "except": true, "intersect": true, "distinct": true, "all": true,
	"exists": true, "with": true, "values": true, "set": true, "into": true, "escape": true, "over": true,
	"partition": true, "asc": true, "desc": true, "fetch": true, "using": true}

// integerDivisions are the / operators of toks whose operands are both integers as the text
// types them (integer literals, integer arithmetic of them, count(...), length(...) and the
// like, casts to an integer type): Trino's integer division truncates toward zero, as MariaDB's
// DIV does, where MariaDB's / gives a decimal (7 / 2 is 3.5000). A column's type is not known
// here: its division is MariaDB's.
func integerDivisions(toks []sqltok.Token, names *integerResolver) []int {
	var out []int
	for i, t := range toks {
		if t.Text != "/" || t.Kind != sqltok.Operator || i == 0 {
			continue
		}
		if integerOperandAt(toks, i+1, names) && integerTermBefore(toks, i, names) {
			out = append(out, i)
		}
	}
	return out
}

// integerTermBefore reports whether the term ending before toks[end] (atoms joined by *, / and
// %, which bind alike and from the left) is an integer's.
func integerTermBefore(toks []sqltok.Token, end int, names *integerResolver) bool {
	for {
		start := atomBefore(toks, end)
		if start < 0 || !integerAtom(toks, start, end, names) {
			return false
		}
		if start > 0 && (toks[start-1].Text == "-" || toks[start-1].Text == "+") && (start == 1 || !valueEnd(toks[start-2])) {
			start-- // unary
		}
		if start == 0 || !multiplicative[toks[start-1].Text] {
			return true
		}
		end = start - 1
	}
}

var multiplicative = map[string]bool{"*": true, "/": true, "%": true}

// valueEnd reports whether t may end a value (so that a + or - after it is binary).
func valueEnd(t sqltok.Token) bool {
	return t.Kind == sqltok.Number || t.Kind == sqltok.String || t.Kind == sqltok.QuotedIdent || t.Text == ")" ||
		t.Kind == sqltok.Word && !notValue[strings.ToLower(t.Text)]
}

// integerOperandAt reports whether the atom at toks[i] (after any sign) is an integer's.
func integerOperandAt(toks []sqltok.Token, i int, names *integerResolver) bool {
	for i < len(toks) && (toks[i].Text == "-" || toks[i].Text == "+") {
		i++
	}
	end := atom(toks, i)
	return end > 0 && (end == len(toks) || toks[end].Text != "[") && integerAtom(toks, i, end, names)
}

// atomBefore is the start of the atom ending before toks[end]: a number, a parenthesised
// expression, a call or a name; -1 for anything else.
func atomBefore(toks []sqltok.Token, end int) int {
	if end <= 0 {
		return -1
	}
	switch last := toks[end-1]; {
	case last.Kind == sqltok.Number:
		return end - 1
	case last.Kind == sqltok.QuotedIdent || last.Kind == sqltok.Word && !notValue[strings.ToLower(last.Text)]:
		start := end - 1 // a name, maybe dotted
		for start >= 2 && toks[start-1].Text == "." && (toks[start-2].Kind == sqltok.Word || toks[start-2].Kind == sqltok.QuotedIdent) {
			start -= 2
		}
		if start > 0 && (toks[start-1].Kind == sqltok.Word && !notValue[strings.ToLower(toks[start-1].Text)] || toks[start-1].Kind == sqltok.String) {
			return -1 // a typed literal's or another name's word: not a column's name alone
		}
		return start
	case last.Text == ")":
		depth := 0
		for k := end - 1; k >= 0; k-- {
			depth -= sqltok.ParenStep(toks[k])
			if depth == 0 {
				if k > 1 && toks[k-1].IsWord("over") && toks[k-2].Text == ")" {
					return atomBefore(toks, k-1) // a window function's call
				}
				if k > 0 && toks[k-1].Kind == sqltok.Word && !notValue[strings.ToLower(toks[k-1].Text)] {
					return k - 1 // a call
				}
				return k
			}
		}
	}
	return -1
}

// integerAtom reports whether toks[start:end], one atom, is an integer as the text says: an
// integer literal, a parenthesised integer expression, a call of a function whose value is an
// integer, or a cast to an integer type.
func integerAtom(toks []sqltok.Token, start, end int, names *integerResolver) bool {
	t := toks[start]
	switch {
	case t.Kind == sqltok.Number:
		return end == start+1 && strings.Trim(t.Text, "0123456789") == ""
	case t.Text == "(":
		return integerExpression(toks, start+1, end-1, names)
	case t.Kind == sqltok.Word && end > start+2 && toks[start+1].Text == "(":
		name := strings.ToLower(t.Text)
		if name == "cast" || name == "try_cast" {
			n := end - 1 // the closing parenthesis
			return n-start >= 5 && toks[n-2].IsWord("as") && integerTypes[strings.ToLower(toks[n-1].Text)]
		}
		if integerOfArguments[name] {
			return integerArguments(toks, start+2, end-1, names)
		}
		return integerFunctions[name]
	case t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent: // a column's name
		return names.integerName(start, end)
	}
	return false
}

// integerOfArguments are functions whose value is an integer when their arguments are (Trino's
// sum of integers is a bigint; MariaDB's a decimal, which DIV truncates as well).
var integerOfArguments = map[string]bool{"sum": true, "min": true, "max": true, "abs": true, "coalesce": true,
	"greatest": true, "least": true}

// integerArguments reports whether the arguments toks[lo:hi] (DISTINCT aside) are each an
// integer expression.
func integerArguments(toks []sqltok.Token, lo, hi int, names *integerResolver) bool {
	if lo < hi && toks[lo].IsWord("distinct") {
		lo++
	}
	for _, a := range splitAt(toks, lo, hi) {
		if !integerExpression(toks, a[0], a[1], names) {
			return false
		}
	}
	return lo < hi
}

// integerExpression reports whether toks[lo:hi] are integer atoms joined by arithmetic operators.
func integerExpression(all []sqltok.Token, lo, hi int, names *integerResolver) bool {
	toks := all[:hi]
	i := lo
	for {
		for i < len(toks) && (toks[i].Text == "-" || toks[i].Text == "+") {
			i++
		}
		end := atom(toks, i)
		if end < 0 || !integerAtom(toks, i, end, names) {
			return false
		}
		if end == len(toks) {
			return true
		}
		if !arithmetic[toks[end].Text] {
			return false
		}
		i = end + 1
	}
}

// integerTypes are Trino's integer types a cast names.
var integerTypes = map[string]bool{"tinyint": true, "smallint": true, "integer": true, "int": true, "bigint": true}

// integerFunctions are functions whose value is an integer in Trino and in MariaDB.
var integerFunctions = map[string]bool{"count": true, "length": true, "char_length": true, "character_length": true,
	"year": true, "quarter": true, "month": true, "week": true, "day": true, "day_of_month": true, "day_of_week": true,
	"dow": true, "day_of_year": true, "doy": true, "hour": true, "minute": true, "second": true, "extract": true,
	"strpos": true, "position": true, "bit_length": true, "octet_length": true}

// castTypes writes the Trino type a cast names as MariaDB's CAST takes it (MariaDB's syntax
// error otherwise): an integer type as SIGNED (a BIGINT), double and real as DOUBLE, varchar[(n)]
// as CHAR[(n)], varbinary as BINARY, timestamp[(p)] as DATETIME[(p)]. decimal(p,s), date and
// time are MariaDB's as written.
func castTypes(toks []sqltok.Token, text []string) {
	for i := 0; i+1 < len(toks); i++ {
		if !toks[i].IsWord("cast", "try_cast") || toks[i+1].Text != "(" {
			continue
		}
		end := closing(toks, i+1, "(", ")") // after the closing parenthesis
		if end < 0 {
			continue
		}
		depth := 0
		for k := i + 1; k < end-1; k++ {
			depth += sqltok.ParenStep(toks[k])
			if depth != 1 || !toks[k].IsWord("as") {
				continue
			}
			t := k + 1
			switch name := strings.ToLower(toks[t].Text); {
			case toks[t].Kind != sqltok.Word:
			case name == "bigint" || name == "integer" || name == "int" || name == "smallint" || name == "tinyint":
				text[t] = "SIGNED"
			case name == "double" || name == "real":
				text[t] = "DOUBLE"
				if t+1 < end-1 && toks[t+1].IsWord("precision") {
					text[t+1] = ""
				}
			case name == "varchar":
				text[t] = "CHAR"
			case name == "varbinary":
				text[t] = "BINARY"
			case name == "timestamp" && !(t+1 < end-1 && toks[t+1].IsWord("with")):
				text[t] = "DATETIME"
			}
		}
	}
}

// typedLiterals writes Trino's uuid '..' and json '..' literals, which MariaDB has not, as
// CAST('..' AS UUID) (MariaDB checks it, and writes it as Trino does) and JSON_COMPACT('..')
// (Trino's json literal is its text without blanks). The Trino frontend announces a select
// item that is one as uuid or json (trinodecl's literals.go).
func typedLiterals(toks []sqltok.Token, text, pre, post []string) {
	for i := 0; i+1 < len(toks); i++ {
		if toks[i+1].Kind != sqltok.String || !strings.HasPrefix(toks[i+1].Text, "'") || i > 0 && toks[i-1].Text == "." {
			continue
		}
		switch {
		case toks[i].Kind == sqltok.Word && numericLiteralTypes[strings.ToLower(toks[i].Text)] != "":
			typ := numericLiteralTypes[strings.ToLower(toks[i].Text)]
			if typ == "DECIMAL" {
				d := trinodecl.DecimalLiteralType(trinodecl.StringValue(toks[i+1].Text))
				if !strings.HasPrefix(d, "decimal(") {
					continue // not a decimal's text: MariaDB's error as written
				}
				typ = strings.ToUpper(d)
			}
			text[i], pre[i+1], post[i+1] = "", "CAST(", " AS "+typ+")"
		case toks[i].IsWord("uuid"):
			text[i], pre[i+1], post[i+1] = "", "CAST(", " AS UUID)"
		case toks[i].IsWord("json"):
			text[i], pre[i+1], post[i+1] = "", "JSON_COMPACT(", ")"
		}
	}
}

// numericLiteralTypes are MariaDB's cast types of Trino's numeric typed literals (real '1.5',
// bigint '7', decimal '1.50'), which MariaDB has not: a decimal's precision and scale are its
// text's.
var numericLiteralTypes = map[string]string{"real": "FLOAT", "double": "DOUBLE", "tinyint": "SIGNED", "smallint": "SIGNED",
	"integer": "SIGNED", "int": "SIGNED", "bigint": "SIGNED", "decimal": "DECIMAL"}

// intervalItems writes a select item that is a Trino interval literal (interval '2' day,
// interval '1-2' year to month), which MariaDB has only inside date arithmetic, as its value's
// text as Trino writes it ('2 00:00:00.000', '1-2'); the Trino frontend announces its column as
// the interval (trinodecl's literals.go). An interval inside an expression is MariaDB's.
func intervalItems(toks []sqltok.Token, text []string) {
	los, his := trinopg.ItemBounds(toks)
	for k, lo := range los {
		for _, n := range []int{3, 5} {
			end := lo + n
			if end > his[k] || !aliasOnly(toks[end:his[k]]) {
				continue
			}
			if value, _, ok := trinodecl.IntervalLiteral(toks[lo:end]); ok {
				text[lo] = "'" + value + "'"
				for j := lo + 1; j < end; j++ {
					text[j] = ""
				}
			}
		}
	}
}

// aliasOnly reports whether toks are nothing or an item's alias (AS name, name).
func aliasOnly(toks []sqltok.Token) bool {
	name := func(t sqltok.Token) bool { return t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent }
	return len(toks) == 0 || len(toks) == 1 && name(toks[0]) && !toks[0].IsWord("to") ||
		len(toks) == 2 && toks[0].IsWord("as") && name(toks[1])
}

// gapsOf is the text before each of toks (blanks, comments) since the one before it.
func gapsOf(sqlText string, toks []sqltok.Token) []string {
	gaps := make([]string, len(toks))
	at := 0
	for i, t := range toks {
		gaps[i] = sqlText[at:t.Pos]
		at = t.Pos + len(t.Text)
	}
	return gaps
}
