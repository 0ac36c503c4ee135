package trinohttp

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/queryflux/queryflux/internal/query"
	"github.com/queryflux/queryflux/internal/sqlstate"
)

// QueryError is Trino's error document (QueryResults.error).
type QueryError struct {
	Message   string `json:"message"`
	SQLState  string `json:"sqlState,omitempty"`
	ErrorCode int    `json:"errorCode"`
	ErrorName string `json:"errorName"`
	ErrorType string `json:"errorType"`
	Retryable bool   `json:"retriable,omitempty"`
	// ErrorLocation is where in the statement the engine found the error, when it says.
	ErrorLocation *ErrorLocation `json:"errorLocation,omitempty"`
	FailureInfo   *FailureInfo   `json:"failureInfo,omitempty"`
}

// ErrorLocation is a position in a statement as Trino gives it: line and column from 1.
type ErrorLocation struct {
	LineNumber   int `json:"lineNumber"`
	ColumnNumber int `json:"columnNumber"`
}

// errorLocation is where PostgreSQL placed err in sql (its Position counts characters from 1),
// nil when the engine gave no position or it falls outside sql.
func errorLocation(err error, sql string) *ErrorLocation {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Position <= 0 {
		return nil
	}
	loc := ErrorLocation{LineNumber: 1, ColumnNumber: 1}
	n := int(pe.Position) - 1
	for _, r := range sql {
		if n == 0 {
			return &loc
		}
		n--
		if r == '\n' {
			loc.LineNumber, loc.ColumnNumber = loc.LineNumber+1, 1
		} else {
			loc.ColumnNumber++
		}
	}
	if n == 0 { // just past the end: an unfinished statement
		return &loc
	}
	return nil
}

// FailureInfo is the part of Trino's failure tree clients print.
type FailureInfo struct {
	Type       string        `json:"type"`
	Message    string        `json:"message"`
	Suppressed []FailureInfo `json:"suppressed"`
	Stack      []string      `json:"stack"`
}

// Trino's standard error codes (io.trino.spi.StandardErrorCode) the proxy uses.
type trinoCode struct {
	code int
	name string
	kind string
}

var (
	codeGenericUser     = trinoCode{0, "GENERIC_USER_ERROR", "USER_ERROR"}
	codeSyntax          = trinoCode{1, "SYNTAX_ERROR", "USER_ERROR"}
	codeAbandoned       = trinoCode{2, "ABANDONED_QUERY", "USER_ERROR"}
	codeUserCanceled    = trinoCode{3, "USER_CANCELED", "USER_ERROR"}
	codePermission      = trinoCode{4, "PERMISSION_DENIED", "USER_ERROR"}
	codeNotFound        = trinoCode{5, "NOT_FOUND", "USER_ERROR"}
	codeFunctionMissing = trinoCode{6, "FUNCTION_NOT_FOUND", "USER_ERROR"}
	codeInvalidArgument = trinoCode{7, "INVALID_FUNCTION_ARGUMENT", "USER_ERROR"}
	codeDivisionByZero  = trinoCode{8, "DIVISION_BY_ZERO", "USER_ERROR"}
	codeInvalidCast     = trinoCode{9, "INVALID_CAST_ARGUMENT", "USER_ERROR"}
	codeOperatorMissing = trinoCode{10, "OPERATOR_NOT_FOUND", "USER_ERROR"}
	codeNotSupported    = trinoCode{13, "NOT_SUPPORTED", "USER_ERROR"}
	codeOutOfRange      = trinoCode{19, "NUMERIC_VALUE_OUT_OF_RANGE", "USER_ERROR"}
	codeNotInTx         = trinoCode{21, "NOT_IN_TRANSACTION", "USER_ERROR"}
	codeSubqueryRows    = trinoCode{28, "SUBQUERY_MULTIPLE_ROWS", "USER_ERROR"}
	codeCatalogNotFound = trinoCode{44, "CATALOG_NOT_FOUND", "USER_ERROR"}
	codeSchemaNotFound  = trinoCode{45, "SCHEMA_NOT_FOUND", "USER_ERROR"}
	codeTableNotFound   = trinoCode{46, "TABLE_NOT_FOUND", "USER_ERROR"}
	codeColumnNotFound  = trinoCode{47, "COLUMN_NOT_FOUND", "USER_ERROR"}
	codeInternal        = trinoCode{65536, "GENERIC_INTERNAL_ERROR", "INTERNAL_ERROR"}
	codeStartingUp      = trinoCode{65548, "SERVER_STARTING_UP", "INTERNAL_ERROR"}
	codeInsufficient    = trinoCode{131072, "GENERIC_INSUFFICIENT_RESOURCES", "INSUFFICIENT_RESOURCES"}
	codeQueueFull       = trinoCode{131074, "QUERY_QUEUE_FULL", "INSUFFICIENT_RESOURCES"}
	codeTimeLimit       = trinoCode{131075, "EXCEEDED_TIME_LIMIT", "INSUFFICIENT_RESOURCES"}
	codePreempted       = trinoCode{131080, "ADMINISTRATIVELY_PREEMPTED", "INSUFFICIENT_RESOURCES"}
	codeExternal        = trinoCode{16777216, "GENERIC_EXTERNAL", "EXTERNAL"}
)

