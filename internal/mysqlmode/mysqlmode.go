// Package mysqlmode is MariaDB's sql_mode as its SET reads it and @@sql_mode reads it back:
// its mode names (any case, comma-separated, empty items skipped, no blanks) or the number of
// their bits, a combination mode adding the modes it stands for, the set read back once each in
// MariaDB's order. Engines that keep a MySQL client's sql_mode themselves (DuckDB's, PostgreSQL's)
// read a SET of it with Normal.
package mysqlmode

import (
	"strconv"
	"strings"
)

// Names are MariaDB 10.11's modes in the order of their bits (sql_mode_names).
var Names = []string{
	"REAL_AS_FLOAT", "PIPES_AS_CONCAT", "ANSI_QUOTES", "IGNORE_SPACE", "IGNORE_BAD_TABLE_OPTIONS",
	"ONLY_FULL_GROUP_BY", "NO_UNSIGNED_SUBTRACTION", "NO_DIR_IN_CREATE", "POSTGRESQL", "ORACLE",
	"MSSQL", "DB2", "MAXDB", "NO_KEY_OPTIONS", "NO_TABLE_OPTIONS", "NO_FIELD_OPTIONS", "MYSQL323",
	"MYSQL40", "ANSI", "NO_AUTO_VALUE_ON_ZERO", "NO_BACKSLASH_ESCAPES", "STRICT_TRANS_TABLES",
	"STRICT_ALL_TABLES", "NO_ZERO_IN_DATE", "NO_ZERO_DATE", "ALLOW_INVALID_DATES",
	"ERROR_FOR_DIVISION_BY_ZERO", "TRADITIONAL", "NO_AUTO_CREATE_USER", "HIGH_NOT_PRECEDENCE",
	"NO_ENGINE_SUBSTITUTION", "PAD_CHAR_TO_FULL_LENGTH", "EMPTY_STRING_IS_NULL",
	"SIMULTANEOUS_ASSIGNMENT", "TIME_ROUND_FRACTIONAL",
}

// combinations are the modes a combination mode adds besides itself (MariaDB's
// expand_sql_mode, as `SET sql_mode = 'ORACLE'; SELECT @@sql_mode` reads them).
var combinations = map[string][]string{
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

// Default is MariaDB's @@sql_mode before any SET (10.2.4 on).
const Default = "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION"

// Normal is v as MariaDB reads a SET sql_mode of it back; number says v was written as a
// number (the modes' bits), not as text. ok is false for a value MariaDB refuses (its 1231),
// bad then the part it names: a name it does not know, or the number.
func Normal(v string, number bool) (mode, bad string, ok bool) {
	var set uint64
	if number {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n >= 1<<len(Names) {
			return "", v, false
		}
		set = n
	} else {
		for item := range strings.SplitSeq(v, ",") {
			if item == "" {
				continue
			}
			bit := bitOf(item)
			if bit < 0 {
				return "", item, false
			}
			set |= 1 << bit
		}
	}
	return text(expand(set)), "", true
}

// bitOf is name's bit (any case), -1 for none.
func bitOf(name string) int {
	for i, m := range Names {
		if strings.EqualFold(m, name) {
			return i
		}
	}
	return -1
}

// expand adds to set the modes its combination modes stand for.
func expand(set uint64) uint64 {
	for i, m := range Names {
		if set&(1<<i) == 0 {
			continue
		}
		for _, added := range combinations[m] {
			set |= 1 << bitOf(added)
		}
	}
	return set
}

// text names set's modes in MariaDB's order.
func text(set uint64) string {
	var names []string
	for i, m := range Names {
		if set&(1<<i) != 0 {
			names = append(names, m)
		}
	}
	return strings.Join(names, ",")
}
