package mysqlwire

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// mysqlCode is the MySQL error number and SQLSTATE a client sees.
type mysqlCode struct {
	errno uint16
	state string
}

// MySQL and MariaDB error numbers go-mysql has no name for.
const (
	erQueryTimeout      = 3024 // ER_QUERY_TIMEOUT: maximum statement execution time exceeded
	erServerOfflineMode = 3032 // ER_SERVER_OFFLINE_MODE
	erConstraintFailed  = 4025 // MariaDB's ER_CONSTRAINT_FAILED: a CHECK constraint refused the row
)

// byState maps the SQLSTATEs of the proxy and of the engines that are not MySQL (PostgreSQL,
// DuckDB) to what MySQL answers for the same condition: a client that handles 1146 or 1062
// handles them whatever engine ran the statement. A MySQL engine's own errors keep their
// number and state (engineErrno).
var byState = map[string]mysqlCode{
	query.CodeNotConfigured:               {mysql.ER_SERVER_SHUTDOWN, sqlstate.MySQLCommunicationLink},                        // 1053
	query.CodeQueueFull:                   {mysql.ER_CON_COUNT_ERROR, sqlstate.SQLServerRejectedEstablishmentOfSQLConnection}, // 1040
	query.CodeCapacityTimeout:             {mysql.ER_TOO_MANY_CONCURRENT_TRXS, sqlstate.MySQLGeneralError},                    // insufficient resources, not a cancel
	query.CodeQueryTimeout:                {erQueryTimeout, sqlstate.MySQLGeneralError},
	query.CodeLeaseLost:                   {mysql.ER_LOCK_DEADLOCK, sqlstate.SerializationFailure}, // 1213: roll back and retry, as Galera answers its own aborts
	query.CodeEngineUnavailable:           {mysql.ER_CONNECT_TO_FOREIGN_DATA_SOURCE, sqlstate.MySQLGeneralError},
	query.CodeCoordinationUnavailable:     {erServerOfflineMode, sqlstate.MySQLGeneralError},                                  // retry later
	query.CodeAccessDenied:                {mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, sqlstate.SyntaxErrorOrAccessRuleViolation}, // 1227
	query.CodeAuthRefused:                 {mysql.ER_ACCESS_DENIED_ERROR, sqlstate.InvalidAuthorizationSpecification},         // 1045
	query.CodeNoRoute:                     {mysql.ER_BAD_DB_ERROR, sqlstate.SyntaxErrorOrAccessRuleViolation},                 // 1049; also invalid_catalog_name
	query.CodeNotEligible:                 {mysql.ER_DBACCESS_DENIED_ERROR, sqlstate.SyntaxErrorOrAccessRuleViolation},        // 1044: not served by this worker
	query.CodeSyntax:                      {mysql.ER_PARSE_ERROR, sqlstate.SyntaxErrorOrAccessRuleViolation},                  // 1064
	query.CodeLimitExceeded:               {mysql.ER_TOO_BIG_SELECT, sqlstate.SyntaxErrorOrAccessRuleViolation},               // 1104
	query.CodeEngine:                      {mysql.ER_UNKNOWN_ERROR, sqlstate.MySQLGeneralError},                               // 1105
	sqlstate.MySQLNoSuchTable:             {mysql.ER_NO_SUCH_TABLE, sqlstate.MySQLNoSuchTable},
	sqlstate.MySQLNoSuchColumn:            {mysql.ER_BAD_FIELD_ERROR, sqlstate.MySQLNoSuchColumn},
	sqlstate.UndefinedTable:               {mysql.ER_NO_SUCH_TABLE, sqlstate.MySQLNoSuchTable},
	sqlstate.UndefinedColumn:              {mysql.ER_BAD_FIELD_ERROR, sqlstate.MySQLNoSuchColumn},
	sqlstate.DuplicateTable:               {mysql.ER_TABLE_EXISTS_ERROR, sqlstate.MySQLTableExists},
	sqlstate.DuplicateDatabase:            {mysql.ER_DB_CREATE_EXISTS, sqlstate.MySQLGeneralError},
	sqlstate.InvalidSchemaName:            {mysql.ER_BAD_DB_ERROR, sqlstate.SyntaxErrorOrAccessRuleViolation},
	sqlstate.UndefinedFunction:            {mysql.ER_SP_DOES_NOT_EXIST, sqlstate.SyntaxErrorOrAccessRuleViolation},
	sqlstate.AmbiguousColumn:              {mysql.ER_NON_UNIQ_ERROR, sqlstate.IntegrityConstraintViolation},
	sqlstate.DatatypeMismatch:             {mysql.ER_WRONG_ARGUMENTS, sqlstate.MySQLGeneralError},
	sqlstate.UniqueViolation:              {mysql.ER_DUP_ENTRY, sqlstate.IntegrityConstraintViolation},
	sqlstate.NotNullViolation:             {mysql.ER_BAD_NULL_ERROR, sqlstate.IntegrityConstraintViolation},
	sqlstate.ForeignKeyViolation:          {mysql.ER_NO_REFERENCED_ROW_2, sqlstate.IntegrityConstraintViolation},
	sqlstate.CheckViolation:               {erConstraintFailed, sqlstate.IntegrityConstraintViolation},
	sqlstate.IntegrityConstraintViolation: {mysql.ER_DUP_ENTRY, sqlstate.IntegrityConstraintViolation}, // DuckDB's constraint errors
	sqlstate.DivisionByZero:               {mysql.ER_DIVISION_BY_ZERO, sqlstate.DivisionByZero},
	sqlstate.NumericValueOutOfRange:       {mysql.ER_WARN_DATA_OUT_OF_RANGE, sqlstate.NumericValueOutOfRange},
	sqlstate.StringDataRightTruncation:    {mysql.ER_DATA_TOO_LONG, sqlstate.StringDataRightTruncation},
	sqlstate.InvalidTextRepresentation:    {mysql.ER_TRUNCATED_WRONG_VALUE_FOR_FIELD, sqlstate.InvalidDatetimeFormat},
	sqlstate.InvalidDatetimeFormat:        {mysql.ER_TRUNCATED_WRONG_VALUE, sqlstate.InvalidDatetimeFormat},
	sqlstate.DatetimeFieldOverflow:        {mysql.ER_DATETIME_FUNCTION_OVERFLOW, sqlstate.DatetimeFieldOverflow},
	sqlstate.FeatureNotSupported:          {mysql.ER_NOT_SUPPORTED_YET, sqlstate.SyntaxErrorOrAccessRuleViolation},
	sqlstate.SerializationFailure:         {mysql.ER_LOCK_DEADLOCK, sqlstate.SerializationFailure},
	sqlstate.DeadlockDetected:             {mysql.ER_LOCK_DEADLOCK, sqlstate.SerializationFailure},
	sqlstate.LockNotAvailable:             {mysql.ER_LOCK_WAIT_TIMEOUT, sqlstate.MySQLGeneralError},
	sqlstate.InFailedSQLTransaction:       {mysql.ER_UNKNOWN_ERROR, sqlstate.MySQLGeneralError},
	sqlstate.ReadOnlySQLTransaction:       {mysql.ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION, sqlstate.ReadOnlySQLTransaction}, // 1792: a file opened read-only, as MariaDB's READ ONLY transaction
	sqlstate.AdminShutdown:                {mysql.ER_SERVER_SHUTDOWN, sqlstate.MySQLCommunicationLink},

	// ROLLBACK TO or RELEASE of a savepoint the transaction does not have: MariaDB's 1305
	// "SAVEPOINT s does not exist" (the transaction goes on: stmtrollback.go)
	sqlstate.InvalidSavepointSpecification: {mysql.ER_SP_DOES_NOT_EXIST, sqlstate.SyntaxErrorOrAccessRuleViolation},
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
			return &mysql.MyError{Code: mysql.ER_QUERY_INTERRUPTED, State: sqlstate.MySQLInterrupted, Message: "query interrupted: " + err.Error()}
		default:
			return &mysql.MyError{Code: mysql.ER_UNKNOWN_ERROR, State: sqlstate.MySQLGeneralError, Message: err.Error()}
		}
	}
	msg := qe.Message
	if qe.Code == query.CodeQueryTimeout && !qe.TimedOut { // cancelled by someone: what KILL QUERY answers
		return &mysql.MyError{Code: mysql.ER_QUERY_INTERRUPTED, State: sqlstate.MySQLInterrupted, Message: msg}
	}
	if m := engineErrno.FindStringSubmatchIndex(msg); m != nil {
		n, _ := strconv.Atoi(msg[m[2]:m[3]])
		state := qe.Code
		if state == query.CodeEngine { // the engine's own HY000 (mysqlengine's wrap): MariaDB's answer
			state = sqlstate.MySQLGeneralError
		}
		return &mysql.MyError{Code: uint16(n), State: state, Message: msg[:m[0]]}
	}
	if c, ok := byState[qe.Code]; ok {
		if c.state == sqlstate.IntegrityConstraintViolation && qe.Code == sqlstate.IntegrityConstraintViolation && strings.Contains(strings.ToUpper(msg), "NOT NULL") {
			c.errno = mysql.ER_BAD_NULL_ERROR
		}
		if qe.Code == sqlstate.ForeignKeyViolation && strings.HasPrefix(msg, "update or delete on table ") {
			c.errno = mysql.ER_ROW_IS_REFERENCED_2 // 1451: PostgreSQL's one state for a parent row still referenced
		}
		if qe.Code == sqlstate.DivisionByZero {
			msg = divZeroMessage // MariaDB's words (strict mode's error), not the engine's
		}
		return &mysql.MyError{Code: c.errno, State: c.state, Message: msg}
	}
	return &mysql.MyError{Code: mysql.ER_UNKNOWN_ERROR, State: sqlstate.MySQLGeneralError, Message: msg}
}

// errNotConfigured is what a client sees before the node has a config.
var errNotConfigured = &mysql.MyError{Code: mysql.ER_SERVER_SHUTDOWN, State: sqlstate.MySQLCommunicationLink, Message: "queryflux is not configured yet; retry shortly"}

// errFailedCommit answers a COMMIT of a transaction its engine had failed (DuckDB's, after a
// statement it could not undo alone; a connection lost mid-transaction): the transaction is
// rolled back. MariaDB has no failed transaction, so its clients read COMMIT's OK as their
// writes kept; a client that went on past a refused statement was told OK with nothing
// committed. 1213 with MariaDB's deadlock text: roll back and run it again, as after a
// deadlock; frameworks that retry a deadlock by its text (Laravel's concurrency errors) retry it.
var errFailedCommit = &query.Error{Code: sqlstate.SerializationFailure, Message: "Deadlock found when trying to get lock; " +
	"try restarting transaction"}
