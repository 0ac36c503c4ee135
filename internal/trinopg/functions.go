package trinopg

import (
	"strings"

	"github.com/queryflux/queryflux/internal/sqltok"
)

// Trino's functions PostgreSQL lacks or names otherwise, each written as PostgreSQL's
// expression of the same value: date_add and date_diff as interval arithmetic, try_cast as a
// CASE that tests the text before the cast, contains as = ANY, split as string_to_array,
// element_at as a subscript (from the end when negative), map(keys, values) as a jsonb object
// (PostgreSQL has no map type; element_at and cardinality of a map(...) read its arrays),
// from_unixtime and to_unixtime as to_timestamp and the epoch, year(x) ... as extract, strpos
// as a bigint, approx_distinct as the exact count, json_extract_scalar as jsonb_path_query_first's text. A
// cast's Trino type names (double, tinyint, varbinary, array(t)) are PostgreSQL's. A call
// this does not read (another arity, a unit that is not a literal) goes as written, and
// PostgreSQL's error tells what it lacks.

// span is the significant tokens [lo, hi) of a statement.
type span struct{ lo, hi int }

// rewriter writes src's significant tokens, Trino's calls among them translated.
type rewriter struct {
	src   string
	toks  []sqltok.Token
	depth int    // of text's calls: the outermost's replacements are edits
	edits []edit // the outermost replacements, in order
}

// translation writes a call's PostgreSQL expression from its arguments; ok is false for a
// call it does not read.
type translation func(r *rewriter, args []span) (string, bool)

var functions map[string]translation

func init() {
	functions = map[string]translation{
		"date_add": dateAdd, "date_diff": dateDiff, "try_cast": tryCast, "cast": castTypes,
		"contains": contains, "split": split, "element_at": elementAt, "map": mapOf,
		"cardinality": cardinality, "from_unixtime": fromUnixtime, "to_unixtime": toUnixtime,
		"current_timezone": currentTimezone, "array_join": arrayJoin, "regexp_like": regexpLike,
		"row": rowOf, "strpos": strpos, "approx_distinct": approxDistinct, "json_extract_scalar": jsonExtractScalar,
		"format_datetime": formatDatetime, "date_trunc": dateTrunc, "greatest": extremeOf("greatest"), "least": extremeOf("least"),
	}
	for name, field := range extractFields { //determinism:ok fills a map; no key is set twice
		functions[name] = extractOf(field)
	}
}

// mentionsFunction reports cheaply whether sqlText may call one of functions.
func mentionsFunction(sqlText string) bool {
	if strings.IndexByte(sqlText, '(') < 0 {
		return false
	}
	for name := range functions { //determinism:ok an any-match test answers the same in any order
		if sqltok.ContainsFold(sqlText, name) {
			return true
		}
	}
	return false
}

// translateFunctions is sqlText with Trino's calls written as PostgreSQL's, and the
// replacements.
func translateFunctions(sqlText string) (string, []edit) {
	if !mentionsFunction(sqlText) {
		return sqlText, nil
	}
	r := &rewriter{src: sqlText, toks: sqltok.SignificantTokens(sqlText, sqltok.Trino)}
	if len(r.toks) == 0 {
		return sqlText, nil
	}
	last := r.toks[len(r.toks)-1]
	out := r.text(span{0, len(r.toks)})
	if len(r.edits) == 0 {
		return sqlText, nil
	}
	return sqlText[:r.toks[0].Pos] + out + sqlText[last.Pos+len(last.Text):], r.edits
}

// text is s as src writes it, from its first token's start to its last's end, each call of
// one of functions translated.
func (r *rewriter) text(s span) string {
	if s.lo >= s.hi {
		return ""
	}
	r.depth++
	defer func() { r.depth-- }()
	var b strings.Builder
	at := r.toks[s.lo].Pos
	for i := s.lo; i < s.hi; i++ {
		t := r.toks[i]
		f := functions[strings.ToLower(t.Text)]
		if t.Kind != sqltok.Word || f == nil || i+1 >= s.hi || r.toks[i+1].Text != "(" || i > 0 && r.toks[i-1].Text == "." {
			continue
		}
		end := r.closes(i + 1)
		if end < 0 || end >= s.hi {
			continue
		}
		out, ok := f(r, r.args(span{i + 2, end}))
		if !ok {
			continue // its arguments are read on as any tokens
		}
		b.WriteString(r.src[at:t.Pos])
		b.WriteString(out)
		at = r.toks[end].Pos + 1
		if r.depth == 1 {
			r.edits = append(r.edits, edit{at: t.Pos, old: at - t.Pos, new: len(out)})
		}
		i = end
	}
	last := r.toks[s.hi-1]
	b.WriteString(r.src[at : last.Pos+len(last.Text)])
	return b.String()
}

