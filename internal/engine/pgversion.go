package engine

// The PostgreSQL version the proxy presents to PostgreSQL clients: server_version at login, and
// version() and SHOW server_version on an engine that is not PostgreSQL (the embedded DuckDB).
const (
	PostgresServerVersionNumeric = "15.0"
	PostgresServerVersion        = PostgresServerVersionNumeric + " (QueryFlux)"
	PostgresServerVersionNum     = "150000"
)
