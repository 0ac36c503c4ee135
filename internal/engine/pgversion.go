package engine

// The PostgreSQL version the proxy presents to PostgreSQL clients: server_version at login, and
// version() and SHOW server_version on an engine that is not PostgreSQL (the embedded DuckDB).
const (
	PostgresServerVersionNumeric = "15.0"
	PostgresServerVersion        = PostgresServerVersionNumeric + " (QueryFlux)"
	PostgresServerVersionNum     = "150000"
)

// PostgresLoginSettings are the settings the pgwire frontend announces to every client at login
// (ParameterStatus), after server_version, with the values it serves them with; an engine that
// is not PostgreSQL (the embedded DuckDB) answers SHOW and current_setting of them with the same
// values. TimeZone is left out: the engine answers its own.
var PostgresLoginSettings = [][2]string{
	{"server_encoding", "UTF8"},
	{"client_encoding", "UTF8"},
	{"DateStyle", "ISO, MDY"},
	{"IntervalStyle", "postgres"},
	{"integer_datetimes", "on"},
	{"standard_conforming_strings", "on"},
	{"is_superuser", "off"},
}
