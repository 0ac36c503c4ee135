package duckengine

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// mysqlCompat is a MySQL client's sqlText with what DuckDB reads otherwise written as DuckDB
// reads it (sqlText itself when there is none):
//   - literals (sqltok.MySQLLiteral): 'O\'Brien', 'C:\\temp', _binary'...', "a string", the same value;
//   - a string that is not UTF-8 (a bytes parameter as PyMySQL and mysqlclient write it), a BLOB;
//   - `backquoted` names, double-quoted (DuckDB reads backquotes from 2.0 on);
//   - # comments, as -- comments;
//   - LIMIT offset, count (numbers or ? parameters), as LIMIT count OFFSET offset (DuckDB:
//     "LIMIT #,# syntax is not supported"); with a ? there, every ? is numbered ($1, $2, ...),
//     so the swapped pair still binds the client's parameters in their order.
//   - DATABASE(), SCHEMA(), CURDATE(), CURTIME() as DuckDB names them (mysqlNoArgFuncs);
//   - FROM DUAL, as a one-row subquery;
//   - information_schema.tables, .columns, .schemata, .key_column_usage, .triggers, .files and
//     .partitions, as MySQL's (mysqlInformationSchema).
//   - INSERT ... ON DUPLICATE KEY UPDATE a = VALUES(a), as ON CONFLICT DO UPDATE SET a =
//     excluded.a; REPLACE [INTO], as INSERT OR REPLACE INTO (their affected rows are made
//     MySQL's in upsert.go).
//   - GROUP_CONCAT's SEPARATOR, DATE_FORMAT, DATEDIFF, CAST AS SIGNED, LIKE (mysqlfunctions.go).
//   - a / b, as a * 1e0 / b: MySQL divides integers exactly (division.go); a <=> b, as a IS NOT
//     DISTINCT FROM b.
//
// Before, 'O\'Brien' (what PyMySQL and mysqlclient send for the parameter O'Brien) failed as a
// syntax error, 'C:\\temp' came back with both backslashes, and SELECT `id` FROM `t` (as ORMs
// and mysql2's escapeId write names) failed.
func mysqlCompat(sqlText string) string {
	sqlText = insertSet(sqlText) // mysqlinsertset.go
	if !mayNeedMySQLCompat(sqlText) {
		return sqlText
	}
	if _, stripped, ok := updateVariables(sqlText); ok {
		sqlText = stripped // the variables are set before it runs (mysqlupdatevars.go)
	}
	toks := sqltok.Tokenize(sqlText, sqltok.MySQL)
	var b strings.Builder
	changed := false
	// numbered: a LIMIT pair has a ? (mysql2's execute, mysqlclient's server-side statements):
	// every ? is written $n, so that the pair's two can be swapped into LIMIT count OFFSET offset
	// and still bind the client's parameters in the client's order.
	numbered, params := paramLimitPair(toks), 0
	param := func(t sqltok.Token) string {
		if t.Kind != sqltok.Param || !numbered {
			return t.Text
		}
		params++
		return "$" + strconv.Itoa(params)
	}
	// upsert: past an INSERT's ON DUPLICATE KEY UPDATE, where VALUES(col) is the value the row
	// would have had (DuckDB's excluded.col).
	replace, upsert := sqltok.FirstKeywordIs(sqlText, sqltok.MySQL, "replace"), false
	first := nextSignificant(toks, 0)
	edits := mysqlFunctionEdits(toks)
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if e, ok := edits[i]; ok {
			b.WriteString(e.before)
			changed = true
			if e.to >= 0 {
				b.WriteString(e.text)
				i = e.to
				continue
			}
		}
		// A string that is not UTF-8 is bytes (PyMySQL and mysqlclient write a bytes parameter
		// as a plain '...' string of them, which MySQL stores into a BLOB as they are): DuckDB
		// refuses such a string, and takes it as a BLOB.
		if v, binary, n := sqltok.MySQLLiteral(toks, i); n > 0 {
			if binary || !utf8.ValidString(v) {
				b.WriteString(blobLiteral(v))
			} else {
				b.WriteString(duckString(timeOfDay(v)))
			}
			i += n - 1
			changed = true
			continue
		}
		if t.Kind == sqltok.String && !t.Unterminated && strings.HasPrefix(t.Text, "'0 ") && len(t.Text) >= 2 {
			if v := sqltok.MySQLStringValue(t.Text); timeOfDay(v) != v {
				b.WriteString(duckString(timeOfDay(v)))
				changed = true
				continue
			}
		}
		if t.Kind == sqltok.String && !t.Unterminated && len(t.Text) >= 2 && t.Text[0] == '\'' && !utf8.ValidString(t.Text) {
			b.WriteString(blobLiteral(sqltok.MySQLStringValue(t.Text)))
			changed = true
			continue
		}
		switch {
		case i == first && t.IsWord("insert") && nextSignificant(toks, i+1) < len(toks) && toks[nextSignificant(toks, i+1)].IsWord("ignore"):
			// INSERT IGNORE [INTO] t ...: DuckDB's INSERT OR IGNORE INTO t ..., which leaves out
			// a row whose key is taken (MySQL's also a row an error refuses: DuckDB's fails).
			b.WriteString("INSERT OR IGNORE INTO")
			i = nextSignificant(toks, i+1)
			if j := nextSignificant(toks, i+1); j < len(toks) && toks[j].IsWord("into") {
				i = j
			}
			changed = true
		case i == first && t.IsWord("update") && nextSignificant(toks, i+1) < len(toks) && toks[nextSignificant(toks, i+1)].IsWord("ignore"):
			// UPDATE IGNORE t ...: DuckDB read IGNORE as the table's name (1146). Its values
			// are cut rather than refused (strictExpr reads the client's IGNORE); a row whose
			// new key another row has is still refused, where MariaDB leaves it as it was.
			b.WriteString(t.Text)
			i = nextSignificant(toks, i+1)
			changed = true
		case replace && t.IsWord("replace"):
			// REPLACE [INTO] t ...: DuckDB's INSERT OR REPLACE INTO t ..., which replaces a row
			// whose key the new one has, as MySQL's deletes it and inserts.
			b.WriteString("INSERT OR REPLACE INTO")
			if j := nextSignificant(toks, i+1); j < len(toks) && toks[j].IsWord("into") {
				i = j
			}
			replace, changed = false, true
		case t.IsWord("on") && wordsAt(toks, i, "on", "duplicate", "key", "update") > 0:
			// INSERT ... ON DUPLICATE KEY UPDATE a = ...: DuckDB's ON CONFLICT DO UPDATE SET
			// (a table with more than one unique key needs a conflict target there: DuckDB
			// says so).
			b.WriteString("ON CONFLICT DO UPDATE SET")
			i = wordsAt(toks, i, "on", "duplicate", "key", "update")
			upsert, changed = true, true
		case upsert && t.IsWord("values") && valuesCall(toks, i) > 0:
			col := toks[nextSignificant(toks, nextSignificant(toks, i+1)+1)]
			name := col.Text
			if col.Kind == sqltok.QuotedIdent && name[0] == '`' {
				name = quoteIdent(strings.ReplaceAll(name[1:len(name)-1], "``", "`"))
			}
			b.WriteString("excluded." + name)
			i = valuesCall(toks, i)
			changed = true
		case t.Kind == sqltok.Operator && strings.HasSuffix(t.Text, "@"): // @v, @@v (mysqlvars.go)
			text, end := variableAt(toks, i)
			if end < 0 {
				b.WriteString(t.Text)
				continue
			}
			b.WriteString(text)
			i, changed = end, true
		case atIdent(toks, i):
			b.WriteString(`"` + t.Text + `"`)
			changed = true
		case (t.Kind == sqltok.Word || t.Kind == sqltok.QuotedIdent) && mysqlInformationSchema(toks, i) != "":
			b.WriteString(mysqlInformationSchema(toks, i))
			i = nextSignificant(toks, nextSignificant(toks, i+1)+1)
			changed = true
		case t.Kind == sqltok.QuotedIdent && t.Text[0] == '`' && !t.Unterminated && len(t.Text) >= 2:
			b.WriteString(quoteIdent(strings.ReplaceAll(t.Text[1:len(t.Text)-1], "``", "`")))
			changed = true
		case t.Kind == sqltok.Operator && t.Text == "<=>": // MySQL's NULL-safe equality
			b.WriteString(" IS NOT DISTINCT FROM ")
			changed = true
		case comparesTwoStrings(toks, i): // 'a' = 'A' (mysqlliterals.go)
			b.WriteString(" COLLATE NOCASE " + t.Text)
			changed = true
		case isDivision(t):
			b.WriteString(exactDivisionOperator + t.Text[1:]) // division.go
			changed = true
		case t.Kind == sqltok.Comment && t.Text[0] == '#':
			b.WriteString("--" + t.Text[1:])
			changed = true
		case t.Kind == sqltok.Word && isFromDual(toks, i):
			b.WriteString(t.Text + ` (SELECT 1) AS "dual"`)
			i = nextSignificant(toks, i+1)
			changed = true
		case t.Kind == sqltok.Word && noArgCall(toks, i) >= 0 && mysqlNoArgFuncs[strings.ToLower(t.Text)] != "":
			b.WriteString(mysqlNoArgFuncs[strings.ToLower(t.Text)])
			i = noArgCall(toks, i)
			changed = true
		case t.Kind == sqltok.Word && strings.EqualFold(t.Text, "limit"):
			offset, count, end, ok := limitPair(toks, i+1)
			if !ok {
				b.WriteString(t.Text)
				continue
			}
			o := param(offset)
			b.WriteString(t.Text + " " + param(count) + " OFFSET " + o)
			i = end - 1
			changed = true
		case t.Kind == sqltok.Param && numbered:
			b.WriteString(param(t))
			changed = true
		default:
			b.WriteString(t.Text)
		}
	}
	if !changed {
		return sqlText
	}
	return b.String()
}