// cardinalityViolation is SQLSTATE 21000: more than one row from a scalar subquery.
const cardinalityViolation = "21000"

// codeFor picks the Trino error for a SQLSTATE.
func codeFor(state string) trinoCode {
	switch state {
	case query.CodeSyntax, sqlstate.SyntaxErrorOrAccessRuleViolation:
		return codeSyntax
	case query.CodeAccessDenied:
		return codePermission
	case query.CodeNoRoute: // 3D000, also a catalog an engine does not have
		return codeCatalogNotFound
	case sqlstate.InvalidSchemaName:
		return codeSchemaNotFound
	case sqlstate.UndefinedFunction:
		return codeFunctionMissing
	case query.CodeNotEligible:
		return codeNotSupported
	case query.CodeQueueFull:
		return codeQueueFull
	case query.CodeCapacityTimeout:
		return codeInsufficient
	case query.CodeLeaseLost: // Trino's name for a query its resource manager took capacity from
		return codePreempted
	case query.CodeQueryTimeout:
		return codeTimeLimit
	case query.CodeCoordinationUnavailable:
		return codeInternal
	case query.CodeEngineUnavailable:
		return codeExternal
	case query.CodeNotConfigured:
		return codeStartingUp
	case query.CodeEngine:
		return codeExternal
	case sqlstate.MySQLNoSuchTable, sqlstate.UndefinedTable:
		return codeTableNotFound
	case sqlstate.MySQLNoSuchColumn, sqlstate.UndefinedColumn:
		return codeColumnNotFound
	case sqlstate.FeatureNotSupported:
		return codeNotSupported
	case sqlstate.DivisionByZero:
		return codeDivisionByZero
	case sqlstate.ArraySubscriptError: // element_at(array, 0) on DuckDB (duckengine's trinofunctions.go)
		return codeInvalidArgument
	case sqlstate.NoActiveSQLTransaction:
		return codeNotInTx
	case sqlstate.InFailedSQLTransaction: // PostgreSQL's statement after an error in a transaction
		return codeTxAborted
	case sqlstate.InvalidTextRepresentation, sqlstate.InvalidDatetimeFormat: // a cast's text its type does not read
		return codeInvalidCast
	case sqlstate.NumericValueOutOfRange:
		return codeOutOfRange
	case cardinalityViolation: // a scalar subquery's second row
		return codeSubqueryRows
	}
	switch {
	case strings.HasPrefix(state, "42"), strings.HasPrefix(state, "22"), strings.HasPrefix(state, "23"):
		return codeGenericUser
	case strings.HasPrefix(state, "08"), strings.HasPrefix(state, "57"), strings.HasPrefix(state, "58"):
		return codeExternal
	}
	return codeInternal
}

