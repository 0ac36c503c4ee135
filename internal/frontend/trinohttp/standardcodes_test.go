package trinohttp

import (
	"testing"

	"github.com/queryflux/queryflux/internal/query"
)

// trinoStandardCodes is the part of Trino's io.trino.spi.StandardErrorCode that QueryFlux
// sends: a client that keys on errorCode (the JDBC driver's SQLException.getErrorCode, Trino's
// own retry policies) must read the same failure as Trino means by that number.
var trinoStandardCodes = map[string]trinoCode{
	"GENERIC_USER_ERROR":             {0, "", "USER_ERROR"},
	"SYNTAX_ERROR":                   {1, "", "USER_ERROR"},
	"ABANDONED_QUERY":                {2, "", "USER_ERROR"},
	"USER_CANCELED":                  {3, "", "USER_ERROR"},
	"PERMISSION_DENIED":              {4, "", "USER_ERROR"},
	"NOT_FOUND":                      {5, "", "USER_ERROR"},
	"FUNCTION_NOT_FOUND":             {6, "", "USER_ERROR"},
	"INVALID_FUNCTION_ARGUMENT":      {7, "", "USER_ERROR"},
	"DIVISION_BY_ZERO":               {8, "", "USER_ERROR"},
	"INVALID_CAST_ARGUMENT":          {9, "", "USER_ERROR"},
	"OPERATOR_NOT_FOUND":             {10, "", "USER_ERROR"},
	"NUMERIC_VALUE_OUT_OF_RANGE":     {19, "", "USER_ERROR"},
	"NOT_SUPPORTED":                  {13, "", "USER_ERROR"},
	"NOT_IN_TRANSACTION":             {21, "", "USER_ERROR"},
	"SUBQUERY_MULTIPLE_ROWS":         {28, "", "USER_ERROR"},
	"CATALOG_NOT_FOUND":              {44, "", "USER_ERROR"},
	"SCHEMA_NOT_FOUND":               {45, "", "USER_ERROR"},
	"TABLE_NOT_FOUND":                {46, "", "USER_ERROR"},
	"COLUMN_NOT_FOUND":               {47, "", "USER_ERROR"},
	"GENERIC_INTERNAL_ERROR":         {65536, "", "INTERNAL_ERROR"},
	"NO_NODES_AVAILABLE":             {65541, "", "INTERNAL_ERROR"},
	"SERVER_STARTING_UP":             {65548, "", "INTERNAL_ERROR"},
	"GENERIC_INSUFFICIENT_RESOURCES": {131072, "", "INSUFFICIENT_RESOURCES"},
	"QUERY_QUEUE_FULL":               {131074, "", "INSUFFICIENT_RESOURCES"},
	"EXCEEDED_TIME_LIMIT":            {131075, "", "INSUFFICIENT_RESOURCES"},
	"ADMINISTRATIVELY_PREEMPTED":     {131080, "", "INSUFFICIENT_RESOURCES"},
}

// Every standard error QueryFlux sends carries Trino's own number and type for its name.
// GENERIC_EXTERNAL (0x0100_0000, EXTERNAL) is the start of the connectors' range, not a
// StandardErrorCode, and is left out.
func TestTrinoErrorsCarryTrinosStandardNumbers(t *testing.T) {
	sent := []trinoCode{codeGenericUser, codeSyntax, codeAbandoned, codeUserCanceled, codePermission, codeNotFound,
		codeInvalidArgument, codeDivisionByZero, codeNotSupported, codeNotInTx, codeCatalogNotFound, codeSchemaNotFound,
		codeTableNotFound, codeColumnNotFound, codeInternal, codeStartingUp, codeInsufficient, codeQueueFull,
		codeTimeLimit, codePreempted, codeFunctionMissing, codeInvalidCast, codeOperatorMissing, codeOutOfRange, codeSubqueryRows}
	for _, c := range sent {
		want, ok := trinoStandardCodes[c.name]
		if !ok {
			t.Errorf("%s is not one of Trino's standard error codes", c.name)
			continue
		}
		if c.code != want.code || c.kind != want.kind {
			t.Errorf("%s sent as (%d, %s); Trino's StandardErrorCode has (%d, %s)", c.name, c.code, c.kind, want.code, want.kind)
		}
	}
}

// A worker with no configuration yet answers Trino's SERVER_STARTING_UP, by its number too.
func TestNotConfiguredIsServerStartingUp(t *testing.T) {
	qe := toQueryError(&query.Error{Code: query.CodeNotConfigured})
	if qe.ErrorName != "SERVER_STARTING_UP" || qe.ErrorCode != 65548 || qe.ErrorType != "INTERNAL_ERROR" {
		t.Errorf("not configured: %s (%d, %s), want SERVER_STARTING_UP (65548, INTERNAL_ERROR)", qe.ErrorName, qe.ErrorCode, qe.ErrorType)
	}
}
