// Package querytest holds the end-to-end tests of the query path: the queryflux binary, built
// once per test run, started as real daemons (the embedded default, a standalone node on the
// local PostgreSQL, a control plane with a worker) and driven by real clients: psql, pgbench,
// the mariadb CLI, pgx, go-sql-driver/mysql, trino-go-client and arrow-go's Flight SQL client.
//
// Test-only: the package has no code besides this comment.
//
// determinism: outside the simulator (real processes, sockets and clocks)
package querytest
