package pgengine

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// MySQL's functions that PostgreSQL does not have (1305 before), or has with another meaning,
// written as PostgreSQL's of MariaDB's answer. A call is a name (not qualified, not a column)
// and its parenthesized arguments; its arguments are rewritten first. A call a rule does not
// take (a count of arguments it does not know) stays as written: PostgreSQL's error stands.

// mysqlCall writes one call of args (PostgreSQL's text of each argument, and its tokens) as
// PostgreSQL's; ok false leaves the call as it was written.
type mysqlCall func(args []string, toks [][]sqltok.Token) (text string, ok bool)

// mysqlCalls are the rewritten calls by their lower-case name.
var mysqlCalls map[string]mysqlCall

func init() {
	mysqlCalls = map[string]mysqlCall{
		"if": func(a []string, toks [][]sqltok.Token) (string, bool) {
			if len(a) != 3 {
				return "", false
			}
			return "(CASE WHEN " + truth(a[0], toks[0]) + " THEN " + a[1] + " ELSE " + a[2] + " END)", true
		},
		"ifnull": argsOf(2, func(a []string) string { return "coalesce(" + a[0] + ", " + a[1] + ")" }),
		"isnull": argsOf(1, func(a []string) string { return "((" + a[0] + ") IS NULL)" }),
		"rand":   argsOf(0, func([]string) string { return "random()" }),
		// MariaDB's TRUNCATE keeps its argument's type; trunc(numeric, int) is PostgreSQL's.
		"truncate": argsOf(2, func(a []string) string { return "trunc(" + a[0] + ", " + a[1] + ")" }),
		"lcase":    argsOf(1, func(a []string) string { return "lower(" + a[0] + ")" }),
		"ucase":    argsOf(1, func(a []string) string { return "upper(" + a[0] + ")" }),
		"curdate":  argsOf(0, func([]string) string { return "current_date" }),
		"curtime":  argsOf(0, func([]string) string { return "localtime(0)" }),
		// MariaDB's LENGTH counts bytes (LENGTH('é') is 2), PostgreSQL's characters.
		"length":        argsOf(1, func(a []string) string { return "octet_length(" + a[0] + ")" }),
		"utc_timestamp": argsOf(0, func([]string) string { return "CAST(timezone('UTC', now()) AS timestamp(0))" }),
		"utc_date":      argsOf(0, func([]string) string { return "CAST(timezone('UTC', now()) AS date)" }),
		"instr":         argsOf(2, func(a []string) string { return "strpos(" + a[0] + ", " + a[1] + ")" }),
		"locate":        argsOf(2, func(a []string) string { return "strpos(" + a[1] + ", " + a[0] + ")" }),
		"datediff":      argsOf(2, func(a []string) string { return "(CAST(" + a[0] + " AS date) - CAST(" + a[1] + " AS date))" }),
		"unix_timestamp": func(a []string, _ [][]sqltok.Token) (string, bool) {
			switch len(a) {
			case 0:
				return "CAST(floor(extract(epoch FROM now())) AS bigint)", true
			case 1:
				return "CAST(floor(extract(epoch FROM CAST(" + a[0] + " AS timestamptz))) AS bigint)", true
			}
			return "", false
		},
		// MariaDB's GREATEST and LEAST are NULL when an argument is; PostgreSQL's skip NULLs.
		"greatest": nullIfAnyNull("greatest"),
		"least":    nullIfAnyNull("least"),
		"substring_index": func(a []string, toks [][]sqltok.Token) (string, bool) {
			if len(a) != 3 {
				return "", false
			}
			n, err := strconv.Atoi(strings.TrimSpace(a[2]))
			switch {
			case err != nil:
				return "", false
			case n == 0:
				return "(CASE WHEN " + a[0] + " IS NULL OR " + a[1] + " IS NULL THEN NULL ELSE '' END)", true
			case n > 0:
				return "array_to_string((string_to_array(" + a[0] + ", " + a[1] + "))[1:" + strconv.Itoa(n) + "], " + a[1] + ")", true
			}
			return "array_to_string((string_to_array(" + a[0] + ", " + a[1] + "))[array_length(string_to_array(" + a[0] + ", " + a[1] + "), 1) - " +
				strconv.Itoa(-n-1) + ":], " + a[1] + ")", true
		},
		// CONVERT_TZ(ts, from, to): Django's MySQL backend asks it at connect (whether time
		// zone names are known). A zone written as an offset ('+02:00') is an interval, whose
		// sign PostgreSQL reads as MariaDB does (as a zone name it would be POSIX's, reversed).
		"convert_tz": argsOf(3, func(a []string) string {
			return "timezone(" + zoneArg(a[2]) + ", timezone(" + zoneArg(a[1]) + ", CAST(" + a[0] + " AS timestamp)))"
		}),
		"group_concat": groupConcat,
		"cast":         mysqlCast,
		"convert":      mysqlConvert,
		// MariaDB's CONCAT is NULL when any argument is NULL; PostgreSQL's skips NULL arguments
		// (concat('a', NULL) is 'a'): PostgreSQL's NULL-propagating ||, text whatever the
		// arguments' types (text || anynonarray). concat() stays: PostgreSQL's error stands.
		"concat": func(a []string, _ [][]sqltok.Token) (string, bool) {
			if len(a) == 0 {
				return "", false
			}
			return "(''" + " || (" + strings.Join(a, ") || (") + "))", true
		},
	}
}

