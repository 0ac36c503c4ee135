package mysqlwire

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
)

// mysqlCode is the MySQL error number and SQLSTATE a client sees.
type mysqlCode struct {
	errno uint16
	state string
}

// byState maps the SQLSTATEs of the proxy and of the engines that are not MySQL (PostgreSQL,
// DuckDB) to what MySQL answers for the same condition: a client that handles 1146 or 1062
// handles them whatever engine ran the statement. A MySQL engine's own errors keep their
// number and state (engineErrno).
var byState = map[string]mysqlCode{
	query.CodeNotConfigured:           {mysql.ER_SERVER_SHUTDOWN, "08S01"},              // 1053
	query.CodeQueueFull:               {mysql.ER_CON_COUNT_ERROR, "08004"},              // 1040
	query.CodeCapacityTimeout:         {1637, "HY000"},                                  // ER_TOO_MANY_CONCURRENT_TRXS: insufficient resources, not a cancel
	query.CodeQueryTimeout:            {3024, "HY000"},                                  // ER_QUERY_TIMEOUT: maximum statement execution time exceeded
	query.CodeEngineUnavailable:       {1429, "HY000"},                                  // ER_CONNECT_TO_FOREIGN_DATA_SOURCE
	query.CodeCoordinationUnavailable: {3032, "HY000"},                                  // ER_SERVER_OFFLINE_MODE: retry later
	query.CodeAccessDenied:            {mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, "42000"}, // 1227
	query.CodeAuthRefused:             {mysql.ER_ACCESS_DENIED_ERROR, "28000"},          // 1045
	query.CodeNoRoute:                 {mysql.ER_BAD_DB_ERROR, "42000"},                 // 1049; also invalid_catalog_name
	query.CodeNotEligible:             {mysql.ER_DBACCESS_DENIED_ERROR, "42000"},        // 1044: not served by this worker
	query.CodeSyntax:                  {mysql.ER_PARSE_ERROR, "42000"},                  // 1064
	query.CodeLimitExceeded:           {mysql.ER_TOO_BIG_SELECT, "42000"},               // 1104
	query.CodeEngine:                  {mysql.ER_UNKNOWN_ERROR, "HY000"},                // 1105
	"42S02":                           {mysql.ER_NO_SUCH_TABLE, "42S02"},
	"42S22":                           {mysql.ER_BAD_FIELD_ERROR, "42S22"},
	"42P01":                           {mysql.ER_NO_SUCH_TABLE, "42S02"},          // undefined_table
	"42703":                           {mysql.ER_BAD_FIELD_ERROR, "42S22"},        // undefined_column
	"42P07":                           {mysql.ER_TABLE_EXISTS_ERROR, "42S01"},     // duplicate_table
	"42P04":                           {mysql.ER_DB_CREATE_EXISTS, "HY000"},       // duplicate_database
	"3F000":                           {mysql.ER_BAD_DB_ERROR, "42000"},           // invalid_schema_name
	"42883":                           {mysql.ER_SP_DOES_NOT_EXIST, "42000"},      // undefined_function
	"42702":                           {mysql.ER_NON_UNIQ_ERROR, "23000"},         // ambiguous_column
	"42804":                           {mysql.ER_WRONG_ARGUMENTS, "HY000"},        // datatype_mismatch
	"23505":                           {mysql.ER_DUP_ENTRY, "23000"},              // unique_violation
	"23502":                           {mysql.ER_BAD_NULL_ERROR, "23000"},         // not_null_violation
	"23503":                           {mysql.ER_NO_REFERENCED_ROW_2, "23000"},    // foreign_key_violation
	"23514":                           {4025, "23000"},                            // check_violation (MariaDB ER_CONSTRAINT_FAILED)
	"23000":                           {mysql.ER_DUP_ENTRY, "23000"},              // DuckDB's constraint errors
	"22012":                           {mysql.ER_DIVISION_BY_ZERO, "22012"},       // division_by_zero
	"22003":                           {mysql.ER_WARN_DATA_OUT_OF_RANGE, "22003"}, // numeric_value_out_of_range
	"22001":                           {mysql.ER_DATA_TOO_LONG, "22001"},          // string_data_right_truncation
	"22P02":                           {mysql.ER_TRUNCATED_WRONG_VALUE_FOR_FIELD, "22007"},
	"22007":                           {mysql.ER_TRUNCATED_WRONG_VALUE, "22007"}, // invalid_datetime_format
	"22008":                           {mysql.ER_DATETIME_FUNCTION_OVERFLOW, "22008"},
	"0A000":                           {mysql.ER_NOT_SUPPORTED_YET, "42000"}, // feature_not_supported
	"40001":                           {mysql.ER_LOCK_DEADLOCK, "40001"},     // serialization_failure
	"40P01":                           {mysql.ER_LOCK_DEADLOCK, "40001"},     // deadlock_detected
	"55P03":                           {mysql.ER_LOCK_WAIT_TIMEOUT, "HY000"}, // lock_not_available
	"25P02":                           {mysql.ER_UNKNOWN_ERROR, "HY000"},     // in_failed_sql_transaction
	"57P01":                           {mysql.ER_SERVER_SHUTDOWN, "08S01"},   // admin_shutdown
}

// engineErrno finds the MySQL error number the MySQL engine keeps in its messages.
var engineErrno = regexp.MustCompile(` \(MySQL error (\d+)\)$`)

// toMySQLError turns any error into the MySQL error a client sees.
func toMySQLError(err error) *mysql.MyError {
	var me *mysql.MyError
	if errors.As(err, &me) {
		return me
	}
	var qe *query.Error
	if !errors.As(err, &qe) {
		switch {
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return &mysql.MyError{Code: mysql.ER_QUERY_INTERRUPTED, State: "70100", Message: "query interrupted: " + err.Error()}
		default:
			return &mysql.MyError{Code: mysql.ER_UNKNOWN_ERROR, State: "HY000", Message: err.Error()}
		}
	}
	msg := qe.Message
	if m := engineErrno.FindStringSubmatchIndex(msg); m != nil {
		n, _ := strconv.Atoi(msg[m[2]:m[3]])
		return &mysql.MyError{Code: uint16(n), State: qe.Code, Message: msg[:m[0]]}
	}
	if c, ok := byState[qe.Code]; ok {
		if c.state == "23000" && qe.Code == "23000" && strings.Contains(strings.ToUpper(msg), "NOT NULL") {
			c.errno = mysql.ER_BAD_NULL_ERROR
		}
		return &mysql.MyError{Code: c.errno, State: c.state, Message: msg}
	}
	return &mysql.MyError{Code: mysql.ER_UNKNOWN_ERROR, State: "HY000", Message: msg}
}

// errNotConfigured is what a client sees before the node has a config.
var errNotConfigured = &mysql.MyError{Code: mysql.ER_SERVER_SHUTDOWN, State: "08S01", Message: "queryflux is not configured yet; retry shortly"}
