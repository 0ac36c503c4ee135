package duckengine

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Functions as a PostgreSQL (or Trino) client calls them. Some of PostgreSQL's functions are
// missing from DuckDB or answer another type there: sum() of integers is DuckDB's 128-bit
// integer, which a PostgreSQL client reads as numeric (psycopg a Decimal) where PostgreSQL's
// is a bigint. A call of one is written, for a client of that protocol only, as the
// compatibility macro (qfpg_<name>, pgFunctionSQL) or the DuckDB function that answers as the
// client's database does. The macros are named after the function they stand for, so the
// result column is named as the client's database names it (pgFunctionName).

// macroPrefix starts the name of a macro that stands for a client database's function.
const macroPrefix = "qfpg_"

// pgFunctionSQL creates the macros in the catalog named {c}. A typed parameter picks the
// overload for the argument's type; an untyped one takes any other.
var pgFunctionSQL = []string{
	// PostgreSQL sums smallint and integer into bigint, bigint into numeric (DuckDB's HUGEINT
	// is sent as numeric), the rest into their own type.
	`CREATE MACRO {c}.main.qfpg_sum (x TINYINT) AS sum(x)::BIGINT, (x SMALLINT) AS sum(x)::BIGINT,
		(x INTEGER) AS sum(x)::BIGINT, (x) AS sum(x)`,
	// json_agg(x), jsonb_agg(x) are written qfpg_json_agg(list(x)): the list takes an ORDER BY
	// or DISTINCT, which no macro does.
	`CREATE MACRO {c}.main.qfpg_json_agg(l) AS to_json(l)`,
	// col @> v (jsonOperator): JSON containment for a JSON column, list containment for a list.
	// format's %I and %L (printfCall): a name quoted unless it is a plain lower-case one, a
	// string literal.
	// quote_ident, as PostgreSQL's: quoted unless plain lower case and not a keyword
	// PostgreSQL reserves in some way (pgKeywords).
	`CREATE MACRO {c}.main.qfpg_quote_ident(x) AS CASE WHEN regexp_full_match(x, '[a-z_][a-z0-9_]*')
		AND NOT list_contains(string_split('` + pgKeywords + `', ' '), x) THEN x
		ELSE '"' || replace(x, '"', '""') || '"' END`,
	`CREATE MACRO {c}.main.qfpg_format(x) AS x`,
	// quote_literal and quote_nullable: a literal of x's text, E'...' with its backslashes
	// doubled when it has one.
	`CREATE MACRO {c}.main.qfpg_quote_literal(x) AS CAST(CASE WHEN contains(CAST(x AS VARCHAR), '\')
		THEN 'E''' || replace(replace(CAST(x AS VARCHAR), '\', '\\'), '''', '''''') || ''''
		ELSE '''' || replace(CAST(x AS VARCHAR), '''', '''''') || '''' END AS VARCHAR)`,
	`CREATE MACRO {c}.main.qfpg_quote_nullable(x) AS coalesce({c}.main.qfpg_quote_literal(x), 'NULL')`,
	`CREATE MACRO {c}.main.qfpg_json_contains (a JSON, b) AS json_contains(a, CAST(b AS JSON)), (a, b) AS a @> b`,
	`CREATE MACRO {c}.main.qfpg_jsonb_agg(l) AS to_json(l)`,
	// jsonb_set (pgjsonb.go): a path as text ('{a,0}') or a list (ARRAY['a', '0'], passed as
	// JSON), create_if_missing true unless given.
	`CREATE MACRO {c}.main.qfpg_jsonb_set (t, p VARCHAR[], v) AS CAST(qf_jsonb_set(CAST(t AS VARCHAR), CAST(to_json(p) AS VARCHAR), CAST(v AS VARCHAR), true) AS JSON),
		(t, p VARCHAR[], v, c) AS CAST(qf_jsonb_set(CAST(t AS VARCHAR), CAST(to_json(p) AS VARCHAR), CAST(v AS VARCHAR), c) AS JSON),
		(t, p, v) AS CAST(qf_jsonb_set(CAST(t AS VARCHAR), CAST(p AS VARCHAR), CAST(v AS VARCHAR), true) AS JSON),
		(t, p, v, c) AS CAST(qf_jsonb_set(CAST(t AS VARCHAR), CAST(p AS VARCHAR), CAST(v AS VARCHAR), c) AS JSON)`,
	`CREATE MACRO {c}.main.qfpg_to_jsonb(x) AS to_json(x)`,
	// PostgreSQL's names of a JSON value's type: DuckDB's are SQL types (VARCHAR, UBIGINT).
	`CREATE MACRO {c}.main.qfpg_json_typeof(j) AS CASE json_type(j::JSON) WHEN 'VARCHAR' THEN 'string'
		WHEN 'BIGINT' THEN 'number' WHEN 'UBIGINT' THEN 'number' WHEN 'DOUBLE' THEN 'number' WHEN 'HUGEINT' THEN 'number'
		ELSE lower(json_type(j::JSON)) END`,
	`CREATE MACRO {c}.main.qfpg_jsonb_typeof(j) AS {c}.main.qfpg_json_typeof(j)`,
	// The elements of a JSON array, one row each (in a select list).
	`CREATE MACRO {c}.main.qfpg_json_array_elements(j) AS unnest(json_extract(j::JSON, '$[*]'))`,
	`CREATE MACRO {c}.main.qfpg_jsonb_array_elements(j) AS unnest(json_extract(j::JSON, '$[*]'))`,
	`CREATE MACRO {c}.main.qfpg_json_array_elements_text(j) AS unnest(json_extract_string(j::JSON, '$[*]'))`,
	`CREATE MACRO {c}.main.qfpg_jsonb_array_elements_text(j) AS unnest(json_extract_string(j::JSON, '$[*]'))`,
	// Each word's first letter upper case, the rest lower: words are runs of letters and digits.
	`CREATE MACRO {c}.main.qfpg_initcap(s) AS array_to_string(list_transform(
		regexp_extract_all(s, '[\pL\pN]+|[^\pL\pN]+'), w -> upper(w[1]) || lower(w[2:])), '')`,
	// encode(bytes, format) and decode(text, format); DuckDB's one-argument encode and decode
	// (text to and from UTF-8 bytes) stay as they were.
	`CREATE MACRO {c}.main.qfpg_encode (b, f) AS CASE lower(f) WHEN 'hex' THEN lower(hex(b::BLOB)) WHEN 'base64' THEN to_base64(b::BLOB)
		WHEN 'escape' THEN CAST(b::BLOB AS VARCHAR) ELSE error('unrecognized encoding: "' || f || '"') END,
		(s) AS encode(s)`,
	`CREATE MACRO {c}.main.qfpg_decode (s, f) AS CASE lower(f) WHEN 'hex' THEN unhex(s) WHEN 'base64' THEN from_base64(s)
		WHEN 'escape' THEN encode(s) ELSE error('unrecognized encoding: "' || f || '"') END,
		(b) AS decode(b)`,
	// Lengths and positions are integers (DuckDB's are BIGINT: node-postgres reads a string).
	`CREATE MACRO {c}.main.qfpg_length(s) AS length(s)::INTEGER`,
	`CREATE MACRO {c}.main.qfpg_char_length(s) AS length(s)::INTEGER`,
	`CREATE MACRO {c}.main.qfpg_character_length(s) AS length(s)::INTEGER`,
	`CREATE MACRO {c}.main.qfpg_octet_length (s VARCHAR) AS strlen(s)::INTEGER, (s) AS octet_length(s)::INTEGER`,
	`CREATE MACRO {c}.main.qfpg_strpos(s, sub) AS strpos(s, sub)::INTEGER`,
	`CREATE MACRO {c}.main.qfpg_array_length(a, d) AS array_length(a, d)::INTEGER`,
	`CREATE MACRO {c}.main.qfpg_cardinality(a) AS len(a)::INTEGER`,
	// date_part is a double precision.
	`CREATE MACRO {c}.main.qfpg_date_part(f, x) AS date_part(f, x)::DOUBLE`,
	// generate_series of integers is integer; in a select list it is rows (DuckDB's is a list
	// there), in FROM a table of one column named generate_series.
	`CREATE MACRO {c}.main.qfpg_generate_series (a INTEGER, b INTEGER) AS unnest(generate_series(a, b))::INTEGER,
		(a INTEGER, b INTEGER, s INTEGER) AS unnest(generate_series(a, b, s))::INTEGER,
		(a, b) AS unnest(generate_series(a, b)), (a, b, s) AS unnest(generate_series(a, b, s))`,
	`CREATE MACRO {c}.main.qfpg_generate_series_rows
		(a INTEGER, b INTEGER) AS TABLE (SELECT generate_series::INTEGER AS generate_series FROM generate_series(a, b)),
		(a INTEGER, b INTEGER, s INTEGER) AS TABLE (SELECT generate_series::INTEGER AS generate_series FROM generate_series(a, b, s)),
		(a, b) AS TABLE (SELECT generate_series FROM generate_series(a, b)),
		(a, b, s) AS TABLE (SELECT generate_series FROM generate_series(a, b, s))`,
	// extract(field FROM x) is a numeric (PostgreSQL 14 on; DuckDB's a BIGINT, or a DOUBLE
	// for epoch): whole for most fields, to the microsecond for seconds and an epoch (but of a
	// date), to the microsecond in milliseconds.
	`CREATE MACRO {c}.main.qfpg_extract(f, x) AS date_part(f, x)::DECIMAL(38,0)`,
	`CREATE MACRO {c}.main.qfpg_extract__epoch (x DATE) AS epoch(x)::DECIMAL(38,0), (x) AS epoch(x)::DECIMAL(38,6)`,
	`CREATE MACRO {c}.main.qfpg_extract__second(x) AS (date_part('microseconds', x) / 1000000.0)::DECIMAL(38,6)`,
	`CREATE MACRO {c}.main.qfpg_extract__milliseconds(x) AS (date_part('microseconds', x) / 1000.0)::DECIMAL(38,3)`,
	// to_char(x, format) of a date or time, its format as strftime's (strftimeOfToChar); of a
	// number, PostgreSQL's digit positions (pgnumchar.go), a float rounded from its own digits.
	`CREATE MACRO {c}.main.qfpg_to_char(x, f) AS strftime(x, f)`,
	`CREATE MACRO {c}.main.qfpg_to_char__number (x DOUBLE, f) AS qf_to_char_number(CAST(x AS VARCHAR), f, 64),
		(x FLOAT, f) AS qf_to_char_number(CAST(x AS VARCHAR), f, 32), (x, f) AS qf_to_char_number(CAST(x AS VARCHAR), f, 0)`,
	// to_date(text, format) and to_timestamp(text, format), the format as strptime's (the
	// same fields as to_char's); to_timestamp of a number is DuckDB's own, as PostgreSQL's.
	`CREATE MACRO {c}.main.qfpg_to_date(x, f) AS strptime(x, f)::DATE`,
	// regexp_matches (regexpMatchesCall): a row for each array of a match's groups.
	`CREATE MACRO {c}.main.qfpg_regexp_matches(l) AS unnest(l)`,
	// substring(x FROM 'pattern') (substringCall): the match, or its first group; NULL for none.
	`CREATE MACRO {c}.main.qfpg_substring__re(s, p, g) AS CASE WHEN regexp_matches(s, p) THEN regexp_extract(s, p, g) END`,
	`CREATE MACRO {c}.main.qfpg_to_timestamp(x, f) AS strptime(x, f)::TIMESTAMPTZ`,
	// A window's sum (sum(x) OVER ...) is typed by x as the plain sum is: s is the window's
	// value, x the sum's argument.
	`CREATE MACRO {c}.main.qfpg_sum__over (s, x TINYINT) AS s::BIGINT, (s, x SMALLINT) AS s::BIGINT,
		(s, x INTEGER) AS s::BIGINT, (s, x) AS s`,
	`CREATE MACRO {c}.main.qfpg_sum_distinct (x TINYINT) AS sum(DISTINCT x)::BIGINT, (x SMALLINT) AS sum(DISTINCT x)::BIGINT,
		(x INTEGER) AS sum(DISTINCT x)::BIGINT, (x) AS sum(DISTINCT x)`,
	// A divisor (guardDivision): PostgreSQL's error for a zero, where DuckDB's answer is NULL.
	`CREATE MACRO {c}.main.qfpg_nonzero(x) AS CASE WHEN x = 0 THEN error('` + raisedPrefix + `22012 division by zero') ELSE x END`,
	// Trino's date_diff(unit, a, b) (DuckDB's takes other arguments), count_if a bigint, and
	// date_trunc of a date a date (trinofunctions.go has the others).
	`CREATE MACRO {c}.main.qfpg_trino_date_diff(u, a, b) AS date_sub(u, a, b)`,
	`CREATE MACRO {c}.main.qfpg_trino_count_if(x) AS count_if(x)::BIGINT`,
	`CREATE MACRO {c}.main.qfpg_trino_date_trunc (u, x DATE) AS CAST(date_trunc(u, x) AS DATE), (u, x) AS date_trunc(u, x)`,
	// Trino sums every integer type into bigint.
	`CREATE MACRO {c}.main.qfpg_trino_sum (x TINYINT) AS sum(x)::BIGINT, (x SMALLINT) AS sum(x)::BIGINT,
		(x INTEGER) AS sum(x)::BIGINT, (x BIGINT) AS sum(x)::BIGINT, (x) AS sum(x)`,
	`CREATE MACRO {c}.main.qfpg_trino_sum_distinct (x TINYINT) AS sum(DISTINCT x)::BIGINT,
		(x SMALLINT) AS sum(DISTINCT x)::BIGINT, (x INTEGER) AS sum(DISTINCT x)::BIGINT,
		(x BIGINT) AS sum(DISTINCT x)::BIGINT, (x) AS sum(DISTINCT x)`,
}