// mysqlCastTypes are MySQL's CAST and CONVERT target types PostgreSQL has no type of the name
// for (1105 `type "signed" does not exist` before; Django's MySQL backend casts an IntegerField
// AS signed integer), by their words, as PostgreSQL's type of MariaDB's answer. CHAR, which
// PostgreSQL reads as char(1) (CAST(123 AS CHAR) '1'), is text as MariaDB's, its length none.
var mysqlCastTypes = map[string]string{
	"signed": "bigint", "signed integer": "bigint", "signed int": "bigint",
	// MariaDB's UNSIGNED is a BIGINT UNSIGNED: PostgreSQL has none, and a negative value stays
	// negative here (MariaDB wraps it past 2^63).
	"unsigned": "bigint", "unsigned integer": "bigint", "unsigned int": "bigint",
	"char": "text", "nchar": "text", "char character set utf8mb4": "text", "char charset utf8mb4": "text",
	"double": "double precision", "datetime": "timestamp(0)",
}

// mysqlCast writes CAST(x AS t) of a MySQL type PostgreSQL does not name as PostgreSQL's cast to
// MariaDB's type (mysqlCastTypes); DATETIME(n) is timestamp(n), CHAR(n) varchar(n) (MariaDB cuts
// the value to n characters, as PostgreSQL's explicit cast does). Any other cast stays.
func mysqlCast(a []string, _ [][]sqltok.Token) (string, bool) {
	if len(a) != 1 {
		return "", false
	}
	toks := sqltok.SignificantTokens(a[0], sqltok.Postgres)
	as := -1
	depth := 0
	for i, t := range toks {
		depth += sqltok.ParenStep(t)
		if depth == 0 && t.IsWord("as") {
			as = i
		}
	}
	if as <= 0 || as == len(toks)-1 {
		return "", false
	}
	typ, ok := castType(toks[as+1:])
	if !ok {
		return "", false
	}
	return "CAST(" + strings.TrimSpace(a[0][:toks[as].Pos]) + " AS " + typ + ")", true
}

// mysqlConvert writes CONVERT(x, t), MySQL's other form of CAST(x AS t), as mysqlCast does;
// CONVERT(x USING charset) and a type PostgreSQL names stay.
func mysqlConvert(a []string, _ [][]sqltok.Token) (string, bool) {
	if len(a) != 2 {
		return "", false
	}
	typ, ok := castType(sqltok.SignificantTokens(a[1], sqltok.Postgres))
	if !ok {
		return "", false
	}
	return "CAST(" + a[0] + " AS " + typ + ")", true
}

// castType is PostgreSQL's type for MySQL's cast target (its significant tokens); false when
// PostgreSQL reads the target as MariaDB does already.
func castType(toks []sqltok.Token) (string, bool) {
	var words []string
	for _, t := range toks {
		if t.Kind != sqltok.Word {
			break
		}
		words = append(words, strings.ToLower(t.Text))
	}
	if len(words) == 0 {
		return "", false
	}
	if typ, ok := mysqlCastTypes[strings.Join(words, " ")]; ok && len(words) == len(toks) {
		return typ, true
	}
	// DATETIME(n), CHAR(n): one word and a parenthesized length.
	if len(words) == 1 && len(toks) == 4 && toks[1].Text == "(" && toks[2].Kind == sqltok.Number && toks[3].Text == ")" {
		switch words[0] {
		case "datetime":
			return "timestamp(" + toks[2].Text + ")", true
		case "char", "nchar":
			return "varchar(" + toks[2].Text + ")", true
		}
	}
	return "", false
}

// zoneArg is CONVERT_TZ's zone argument a as PostgreSQL's timezone() reads it: a literal
// offset ('+05:30', '-08:00') an interval, anything else as written.
func zoneArg(a string) string {
	if len(a) > 3 && a[0] == '\'' && (a[1] == '+' || a[1] == '-') && strings.Trim(a[2:len(a)-1], "0123456789:") == "" {
		return "CAST(" + a + " AS interval)"
	}
	return a
}

// argsOf is a rule for calls of exactly n arguments.
func argsOf(n int, write func(args []string) string) mysqlCall {
	return func(a []string, _ [][]sqltok.Token) (string, bool) {
		if len(a) != n {
			return "", false
		}
		return write(a), true
	}
}

