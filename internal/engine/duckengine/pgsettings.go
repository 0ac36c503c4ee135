package duckengine

import (
	"cmp"
	"slices"
	"strings"

	"github.com/queryflux/queryflux/internal/engine"
	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqltok"
)

// PostgreSQL's settings, as a PostgreSQL client reads them with SHOW name and
// current_setting('name'): DuckDB's SHOW name describes a table, and its current_setting knows
// DuckDB's settings only, so SQLAlchemy's connect (show standard_conforming_strings), DBeaver's
// (SHOW search_path) and a SHOW TRANSACTION ISOLATION LEVEL failed. The values are what the
// pgwire frontend announces at login (engine.PostgresLoginSettings, one table for both), and
// what the embedded database does: snapshot isolation (PostgreSQL's repeatable read), UTF-8, C
// collation. TimeZone is DuckDB's own.
var pgSettings = func() map[string]string {
	settings := map[string]string{
		"server_version": engine.PostgresServerVersion, "server_version_num": engine.PostgresServerVersionNum,
		"search_path": `"$user", public`, "transaction_isolation": "repeatable read",
		"default_transaction_isolation": "repeatable read", "transaction_read_only": "off",
		"default_transaction_read_only": "off", "max_identifier_length": "63", "lc_collate": "C", "lc_ctype": "C",
		"bytea_output": "hex", "client_min_messages": "notice", "extra_float_digits": "1",
		"block_size": "8192", "max_connections": "100", "escape_string_warning": "on", "max_index_keys": "32",
	}
	for _, s := range engine.PostgresLoginSettings {
		settings[strings.ToLower(s[0])] = s[1]
	}
	return settings
}()

// pgSettingsPrefix qualifies the compatibility version() and current_setting(name): a schema
// off the search path, so that DuckDB's own answer every other client, and a PostgreSQL
// client's result column is still named version or current_setting.
const pgSettingsPrefix = `"` + compatCatalog + `".pg.`

// pgSettingsSQL creates them. version() answers PostgreSQL's form first, which clients parse
// for the version (SQLAlchemy refused "v1.5.6"), then what runs the query.
func pgSettingsSQL() []string {
	cases := make([]string, 0, len(pgSettings))
	for name := range pgSettings {
		v, _ := pgSettingValue(name)
		cases = append(cases, "WHEN '"+name+"' THEN "+v)
	}
	slices.Sort(cases)
	rows := make([]string, 0, len(pgSettings))
	for name := range pgSettings {
		v, _ := pgSettingValue(name)
		rows = append(rows, "('"+name+"', "+v+")")
	}
	slices.Sort(rows)
	return []string{
		// pg_settings lists them (JDBC reads max_index_keys there).
		`CREATE VIEW {c}.main.pg_settings AS SELECT name, setting, NULL::VARCHAR AS unit, 'Preset Options' AS category,
			'' AS short_desc, NULL::VARCHAR AS extra_desc, 'internal' AS context, 'string' AS vartype, 'default' AS source,
			NULL::VARCHAR AS min_val, NULL::VARCHAR AS max_val, NULL::VARCHAR[] AS enumvals, setting AS boot_val,
			setting AS reset_val, NULL::VARCHAR AS sourcefile, NULL::INTEGER AS sourceline, false AS pending_restart
			FROM (VALUES ` + strings.Join(rows, ", ") + `) s(name, setting)`,
		`CREATE SCHEMA {c}.pg`,
		`CREATE MACRO {c}.pg.version() AS 'PostgreSQL ` + engine.PostgresServerVersionNumeric + ` (QueryFlux) on DuckDB ' || system.main.version()`,
		`CREATE MACRO {c}.pg.current_setting(name) AS CASE lower(name) ` + strings.Join(cases, " ") + ` END`,
	}
}

// pgSettingValue is the SQL literal of setting name's value; ok is false for a setting this
// does not answer (DuckDB's own, such as TimeZone, or unknown: DuckDB's error).
func pgSettingValue(name string) (string, bool) {
	v, ok := pgSettings[strings.ToLower(name)]
	if !ok {
		return "", false
	}
	return "'" + strings.ReplaceAll(v, "'", "''") + "'", true
}

// pgShow is a PostgreSQL client's SHOW of a setting pgSettings answers, as a SELECT of its value
// under the setting's name; ok is false for any other statement.
func pgShow(q *query.Request) (string, bool) {
	if q.Protocol != query.ProtocolPostgres || !sqltok.FirstKeywordIs(q.SQL, sqltok.Postgres, "show") {
		return "", false
	}
	r := sqltok.NewWalker(pgTokens(q))
	r.Word("show")
	name := strings.ToLower(r.Next())
	switch {
	case name == "transaction" && r.Word("isolation") && r.Word("level"):
		name = "transaction_isolation"
	case name == "time" && r.Word("zone"):
		name = "timezone"
	}
	r.Punct(";")
	if r.More() {
		return "", false
	}
	if v, ok := sessionSetting(q, name); ok {
		column := name
		if name == "timezone" {
			column = "TimeZone" // PostgreSQL's
		}
		return "SELECT " + quoteString(v) + " AS " + quoteIdent(column), true
	}
	v, ok := pgSettingValue(name)
	if !ok {
		return "", false
	}
	return "SELECT " + v + " AS " + quoteIdent(name), true
}

// sessionSetting is the value of a setting that is the PostgreSQL client's session's own, as
// PostgreSQL prints it (SHOW, current_setting): its TimeZone, the name the frontend last told it
// (DuckDB's own is Etc/UTC whatever the client set: PostgreSQL answers SET TIME ZONE 'UTC' with
// UTC), and the timeouts its startup options apply (options.go); ok is false for any other
// setting, and for options that fail the statement anyway.
func sessionSetting(q *query.Request, name string) (string, bool) {
	if q.Protocol != query.ProtocolPostgres {
		return "", false
	}
	switch name = strings.ToLower(name); name {
	case "timezone":
		return cmp.Or(q.TimeZone, "UTC"), true
	case "idle_in_transaction_session_timeout", "idle_session_timeout", "transaction_timeout":
		return "0", true // no timeout: the proxy's own limits end an idle client
	case "statement_timeout", "lock_timeout", "deadlock_timeout":
		t, err := startupTimeouts(q)
		if err != nil {
			return "", false
		}
		switch name {
		case "lock_timeout":
			return pgDuration(t.lock), true
		case "deadlock_timeout":
			return pgDuration(cmp.Or(t.deadlock, deadlockTimeoutDefault)), true
		}
		return pgDuration(t.statement), true
	}
	return "", false
}

// mayReadPGSettings reports cheaply whether a PostgreSQL client's sqlText may call version() or
// current_setting.
func mayReadPGSettings(q *query.Request) bool {
	return q.Protocol == query.ProtocolPostgres && (containsFold(q.SQL, "version") || containsFold(q.SQL, "current_setting"))
}

// plainString is the value of a plain '...' literal ("" for any other kind: no setting has
// that name).
func plainString(lit string) string {
	if len(lit) < 2 || lit[0] != '\'' || lit[len(lit)-1] != '\'' {
		return ""
	}
	return strings.ReplaceAll(lit[1:len(lit)-1], "''", "'")
}