// renamedFunction is what a call of a client database's function is written as.
type renamedFunction struct {
	to string
	// wrap, when set, is a function the arguments are passed through: to(wrap(arguments)).
	wrap string
	// macro: to is a macro, which takes no DISTINCT, ORDER BY, FILTER or OVER: a FILTER is
	// written into the argument, a DISTINCT calls distinct instead, and a call with another
	// is left as the client wrote it.
	macro    bool
	distinct string
	// from, when set, is the table macro a call in FROM is written as (else such a call is
	// left as written).
	from string
	// format, when set, is the function a call with a literal format second is written as,
	// the format translated by it (else the call is left as written).
	format func(string) (string, bool)
	// number, when set, is the function a call with a literal number format is written as
	// (to_char(1234.5, '9,999.99')).
	number string
	// extract: the call is extract(field FROM x), written as to(field, x) or, for a field of
	// its own, to__<field>(x) (extractFields).
	extract bool
	// regexFrom: the call is substring(x FROM 'pattern'), a regular expression's match,
	// written as to(x, pattern, group) (substringCall); substring(x FROM n [FOR m]) stays.
	regexFrom bool
	// window, when set, is the macro a window call (f(x) OVER ...) is passed to with its
	// arguments: window(f(x) OVER ..., x), which types it by the arguments' types.
	window string
	// printf: PostgreSQL's format('literal', args...), written as the text it makes
	// (printfCall).
	printf bool
	// matchSet: regexp_matches(s, 'pattern' [, 'flags']), written as the rows of its matches
	// (regexpMatchesCall).
	matchSet bool
}