// closes is the index of the token closing the parenthesis or bracket at open; -1 when none.
func (r *rewriter) closes(open int) int {
	depth := 0
	for j := open; j < len(r.toks); j++ {
		depth += parenStep(r.toks[j])
		if depth == 0 {
			return j
		}
	}
	return -1
}

// args splits s at its top-level commas; none for an empty s.
func (r *rewriter) args(s span) []span {
	if s.lo >= s.hi {
		return nil
	}
	var out []span
	depth, start := 0, s.lo
	for i := s.lo; i < s.hi; i++ {
		t := r.toks[i]
		if depth == 0 && t.Kind == sqltok.Punct && t.Text == "," {
			out = append(out, span{start, i})
			start = i + 1
		}
		depth += parenStep(t)
	}
	return append(out, span{start, s.hi})
}

func parenStep(t sqltok.Token) int {
	if t.Kind == sqltok.Punct {
		switch t.Text {
		case "(", "[":
			return 1
		case ")", "]":
			return -1
		}
	}
	return 0
}

func isWord(t sqltok.Token, w string) bool {
	return t.Kind == sqltok.Word && strings.EqualFold(t.Text, w)
}

// literal is the text of s when it is one string literal, lower-cased.
func (r *rewriter) literal(s span) (string, bool) {
	if s.hi-s.lo != 1 || r.toks[s.lo].Kind != sqltok.String {
		return "", false
	}
	text := r.toks[s.lo].Text
	if len(text) < 2 || text[0] != '\'' || text[len(text)-1] != '\'' {
		return "", false
	}
	return strings.ToLower(strings.ReplaceAll(text[1:len(text)-1], "''", "'")), true
}

// call is the arguments of s when s is one call of name, as map(k, v).
func (r *rewriter) call(s span, name string) ([]span, bool) {
	if s.hi-s.lo < 3 || !isWord(r.toks[s.lo], name) || r.toks[s.lo+1].Text != "(" || r.closes(s.lo+1) != s.hi-1 {
		return nil, false
	}
	return r.args(span{s.lo + 2, s.hi - 1}), true
}

// paren is s's text in parentheses.
func (r *rewriter) paren(s span) string { return "(" + r.text(s) + ")" }

// intervals are date_add's units as PostgreSQL's intervals.
var intervals = map[string]string{"millisecond": "1 millisecond", "second": "1 second", "minute": "1 minute",
	"hour": "1 hour", "day": "1 day", "week": "7 days", "month": "1 month", "quarter": "3 months", "year": "1 year"}

// dateUnits are the units by which Trino's date_add of a date is a date.
var dateUnits = map[string]bool{"day": true, "week": true, "month": true, "quarter": true, "year": true}

func dateAdd(r *rewriter, args []span) (string, bool) {
	if len(args) != 3 {
		return "", false
	}
	unit, ok := r.literal(args[0])
	if !ok || intervals[unit] == "" {
		return "", false
	}
	sum := "(" + r.paren(args[2]) + " + " + r.paren(args[1]) + " * interval '" + intervals[unit] + "')"
	if dateUnits[unit] && r.isDate(args[2]) {
		return "CAST(" + sum + " AS date)", true // PostgreSQL's date + interval is a timestamp
	}
	return sum, true
}

// isDate reports whether s is, as written, a date: a date literal, current_date, a cast to date.
func (r *rewriter) isDate(s span) bool {
	toks := r.toks[s.lo:s.hi]
	switch {
	case len(toks) == 2 && isWord(toks[0], "date") && toks[1].Kind == sqltok.String, len(toks) == 1 && isWord(toks[0], "current_date"):
		return true
	case len(toks) >= 6 && (isWord(toks[0], "cast") || isWord(toks[0], "try_cast")) && isWord(toks[len(toks)-2], "date") &&
		isWord(toks[len(toks)-3], "as"):
		return true
	}
	return false
}

// secondsPer are date_diff's units counted in seconds (a millisecond's as a multiplier).
var secondsPer = map[string]string{"millisecond": " * 1000", "second": "", "minute": " / 60", "hour": " / 3600",
	"day": " / 86400", "week": " / 604800"}

// monthsPer are date_diff's units counted in months.
var monthsPer = map[string]string{"month": "", "quarter": " / 3", "year": " / 12"}

