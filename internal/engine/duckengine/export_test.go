package duckengine

import (
	"github.com/duckdb/duckdb-go/v2"

	"github.com/queryflux/queryflux/internal/query"
)

// RegisterScalarUDF registers f under name in e's open database (duckdb.RegisterScalarUDF
// takes no connection of e's pool: they are watchedConns).
func RegisterScalarUDF(e *Engine, name string, f duckdb.ScalarFunc) error {
	return registerScalar(e.connector.Load(), name, f)
}

// SetStartingHook runs fn right before each streaming statement starts, until the test ends.
func SetStartingHook(fn func()) (restore func()) {
	old := startingHook
	startingHook = fn
	return func() { startingHook = old }
}

// NoteFatal tells e that a statement failed with a fatal error, as DuckDB reports one.
func NoteFatal(e *Engine) {
	e.noteFatal(&query.Error{Code: codeFatal, Message: "FATAL Error: Failed: database has been invalidated because of a previous fatal error"})
}