// pgFunctions are PostgreSQL's functions a PostgreSQL client's call of is rewritten.
var pgFunctions = map[string]renamedFunction{
	"sum":                       {to: "qfpg_sum", macro: true, distinct: "qfpg_sum_distinct", window: "qfpg_sum__over"},
	"json_build_object":         {to: "json_object"},
	"jsonb_build_object":        {to: "json_object"},
	"json_agg":                  {to: "qfpg_json_agg", wrap: "list"},
	"jsonb_agg":                 {to: "qfpg_jsonb_agg", wrap: "list"},
	"to_jsonb":                  {to: "qfpg_to_jsonb", macro: true},
	"json_typeof":               {to: "qfpg_json_typeof", macro: true},
	"jsonb_typeof":              {to: "qfpg_jsonb_typeof", macro: true},
	"json_array_elements":       {to: "qfpg_json_array_elements", macro: true},
	"jsonb_array_elements":      {to: "qfpg_jsonb_array_elements", macro: true},
	"json_array_elements_text":  {to: "qfpg_json_array_elements_text", macro: true},
	"jsonb_array_elements_text": {to: "qfpg_jsonb_array_elements_text", macro: true},
	"initcap":                   {to: "qfpg_initcap", macro: true},
	"set_config":                {to: "qfpg_set_config", macro: true}, // pgsetconfig.go
	"encode":                    {to: "qfpg_encode", macro: true},
	"decode":                    {to: "qfpg_decode", macro: true},
	"length":                    {to: "qfpg_length", macro: true},
	"char_length":               {to: "qfpg_char_length", macro: true},
	"character_length":          {to: "qfpg_character_length", macro: true},
	"octet_length":              {to: "qfpg_octet_length", macro: true},
	"strpos":                    {to: "qfpg_strpos", macro: true},
	"array_length":              {to: "qfpg_array_length", macro: true},
	"date_part":                 {to: "qfpg_date_part", macro: true},
	"generate_series":           {to: "qfpg_generate_series", macro: true, from: "qfpg_generate_series_rows"},
	"to_char":                   {to: "qfpg_to_char", format: strftimeOfToChar, number: "qfpg_to_char__number"},
	"format":                    {printf: true},
	"to_date":                   {to: "qfpg_to_date", format: strftimeOfToChar},
	"to_timestamp":              {to: "qfpg_to_timestamp", format: strftimeOfToChar},
	"extract":                   {to: "qfpg_extract", extract: true},
	"substring":                 {to: "qfpg_substring__re", regexFrom: true},
	"regexp_matches":            {matchSet: true},
	"jsonb_set":                 {to: "qfpg_jsonb_set", macro: true},
	"quote_ident":               {to: "qfpg_quote_ident", macro: true},
	"quote_literal":             {to: "qfpg_quote_literal", macro: true},
	"quote_nullable":            {to: "qfpg_quote_nullable", macro: true},
}