// dateDiff counts whole units from a to b, toward zero, as Trino does.
func dateDiff(r *rewriter, args []span) (string, bool) {
	if len(args) != 3 {
		return "", false
	}
	unit, ok := r.literal(args[0])
	if !ok {
		return "", false
	}
	a, b := r.paren(args[1]), r.paren(args[2])
	if per, ok := secondsPer[unit]; ok {
		return "CAST(trunc((extract(epoch from " + b + ") - extract(epoch from " + a + "))" + per + ") AS bigint)", true
	}
	if per, ok := monthsPer[unit]; ok {
		age := "age(" + b + ", " + a + ")"
		return "CAST(trunc((extract(year from " + age + ") * 12 + extract(month from " + age + "))" + per + ") AS bigint)", true
	}
	return "", false
}

// trinoTypes are Trino's type names PostgreSQL spells otherwise.
var trinoTypes = map[string]string{"double": "double precision", "tinyint": "smallint", "varbinary": "bytea"}

// castType is the PostgreSQL type of Trino's type written by s (double, array(integer), ...),
// and its first word lower-cased.
func (r *rewriter) castType(s span) (pg, base string) {
	toks := r.toks[s.lo:s.hi]
	if len(toks) == 0 {
		return "", ""
	}
	base = strings.ToLower(toks[0].Text)
	if base == "array" && len(toks) >= 4 && toks[1].Text == "(" && r.closes(s.lo+1) == s.hi-1 {
		inner, _ := r.castType(span{s.lo + 2, s.hi - 1})
		return inner + "[]", base
	}
	if pg, ok := trinoTypes[base]; ok && len(toks) == 1 {
		return pg, base
	}
	return r.text(s), base
}

// castParts splits a cast's one argument, x AS type, at its last top-level AS.
func (r *rewriter) castParts(args []span) (x, typ span, ok bool) {
	if len(args) != 1 {
		return span{}, span{}, false
	}
	depth, as := 0, -1
	for i := args[0].lo; i < args[0].hi; i++ {
		if depth == 0 && isWord(r.toks[i], "as") {
			as = i
		}
		depth += parenStep(r.toks[i])
	}
	if as <= args[0].lo || as+1 >= args[0].hi {
		return span{}, span{}, false
	}
	return span{args[0].lo, as}, span{as + 1, args[0].hi}, true
}

// castTypes is a cast whose type Trino names otherwise; ok is false for any other cast.
func castTypes(r *rewriter, args []span) (string, bool) {
	x, typ, ok := r.castParts(args)
	if !ok {
		return "", false
	}
	if fields, ok := r.call(x, "row"); ok {
		return rowCast(r, fields, typ)
	}
	pg, _ := r.castType(typ)
	if pg == r.text(typ) {
		return "", false
	}
	return "CAST(" + r.text(x) + " AS " + pg + ")", true
}

// validText are the texts a cast to each type reads, which try_cast tests before casting (a
// count of digits keeping each integer inside its type).
var validText = map[string]string{
	"smallint": `^\s*[+-]?\d{1,4}\s*$`, "tinyint": `^\s*[+-]?\d{1,2}\s*$`, "integer": `^\s*[+-]?\d{1,9}\s*$`,
	"int": `^\s*[+-]?\d{1,9}\s*$`, "bigint": `^\s*[+-]?\d{1,18}\s*$`,
	"real": number, "double": number, "decimal": number, "numeric": number,
	"boolean": `^\s*(true|false|t|f|1|0)\s*$`, "date": `^\s*\d{4}-\d\d?-\d\d?\s*$`,
}

const number = `^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$`