// wordsAt is the index of the last of words when they follow each other from toks[i] on
// (blanks and comments between them), else 0.
func wordsAt(toks []sqltok.Token, i int, words ...string) int {
	last := 0
	for _, w := range words {
		if i >= len(toks) || !toks[i].IsWord(w) {
			return 0
		}
		last, i = i, nextSignificant(toks, i+1)
	}
	return last
}

// valuesCall is the index of the ")" of VALUES(col) at toks[i] (a name, plain or quoted,
// alone in the parentheses), else 0.
func valuesCall(toks []sqltok.Token, i int) int {
	open := nextSignificant(toks, i+1)
	name := nextSignificant(toks, open+1)
	end := nextSignificant(toks, name+1)
	if end >= len(toks) || toks[open].Text != "(" || toks[end].Text != ")" ||
		toks[name].Kind != sqltok.Word && (toks[name].Kind != sqltok.QuotedIdent || toks[name].Unterminated) {
		return 0
	}
	return end
}

// mysqlNoArgFuncs are MySQL functions called without arguments that DuckDB names otherwise,
// with what DuckDB answers for them (the MySQL CLI's status asks DATABASE(); ORMs ask it at
// connect).
var mysqlNoArgFuncs = map[string]string{"database": "current_database()", "schema": "current_database()",
	"curdate": "current_date", "curtime": "current_localtime()", "current_date": "current_date"}

