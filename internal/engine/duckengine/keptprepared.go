package duckengine

import (
	"github.com/duckdb/duckdb-go/v2"
)

// keptPrepared is the statement a connection last prepared to read what DuckDB says of it (prepare),
// kept open so that running the same text next does not bind and plan it again: planning is most
// of a catalog query's cost (the pg_catalog views), and every query was planned twice, once to
// read its kind and parameters and once to run. Anything but a SELECT the connection runs or
// prepares in between drops it (watchedConn.around): DuckDB binds a kept statement again when
// the catalog changed, but not when a variable did (getvariable is read at binding); the reads
// in between (the result's column names, json_serialize_sql) are SELECTs.
type keptPrepared struct {
	sqlText string
	st      *duckdb.Stmt
}

// keep holds st as the connection's kept statement for sqlText, closing the one held before.
func (k *keptPrepared) keep(sqlText string, st *duckdb.Stmt) {
	k.drop()
	k.sqlText, k.st = sqlText, st
}

// take hands the kept statement over (the caller closes it) when it was prepared from sqlText.
func (k *keptPrepared) take(sqlText string) *duckdb.Stmt {
	if k.st == nil || k.sqlText != sqlText {
		return nil
	}
	st := k.st
	k.sqlText, k.st = "", nil
	return st
}

func (k *keptPrepared) drop() {
	if k.st != nil {
		_ = k.st.Close()
		k.sqlText, k.st = "", nil
	}
}

// keepPrepared keeps st on dc, a connection of this engine's pool, or closes it on any other.
func keepPrepared(dc any, sqlText string, st *duckdb.Stmt) {
	if wc, ok := dc.(*watchedConn); ok {
		wc.kept.keep(sqlText, st)
		return
	}
	_ = st.Close()
}

// takePrepared is dc's kept statement for sqlText, if it has one.
func takePrepared(dc any, sqlText string) *duckdb.Stmt {
	if wc, ok := dc.(*watchedConn); ok {
		return wc.kept.take(sqlText)
	}
	return nil
}

// onlySelects reports whether sqlText is one SELECT: it sets no variable and changes no catalog.
func onlySelects(sqlText string) bool {
	if !oneStatement(sqlText) {
		return false
	}
	first, _ := firstWords(sqlText)
	return first == "select"
}