// tryCast is NULL where the cast would fail on the value's text, for the types validText
// reads (a number's cast to an integer type rounds, as Trino's);
// another type's cast is PostgreSQL's, failing as it fails.
func tryCast(r *rewriter, args []span) (string, bool) {
	x, typ, ok := r.castParts(args)
	if !ok {
		return "", false
	}
	pg, base := r.castType(typ)
	value := r.paren(x)
	cast := "CAST(" + value + " AS " + pg + ")"
	re, ok := validText[base]
	if !ok {
		return cast, true
	}
	text := "CAST(" + value + " AS text)"
	// The text is cast, NULL when invalid: a CASE around the cast itself would not keep
	// PostgreSQL from folding a constant's failing cast while planning.
	valid := text + " ~* '" + re + "'"
	if base == "date" { // a day past its month's end (2024-02-30) fails PostgreSQL's cast: NULL, as Trino's try_cast
		part := func(re string) string { return "CAST(substring(" + text + " from '" + re + "') AS int)" }
		y, m, d := part(`^\s*(\d{4})`), part(`^\s*\d{4}-(\d\d?)`), part(`-(\d\d?)\s*$`)
		valid += " AND " + m + " BETWEEN 1 AND 12 AND " + d + " BETWEEN 1 AND extract(day from make_date(greatest(" + y +
			", 1), least(greatest(" + m + ", 1), 12), 1) + interval '1 month - 1 day')"
	}
	fromText := "CAST(CASE WHEN " + valid + " THEN " + text + " END AS " + pg + ")"
	bounds, integral := integerBounds[base]
	if !integral || x.hi-x.lo == 1 && r.toks[x.lo].Kind == sqltok.String {
		return fromText, true
	}
	// A number with a fraction rounds, half away from zero, as Trino's cast of a decimal or a
	// double does (PostgreSQL's of a double rounds half to even), NULL outside the type. Not a
	// string literal (read above): its cast to numeric, constant, would fail while planning.
	rounded := "round(CAST(" + value + " AS numeric))"
	return "CASE WHEN pg_typeof" + value + " IN ('numeric'::regtype, 'double precision'::regtype, 'real'::regtype) " +
		"THEN CAST(CASE WHEN " + rounded + " BETWEEN " + bounds + " THEN " + rounded + " END AS " + pg + ") ELSE " + fromText + " END", true
}

// TryCastText is the text (a regular expression, \s and \d as PCRE reads them) a cast to the
// Trino type base reads, and for an integer type the values it holds (BETWEEN's operands);
// ok is false for a type whose text this does not read.
func TryCastText(base string) (re, bounds string, ok bool) {
	re, ok = validText[base]
	return re, integerBounds[base], ok
}

// NumberText is the text of a number, as a regular expression.
const NumberText = number

// integerBounds are the values each integer type holds, as BETWEEN's operands.
var integerBounds = map[string]string{"tinyint": "-128 AND 127", "smallint": "-32768 AND 32767",
	"integer": "-2147483648 AND 2147483647", "int": "-2147483648 AND 2147483647",
	"bigint": "-9223372036854775808 AND 9223372036854775807"}

func contains(r *rewriter, args []span) (string, bool) {
	if len(args) != 2 {
		return "", false
	}
	return "(" + r.paren(args[1]) + " = ANY(" + r.text(args[0]) + "))", true
}

func split(r *rewriter, args []span) (string, bool) {
	if len(args) != 2 {
		return "", false
	}
	return "string_to_array(" + r.text(args[0]) + ", " + r.text(args[1]) + ")", true
}

// elementAt reads a map(...)'s value by its key, an array's element by its index (from the
// end when negative; NULL past either end, as Trino's).
func elementAt(r *rewriter, args []span) (string, bool) {
	if len(args) != 2 {
		return "", false
	}
	key := r.paren(args[1])
	if kv, ok := r.call(args[0], "map"); ok && len(kv) == 2 {
		return "(" + r.text(kv[1]) + ")[array_position(" + r.text(kv[0]) + ", " + key + ")]", true
	}
	a := r.paren(args[0])
	if t := r.toks[args[1].lo]; args[1].hi-args[1].lo == 1 && t.Kind == sqltok.Number {
		return a + "[" + t.Text + "]", true
	}
	return a + "[CASE WHEN " + key + " < 0 THEN cardinality(" + a + ") + 1 + " + key + " ELSE " + key + " END]", true
}

// mapOf is map(keys, values) as a jsonb object, map() as an empty one.
func mapOf(r *rewriter, args []span) (string, bool) {
	switch len(args) {
	case 0:
		return "'{}'::jsonb", true
	case 2:
		return "(SELECT coalesce(jsonb_object_agg(k, v), '{}'::jsonb) FROM unnest(" + r.text(args[0]) + ", " + r.text(args[1]) + ") AS m(k, v))", true
	}
	return "", false
}

// cardinality of a map(keys, values) counts its keys; an array's is PostgreSQL's own.
func cardinality(r *rewriter, args []span) (string, bool) {
	if len(args) != 1 {
		return "", false
	}
	if kv, ok := r.call(args[0], "map"); ok && len(kv) == 2 {
		return "cardinality(" + r.text(kv[0]) + ")", true
	}
	return "", false
}

func fromUnixtime(r *rewriter, args []span) (string, bool) {
	if len(args) != 1 {
		return "", false
	}
	return "to_timestamp(" + r.text(args[0]) + ")", true
}