// noArgCall is, when toks[i] is called with no arguments (a "(" and a ")" follow, blanks and
// comments between), the index of that ")"; -1 otherwise.
func noArgCall(toks []sqltok.Token, i int) int {
	open := nextSignificant(toks, i+1)
	if open >= len(toks) || toks[open].Text != "(" {
		return -1
	}
	if closing := nextSignificant(toks, open+1); closing < len(toks) && toks[closing].Text == ")" {
		return closing
	}
	return -1
}

// mysqlInformationSchema is, when toks[i:] name information_schema.tables, .columns,
// .schemata or .key_column_usage (any case), the view that answers them as MySQL does (catalog.go: a database is a
// DuckDB catalog); "" otherwise.
func mysqlInformationSchema(toks []sqltok.Token, i int) string {
	// TypeORM quotes both names (`INFORMATION_SCHEMA`.`TABLES`): DuckDB's own view answered it,
	// without the client's tables, and TypeORM's second start created them again (1050).
	if toks[i].Kind != sqltok.Word && toks[i].Kind != sqltok.QuotedIdent || !strings.EqualFold(identText(toks[i]), "information_schema") {
		return ""
	}
	dot := nextSignificant(toks, i+1)
	name := nextSignificant(toks, dot+1)
	if name >= len(toks) || toks[dot].Text != "." || toks[name].Kind != sqltok.Word && toks[name].Kind != sqltok.QuotedIdent {
		return ""
	}
	if n := strings.ToLower(identText(toks[name])); mysqlInfoSchemaViews[n] {
		return "qf_mysql_" + n
	}
	return ""
}