// nullIfAnyNull is PostgreSQL's call of name, NULL when any argument is NULL.
func nullIfAnyNull(name string) mysqlCall {
	return func(a []string, _ [][]sqltok.Token) (string, bool) {
		if len(a) < 2 {
			return "", false
		}
		list := strings.Join(a, ", ")
		return "(CASE WHEN num_nulls(" + list + ") > 0 THEN NULL ELSE " + name + "(" + list + ") END)", true
	}
}

// groupConcat writes GROUP_CONCAT([DISTINCT] x, ... [ORDER BY ...] [SEPARATOR 's']) as
// string_agg: the values concatenated as text (a row with a NULL left out, as MariaDB's),
// ',' between them unless the call says otherwise.
func groupConcat(a []string, _ [][]sqltok.Token) (string, bool) {
	if len(a) == 0 {
		return "", false
	}
	whole := strings.Join(a, ", ")
	toks := sqltok.SignificantTokens(whole, sqltok.Postgres)
	sep, orderAt, sepAt := "','", -1, -1
	depth := 0
	for i, t := range toks {
		depth += sqltok.ParenStep(t)
		switch {
		case depth != 0:
		case sepAt < 0 && t.IsWord("separator") && i+1 < len(toks) && toks[i+1].Kind == sqltok.String:
			sep, sepAt = toks[i+1].Text, t.Pos
		case orderAt < 0 && t.IsWord("order") && i+1 < len(toks) && toks[i+1].IsWord("by"):
			orderAt = t.Pos
		}
	}
	end, order := len(whole), ""
	if sepAt >= 0 {
		end = sepAt
	}
	if orderAt >= 0 {
		order = " " + strings.TrimSpace(whole[orderAt:end])
		end = orderAt
	}
	exprs := strings.TrimSpace(whole[:end])
	distinct := ""
	if et := sqltok.SignificantTokens(exprs, sqltok.Postgres); len(et) > 1 && et[0].IsWord("distinct") {
		distinct, exprs = "DISTINCT ", strings.TrimSpace(exprs[et[1].Pos:])
	}
	if exprs == "" {
		return "", false
	}
	var items []string
	for _, e := range splitTop(exprs) {
		items = append(items, "CAST(("+e+") AS text)")
	}
	value := items[0]
	if len(items) > 1 {
		value = "(" + strings.Join(items, " || ") + ")"
	}
	return "string_agg(" + distinct + value + ", " + sep + order + ")", true
}

// splitTop is s split at its commas outside parentheses.
func splitTop(s string) []string {
	var parts []string
	depth, from := 0, 0
	for _, t := range sqltok.SignificantTokens(s, sqltok.Postgres) {
		depth += sqltok.ParenStep(t)
		if depth == 0 && t.Text == "," {
			parts = append(parts, strings.TrimSpace(s[from:t.Pos]))
			from = t.Pos + 1
		}
	}
	return append(parts, strings.TrimSpace(s[from:]))
}

// truth is the condition c (its text and tokens) as a truth value: itself when it compares or
// joins truth values, else MariaDB's reading of a number (not zero).
func truth(c string, toks []sqltok.Token) string {
	if TruthValue(significant(toks)) {
		return c
	}
	return "(" + c + ") <> 0"
}

func significant(toks []sqltok.Token) []sqltok.Token {
	var out []sqltok.Token
	for _, t := range toks {
		if t.Significant() {
			out = append(out, t)
		}
	}
	return out
}

// truthWords are the words whose operation answers a truth value.
var truthWords = map[string]bool{"and": true, "or": true, "xor": true, "not": true, "is": true, "in": true, "like": true,
	"ilike": true, "between": true, "regexp": true, "rlike": true, "exists": true, "true": true, "false": true}

// TruthValue reports whether the expression toks (significant tokens) answers a truth value: it
// compares or joins truth values outside parentheses, or is one in parentheses.
func TruthValue(toks []sqltok.Token) bool {
	for len(toks) > 2 && toks[0].Text == "(" && toks[len(toks)-1].Text == ")" && closes(toks) {
		toks = toks[1 : len(toks)-1]
	}
	depth := 0
	for _, t := range toks {
		depth += sqltok.ParenStep(t)
		if depth != 0 {
			continue
		}
		switch {
		case t.Kind == sqltok.Operator && t.Text[0] != '-' && (strings.ContainsAny(t.Text, "=<>~") || t.Text == "!" || t.Text == "&&"): // not JSON's -> and ->>
			return true
		case t.Kind == sqltok.Word && truthWords[strings.ToLower(t.Text)]:
			return true
		}
	}
	return false
}