func toUnixtime(r *rewriter, args []span) (string, bool) {
	if len(args) != 1 {
		return "", false
	}
	return "CAST(extract(epoch from " + r.paren(args[0]) + ") AS double precision)", true
}

func currentTimezone(_ *rewriter, args []span) (string, bool) {
	if len(args) != 0 {
		return "", false
	}
	return "current_setting('TimeZone')", true
}

func arrayJoin(r *rewriter, args []span) (string, bool) {
	if len(args) != 2 && len(args) != 3 {
		return "", false
	}
	texts := make([]string, len(args))
	for i, a := range args {
		texts[i] = r.text(a)
	}
	return "array_to_string(" + strings.Join(texts, ", ") + ")", true
}

func regexpLike(r *rewriter, args []span) (string, bool) {
	if len(args) != 2 {
		return "", false
	}
	return "(" + r.paren(args[0]) + " ~ " + r.paren(args[1]) + ")", true
}

// strpos is PostgreSQL's, whose value is an integer: Trino's is a bigint.
func strpos(r *rewriter, args []span) (string, bool) {
	if len(args) != 2 {
		return "", false
	}
	return "CAST(strpos(" + r.text(args[0]) + ", " + r.text(args[1]) + ") AS bigint)", true
}

// approxDistinct is the exact count Trino's estimate is of.
func approxDistinct(r *rewriter, args []span) (string, bool) {
	if len(args) != 1 {
		return "", false
	}
	return "count(DISTINCT " + r.text(args[0]) + ")", true
}

// jsonExtractScalar is the text of the scalar at a JSON path, NULL for an object, an array or a
// JSON null (Trino's: the value must be a scalar).
func jsonExtractScalar(r *rewriter, args []span) (string, bool) {
	if len(args) != 2 {
		return "", false
	}
	v := "jsonb_path_query_first(CAST(" + r.text(args[0]) + " AS jsonb), CAST(" + r.text(args[1]) + " AS jsonpath))"
	return "CASE WHEN jsonb_typeof(" + v + ") IN ('object', 'array', 'null') THEN NULL ELSE " + v + " #>> '{}' END", true
}

// extractFields are Trino's field functions (year(x), ...) as extract's fields.
var extractFields = map[string]string{"year": "year", "quarter": "quarter", "month": "month", "week": "week",
	"week_of_year": "week", "day": "day", "day_of_month": "day", "day_of_week": "isodow", "dow": "isodow",
	"day_of_year": "doy", "doy": "doy", "hour": "hour", "minute": "minute", "second": "second", "year_of_week": "isoyear"}

// extractOf is Trino's field function: the field, a whole bigint.
func extractOf(field string) translation {
	return func(r *rewriter, args []span) (string, bool) {
		if len(args) != 1 {
			return "", false
		}
		return "CAST(floor(extract(" + field + " from " + r.paren(args[0]) + ")) AS bigint)", true
	}
}

// rowOf is Trino's row(a, b), which PostgreSQL would answer as a record's text "(1,a)", as
// the JSON array of its fields, as Trino writes a row; the Trino frontend announces the row
// type its select item declares (trinodecl's rows.go). The array is jsonb, not json: a row
// compared (row(a, b) = row(1, 'x'), IN, ORDER BY) needs jsonb's equality and ordering, which
// compare same-length arrays field by field as rows compare.
func rowOf(r *rewriter, args []span) (string, bool) {
	if len(args) == 0 {
		return "", false
	}
	texts := make([]string, len(args))
	for i, a := range args {
		texts[i] = r.text(a)
	}
	return "jsonb_build_array(" + strings.Join(texts, ", ") + ")", true
}

// rowCast is cast(row(a, b) as row(x integer, y varchar)) as the JSON array of each field cast
// to its type; ok is false for a cast to another type or of another count of fields
// (PostgreSQL's error as written).
func rowCast(r *rewriter, fields []span, typ span) (string, bool) {
	types, ok := r.call(typ, "row")
	if !ok || len(types) != len(fields) {
		return "", false
	}
	texts := make([]string, len(fields))
	for i, f := range types {
		if f.hi-f.lo < 2 {
			return "", false
		}
		pg, _ := r.castType(span{f.lo + 1, f.hi})
		texts[i] = "CAST(" + r.text(fields[i]) + " AS " + pg + ")"
	}
	return "jsonb_build_array(" + strings.Join(texts, ", ") + ")", true
}