// isFromDual reports whether toks[i] is FROM and the next word DUAL: MySQL's table of one row,
// which DuckDB does not have (a table named dual must be quoted in MySQL: DUAL is reserved).
func isFromDual(toks []sqltok.Token, i int) bool {
	j := nextSignificant(toks, i+1)
	return strings.EqualFold(toks[i].Text, "from") && j < len(toks) && toks[j].Kind == sqltok.Word && strings.EqualFold(toks[j].Text, "dual")
}

// nextSignificant is the index of the first token from toks[i] on that is neither blank nor a
// comment (len(toks) when there is none).
func nextSignificant(toks []sqltok.Token, i int) int {
	for i < len(toks) && !toks[i].Significant() {
		i++
	}
	return i
}

// mayNeedMySQLCompat reports cheaply whether mysqlCompat may change sqlText: most statements
// (a LIMIT and commas elsewhere included) cost a few scans, no tokenizing and no allocation.
func mayNeedMySQLCompat(sqlText string) bool {
	return sqltok.MayHoldMySQLEscapes(sqlText) || strings.ContainsAny(sqlText, "`#") || mayHoldLimitPair(sqlText) ||
		mayHoldNoArgCall(sqlText) || containsFold(sqlText, "information_schema") || !utf8.ValidString(sqlText) ||
		containsFold(sqlText, "duplicate") || sqltok.FirstKeywordIs(sqlText, sqltok.MySQL, "replace") || holdsWordAt(sqlText) ||
		containsFold(sqlText, "ignore") || mayNameVariable(sqlText) || mayCompareStrings(sqlText) ||
		mayCallMySQLFunction(sqlText) || strings.Contains(sqlText, "'0 ") || strings.Contains(sqlText, "/") || strings.Contains(sqlText, "<=>")
}

// mayCallMySQLFunction reports cheaply whether sqlText may hold what mysqlFunctionEdits writes.
func mayCallMySQLFunction(sqlText string) bool {
	return containsFold(sqlText, "like") || containsFold(sqlText, "separator") || containsFold(sqlText, "date_format") ||
		containsFold(sqlText, "datediff") || containsFold(sqlText, "signed") || containsFold(sqlText, "avg") || containsFold(sqlText, "convert") ||
		containsFold(sqlText, "timestampdiff") || containsFold(sqlText, "str_to_date") || containsFold(sqlText, "truncate") ||
		containsFold(sqlText, "div") || containsFold(sqlText, "regexp") || containsFold(sqlText, "rlike") || containsFold(sqlText, "drop") ||
		containsFold(sqlText, "mod") || containsFold(sqlText, "date_") || containsFold(sqlText, "adddate") || containsFold(sqlText, "subdate") || containsFold(sqlText, "to_days") ||
		containsFold(sqlText, "length") || containsFold(sqlText, "concat") || mayCallMySQLCall(sqlText) ||
		containsFold(sqlText, "sql_") || containsFold(sqlText, "high_priority") || containsFold(sqlText, "collate") ||
		containsFold(sqlText, "unique") || containsFold(sqlText, "binary") || containsFold(sqlText, "interval") ||
		containsFold(sqlText, "straight_join") || containsFold(sqlText, "index") || containsFold(sqlText, "key") // hints
}

