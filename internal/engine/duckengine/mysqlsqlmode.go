package duckengine

import "github.com/queryflux/queryflux/internal/mysqlmode"

// sql_mode on DuckDB as MariaDB keeps it (mysqlmode: its names, combinations, order; a name
// MariaDB does not know, a number past its modes, or NULL is MariaDB's 1231). The modes change
// nothing on DuckDB: they are kept for the client that reads them back (Django's and
// SQLAlchemy's strict-mode checks, `SET sql_mode = CONCAT(@@sql_mode, ',STRICT_ALL_TABLES')`).

// sqlModeNames are MariaDB's modes in the order of their bits.
var sqlModeNames = mysqlmode.Names

// mariadbSQLModeDefault is MariaDB's @@sql_mode before any SET.
const mariadbSQLModeDefault = mysqlmode.Default

// normalSQLMode is v as MariaDB reads a SET sql_mode of it back, or its 1231; number says v
// was written as a number (the modes' bits), not as text.
func normalSQLMode(v string, number bool) (string, error) {
	mode, bad, ok := mysqlmode.Normal(v, number)
	if !ok {
		return "", wrongValue("sql_mode", bad)
	}
	return mode, nil
}
