package duckengine

import (
	"strconv"
	"strings"

	"github.com/queryflux/queryflux/internal/sqlstate"
)

// psql's \sf name (and \ef, \sf+) looks the function up with 'name'::regproc (or
// 'name(args)'::regprocedure) and prints pg_get_functiondef(oid). DuckDB has neither: the
// cast is a lookup among DuckDB's functions, failing as PostgreSQL's does (42883 for none,
// 42725 for a name several functions have), and pg_get_functiondef writes a function's
// CREATE OR REPLACE FUNCTION as PostgreSQL lays it out: a macro's body as SQL, a built-in one
// as LANGUAGE internal.

// literalStartsSelectItem reports whether the literal before the cast at w.i begins an item of
// the outer select list, as psql's SELECT 'name'::regproc::oid: elsewhere ('array_in'::regproc
// compared with pg_type.typinput, as pgJDBC's type cache asks) the cast stays as it was, the
// function's name, since DuckDB has no such functions to look up.
func (w *compatWriter) literalStartsSelectItem() bool {
	lit := w.prevSig(w.i)
	return w.depth(lit) == 0 && startsSelectItem(w.word(w.prevSig(lit)))
}

// regprocLookup is the lookup that stands for the literal lit cast to regproc; ok is false
// for a literal that is not a string.
func regprocLookup(lit string) (string, bool) {
	if !strings.HasPrefix(lit, "'") || len(lit) < 2 {
		return "", false
	}
	s := strings.ReplaceAll(lit[1:len(lit)-1], "''", "'")
	if _, err := strconv.ParseUint(s, 10, 63); err == nil {
		return s, true // an oid written as a string
	}
	written := s // PostgreSQL's messages name the function as written
	if open := strings.IndexByte(s, '('); open >= 0 {
		s = s[:open] // regprocedure's arguments: DuckDB's functions are looked up by name
	}
	if dot := strings.LastIndexByte(s, '.'); dot >= 0 {
		s = s[dot+1:]
	}
	name := strings.TrimSpace(s)
	if strings.HasPrefix(name, `"`) {
		name = strings.ReplaceAll(strings.Trim(name, `"`), `""`, `"`)
	} else {
		name = strings.ToLower(name)
	}
	quoted := strings.ReplaceAll(name, "'", "''")
	message := func(state, text string) string {
		return "error('" + raisedPrefix + state + " " + strings.ReplaceAll(text, "'", "''") + "')"
	}
	return "(SELECT CASE WHEN count(DISTINCT function_oid) = 0 THEN " + message(sqlstate.UndefinedFunction, `function "`+written+`" does not exist`) +
		" WHEN count(DISTINCT function_oid) > 1 THEN " + message("42725", `more than one function named "`+written+`"`) +
		" ELSE any_value(function_oid) END AS regproc FROM duckdb_functions() WHERE function_name = '" + quoted +
		"' AND (database_name IN (current_database(), 'system') OR internal) AND schema_name <> 'queryflux_pg')", true
}

// functionDefSQL: pg_get_functiondef(oid), the function's definition as PostgreSQL writes it.
const functionDefSQL = `CREATE MACRO {c}.main.pg_get_functiondef(id) AS (SELECT any_value('CREATE OR REPLACE FUNCTION '
	|| CASE WHEN f.internal THEN 'pg_catalog' ELSE {c}.main.qf_pg_schema(f.schema_name) END || '.' || f.function_name || '('
	|| array_to_string(list_transform(list_zip(f.parameters, f.parameter_types), p -> p[1] || coalesce(' ' || lower(p[2]), '')), ', ')
	|| ')' || chr(10) || ' RETURNS ' || lower(coalesce(f.return_type, 'unknown')) || chr(10)
	|| ' LANGUAGE ' || CASE WHEN f.function_type = 'macro' THEN 'sql' ELSE 'internal' END || chr(10)
	|| 'AS $function$' || coalesce(f.macro_definition, f.function_name) || '$function$' || chr(10))
	FROM duckdb_functions() f WHERE f.function_oid = id)`