// closes reports whether toks' first parenthesis closes at its last token.
func closes(toks []sqltok.Token) bool {
	depth := 0
	for i, t := range toks {
		depth += sqltok.ParenStep(t)
		if depth == 0 {
			return i == len(toks)-1
		}
	}
	return false
}

// mysqlText is sqlText (PostgreSQL's text of a MySQL client's statement) as PostgreSQL must
// read it to answer as MariaDB: its functions (mysqlFunctions), aggregates of a boolean column
// (mysqlBoolAggregates), numbers a boolean column takes (mysqlBoolLiterals), sort keys (mysqlNullsOrder) and
// reads of @@sql_mode, sqlMode the connection's (withSQLModeReads), and information_schema
// views PostgreSQL lacks (mysqlInformationSchema); notNull tells which sort keys cannot be NULL.
func mysqlText(sqlText, sqlMode string, notNull notNullLookup) string {
	return mysqlInformationSchema(withSQLModeReads(mysqlNullsOrder(mysqlBoolLiterals(mysqlBoolAggregates(mysqlFunctions(sqlText), notNull), notNull), notNull), sqlMode))
}

// mysqlFunctions is sqlText (PostgreSQL's text of a MySQL client's statement) with its calls of
// mysqlCalls' functions written as PostgreSQL's; sqlText itself when it has none.
func mysqlFunctions(sqlText string) string {
	if !mayCall(sqlText) {
		return sqlText
	}
	toks := sqltok.Tokenize(sqlText, sqltok.Postgres)
	var b strings.Builder
	if !writeCalls(&b, toks) {
		return sqlText
	}
	return b.String()
}

// mayCall reports cheaply whether sqlText may call one of mysqlCalls: a word of theirs before a "(".
func mayCall(sqlText string) bool {
	return mayCallOf(sqlText, func(name string) bool { return mysqlCalls[name] != nil })
}

// mayCallOf reports cheaply (no tokenizing, no allocation for names of ASCII letters) whether
// sqlText may call a function called: a word it takes, lower-cased, before a "(". A word inside a
// longer one ("admin(", "minute(" for "min") is not the name.
func mayCallOf(sqlText string, called func(lowerName string) bool) bool {
	for i := strings.IndexByte(sqlText, '('); i >= 0; {
		j := i
		for j > 0 && (sqlText[j-1] == ' ' || sqlText[j-1] == '\t' || sqlText[j-1] == '\n' || sqlText[j-1] == '\r') {
			j--
		}
		k := j
		for k > 0 && (sqlText[k-1]|0x20 >= 'a' && sqlText[k-1]|0x20 <= 'z' || sqlText[k-1] == '_') {
			k--
		}
		if k < j && (k == 0 || !wordByte(sqlText[k-1])) && called(strings.ToLower(sqlText[k:j])) {
			return true
		}
		n := strings.IndexByte(sqlText[i+1:], '(')
		if n < 0 {
			return false
		}
		i += n + 1
	}
	return false
}

// wordByte reports whether c may be part of an unquoted name: a word ends where it is not.
func wordByte(c byte) bool {
	return c|0x20 >= 'a' && c|0x20 <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// writeCalls writes toks to b with their calls of mysqlCalls rewritten; false when a call's
// parentheses do not close.
func writeCalls(b *strings.Builder, toks []sqltok.Token) bool {
	for i := 0; i < len(toks); i++ {
		rule, open := callOf(toks, i)
		if rule == nil {
			b.WriteString(toks[i].Text)
			continue
		}
		args, end := callArgs(toks, open)
		if end < 0 {
			return false
		}
		if len(args) == 1 && len(significant(args[0])) == 0 {
			args = nil // f()
		}
		texts := make([]string, len(args))
		for j, a := range args {
			var ab strings.Builder
			if !writeCalls(&ab, a) {
				return false
			}
			texts[j] = strings.TrimSpace(ab.String())
		}
		text, ok := rule(texts, args)
		if !ok {
			b.WriteString(toks[i].Text) // the name; its arguments are written (and rewritten) as they come
			continue
		}
		b.WriteString(text)
		i = end
	}
	return true
}

// callOf is the rule of the call at toks[i] (a name of mysqlCalls, not qualified) and the index
// of its "("; nil when toks[i] calls none.
func callOf(toks []sqltok.Token, i int) (mysqlCall, int) {
	if toks[i].Kind != sqltok.Word {
		return nil, -1
	}
	rule := mysqlCalls[strings.ToLower(toks[i].Text)]
	if rule == nil {
		return nil, -1
	}
	if p := prevSignificant(toks, i); p >= 0 && toks[p].Kind == sqltok.Punct && toks[p].Text == "." {
		return nil, -1 // a schema's own function
	}
	j := nextSignificant(toks, i)
	if j < 0 || toks[j].Kind != sqltok.Punct || toks[j].Text != "(" {
		return nil, -1
	}
	return rule, j
}