// pgKeywords are PostgreSQL 15's keywords other than the unreserved ones, which quote_ident
// and format's %I quote (pg_get_keywords() where catcode <> 'U').
const pgKeywords = "all analyse analyze and any array as asc asymmetric authorization between bigint binary bit " +
	"boolean both case cast char character check coalesce collate collation column concurrently constraint create " +
	"cross current_catalog current_date current_role current_schema current_time current_timestamp current_user dec " +
	"decimal default deferrable desc distinct do else end except exists extract false fetch float for foreign freeze " +
	"from full grant greatest group grouping having ilike in initially inner inout int integer intersect interval into " +
	"is isnull join lateral leading least left like limit localtime localtimestamp national natural nchar none " +
	"normalize not notnull null nullif numeric offset on only or order out outer overlaps overlay placing position " +
	"precision primary real references returning right row select session_user setof similar smallint some substring " +
	"symmetric table tablesample then time timestamp to trailing treat trim true union unique user using values " +
	"varchar variadic verbose when where window with xmlattributes xmlconcat xmlelement xmlexists xmlforest " +
	"xmlnamespaces xmlparse xmlpi xmlroot xmlserialize xmltable"

// trinoFunctions are Trino's, for a Trino client's statement.
var trinoFunctions = map[string]renamedFunction{
	"sum":             {to: "qfpg_trino_sum", macro: true, distinct: "qfpg_trino_sum_distinct"},
	"date_add":        {to: "qfpg_trino_date_add", macro: true},
	"replace":         {to: "qfpg_trino_replace", macro: true},
	"date_diff":       {to: "qfpg_trino_date_diff", macro: true},
	"count_if":        {to: "qfpg_trino_count_if", macro: true},
	"date_trunc":      {to: "qfpg_trino_date_trunc", macro: true},
	"truncate":        {to: "trunc"},
	"arbitrary":       {to: "any_value"},
	"dow":             {to: "isodow"},
	"doy":             {to: "dayofyear"},
	"element_at":      {to: "qfpg_trino_element_at", macro: true},
	"format_datetime": {to: "strftime", format: strftimeOfJoda},
	"format":          {to: "printf"}, // Java's format('%s-%d', ...); DuckDB's format takes {}
	"greatest":        {to: "qfpg_trino_greatest", macro: true},
	"least":           {to: "qfpg_trino_least", macro: true},
}

// functionsOf are the functions rewritten for q's protocol; nil for none.
func functionsOf(q *query.Request) map[string]renamedFunction {
	switch q.Protocol {
	case query.ProtocolPostgres:
		return pgFunctions
	case query.ProtocolTrino:
		return trinoFunctions
	}
	return nil
}