// toQueryError turns any error into the error document a Trino client sees.
func toQueryError(err error) *QueryError {
	var qe *query.Error
	var tf *trinoFailure
	var tc trinoCode
	var msg, state string
	retry := false
	switch {
	case errors.As(err, &tf):
		tc, msg = tf.code, tf.msg
	case errors.As(err, &qe):
		tc, msg, state, retry = codeFor(qe.Code), qe.Message, qe.Code, qe.Retryable
		tc = refined(tc, msg)
		if qe.Code == query.CodeQueryTimeout && !qe.TimedOut {
			tc = codeUserCanceled // cancelled by someone, not the statement's time limit
		}
		if remote, rest := remoteErrorName(qe.Message); remote != nil { // came from a Trino engine: keep its name
			tc, msg = *remote, rest
		}
	case errors.Is(err, context.Canceled):
		tc, msg = codeUserCanceled, "Query was canceled"
	case errors.Is(err, context.DeadlineExceeded):
		tc, msg = codeTimeLimit, "Query exceeded its time limit"
	default:
		tc, msg = codeInternal, err.Error()
	}
	return &QueryError{
		Message:     msg,
		SQLState:    state,
		ErrorCode:   tc.code,
		ErrorName:   tc.name,
		ErrorType:   tc.kind,
		Retryable:   retry,
		FailureInfo: &FailureInfo{Type: "io.trino.spi.TrinoException", Message: msg, Suppressed: []FailureInfo{}, Stack: []string{}},
	}
}

// refined is Trino's error where the engine's message tells more than its SQLSTATE: an
// operator no operand types match (PostgreSQL's "operator does not exist", DuckDB's '+(BOOLEAN,
// ...' among its functions), a cast out of its type's range and a scalar subquery's second row
// (DuckDB's conversion and invalid input errors), and MariaDB's unknown database (42000, as its
// syntax errors).
func refined(tc trinoCode, msg string) trinoCode {
	switch {
	case tc == codeFunctionMissing && (strings.Contains(msg, "operator does not exist") || strings.Contains(msg, "Cannot compare values of type") ||
		duckOperator(msg)):
		return codeOperatorMissing
	case tc == codeInvalidCast && strings.Contains(msg, "out of range for the destination type"):
		return codeOutOfRange
	case tc == codeInvalidCast && strings.Contains(msg, "More than one row returned by a subquery"):
		return codeSubqueryRows
	case strings.HasSuffix(msg, "(MySQL error 1049)"): // ER_BAD_DB_ERROR: the client's schema is no database
		return codeSchemaNotFound
	}
	return tc
}

// duckOperator reports whether msg is DuckDB's binder error for an operator's operand types.
func duckOperator(msg string) bool {
	_, rest, ok := strings.Cut(msg, "No function matches the given name and argument types '")
	return ok && rest != "" && !unicode.IsLetter(rune(rest[0])) && rest[0] != '_'
}

// remoteErrorName reads the "[NAME code TYPE]" suffix the Trino engine writes into messages.
// It returns the message without the suffix.
func remoteErrorName(msg string) (*trinoCode, string) {
	i := strings.LastIndex(msg, " [trino ")
	if i < 0 || !strings.HasSuffix(msg, "]") {
		return nil, msg
	}
	parts := strings.Fields(msg[i+len(" [trino ") : len(msg)-1])
	if len(parts) != 3 {
		return nil, msg
	}
	code, err := strconv.Atoi(parts[1])
	if err != nil || code < 0 {
		return nil, msg
	}
	return &trinoCode{code: code, name: parts[0], kind: parts[2]}, msg[:i]
}

// errNotInTx is Trino's answer to COMMIT or ROLLBACK outside a transaction (txn.go).
var errNotInTx = &query.Error{Code: sqlstate.NoActiveSQLTransaction, Message: "No transaction in progress"}
