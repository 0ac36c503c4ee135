package duckengine

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// Settings a PostgreSQL client sets that change nothing on the embedded DuckDB, at the values
// it sets them to: pg_dump's connection setup (SET statement_timeout = 0, lock_timeout = 0,
// idle_in_transaction_session_timeout = 0, row_security = off, synchronize_seqscans = off and
// SELECT set_config('search_path', '', false)) and the SETs at the top of a dump that psql
// restores. DuckDB has no server-side timeouts, row security, synchronized scans, tablespaces,
// table access methods, XML or function bodies to check, and every name pg_dump writes is
// qualified, so the session is as the client asked. Any other value, or setting, is refused
// as before: never a setting that silently did nothing.

// ignoredSettings are those settings, each with the values (lower case) that change nothing;
// nil takes any.
var ignoredSettings = map[string][]string{
	"statement_timeout": {"0"}, "lock_timeout": {"0"}, "idle_in_transaction_session_timeout": {"0"},
	"row_security": {"off", "false", "0"}, "synchronize_seqscans": nil, "check_function_bodies": nil,
	"xmloption": {"content"}, "default_tablespace": {""}, "default_table_access_method": {"heap"},
	"default_with_oids": {"off", "false"}, "search_path": nil, // searchPaths
}

// searchPaths are the search paths one may set: the default, public alone (the same here: no
// client has a schema of its user's name), and an empty one (pg_dump's, and its dump's: every
// name it writes is qualified; the session notes it, so that pg_get_expr qualifies names as
// PostgreSQL's does then), written without blanks or quotes. SHOW search_path still answers the
// default.
var searchPaths = []string{"$user,public", "public", ""}

// settingChangesNothing reports whether setting name to value changes nothing here.
func settingChangesNothing(name, value string) bool {
	values, ok := ignoredSettings[strings.ToLower(name)]
	value = strings.ToLower(strings.TrimSpace(value))
	switch {
	case !ok:
		return false
	case strings.EqualFold(name, "search_path"):
		return slices.Contains(searchPaths, strings.NewReplacer(" ", "", `"`, "").Replace(value))
	}
	return values == nil || slices.Contains(values, value)
}

// SetChangesNothing: engine.SettingIgnorer, for PostgreSQL clients.
func (e *Engine) SetChangesNothing(q *query.Request, name, value string) bool {
	if q.Protocol != query.ProtocolPostgres || !settingChangesNothing(name, value) {
		return false
	}
	if strings.EqualFold(name, "search_path") {
		q.Sequences.SetEmptySearchPath(emptyPath(value))
	}
	return true
}

// emptyPath reports whether a search_path's value (one searchPaths takes) is the empty one.
func emptyPath(value string) bool {
	return strings.NewReplacer(" ", "", `"`, "", "'", "").Replace(value) == ""
}

// noteSearchPath notes in a PostgreSQL client's session a search_path its statement sets with
// set_config('search_path', value, false) (pg_dump's, at its start and after each RESET). The
// value is one the statement's qfpg_set_config takes, or the statement fails.
func noteSearchPath(q *query.Request) {
	if q.Sequences == nil || !containsFold(q.SQL, "set_config") || !containsFold(q.SQL, "search_path") {
		return
	}
	toks := sqltok.SignificantTokens(q.SQL, sqltok.Postgres)
	for i := 0; i+7 < len(toks); i++ {
		if !isWord(toks[i], "set_config") || toks[i+1].Text != "(" || toks[i+2].Kind != sqltok.String ||
			!strings.EqualFold(plainString(toks[i+2].Text), "search_path") || toks[i+3].Text != "," ||
			toks[i+4].Kind != sqltok.String || toks[i+5].Text != "," || !isWord(toks[i+6], "false") || toks[i+7].Text != ")" {
			continue
		}
		if value := plainString(toks[i+4].Text); settingChangesNothing("search_path", value) {
			q.Sequences.SetEmptySearchPath(emptyPath(value))
		}
	}
}

// setConfigSQL is set_config(name, value, is_local) (pgFunctions' qfpg_set_config): the value,
// for a setting and value settingChangesNothing takes; an error naming it for any other.
func setConfigSQL() string {
	var cases []string
	for name, values := range ignoredSettings {
		switch {
		case name == "search_path":
			cases = append(cases, "WHEN lower(name) = 'search_path' THEN list_contains(['"+strings.Join(searchPaths, "', '")+
				"'], replace(replace(lower(value), ' ', ''), '\"', ''))")
		case values == nil:
			cases = append(cases, "WHEN lower(name) = '"+name+"' THEN true")
		default:
			cases = append(cases, "WHEN lower(name) = '"+name+"' THEN list_contains(['"+strings.Join(values, "', '")+"'], lower(trim(value)))")
		}
	}
	slices.Sort(cases)
	return `CREATE MACRO {c}.main.qfpg_set_config(name, value, is_local) AS CASE WHEN CASE ` + strings.Join(cases, " ") +
		` ELSE false END THEN value ELSE error('set_config(''' || name || ''', ''' || value || ''') is not supported on the embedded DuckDB: ' ||
		'only settings that change nothing here are taken (statement_timeout 0, row_security off, an empty search_path, ...)') END`
}

// resetIgnored is RESET name of a setting ignoredSettings holds: it is at its default already
// (pg_dump resets search_path around its table patterns). Handed to DuckDB, RESET search_path
// would take the compatibility catalog off the connection's search path.
func resetIgnored(q *query.Request) (ownRun, bool) {
	if !strings.EqualFold(sqltok.FirstWord(q.Analysis().Tokens), "reset") {
		return nil, false
	}
	r := sqltok.NewWalker(sqltok.SignificantTokens(q.SQL, sqltok.Postgres))
	r.Word("reset")
	name := r.Peek()
	if _, ok := ignoredSettings[strings.ToLower(name.Text)]; !ok || name.Kind != sqltok.Word {
		return nil, false
	}
	r.Next()
	if r.Punct(";"); r.More() {
		return nil, false
	}
	return func(context.Context, *sql.Conn, bool) (query.Rows, error) {
		if strings.EqualFold(name.Text, "search_path") {
			q.Sequences.SetEmptySearchPath(false)
		}
		return engine.TagRows("RESET"), nil
	}, true
}