// callsRenamed reports whether q may call one of functions: a word among them.
func callsRenamed(q *query.Request, functions map[string]renamedFunction) bool {
	if functions == nil {
		return false
	}
	for _, t := range q.Analysis().Tokens {
		if t.Kind == sqltok.Word {
			if _, ok := functions[strings.ToLower(t.Text)]; ok {
				return true
			}
		}
	}
	return false
}

// renameCall writes the call of a renamed function at w.i, if one starts there.
func (w *compatWriter) renameCall() bool {
	f, ok := w.functions[w.word(w.i)]
	if !ok || w.toks[w.i].Kind != sqltok.Word {
		return false
	}
	open, dot := w.sig(w.i+1, 0), w.prevSig(w.i)
	if w.word(open) != "(" || w.word(dot) == "." && (!f.macro || w.word(w.prevSig(dot)) != "pg_catalog") {
		return false // not a call, or a qualified name: another schema's function (pg_catalog's macro is PostgreSQL's)
	}
	end := w.callEnd(open)
	if end < 0 {
		return false
	}
	if w.inFrom(w.i) {
		if f.from == "" {
			return false
		}
		w.aliasColumn()
		w.emit(f.from)
		w.i++
		return true
	}
	if f.format != nil {
		return w.formatCall(f, open, end)
	}
	if f.printf {
		return w.printfCall(open, end)
	}
	if f.extract {
		return w.extractCall(f, open)
	}
	if f.regexFrom {
		return w.substringCall(f, open, end)
	}
	if f.matchSet {
		return w.regexpMatchesCall(open, end)
	}
	first, after := w.sig(open+1, 0), w.sig(end+1, 0)
	filter := w.word(after) == "filter"
	name := f.to
	switch {
	case f.wrap != "" && w.word(after) == "over":
		return false // a window: its frame is the aggregate's, not the wrapper's
	case f.wrap != "":
		name += "(" + f.wrap
		if filter { // the wrapped aggregate's filter: to(wrap(...) FILTER (...))
			end = w.callEnd(w.sig(after+1, 0))
		}
		w.closeAfter(end)
	case !f.macro:
	case w.word(after) == "over" && f.window != "" && w.word(first) != "distinct" && !w.orderedArgs(open, end):
		return w.windowCall(f, open, end, after)
	case w.word(after) == "over" || w.orderedArgs(open, end) || w.word(first) == "distinct" && f.distinct == "":
		return false // a window, an ORDER BY or a DISTINCT the macro cannot take
	default:
		if filter && !w.filterIntoArgument(open, end, after) {
			return false
		}
		if w.word(first) == "distinct" {
			name = f.distinct
			w.replace(first, first, "")
		}
	}
	w.emit(name)
	w.i++
	return true
}

// windowCall writes the window call of f from its name at w.i (its arguments from the "(" at
// open to the ")" at end, OVER at over) as f.window(call OVER ..., arguments): the macro
// takes the window's value and, for its type, the arguments.
func (w *compatWriter) windowCall(f renamedFunction, open, end, over int) bool {
	spec := w.sig(over+1, 0)
	switch {
	case w.word(spec) == "(":
		spec = w.callEnd(spec)
	case spec < 0 || !w.isName(spec):
		return false
	}
	if spec < 0 {
		return false
	}
	var args strings.Builder
	for _, t := range w.toks[open+1 : end] {
		args.WriteString(t.Text)
	}
	if w.after == nil {
		w.after = map[int]string{}
	}
	w.after[spec] += ", " + args.String() + ")"
	w.emit(f.window + "(" + w.toks[w.i].Text)
	w.i++
	return true
}

// formatCall writes the call from the "(" at open to the ")" at end of a function whose format
// (its second argument, a literal) is translated, if the call is one.
func (w *compatWriter) formatCall(f renamedFunction, open, end int) bool {
	comma := w.sig(open+1, 0)
	for depth := 0; comma >= 0 && comma < end && (depth > 0 || w.word(comma) != ","); comma = w.sig(comma+1, 0) {
		switch w.word(comma) {
		case "(":
			depth++
		case ")":
			depth--
		}
	}
	lit := w.sig(comma+1, 0)
	if w.word(comma) != "," || w.sig(lit+1, 0) != end || w.toks[lit].Kind != sqltok.String || !strings.HasPrefix(w.toks[lit].Text, "'") {
		return false
	}
	format, ok := f.format(plainString(w.toks[lit].Text))
	if _, number := parseNumberFormat(plainString(w.toks[lit].Text)); !ok && number && f.number != "" {
		w.emit(f.number) // the format as it is
		w.i++
		return true
	}
	if !ok {
		return false
	}
	w.replace(lit, lit, "'"+strings.ReplaceAll(format, "'", "''")+"'")
	w.emit(f.to)
	w.i++
	return true
}

// extractFields are the fields extract's rewrite takes: "" for a whole number, else the macro
// of the field's own. Others (julian, ...) are left as written.
var extractFields = map[string]string{
	"year": "", "month": "", "day": "", "hour": "", "minute": "", "dow": "", "isodow": "", "doy": "", "week": "",
	"quarter": "", "decade": "", "century": "", "millennium": "", "isoyear": "", "microseconds": "", "timezone": "",
	"timezone_hour": "", "timezone_minute": "", "epoch": "__epoch", "second": "__second", "milliseconds": "__milliseconds",
}

