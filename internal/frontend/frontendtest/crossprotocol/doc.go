// Package crossprotocol holds only tests: the same queries through the MySQL wire, Trino HTTP
// and Flight SQL frontends, all backed by one MySQL engine on MariaDB, must return the same
// values. (The PostgreSQL wire frontend joins later.)
//
// determinism: outside the simulator (tests over real listeners and MariaDB)
package crossprotocol