// mysqlCalls are the functions mysqlFunctionEdits writes that mayCallMySQLFunction looks for
// as a call: the name before a "(" (blanks between, as a client's IGNORE_SPACE lets MySQL read).
var mysqlCalls = map[string]bool{"year": true, "month": true, "day": true, "dayofmonth": true, "dayofyear": true,
	"dayofweek": true, "weekday": true, "week": true, "quarter": true, "hour": true, "minute": true, "second": true,
	"dayname": true, "monthname": true, "last_day": true, "from_unixtime": true, "time": true, "now": true, "sysdate": true, "localtime": true,
	"localtimestamp": true, "current_timestamp": true, "utc_timestamp": true, "field": true, "elt": true,
	"insert": true, "hex": true, "bin": true, "sleep": true}

// mayCallMySQLCall reports cheaply whether sqlText may call one of mysqlCalls, or hold
// CURRENT_TIMESTAMP, LOCALTIME[STAMP] or DATETIME uncalled.
func mayCallMySQLCall(sqlText string) bool {
	var name [24]byte
	for i := strings.IndexByte(sqlText, '('); i > 0; {
		end := i
		for end > 0 && (sqlText[end-1] == ' ' || sqlText[end-1] == '\t' || sqlText[end-1] == '\n' || sqlText[end-1] == '\r') {
			end--
		}
		n := 0
		for j := end - 1; j >= 0 && identByte(sqlText[j]) && n < len(name); j-- {
			n++
		}
		for k := range n {
			c := sqlText[end-n+k]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			name[k] = c
		}
		if mysqlCalls[string(name[:n])] {
			return true
		}
		next := strings.IndexByte(sqlText[i+1:], '(')
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return containsFold(sqlText, "current_timestamp") || containsFold(sqlText, "localtime") || containsFold(sqlText, "datetime")
}

// atIdent reports whether toks[i] is the word AT used as a name (a column called "at"): DuckDB
// reserves it for AT TIME ZONE and time travel (AT (VERSION => n)), where MySQL and PostgreSQL
// take it as a name anywhere but before TIME ZONE (PostgreSQL's AT LOCAL too).
func atIdent(toks []sqltok.Token, i int) bool {
	if !toks[i].IsWord("at") {
		return false
	}
	next := nextSignificant(toks, i+1)
	return next >= len(toks) || !(toks[next].IsWord("time") || toks[next].IsWord("local") || toks[next].Text == "(")
}

// holdsWordAt reports cheaply whether s holds "at" as a word of its own, in any case.
func holdsWordAt(s string) bool {
	for i := 0; i+2 <= len(s); i++ {
		if s[i]|0x20 == 'a' && s[i+1]|0x20 == 't' && (i == 0 || !identByte(s[i-1])) && (i+2 == len(s) || !identByte(s[i+2])) {
			return true
		}
	}
	return false
}

func identByte(c byte) bool {
	return c == '_' || c == '$' || '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z' || c >= 0x80
}

// mayHoldLimitPair reports whether sqlText has LIMIT, a number and then a comma (or a comment,
// which may hide one).
func mayHoldLimitPair(sqlText string) bool {
	blanks := func(j int) int {
		for j < len(sqlText) && (sqlText[j] == ' ' || sqlText[j] == '\t' || sqlText[j] == '\n' || sqlText[j] == '\r') {
			j++
		}
		return j
	}
	for i := 0; i+5 <= len(sqlText); i++ {
		if sqlText[i]|0x20 != 'l' || !strings.EqualFold(sqlText[i:i+5], "limit") {
			continue
		}
		j := blanks(i + 5)
		digits := j
		for j < len(sqlText) && '0' <= sqlText[j] && sqlText[j] <= '9' {
			j++
		}
		if j == digits && j < len(sqlText) && sqlText[j] == '?' {
			j++
		}
		if j > digits {
			if j = blanks(j); j < len(sqlText) && strings.IndexByte(",/-", sqlText[j]) >= 0 {
				return true
			}
		}
	}
	return false
}

// mayHoldNoArgCall reports whether sqlText holds a name of mysqlNoArgFuncs or DUAL, in any case.
func mayHoldNoArgCall(sqlText string) bool {
	for name := range mysqlNoArgFuncs {
		if containsFold(sqlText, name) {
			return true
		}
	}
	return containsFold(sqlText, "dual")
}

// containsFold reports whether s holds word (lower case) in any case.
func containsFold(s, word string) bool { return sqltok.ContainsFold(s, word) }

// limitPair reads "offset , count" (each a number or a ?, blanks and comments between) from
// toks[i:]: the two tokens, and the index after the count.
func limitPair(toks []sqltok.Token, i int) (offset, count sqltok.Token, end int, ok bool) {
	var got []sqltok.Token
	for ; i < len(toks) && len(got) < 3; i++ {
		if toks[i].Significant() {
			got = append(got, toks[i])
		}
	}
	limitArg := func(t sqltok.Token) bool { return t.Kind == sqltok.Number || t.Kind == sqltok.Param && t.Text == "?" }
	if len(got) < 3 || !limitArg(got[0]) || got[1].Text != "," || !limitArg(got[2]) {
		return sqltok.Token{}, sqltok.Token{}, 0, false
	}
	return got[0], got[2], i, true
}

// paramLimitPair reports whether toks hold LIMIT ?, n or LIMIT n, ? (or both ?).
func paramLimitPair(toks []sqltok.Token) bool {
	for i, t := range toks {
		if t.Kind == sqltok.Word && strings.EqualFold(t.Text, "limit") {
			if offset, count, _, ok := limitPair(toks, i+1); ok && (offset.Kind == sqltok.Param || count.Kind == sqltok.Param) {
				return true
			}
		}
	}
	return false
}

// duckString writes v as a DuckDB string literal. DuckDB takes a statement's text as a C
// string, so a NUL byte cannot be in it: each one is joined in as chr(0).
func duckString(v string) string {
	if !strings.Contains(v, "\x00") {
		return sqltok.StandardString(v)
	}
	parts := strings.Split(v, "\x00")
	for i := range parts {
		parts[i] = sqltok.StandardString(parts[i])
	}
	return "(" + strings.Join(parts, " || chr(0) || ") + ")"
}

// blobLiteral writes v's bytes as a DuckDB BLOB literal, every byte as a \xHH escape.
func blobLiteral(v string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(4*len(v) + 8)
	b.WriteByte('\'')
	for i := 0; i < len(v); i++ {
		b.WriteString(`\x`)
		b.WriteByte(hex[v[i]>>4])
		b.WriteByte(hex[v[i]&15])
	}
	b.WriteString("'::BLOB")
	return b.String()
}

// timeOfDay is v, when it is a day count of 0 before a time of day, as the time of day
// HH:MM:SS[.f]: mysqlclient writes a datetime.timedelta parameter as MySQL's 'D H:M:S'
// ('0 23:59:59', '0 0:0:0'), which DuckDB's TIME refuses; any other v is itself. (A text value
// of that form is written so too.)
func timeOfDay(v string) string {
	rest, ok := strings.CutPrefix(v, "0 ")
	if !ok || len(rest) < 5 || len(rest) > 15 {
		return v
	}
	hms, frac, _ := strings.Cut(rest, ".")
	parts := strings.Split(hms, ":")
	if len(parts) != 3 {
		return v
	}
	var b strings.Builder
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || len(p) == 0 || len(p) > 2 || p[0] == '+' || p[0] == '-' || n > 59 || i == 0 && n > 23 {
			return v
		}
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteByte(byte('0' + n/10))
		b.WriteByte(byte('0' + n%10))
	}
	if frac != "" {
		if strings.Trim(frac, "0123456789") != "" {
			return v
		}
		b.WriteString("." + frac)
	}
	return b.String()
}

// isMySQL reports whether q came from a MySQL client.
func isMySQL(q *query.Request) bool { return q.Protocol == query.ProtocolMySQL }