// extractCall writes extract(field FROM x), its "(" at open, as the macro for the field.
func (w *compatWriter) extractCall(f renamedFunction, open int) bool {
	field, from := w.sig(open+1, 0), w.sig(open+1, 1)
	if field < 0 || w.word(from) != "from" {
		return false
	}
	name := w.word(field)
	if w.toks[field].Kind == sqltok.String {
		name = strings.ToLower(plainString(w.toks[field].Text))
	}
	own, ok := extractFields[name]
	if !ok {
		return false
	}
	if own == "" {
		w.replace(field, from, "'"+name+"',")
	} else {
		w.replace(field, from, "")
	}
	w.emit(f.to + own)
	w.i++
	return true
}

// outerWord is the first and the last index of word between the parenthesis at open and end,
// outside any inner one (the FROM of substring(x FROM p), the AS of a CAST); -1 for none.
func (w *compatWriter) outerWord(open, end int, word string) (first, last int) {
	first, last = -1, -1
	depth := 0
	for j := w.sig(open+1, 0); j >= 0 && j < end; j = w.sig(j+1, 0) {
		switch w.word(j) {
		case "(":
			depth++
		case ")":
			depth--
		case word:
			if depth == 0 {
				if first < 0 {
					first = j
				}
				last = j
			}
		}
	}
	return first, last
}

// substringCall writes substring(x FROM 'pattern') as to(x, pattern, group): PostgreSQL's
// first match of the regular expression anywhere in x ('.' matching a newline), or of its
// first parenthesized part when it has one; NULL without a match. DuckDB reads FROM there as a
// position. Any other form (FROM n, FOR m, SIMILAR) stays.
func (w *compatWriter) substringCall(f renamedFunction, open, end int) bool {
	from, _ := w.outerWord(open, end, "from")
	lit := w.sig(from+1, 0)
	if from < 0 || lit < 0 || w.sig(lit+1, 0) != end || w.toks[lit].Kind != sqltok.String || w.toks[lit].Unterminated ||
		!strings.HasPrefix(w.toks[lit].Text, "'") {
		return false
	}
	pattern := plainString(w.toks[lit].Text)
	group := "0"
	if countGroups(pattern) > 0 {
		group = "1"
	}
	w.replace(from, lit, ", '(?s)"+strings.ReplaceAll(pattern, "'", "''")+"', "+group)
	w.emit(f.to)
	w.i++
	return true
}

// inFrom reports whether the token at i is in a FROM clause: the nearest SELECT, FROM, JOIN,
// WHERE (...) before it in its parentheses is FROM or JOIN, or a comma after one.
func (w *compatWriter) inFrom(i int) bool {
	depth := 0
	for j := w.prevSig(i); j >= 0; j = w.prevSig(j) {
		switch w.word(j) {
		case ")":
			depth++
		case "(":
			if depth == 0 {
				return false
			}
			depth--
		case "from", "join":
			if depth == 0 {
				return true
			}
		case "select", "where", "group", "having", "order", "on", "returning", "set", "values":
			if depth == 0 {
				return false
			}
		}
	}
	return false
}

// toCharFields are to_char's date and time fields as strftime writes them, longest first
// where one begins another.
var toCharFields = []struct{ pg, strftime string }{
	{"HH24", "%H"}, {"HH12", "%I"}, {"HH", "%I"}, {"MI", "%M"}, {"SS", "%S"}, {"MS", "%g"}, {"US", "%f"},
	{"YYYY", "%Y"}, {"YY", "%y"}, {"MONTH", "%B"}, {"Month", "%B"}, {"month", "%B"}, {"MON", "%b"}, {"Mon", "%b"},
	{"mon", "%b"}, {"MM", "%m"}, {"DDD", "%j"}, {"DD", "%d"}, {"DAY", "%A"}, {"Day", "%A"}, {"day", "%A"},
	{"DY", "%a"}, {"Dy", "%a"}, {"dy", "%a"}, {"AM", "%p"}, {"PM", "%p"}, {"am", "%p"}, {"pm", "%p"}, {"TZ", "%Z"},
}

// strftimeOfToChar is to_char's date and time format f as strftime's; ok is false for a
// number's format (9, 0) or a field strftime has not.
func strftimeOfToChar(f string) (string, bool) {
	var b strings.Builder
	fill := false // FM: the next field without padding
	for i := 0; i < len(f); {
		switch {
		case strings.HasPrefix(f[i:], "FM"):
			i, fill = i+2, true
			continue
		case f[i] == '"': // quoted text
			end := strings.IndexByte(f[i+1:], '"')
			if end < 0 {
				return "", false
			}
			b.WriteString(strings.ReplaceAll(f[i+1:i+1+end], "%", "%%"))
			i += end + 2
			continue
		case f[i] == '9' || f[i] == '0':
			return "", false
		}
		matched := false
		for _, field := range toCharFields {
			if strings.HasPrefix(f[i:], field.pg) {
				if fill && strings.ContainsRune("dmHIMSj", rune(field.strftime[1])) {
					b.WriteString("%-" + field.strftime[1:]) // names are not padded either way
				} else {
					b.WriteString(field.strftime)
				}
				i += len(field.pg)
				matched, fill = true, false
				break
			}
		}
		if !matched {
			if c := f[i]; c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' {
				return "", false // a field not translated (Q, WW, J, ...): to_char stays, and says so
			}
			if f[i] == '%' {
				b.WriteByte('%')
			}
			b.WriteByte(f[i])
			i++
		}
	}
	return b.String(), true
}

