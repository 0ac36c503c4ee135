// Package disconnect holds only tests: a client that goes away (its socket closed as a killed
// process leaves it, its deadline or cancel, Trino's DELETE, Flight SQL's CancelFlightInfo)
// stops its query on every engine -- PostgreSQL, MariaDB and the embedded DuckDB -- through
// every frontend, and its capacity slot is free again. The engine's own view
// (pg_stat_activity, information_schema.processlist, DuckDB's only connection) is the proof.
//
// determinism: outside the simulator (tests over real listeners and engines)
package disconnect
