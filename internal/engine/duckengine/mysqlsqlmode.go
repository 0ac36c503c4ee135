package duckengine

import (
	"strconv"
	"strings"
)

// sql_mode on DuckDB as MariaDB keeps it: SET sql_mode takes MariaDB's mode names (any case,
// comma-separated, empty items skipped, no blanks), a combination mode adds the modes it
// stands for, and @@sql_mode reads the set back once each in MariaDB's order. A name MariaDB
// does not know, or a number past its modes, is MariaDB's 1231, as is NULL. The modes change
// nothing on DuckDB: they are kept for the client that reads them back (Django's and
// SQLAlchemy's strict-mode checks, `SET sql_mode = CONCAT(@@sql_mode, ',STRICT_ALL_TABLES')`).

// sqlModeNames are MariaDB 10.11's modes in the order of their bits (sql_mode_names).
var sqlModeNames = []string{
	"REAL_AS_FLOAT", "PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "IGNORE_BAD_TABLE_OPTIONS",
	"ONLY_FULL_GROUP_BY", "NO_UNSIGNED_SUBTRACTION", "NO_DIR_IN_CREATE", "POSTGRESQL", "ORACLE",
	"MSSQL", "DB2", "MAXDB", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS", "NO_FIELD_OPTIONS", "MYSQL323",
	"MYSQL40", "ANSI", "NO_AUTO_VALUE_ON_ZERO", "NO_BACKSLASH_ESCAPES", "STRICT_TRANS_TABLES",
	"STRICT_ALL_TABLES", "NO_ZERO_IN_DATE", "NO_ZERO_DATE", "ALLOW_INVALID_DATES",
	"ERROR_FOR_DIVISION_BY_ZERO", "TRADITIONAL", "NO_AUTO_CREATE_USER", "HIGH_NOT_PRECEDENCE",
	"NO_ENGINE_SUBSTITUTION", "PAD_CHAR_TO_FULL_LENGTH", "EMPTY_STRING_IS_NULL",
	"SIMULTANEOUS_ASSIGNMENT", "TIME_ROUND_FRACTIONAL",
}

// sqlModeCombinations are the modes a combination mode adds besides itself (MariaDB's
// expand_sql_mode, as `SET sql_mode = 'ORACLE'; SELECT @@sql_mode` reads them).
var sqlModeCombinations = map[string][]string{
	"ANSI":        {"REAL_AS_FLOAT", "PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE"},
	"TRADITIONAL": {"STRICT_TRANS_TABLES", "STRICT_ALL_TABLES", "NO_ZERO_IN_DATE", "NO_ZERO_DATE", "ERROR_FOR_DIVISION_BY_ZERO", "NO_AUTO_CREATE_USER", "NO_ENGINE_SUBSTITUTION"},
	"POSTGRESQL":  {"PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS", "NO_FIELD_OPTIONS"},
	"ORACLE":      {"PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS", "NO_FIELD_OPTIONS", "NO_AUTO_CREATE_USER", "SIMULTANEOUS_ASSIGNMENT"},
	"MSSQL":       {"PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS", "NO_FIELD_OPTIONS"},
	"DB2":         {"PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS", "NO_FIELD_OPTIONS"},
	"MAXDB":       {"PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS", "NO_FIELD_OPTIONS", "NO_AUTO_CREATE_USER"},
	"MYSQL323":    {"HIGH_NOT_PRECEDENCE"},
	"MYSQL40":     {"HIGH_NOT_PRECEDENCE"},
}

// mariadbSQLModeDefault is MariaDB's @@sql_mode before any SET (10.2.4 on).
const mariadbSQLModeDefault = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION"

// normalSQLMode is v as MariaDB reads a SET sql_mode of it back, or its 1231; number says v
// was written as a number (the modes' bits), not as text.
func normalSQLMode(v string, number bool) (string, error) {
	var set uint64
	if number {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return "", wrongValue("sql_mode", v)
		}
		if n >= 1<<len(sqlModeNames) {
			return "", wrongValue("sql_mode", v)
		}
		set = n
	} else {
		for item := range strings.SplitSeq(v, ",") {
			if item == "" {
				continue
			}
			bit := sqlModeBit(item)
			if bit < 0 {
				return "", wrongValue("sql_mode", item)
			}
			set |= 1 << bit
		}
	}
	return sqlModeText(expandSQLMode(set)), nil
}

// sqlModeBit is name's bit (any case), -1 for none.
func sqlModeBit(name string) int {
	for i, m := range sqlModeNames {
		if strings.EqualFold(m, name) {
			return i
		}
	}
	return -1
}

// expandSQLMode adds to set the modes its combination modes stand for.
func expandSQLMode(set uint64) uint64 {
	for i, m := range sqlModeNames {
		if set&(1<<i) == 0 {
			continue
		}
		for _, added := range sqlModeCombinations[m] {
			set |= 1 << sqlModeBit(added)
		}
	}
	return set
}

// sqlModeText names set's modes in MariaDB's order.
func sqlModeText(set uint64) string {
	var names []string
	for i, m := range sqlModeNames {
		if set&(1<<i) != 0 {
			names = append(names, m)
		}
	}
	return strings.Join(names, ",")
}