// filterIntoArgument writes an aggregate macro's FILTER (WHERE cond), after the call from the
// "(" at open to the ")" at end, into its argument: f(x) FILTER (WHERE c) is f(CASE WHEN c
// THEN x END), which a macro takes. ok is false, and nothing written, when the clause is not
// that.
func (w *compatWriter) filterIntoArgument(open, end, filter int) bool {
	paren := w.sig(filter+1, 0)
	where := w.sig(paren+1, 0)
	if w.word(paren) != "(" || w.word(where) != "where" {
		return false
	}
	close := w.callEnd(paren)
	if close < 0 {
		return false
	}
	var cond strings.Builder
	for _, t := range w.toks[where+1 : close] {
		cond.WriteString(t.Text)
	}
	w.replace(open, open, "(CASE WHEN "+strings.TrimSpace(cond.String())+" THEN ")
	w.replace(end, close, " END)")
	return true
}

// replace has the tokens from index from to index to written as text.
func (w *compatWriter) replace(from, to int, text string) {
	if w.replaced == nil {
		w.replaced = map[int]replacement{}
	}
	w.replaced[from] = replacement{to, text}
}

// replacement is text written in place of tokens, up to the one at index to.
type replacement struct {
	to   int
	text string
}

// writeReplaced writes the replacement of the tokens from w.i on, if they have one.
func (w *compatWriter) writeReplaced() bool {
	r, ok := w.replaced[w.i]
	if !ok {
		return false
	}
	w.emit(r.text)
	w.i = r.to + 1
	return true
}

// callEnd is the index of the ")" that closes the "(" at open; -1 when none does.
func (w *compatWriter) callEnd(open int) int {
	depth := 0
	for j := open; j >= 0; j = w.sig(j+1, 0) {
		switch w.word(j) {
		case "(":
			depth++
		case ")":
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return -1
}

// closeAfter writes a ")" right after the token at end.
func (w *compatWriter) closeAfter(end int) {
	if w.after == nil {
		w.after = map[int]string{}
	}
	w.after[end] += ")"
}

// orderedArgs reports whether the arguments of the call from the "(" at open to the ")" at
// end have an ORDER BY.
func (w *compatWriter) orderedArgs(open, end int) bool {
	depth := 0
	for j := open; j < end; j = w.sig(j+1, 0) {
		switch w.word(j) {
		case "(":
			depth++
		case ")":
			depth--
		case "order":
			if depth == 1 {
				return true
			}
		}
	}
	return false
}

// pgFunctionName is the name PostgreSQL gives a column that is a call of the function DuckDB
// parsed as duck: DuckDB's renames undone (count(*) is count_star), a compatibility macro's
// that of the function it stands for.
func pgFunctionName(duck string) string {
	switch duck {
	case "count_star":
		return "count"
	case "qf_pg_get_expr", "qf_pg_get_expr__qualified", "qf_format_type": // catalog.go's
		name, _, _ := strings.Cut(duck[len("qf_"):], "__")
		return name
	}
	if name, ok := strings.CutPrefix(duck, macroPrefix); ok {
		name, _, _ = strings.Cut(name, "__") // a variant's (extract__epoch)
		return strings.TrimSuffix(strings.TrimPrefix(name, "trino_"), "_distinct")
	}
	return duck
}

// printfCall writes PostgreSQL's format('literal', args...) (its "(" at open, ")" at end) as
// the concatenation it makes: %s an argument's text (empty for NULL), %I a name (quoted when it
// must be), %L a literal (NULL unquoted), %% a %, %n$s the n'th argument. DuckDB's own format
// (with {}) answered the format unchanged. Another format (a width, a non-literal) is left as
// written.
func (w *compatWriter) printfCall(open, end int) bool {
	var args []string
	var arg strings.Builder
	depth := 0
	for j := open + 1; j < end; j++ {
		t := w.toks[j]
		switch {
		case t.Text == "(" || t.Text == "[":
			depth++
		case t.Text == ")" || t.Text == "]":
			depth--
		case t.Text == "," && depth == 0:
			args = append(args, strings.TrimSpace(arg.String()))
			arg.Reset()
			continue
		}
		arg.WriteString(t.Text)
	}
	args = append(args, strings.TrimSpace(arg.String()))
	f, ok := stringValue(args[0])
	if !ok {
		return false
	}
	var parts []string
	var lit strings.Builder
	next := 1
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			lit.WriteByte(f[i])
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			lit.WriteByte('%')
			continue
		}
		n := next
		if j := strings.IndexByte(f[i:], '$'); j > 0 {
			if k, err := strconv.Atoi(f[i : i+j]); err == nil {
				n, i = k, i+j+1
			}
		}
		if i >= len(f) || n < 1 || n >= len(args) {
			return false
		}
		if lit.Len() > 0 {
			parts = append(parts, quoteString(lit.String()))
			lit.Reset()
		}
		a := "(" + args[n] + ")"
		switch f[i] {
		case 's':
			parts = append(parts, "coalesce(CAST("+a+" AS VARCHAR), '')")
		case 'I':
			parts = append(parts, "qfpg_quote_ident(CAST("+a+" AS VARCHAR))")
		case 'L':
			parts = append(parts, "coalesce(qfpg_quote_literal(CAST("+a+" AS VARCHAR)), 'NULL')")
		default:
			return false // a width or a flag: not written here
		}
		next = n + 1
	}
	if lit.Len() > 0 || len(parts) == 0 {
		parts = append(parts, quoteString(lit.String()))
	}
	w.replace(w.i, end, "qfpg_format("+strings.Join(parts, " || ")+")") // named format, as PostgreSQL names it
	return w.writeReplaced()
}

