package mysqlwire

import (
	"context"
	"errors"
	"regexp"
	"strconv"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
)

// MySQL error numbers the proxy's own SQLSTATEs map to.
var errnoByCode = map[string]uint16{
	query.CodeNotConfigured:   mysql.ER_SERVER_SHUTDOWN,              // 1053
	query.CodeQueueFull:       mysql.ER_CON_COUNT_ERROR,              // 1040
	query.CodeCapacityTimeout: mysql.ER_QUERY_INTERRUPTED,            // 1317
	query.CodeAccessDenied:    mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, // 1227
	query.CodeAuthRefused:     mysql.ER_ACCESS_DENIED_ERROR,          // 1045
	query.CodeNoRoute:         mysql.ER_BAD_DB_ERROR,                 // 1049
	query.CodeSyntax:          mysql.ER_PARSE_ERROR,                  // 1064
	query.CodeLimitExceeded:   mysql.ER_TOO_BIG_SELECT,               // 1104
	query.CodeEngine:          mysql.ER_UNKNOWN_ERROR,                // 1105
	"42S02":                   mysql.ER_NO_SUCH_TABLE,                // 1146
	"42S22":                   mysql.ER_BAD_FIELD_ERROR,              // 1054
	"42P01":                   mysql.ER_NO_SUCH_TABLE,                // Postgres undefined_table
	"42703":                   mysql.ER_BAD_FIELD_ERROR,              // Postgres undefined_column
	"23505":                   mysql.ER_DUP_ENTRY,                    // Postgres unique_violation
	"22012":                   mysql.ER_DIVISION_BY_ZERO,
}

// SQLSTATEs MySQL itself sends for the numbers above, where the proxy's code is Postgres-flavoured.
var stateByErrno = map[uint16]string{
	mysql.ER_SERVER_SHUTDOWN:   "08S01",
	mysql.ER_CON_COUNT_ERROR:   "08004",
	mysql.ER_QUERY_INTERRUPTED: "70100",
	mysql.ER_NO_SUCH_TABLE:     "42S02",
	mysql.ER_BAD_FIELD_ERROR:   "42S22",
	mysql.ER_DUP_ENTRY:         "23000",
	mysql.ER_UNKNOWN_ERROR:     "HY000",
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
	errno, ok := errnoByCode[qe.Code]
	if !ok {
		errno = mysql.ER_UNKNOWN_ERROR
	}
	state := qe.Code
	if s, ok := stateByErrno[errno]; ok && (qe.Code == query.CodeEngine || isProxyCode(qe.Code) || len(qe.Code) != 5) {
		state = s
	}
	return &mysql.MyError{Code: errno, State: state, Message: msg}
}

func isProxyCode(code string) bool {
	switch code {
	case query.CodeNotConfigured, query.CodeQueueFull, query.CodeCapacityTimeout:
		return true
	}
	return false
}

// errNotConfigured is what a client sees before the node has a config.
var errNotConfigured = &mysql.MyError{Code: mysql.ER_SERVER_SHUTDOWN, State: "08S01", Message: "queryflux is not configured yet; retry shortly"}