// regexpMatchesCall writes regexp_matches(s, 'pattern' [, 'flags']), from its name at w.i
// (its "(" at open, ")" at end), as PostgreSQL's set of text arrays: a row for the first match
// (each with flag g), the array of its parenthesized groups' text, or of the whole match when
// the pattern has none; no row without a match. DuckDB's regexp_matches answers whether there
// is one. Flags i and g are read; another flag, or a pattern not a literal, fails the
// statement with PostgreSQL's error class rather than answer DuckDB's boolean.
func (w *compatWriter) regexpMatchesCall(open, end int) bool {
	args := w.arguments(open, end)
	refuse := func(why string) bool {
		w.replace(w.i, end, "error("+quoteString(raisedPrefix+why)+")")
		return w.writeReplaced()
	}
	if len(args) < 2 || len(args) > 3 {
		return false // not PostgreSQL's: DuckDB's error
	}
	pattern, ok := w.literalArgument(args[1])
	if !ok {
		return refuse("0A000 regexp_matches on DuckDB takes its pattern as a literal")
	}
	flags, global := "s", false
	if len(args) == 3 {
		f, ok := w.literalArgument(args[2])
		if !ok {
			return refuse("0A000 regexp_matches on DuckDB takes its flags as a literal")
		}
		for _, c := range f {
			switch c {
			case 'g':
				global = true
			case 'i':
				flags += "i"
			case 'c':
			default:
				return refuse("0A000 regexp_matches on DuckDB takes the flags g, i and c, not " + string(c))
			}
		}
	}
	s := "(" + w.rewritten(args[0][0], args[0][1]) + ")"
	p := quoteString("(?" + flags + ")" + pattern)
	groups := []string{"0"}
	if n := countGroups(pattern); n > 0 {
		groups = groups[:0]
		for k := 1; k <= n; k++ {
			groups = append(groups, strconv.Itoa(k))
		}
	}
	var arr []string
	for _, g := range groups {
		if global {
			arr = append(arr, "regexp_extract_all("+s+", "+p+", "+g+")[i]")
		} else {
			arr = append(arr, "regexp_extract("+s+", "+p+", "+g+")")
		}
	}
	list := "list_filter([CASE WHEN regexp_matches(" + s + ", " + p + ") THEN [" + strings.Join(arr, ", ") + "] END], m -> m IS NOT NULL)"
	if global {
		list = "list_transform(regexp_extract_all(" + s + ", " + p + ", 0), (m, i) -> [" + strings.Join(arr, ", ") + "])"
	}
	w.replace(w.i, end, "qfpg_regexp_matches("+list+")")
	return w.writeReplaced()
}

// arguments are the first and last token of each argument of the call from the "(" at open
// to the ")" at end.
func (w *compatWriter) arguments(open, end int) [][2]int {
	var args [][2]int
	start, depth := open+1, 0
	for j := open + 1; j <= end; j++ {
		switch w.word(j) {
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		}
		if j == end || depth == 0 && w.word(j) == "," {
			args = append(args, [2]int{start, j - 1})
			start = j + 1
		}
	}
	return args
}

// literalArgument is the value of an argument that is one standard string literal.
func (w *compatWriter) literalArgument(arg [2]int) (string, bool) {
	first, last := w.sig(arg[0], 0), w.prevSig(arg[1]+1)
	if first < 0 || first != last || w.toks[first].Kind != sqltok.String || w.toks[first].Unterminated {
		return "", false
	}
	return stringValue(w.toks[first].Text)
}

// rewritten is the tokens from index from to index to, rewritten as the statement is.
func (w *compatWriter) rewritten(from, to int) string {
	sub := compatWriter{toks: w.toks[from : to+1], quoteAt: w.quoteAt, settings: w.settings, functions: w.functions,
		binary: w.binary, jsonOps: w.jsonOps, session: w.session, infoSchema: w.infoSchema, trino: w.trino, divides: w.divides,
		values: w.values, postgres: w.postgres, qualify: w.qualify, rows: w.rows, zones: w.zones}
	sub.run()
	return strings.TrimSpace(sub.out.String())
}

// countGroups is the number of capturing groups of regular expression p: each "(" not
// escaped, not in a bracket expression, and not "(?".
func countGroups(p string) int {
	n, inBracket := 0, false
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\':
			i++
		case inBracket:
			inBracket = p[i] != ']'
		case p[i] == '[':
			inBracket = true
		case p[i] == '(' && (i+1 == len(p) || p[i+1] != '?'):
			n++
		}
	}
	return n
}
